//! Helpers shared by the integration tests: pcap files, frame builders, and running the
//! real `pfcswitch` binary (one EAL per process) with a generated configuration.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

pub const BIN: &str = env!("CARGO_BIN_EXE_pfcswitch");
/// The traffic generator (`src/bin/pfcgen.rs`).
pub const GEN_BIN: &str = env!("CARGO_BIN_EXE_pfcgen");

/// A fresh directory for one test, removed on drop.
pub struct TestDir {
    pub path: PathBuf,
}

impl TestDir {
    pub fn new(tag: &str) -> TestDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "pfcsw-test-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TestDir { path }
    }
    pub fn join(&self, p: &str) -> PathBuf {
        self.path.join(p)
    }
    /// A unique EAL file prefix for this test.
    pub fn prefix(&self) -> String {
        self.path.file_name().unwrap().to_string_lossy().into_owned()
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        if std::env::var_os("PFCSW_KEEP_TEST_DIRS").is_none() {
            let _ = std::fs::remove_dir_all(&self.path);
        }
        // A killed EAL process leaves its runtime directory (per file prefix) behind: the
        // test's own prefix and those derived from it (`<prefix>-gen`, `<prefix>-up`...).
        let prefix = self.prefix();
        let base = std::path::Path::new("/var/run/dpdk");
        for e in std::fs::read_dir(base).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name == prefix || name.starts_with(&format!("{prefix}-")) {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}

// ---- pcap (classic libpcap format, microsecond timestamps, LINKTYPE_ETHERNET) ----

// The library's writer and reader (`pfcswitch probe` uses them too).

pub fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    std::fs::write(path, pfcswitch::probe::frames::pcap_bytes(frames)).unwrap();
}

/// Frames of a pcap file (either byte order, µs or ns timestamps).
pub fn read_pcap(path: &Path) -> Vec<Vec<u8>> {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let magic = b.get(0..4).map(|m| u32::from_le_bytes([m[0], m[1], m[2], m[3]]));
    let ok = matches!(magic, Some(0xa1b2c3d4 | 0xa1b23c4d | 0xd4c3b2a1 | 0x4d3cb2a1)) && b.len() >= 24;
    assert!(ok, "{}: not a pcap file (magic {magic:x?})", path.display());
    pfcswitch::probe::frames::pcap_frames(&b)
}

// ---- frames ----

pub fn mac(last: u8) -> [u8; 6] {
    [0x02, 0, 0, 0, 0, last]
}
pub const BCAST: [u8; 6] = [0xff; 6];

/// An untagged non-IP frame of `len` bytes (EtherType 0x88b5, local experimental), with a
/// payload tag to tell frames apart.
pub fn eth_frame(dst: [u8; 6], src: [u8; 6], tag: u8, len: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(len);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&[0x88, 0xb5]);
    while f.len() < len {
        f.push(tag);
    }
    f.truncate(len);
    f
}

/// An 802.1Qbb PFC frame built by hand from the standard (60 bytes).
pub fn pfc_frame(src: [u8; 6], class_enable: u8, quanta: [u16; 8]) -> Vec<u8> {
    let mut f = vec![0x01, 0x80, 0xc2, 0x00, 0x00, 0x01];
    f.extend_from_slice(&src);
    f.extend_from_slice(&[0x88, 0x08, 0x01, 0x01, 0x00, class_enable]);
    for q in quanta {
        f.extend_from_slice(&q.to_be_bytes());
    }
    f.resize(60, 0);
    f
}

// ---- running the switch ----

/// EAL arguments for a test that starts EAL in its own process (one lcore, no hugepages,
/// no PCI, `mb` MiB, the test's file prefix).
pub fn in_process_eal_args(d: &TestDir, mb: u32) -> Vec<String> {
    let mb = mb.to_string();
    ["t", "--no-huge", "-m", &mb, "--no-pci", "-l", "0", "--log-level=error", "--file-prefix", &d.prefix()]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

pub fn run_switch(args: &[&str]) -> Output {
    Command::new(BIN).args(args).env("RUST_LOG", "info").output().expect("spawn pfcswitch")
}

/// Run the switch on `cfg` for `secs` seconds, assert it exited cleanly, and return its
/// stats JSON (written in `dir`).
pub fn run_for(dir: &TestDir, cfg: &Path, secs: &str) -> serde_json::Value {
    let json = dir.join("stats.json");
    let out = run_switch(&[
        "run",
        "--config",
        cfg.to_str().unwrap(),
        "--duration",
        secs,
        "--stats-json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", show(&out));
    read_json(&json)
}

pub fn show(out: &Output) -> String {
    format!(
        "status: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub fn read_json(path: &Path) -> serde_json::Value {
    let t = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&t).unwrap()
}

/// Port object by name from a stats JSON.
pub fn port<'a>(j: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    j["ports"].as_array().unwrap().iter().find(|p| p["name"] == name).unwrap_or_else(|| panic!("no port {name} in {j}"))
}

/// The conservation and leak checks every switch-starting test ends with.
pub fn assert_conserved(j: &serde_json::Value) {
    assert_eq!(j["conservation"]["ok"], true, "conservation failed: {}", j["conservation"]);
    assert_eq!(j["mbufs"]["in_use_after_stop"], 0, "mbuf leak: {}", j["mbufs"]);
}

/// The longest pass of any lcore (control and workers) from the stats JSON, in ns: how
/// long the OS kept the switch away from its ports (docs/testing.md).
pub fn lcores_away_ns(j: &serde_json::Value) -> u64 {
    let hz = j["tsc_hz"].as_u64().expect("tsc_hz").max(1);
    let workers = j["workers"].as_array().expect("workers").iter().map(|w| w["max_loop_cycles"].as_u64().unwrap());
    let most = workers.chain(j["control"]["max_loop_cycles"].as_u64()).max().unwrap_or(0);
    (u128::from(most) * 1_000_000_000 / u128::from(hz)) as u64
}

/// Lossless drops per port of a run whose headroom covers `covered_ns` of the switch's
/// reaction: 0 on every port, unless the switch recorded an lcore away longer than that
/// (descheduled on a loaded machine: no headroom sized for a switch's reaction covers the
/// OS's), which is then said. Returns the drops by port name.
pub fn assert_lossless_unless_away(
    j: &serde_json::Value,
    covered_ns: u64,
    log: &str,
) -> std::collections::BTreeMap<String, u64> {
    let drops: std::collections::BTreeMap<String, u64> = j["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap().to_string(), p["lossless_drops"].as_u64().unwrap()))
        .collect();
    let total: u64 = drops.values().sum();
    if total > 0 {
        let away = lcores_away_ns(j);
        assert!(
            away > covered_ns,
            "lossless drops {drops:?} while no lcore was away longer than the headroom covers ({:.1} ms <= {:.1} ms)\n{log}",
            away as f64 / 1e6,
            covered_ns as f64 / 1e6
        );
        eprintln!(
            "note: {total} lossless drops {drops:?}, allowed: an lcore was away {:.1} ms, longer than the {:.1} ms the headroom covers (a loaded machine)",
            away as f64 / 1e6,
            covered_ns as f64 / 1e6
        );
    }
    drops
}

// ---- timed captures, more frames, a running switch, kernel veth injection ----
// (added for tests/pfc_receive.rs and tests/pfc_wire_tshark.rs)

/// Frames of a pcap file with their timestamps in ns since the epoch (µs- or ns-magic).
/// net_pcap's `tx_pcap` dumper writes ns timestamps taken from the host clock at
/// `tx_burst` time (CLOCK_REALTIME at probe + TSC since), i.e. real transmit times.
pub fn read_pcap_ts(path: &Path) -> Vec<(u64, Vec<u8>)> {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    assert!(b.len() >= 24, "{}: not a pcap file", path.display());
    let magic = u32::from_le_bytes(b[0..4].try_into().unwrap());
    let (le, nano) = match magic {
        0xa1b2c3d4 => (true, false),
        0xa1b23c4d => (true, true),
        0xd4c3b2a1 => (false, false),
        0x4d3cb2a1 => (false, true),
        m => panic!("{}: bad pcap magic {m:#x}", path.display()),
    };
    let rd = |o: usize| {
        let a: [u8; 4] = b[o..o + 4].try_into().unwrap();
        if le {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        }
    };
    let mut frames = Vec::new();
    let mut off = 24;
    while off + 16 <= b.len() {
        let sec = rd(off) as u64;
        let frac = rd(off + 4) as u64;
        let incl = rd(off + 8) as usize;
        off += 16;
        if off + incl > b.len() {
            break;
        }
        let ns = sec * 1_000_000_000 + if nano { frac } else { frac * 1000 };
        frames.push((ns, b[off..off + incl].to_vec()));
        off += incl;
    }
    frames
}

/// Nanoseconds since the epoch now (comparable with net_pcap TX timestamps).
pub fn now_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
}

/// An 802.1Q-tagged frame (PCP `pcp`, VID `vid`) of `len` bytes, EtherType 0x88b5 inside,
/// payload: `tag`, then a big-endian u32 sequence number, then `tag` filler.
pub fn vlan_frame(dst: [u8; 6], src: [u8; 6], pcp: u8, vid: u16, tag: u8, seq: u32, len: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(len);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&[0x81, 0x00]);
    f.extend_from_slice(&(((pcp as u16 & 7) << 13) | (vid & 0x0fff)).to_be_bytes());
    f.extend_from_slice(&[0x88, 0xb5, tag]);
    f.extend_from_slice(&seq.to_be_bytes());
    f.resize(len.max(f.len()), tag);
    f
}

/// PCP of an 802.1Q-tagged frame (None if untagged).
pub fn frame_pcp(f: &[u8]) -> Option<u8> {
    (f.len() >= 16 && f[12..14] == [0x81, 0x00]).then(|| f[14] >> 5)
}

/// An 802.3x PAUSE frame built by hand (opcode 0x0001, one time in quanta; 60 bytes).
pub fn pause_8023x_frame(src: [u8; 6], quanta: u16) -> Vec<u8> {
    let mut f = vec![0x01, 0x80, 0xc2, 0x00, 0x00, 0x01];
    f.extend_from_slice(&src);
    f.extend_from_slice(&[0x88, 0x08, 0x00, 0x01]);
    f.extend_from_slice(&quanta.to_be_bytes());
    f.resize(60, 0);
    f
}

pub fn sh(cmd: &str) -> Output {
    Command::new("sh").arg("-c").arg(cmd).output().unwrap()
}

/// stdout and stderr of a finished command, for assertion messages.
pub fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// Whether `prefix` (e.g. "10.60.0.0/16") is in the running switch's dataplane with `n`
/// resolved next hops (`/pfcswitch/routes` rows: prefix|code|metric|via|iface|mac|weight),
/// polled for up to `limit`.
pub fn wait_route_members(
    tel: &mut pfcswitch::dpdk::telemetry::Client,
    prefix: &str,
    n: usize,
    limit: std::time::Duration,
) -> bool {
    until(limit, || {
        let v = tel.query("/pfcswitch/routes,v4,0").expect("routes");
        let rows: Vec<String> = v["rows"]
            .as_array()
            .map(|a| a.iter().filter_map(|r| r.as_str().map(String::from)).collect())
            .unwrap_or_default();
        rows.iter()
            .filter(|r| r.starts_with(&format!("{prefix}|K|")) && r.split('|').nth(5).is_some_and(|m| !m.is_empty()))
            .count()
            == n
    })
    .is_some()
}

/// The routed switch of `scripts/hosts.sh` routed mode with three hosts (prefix `p`):
/// Ethernet0/4/8 on host 1/2/3's veths, each port a router interface in the host's subnet
/// (198.18.i.1/24, fd00:i::1/64), the switch in namespace `<p>sw`; `extra` is appended.
pub fn three_host_routed_switch(d: &TestDir, p: &str, extra: &str) -> PathBuf {
    SwitchConfig::new(&d.prefix(), "0@0,1@1")
        .memory_mb(1024)
        .port(Port::new("Ethernet0", &format!("net_af_packet0,iface={p}v1a")).speed("10G"))
        .port(Port::new("Ethernet4", &format!("net_af_packet1,iface={p}v2a")).speed("10G"))
        .port(Port::new("Ethernet8", &format!("net_af_packet2,iface={p}v3a")).speed("10G"))
        .toml(&format!(
            r#"[control_plane]
netns = "{p}sw"
[interface]
Ethernet0 = ["198.18.1.1/24", "fd00:1::1/64"]
Ethernet4 = ["198.18.2.1/24", "fd00:2::1/64"]
Ethernet8 = ["198.18.3.1/24", "fd00:3::1/64"]
{extra}"#
        ))
        .one_worker()
        .write(&d.join("t.toml"))
}

/// Port `port`'s live counters over the switch's telemetry socket.
pub fn counters(c: &mut pfcswitch::dpdk::telemetry::Client, port: &str) -> serde_json::Value {
    let v = c.query(&format!("/pfcswitch/port_counters,{port}")).expect("telemetry");
    v[port].clone()
}

/// Counter `k` of a counters object (panics naming it when absent).
pub fn n(v: &serde_json::Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("no counter {k} in {v}"))
}

/// Poll `f` every 0.5 ms until it holds; the time it took, or None after `limit`.
pub fn until(limit: std::time::Duration, mut f: impl FnMut() -> bool) -> Option<std::time::Duration> {
    let t0 = std::time::Instant::now();
    while t0.elapsed() < limit {
        if f() {
            return Some(t0.elapsed());
        }
        std::thread::sleep(std::time::Duration::from_micros(500));
    }
    None
}

pub fn is_root() -> bool {
    sh("id -u").stdout.starts_with(b"0")
}

/// `n` kernel hosts in network namespaces (`scripts/hosts.sh up n` with prefix `prefix`:
/// namespaces `<prefix>h<i>`, root-side veths `<prefix>v<i>a`), removed with
/// `scripts/hosts.sh down` when dropped (also on a failed assertion).
pub struct Hosts(String);

impl Hosts {
    pub fn up(prefix: &str, n: u32) -> Hosts {
        Hosts::up_with(prefix, n, false)
    }

    /// Routed hosts (`PFCSW_HOSTS_ROUTED=1`): the switch's ends in namespace `<prefix>sw`,
    /// host i in 198.18.<i>.2/24 and fd00:<i>::2/64 behind the switch's .1 / ::1.
    pub fn up_routed(prefix: &str, n: u32) -> Hosts {
        Hosts::up_with(prefix, n, true)
    }

    fn up_with(prefix: &str, n: u32, routed: bool) -> Hosts {
        let out = Command::new("bash")
            .args([&format!("{}/scripts/hosts.sh", env!("CARGO_MANIFEST_DIR")), "up", &n.to_string()])
            .env("PFCSW_HOSTS_PREFIX", prefix)
            .env("PFCSW_HOSTS_ROUTED", if routed { "1" } else { "0" })
            .output()
            .unwrap();
        assert!(out.status.success(), "hosts.sh up: {}", show(&out));
        Hosts(prefix.to_string())
    }

    /// Run `cmd` with `sh -c` in host `i`'s namespace.
    pub fn exec(&self, i: u32, cmd: &str) -> Output {
        sh(&format!("ip netns exec {}h{i} sh -c '{cmd}'", self.0))
    }

    /// Wait (up to 20 s) until a UDP socket is bound to `port` in host `i`'s namespace: a
    /// receiver just spawned may take long to start on a loaded machine.
    pub fn wait_udp_bound(&self, i: u32, port: u16) {
        let bound = until(std::time::Duration::from_secs(20), || {
            !self.exec(i, &format!("ss -Hlun sport = :{port}")).stdout.is_empty()
        });
        assert!(bound.is_some(), "nothing bound to UDP port {port} in host {i} within 20 s");
    }

    /// Start `cmd` in host `i`'s namespace in the background (stdout piped).
    pub fn spawn(&self, i: u32, cmd: &str) -> std::process::Child {
        Command::new("ip")
            .args(["netns", "exec", &format!("{}h{i}", self.0), "sh", "-c", cmd])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Start a capture (dumpcap) of `iface` in host `i` into `file`, returning once it
    /// runs; stop it with [`stop_capture`].
    pub fn capture(&self, i: u32, iface: &str, file: &Path) -> std::process::Child {
        let c = self.spawn(i, &format!("exec dumpcap -q -i {iface} -w {}", file.display()));
        let started = until(std::time::Duration::from_secs(10), || file.exists());
        assert!(started.is_some(), "dumpcap on {iface} did not start");
        std::thread::sleep(std::time::Duration::from_millis(200));
        c
    }
}

/// End a capture started by [`Hosts::capture`] (SIGINT: dumpcap flushes its file).
pub fn stop_capture(mut c: std::process::Child) {
    let _ = sh(&format!("kill -INT {}", c.id()));
    let _ = c.wait();
}

/// A network namespace created (replacing any left over) and deleted on drop.
pub struct Netns(pub String);

impl Netns {
    pub fn add(name: &str) -> Netns {
        let o = sh(&format!("ip netns del {name} 2>/dev/null; ip netns add {name}"));
        assert!(o.status.success(), "ip netns add {name}: {}", text(&o));
        Netns(name.to_string())
    }

    /// `ip -n NAME CMD`, which must succeed.
    pub fn ip(&self, cmd: &str) {
        let out = sh(&format!("ip -n {} {cmd}", self.0));
        assert!(out.status.success(), "ip {cmd}: {}", show(&out));
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        sh(&format!("ip netns del {} 2>/dev/null", self.0));
    }
}

/// A child process (a pfcgen, a capture) killed if the test ends before it exits.
pub struct Proc(pub std::process::Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .args([&format!("{}/scripts/hosts.sh", env!("CARGO_MANIFEST_DIR")), "down"])
            .env("PFCSW_HOSTS_PREFIX", &self.0)
            .output();
    }
}

/// The real binary running in the background: stderr collected by a thread, which also
/// reports the "forwarding:" log line (ports started, lcores launched).
pub struct RunningSwitch {
    pub child: std::process::Child,
    started: std::sync::mpsc::Receiver<()>,
    reader: Option<std::thread::JoinHandle<String>>,
    out_reader: Option<std::thread::JoinHandle<String>>,
}

impl RunningSwitch {
    /// `pfcswitch run --config cfg --stats-json json [extra...]`.
    pub fn spawn(cfg: &Path, json: &Path, extra: &[&str]) -> RunningSwitch {
        RunningSwitch::spawn_env(cfg, json, extra, &[])
    }

    /// [`RunningSwitch::spawn`] with these environment variables set (test knobs).
    pub fn spawn_env(cfg: &Path, json: &Path, extra: &[&str], env: &[(&str, &str)]) -> RunningSwitch {
        let mut child = Command::new(BIN)
            .args(["run", "--config", cfg.to_str().unwrap(), "--stats-json", json.to_str().unwrap()])
            .args(extra)
            .envs(env.iter().copied())
            .env("RUST_LOG", "info")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn pfcswitch");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            use std::io::BufRead;
            let mut all = String::new();
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("forwarding:") {
                    let _ = tx.send(());
                }
                all.push_str(&line);
                all.push('\n');
            }
            all
        });
        let mut stdout = child.stdout.take().unwrap();
        let out_reader = std::thread::spawn(move || {
            use std::io::Read;
            let mut s = String::new();
            let _ = stdout.read_to_string(&mut s);
            s
        });
        RunningSwitch { child, started: rx, reader: Some(reader), out_reader: Some(out_reader) }
    }

    /// Wait for the "forwarding:" line; panics (after killing the switch) on timeout.
    pub fn wait_forwarding(&mut self, timeout: std::time::Duration) {
        if self.started.recv_timeout(timeout).is_err() {
            let _ = self.child.kill();
            let (_, out) = self.finish_raw();
            panic!("switch did not start forwarding within {timeout:?}\n{out}");
        }
    }

    /// The switch's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Send a signal (by name: "USR1", "INT", ...) to the switch process.
    pub fn signal(&self, sig: &str) {
        let st = Command::new("kill").args([&format!("-{sig}"), &self.child.id().to_string()]).status().unwrap();
        assert!(st.success(), "kill -{sig} failed");
    }

    fn finish_raw(&mut self) -> (std::process::ExitStatus, String) {
        let status = self.child.wait().unwrap();
        let stdout = self.out_reader.take().map(|r| r.join().unwrap_or_default()).unwrap_or_default();
        let log = self.reader.take().map(|r| r.join().unwrap_or_default()).unwrap_or_default();
        (status, format!("status: {status:?}\n--- stdout ---\n{stdout}\n--- stderr ---\n{log}"))
    }

    /// SIGINT, wait for the exit, assert success. Returns the output (status, stdout, log).
    pub fn stop(mut self) -> String {
        self.signal("INT");
        let (status, out) = self.finish_raw();
        assert!(status.success(), "switch failed\n{out}");
        out
    }
}

impl Drop for RunningSwitch {
    fn drop(&mut self) {
        if self.reader.is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A kernel veth pair `a` ⇄ `b` (IPv6 off, up), deleted on drop. The switch opens `a`
/// (net_pcap `rx_iface_in=a`); the test writes frames into `b` with [`Veth::inject`],
/// which the kernel delivers as received on `a` at the moment of the call.
pub struct Veth {
    pub a: String,
    pub b: String,
    tx: std::sync::Mutex<Box<dyn pnet_datalink::DataLinkSender>>,
}

impl Veth {
    pub fn new(a: &str, b: &str) -> Veth {
        let _ = sh(&format!("ip link del {a} 2>/dev/null"));
        let o = sh(&format!(
            "ip link add {a} type veth peer name {b} && \
             (sysctl -qw net.ipv6.conf.{a}.disable_ipv6=1; sysctl -qw net.ipv6.conf.{b}.disable_ipv6=1; true) && \
             ip link set {a} up && ip link set {b} up"
        ));
        assert!(o.status.success(), "veth {a}/{b}: {}", String::from_utf8_lossy(&o.stderr));
        // A raw (AF_PACKET) sender on `b`, through a safe API.
        let iface =
            pnet_datalink::interfaces().into_iter().find(|i| i.name == b).unwrap_or_else(|| panic!("no interface {b}"));
        let tx = match pnet_datalink::channel(&iface, Default::default()) {
            Ok(pnet_datalink::Channel::Ethernet(tx, _rx)) => tx,
            Ok(_) => panic!("{b}: not an Ethernet channel"),
            Err(e) => panic!("{b}: raw socket: {e}"),
        };
        Veth { a: a.to_string(), b: b.to_string(), tx: std::sync::Mutex::new(tx) }
    }

    /// Send one raw Ethernet frame out of `b` (so it arrives on `a`). Returns the time of
    /// the send (ns since the epoch, taken just before the syscall).
    pub fn inject(&self, frame: &[u8]) -> u64 {
        let mut tx = self.tx.lock().unwrap();
        let t = now_ns();
        match tx.send_to(frame, None) {
            Some(Ok(())) => {}
            Some(Err(e)) => panic!("send on {}: {e}", self.b),
            None => panic!("send on {}: no buffer", self.b),
        }
        t
    }
}

impl Drop for Veth {
    fn drop(&mut self) {
        let _ = sh(&format!("ip link del {} 2>/dev/null", self.a));
    }
}

// ---- test configurations ----

/// One `[[port]]` of a [`SwitchConfig`]: name and devargs, speed 100G and MTU 1500 unless
/// set, and any further keys as raw TOML values (`.set("pfc_enable", "[3]")`).
#[derive(Clone)]
pub struct Port {
    name: String,
    devargs: String,
    keys: Vec<(String, String)>,
}

impl Port {
    pub fn new(name: &str, devargs: &str) -> Port {
        Port {
            name: name.into(),
            devargs: devargs.into(),
            keys: vec![("speed".into(), "\"100G\"".into()), ("mtu".into(), "1500".into())],
        }
    }
    /// Set (or replace) a key; `value` is TOML (strings quoted).
    pub fn set(mut self, key: &str, value: &str) -> Port {
        match self.keys.iter_mut().find(|(k, _)| k == key) {
            Some(kv) => kv.1 = value.into(),
            None => self.keys.push((key.into(), value.into())),
        }
        self
    }
    pub fn speed(self, s: &str) -> Port {
        self.set("speed", &format!("\"{s}\""))
    }
    pub fn mtu(self, m: u32) -> Port {
        self.set("mtu", &m.to_string())
    }
    pub fn pfc_enable(self, prios: &[u8]) -> Port {
        self.set("pfc_enable", &format!("{prios:?}"))
    }
}

/// A switch configuration for one test: EAL without hugepages or PCI on the test's own
/// file prefix, the ports, one `[lcores]` section, and any other sections as raw TOML.
pub struct SwitchConfig {
    prefix: String,
    memory_mb: u32,
    lcores: String,
    ports: Vec<Port>,
    sections: Vec<String>,
    control: u32,
    lcores_keys: Vec<(String, String)>,
    workers: Vec<(u32, Vec<String>, Vec<String>)>,
}

impl SwitchConfig {
    /// `lcores` is EAL's `--lcores` value, e.g. `"0@0,1@1"`; lcore 0 is the control lcore.
    pub fn new(prefix: &str, lcores: &str) -> SwitchConfig {
        SwitchConfig {
            prefix: prefix.into(),
            memory_mb: 512,
            lcores: lcores.into(),
            ports: Vec::new(),
            sections: Vec::new(),
            control: 0,
            lcores_keys: Vec::new(),
            workers: Vec::new(),
        }
    }
    /// EAL's `--lcores` value instead of the one given to [`SwitchConfig::new`].
    pub fn eal_lcores(mut self, lcores: &str) -> SwitchConfig {
        self.lcores = lcores.into();
        self
    }
    pub fn memory_mb(mut self, mb: u32) -> SwitchConfig {
        self.memory_mb = mb;
        self
    }
    pub fn port(mut self, p: Port) -> SwitchConfig {
        self.ports.push(p);
        self
    }
    /// Change an already added port.
    pub fn edit_port(mut self, name: &str, f: impl FnOnce(Port) -> Port) -> SwitchConfig {
        let i = self.ports.iter().position(|p| p.name == name).unwrap_or_else(|| panic!("no port {name}"));
        self.ports[i] = f(self.ports[i].clone());
        self
    }
    /// Any other section(s), as TOML text (`[buffer]`, `[switch]`, `[qos.scheduler]`...).
    pub fn toml(mut self, text: &str) -> SwitchConfig {
        self.sections.push(text.trim_end().to_string());
        self
    }
    pub fn control(mut self, lcore: u32) -> SwitchConfig {
        self.control = lcore;
        self
    }
    /// A further `[lcores]` key (`"control_nap"`, `"\"10ms\""`); `value` is TOML.
    pub fn lcores_set(mut self, key: &str, value: &str) -> SwitchConfig {
        self.lcores_keys.push((key.into(), value.into()));
        self
    }
    /// A worker lcore polling `rx` ("port:queue") and owning the TX of `tx` (port names).
    pub fn worker(mut self, lcore: u32, rx: &[&str], tx: &[&str]) -> SwitchConfig {
        self.workers.push((
            lcore,
            rx.iter().map(|s| s.to_string()).collect(),
            tx.iter().map(|s| s.to_string()).collect(),
        ));
        self
    }
    /// One worker on lcore 1 polling queue 0 of every port and transmitting on all of them.
    pub fn one_worker(self) -> SwitchConfig {
        let names: Vec<String> = self.ports.iter().map(|p| p.name.clone()).collect();
        let rx: Vec<String> = names.iter().map(|n| format!("{n}:0")).collect();
        let rx: Vec<&str> = rx.iter().map(|s| s.as_str()).collect();
        let tx: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
        self.worker(1, &rx, &tx)
    }
    /// The `[eal]` section alone (e.g. for a SONiC port map, docs/sonic.md).
    pub fn eal_section(&self) -> String {
        format!(
            "[eal]\nargs = [\"--no-huge\", \"-m\", \"{}\", \"--no-pci\", \"--lcores={}\"]\nfile_prefix = \"{}\"\n",
            self.memory_mb, self.lcores, self.prefix
        )
    }
    pub fn render(&self) -> String {
        let mut s = self.eal_section();
        for p in &self.ports {
            s.push_str(&format!("\n[[port]]\nname = \"{}\"\ndevargs = \"{}\"\n", p.name, p.devargs));
            for (k, v) in &p.keys {
                s.push_str(&format!("{k} = {v}\n"));
            }
        }
        for sec in &self.sections {
            s.push('\n');
            s.push_str(sec);
            s.push('\n');
        }
        if !self.workers.is_empty() {
            s.push_str(&format!("\n[lcores]\ncontrol = {}\n", self.control));
            for (k, v) in &self.lcores_keys {
                s.push_str(&format!("{k} = {v}\n"));
            }
            for (lcore, rx, tx) in &self.workers {
                s.push_str(&format!("[[lcores.worker]]\nlcore = {lcore}\nrx = {rx:?}\ntx = {tx:?}\n"));
            }
        }
        s
    }
    /// Write the configuration to `path` and return it.
    pub fn write(&self, path: &Path) -> PathBuf {
        std::fs::write(path, self.render()).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        path.to_path_buf()
    }
}

/// The two-port pcap switch of the exact-count tests: Ethernet0 reads `in0.pcap` and
/// writes `out0.pcap`, Ethernet4 likewise with `in1`/`out1` and starts with TX off;
/// both at `speed`, PFC on priorities 3 and 4.
pub fn pcap_pair(d: &TestDir, speed: &str) -> SwitchConfig {
    let dir = d.path.display();
    SwitchConfig::new(&d.prefix(), "0@0,1@1")
        .port(
            Port::new("Ethernet0", &format!("net_pcap0,rx_pcap={dir}/in0.pcap,tx_pcap={dir}/out0.pcap"))
                .speed(speed)
                .pfc_enable(&[3, 4]),
        )
        .port(
            Port::new("Ethernet4", &format!("net_pcap1,rx_pcap={dir}/in1.pcap,tx_pcap={dir}/out1.pcap"))
                .speed(speed)
                .pfc_enable(&[3, 4])
                .set("tx_enable", "false"),
        )
}

/// The lossless PG profile of [`pcap_pair`]'s buffer (SONiC names, bytes).
pub struct LosslessProfile {
    pub pool: u64,
    pub size: u64,
    pub xoff: u64,
    pub xon: u64,
    pub xon_offset: u64,
    pub dynamic_th: i32,
}

/// The profile both exact-count tests (pfc_exact_counts, pfc_wire_tshark) compute their
/// PAUSE and drop indices from: φ 4000, η 10000, α = 1 in a 120000-byte pool.
pub const EXACT_PROFILE: LosslessProfile =
    LosslessProfile { pool: 120_000, size: 4000, xoff: 10000, xon: 2000, xon_offset: 3000, dynamic_th: 0 };

/// A buffer of two pools: the lossless one of `p.pool` bytes holding profile
/// `pg_lossless` (`p`) on PGs 3-4 of every port in `ports`, and a lossy one of `lossy_pool`
/// bytes holding `q_lossy` (no private, α = 1) on their queues 0-2 and 5-7; the total is
/// their sum.
pub fn lossless_buffer(p: &LosslessProfile, lossy_pool: u64, ports: &[&str]) -> String {
    let mut s = format!(
        r#"[buffer]
total_size = {}
[buffer.pool.ingress_lossless_pool]
size = {}
type = "ingress"
[buffer.pool.egress_lossy_pool]
size = {lossy_pool}
type = "egress"
[buffer.profile.pg_lossless]
pool = "ingress_lossless_pool"
size = {}
xoff = {}
xon = {}
xon_offset = {}
dynamic_th = {}
[buffer.profile.q_lossy]
pool = "egress_lossy_pool"
size = 0
dynamic_th = 0
[buffer.pg]
"#,
        p.pool + lossy_pool,
        p.pool,
        p.size,
        p.xoff,
        p.xon,
        p.xon_offset,
        p.dynamic_th
    );
    for port in ports {
        s.push_str(&format!("\"{port}|3-4\" = \"pg_lossless\"\n"));
    }
    s.push_str("[buffer.queue]\n");
    for port in ports {
        s.push_str(&format!("\"{port}|0-2\" = \"q_lossy\"\n\"{port}|5-7\" = \"q_lossy\"\n"));
    }
    s
}

/// An 8 MiB buffer whose lossless headroom the calculator sizes (no `xoff`: from each
/// port's speed, cable and the switch's `sw_response`): PG 3 of every port in `ports` on
/// `pg_lossless_profile` (private 4096, xon 4096, xon_offset 12288, α = 1/8) in a 6 MiB
/// pool, PG 0 on `ingress_lossy_profile`, queues 0-2 and 4-7 on `queue_lossy_profile`
/// (2 MiB egress pool). The buffer of the live-change and T0 incast tests.
pub fn computed_headroom_buffer(ports: &[&str]) -> String {
    let mut s = String::from(
        "[buffer]\ntotal_size = \"8MiB\"\n\
         [buffer.pool.ingress_lossless_pool]\nsize = \"6MiB\"\ntype = \"ingress\"\n\
         [buffer.pool.egress_lossy_pool]\nsize = \"2MiB\"\ntype = \"egress\"\n\
         [buffer.profile.pg_lossless_profile]\npool = \"ingress_lossless_pool\"\nsize = 4096\nxon = 4096\n\
         xon_offset = 12288\ndynamic_th = -3\n\
         [buffer.profile.ingress_lossy_profile]\npool = \"ingress_lossless_pool\"\ndynamic_th = 3\n\
         [buffer.profile.queue_lossy_profile]\npool = \"egress_lossy_pool\"\ndynamic_th = -2\n\
         [buffer.pg]\n",
    );
    for p in ports {
        s += &format!("\"{p}|3\" = \"pg_lossless_profile\"\n\"{p}|0\" = \"ingress_lossy_profile\"\n");
    }
    s += "[buffer.queue]\n";
    for p in ports {
        s += &format!("\"{p}|0-2\" = \"queue_lossy_profile\"\n\"{p}|4-7\" = \"queue_lossy_profile\"\n");
    }
    s
}

/// [`pcap_pair`]'s buffer: 200000 bytes with `p.pool` = 120000 ([`EXACT_PROFILE`]); PGs
/// 3-4 of both ports share one lossless profile in `ingress_lossless_pool`, every other
/// queue is lossy (80000-byte pool).
pub fn pcap_pair_buffer(p: &LosslessProfile) -> String {
    lossless_buffer(p, 80_000, &["Ethernet0", "Ethernet4"])
}

/// The switch of the PFC receive tests: Ethernet0 (10M, shaped to 1M) receives what the
/// test writes into the kernel veth `veth_a` and captures its TX in `out0.pcap`;
/// Ethernet4 (10G) replays `in1.pcap` and captures `out1.pcap`. Trust PCP, PFC on 3 and 4.
pub fn veth_and_pcap(d: &TestDir, veth_a: &str) -> SwitchConfig {
    let dir = d.path.display();
    SwitchConfig::new(&d.prefix(), "0@0,1@1")
        .port(
            Port::new("Ethernet0", &format!("net_pcap0,rx_iface_in={veth_a},tx_pcap={dir}/out0.pcap"))
                .speed("10M")
                .set("shaper_rate", "\"1M\"")
                .set("trust", "\"pcp\"")
                .pfc_enable(&[3, 4]),
        )
        .port(
            Port::new("Ethernet4", &format!("net_pcap1,rx_pcap={dir}/in1.pcap,tx_pcap={dir}/out1.pcap"))
                .speed("10G")
                .set("trust", "\"pcp\"")
                .pfc_enable(&[3, 4]),
        )
}

/// An untagged IPv4/UDP frame of `len` bytes with DSCP `dscp` and ECN `ecn`, a valid
/// header checksum, and a big-endian u32 `seq` at the start of the UDP payload.
pub fn ipv4_frame(dst: [u8; 6], src: [u8; 6], dscp: u8, ecn: u8, seq: u32, len: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(len);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&[0x08, 0x00]);
    let total = (len - 14) as u16;
    let mut h = [0x45, (dscp << 2) | (ecn & 3), 0, 0, 0, 1, 0, 0, 64, 17, 0, 0, 192, 0, 2, 1, 192, 0, 2, 2];
    h[2..4].copy_from_slice(&total.to_be_bytes());
    let mut sum: u32 = h.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], c[1]]))).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    h[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    f.extend_from_slice(&h);
    // UDP: ports 4791 (RoCEv2), length, checksum 0 (none).
    f.extend_from_slice(&[0x12, 0xb7, 0x12, 0xb7]);
    f.extend_from_slice(&(total - 20).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(&seq.to_be_bytes());
    f.resize(len, 0x5a);
    f
}

// ---- FRR ----

/// FRR's zebra and bgpd in network namespace `ns`, each in the pathspace `ns` (`-N`:
/// sockets under /var/run/frr/<ns>/, so `vtysh -N <ns>` reaches them), as scripts/clos.py
/// starts them per switch; configuration and logs in `dir`. Killed when dropped (declare it
/// after the namespaces it runs in, so that it drops first).
pub struct Frr {
    ns: String,
    dir: PathBuf,
    procs: Vec<std::process::Child>,
}

impl Frr {
    /// Whether FRR is installed (scripts/setup.sh installs it).
    pub fn installed() -> bool {
        Path::new("/usr/lib/frr/bgpd").exists() && Path::new("/usr/bin/vtysh").exists()
    }

    /// zebra, then bgpd with `bgpd_conf` (its log file is set here).
    pub fn start(ns: &str, dir: &Path, bgpd_conf: &str) -> Frr {
        std::fs::create_dir_all(dir).unwrap();
        let run_dir = format!("/var/run/frr/{ns}");
        std::fs::create_dir_all(&run_dir).unwrap();
        let d = dir.display();
        std::fs::write(dir.join("zebra.conf"), format!("hostname {ns}\nlog file {d}/zebra.log\n")).unwrap();
        std::fs::write(dir.join("bgpd.conf"), format!("hostname {ns}\nlog file {d}/bgpd.log\n!\n{bgpd_conf}")).unwrap();
        // The daemons run as user frr: their files and the directories on the way.
        let o = sh(&format!("chown -R frr:frr {d} {run_dir} && chmod 755 {d} {}", dir.parent().unwrap().display()));
        assert!(o.status.success(), "chown: {}", text(&o));
        let mut frr = Frr { ns: ns.into(), dir: dir.into(), procs: Vec::new() };
        for daemon in ["zebra", "bgpd"] {
            let child = Command::new("ip")
                .args(["netns", "exec", ns, &format!("/usr/lib/frr/{daemon}"), "-N", ns])
                .args(["-f", &format!("{d}/{daemon}.conf"), "-i", &format!("{run_dir}/{daemon}.pid")])
                .args(["--log", &format!("file:{d}/{daemon}.log")])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("{daemon}: {e}"));
            frr.procs.push(child);
            // bgpd connects to zebra's socket: zebra first.
            let up =
                until(std::time::Duration::from_secs(20), || Path::new(&format!("{run_dir}/{daemon}.vty")).exists());
            assert!(up.is_some(), "{daemon} in {ns} did not start: {}", frr.log(daemon));
        }
        frr
    }

    /// `vtysh -N <ns> -c <cmd>`'s standard output (its stderr says that the pathspace has
    /// no vtysh.conf).
    pub fn vtysh(&self, cmd: &str) -> String {
        let o =
            Command::new("ip").args(["netns", "exec", &self.ns, "vtysh", "-N", &self.ns, "-c", cmd]).output().unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// The daemon's log so far (for assertion messages).
    pub fn log(&self, daemon: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("{daemon}.log"))).unwrap_or_default()
    }
}

impl Drop for Frr {
    fn drop(&mut self) {
        for p in self.procs.iter_mut().rev() {
            let _ = sh(&format!("kill {}", p.id()));
            let _ = p.wait();
        }
        let _ = std::fs::remove_dir_all(format!("/var/run/frr/{}", self.ns));
    }
}
