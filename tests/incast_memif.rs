//! Incast through two chained switches over net_memif, each a separate `pfcswitch run`
//! process (one EAL each, no hugepages: memif shares its rings through memfd).
//!
//! ```text
//!   upstream switch (lcores 0@1,1@1)                      downstream switch (lcores 0@0,1@0)
//!   Ethernet0  net_pcap rx a.pcap  sender A: PCP 3 ─┐
//!                                                    ├─► Ethernet8 ══ memif ══ Ethernet0 ─► Ethernet4 net_pcap tx out.pcap
//!   Ethernet4  net_pcap rx b.pcap  sender B: PCP 1 ─┘    shaper 6M   (client)  (server)      shaper 3M (the bottleneck)
//!                                                                ◄── PFC PAUSE/RESUME ──
//! ```
//!
//! The senders are finite backlogs (FRAMES frames of FRAME_LEN bytes each, VLAN-tagged
//! IPv4/UDP marked ECT(0) as RoCEv2 traffic is, a sequence number in the payload, to a
//! never-learned MAC so they flood): the upstream
//! reads them at start-up into its (large, lossless) buffer and sends them at its egress
//! shaper's rate (6 Mb/s shared by two equal DWRR classes: two 3 Mb/s senders), honouring
//! the PFC frames the downstream sends back on the memif link. The downstream's egress is
//! shaped to 3 Mb/s (see [`BOTTLENECK`]; `scripts/incast.sh` replays the 5 Mb/s of the
//! P4/bmv2 PFC experiment) and its buffer is small (explicit `[buffer]`: 512 KiB, lossless PG 3 with
//! 64 KiB headroom so the scheduling delays of a loaded 2-core machine fit in it, lossy
//! queues at α = 1/4), so it congests within a fraction of a second. The senders' backlog
//! is finite because a pcap source cannot be paused: the upstream's buffer holding it all
//! is what makes its ingress lossless, and the test requires the upstream to have sent
//! every frame and dropped none.
//!
//! * PFC on (`pfc_enable = [3]` on the downstream): every PCP-3 frame reaches out.pcap,
//!   exactly once and in order; no lossless drop on either switch; the downstream sent
//!   PAUSE and RESUME for priority 3 and the upstream received them (and was paused for
//!   a measurable time); PCP 1 on the same link lost frames and no PFC frame ever named
//!   priority 1 (or anything but 3).
//! * PFC off (`pfc_enable = []` on the downstream): no PFC frame anywhere, and the PCP-3
//!   class loses frames at the bottleneck (the control case).
//! * ECN (PFC on, a marking WRED profile on the bottleneck's queue 3): CE marks counted
//!   and captured when congested, none when the bottleneck runs at the port speed.
//!
//! Both runs end with the conservation and mbuf-leak checks of both switches. The runs
//! are serialized (4 busy-polling threads on 2 cores already); each takes about 8 s.

mod common;
use common::*;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

/// Frames per sender.
const FRAMES: usize = 400;
const FRAME_LEN: usize = 1000;
const LOSSLESS_PCP: u8 = 3;
const LOSSY_PCP: u8 = 1;
const VID: u16 = 100;
const DST: [u8; 6] = [0x02, 0, 0, 0, 0, 0xdd]; // never learned anywhere: flooded
const SRC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];
const SRC_B: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];
/// The downstream's egress shaper. Half the senders' sum, not the 5/6 of the experiment
/// (`scripts/incast.sh` replays that): with 4 busy-polling threads on 2 cores, plus
/// whatever else runs, a shaper may deliver less than its rate, and the upstream (more
/// ports, higher rate) loses more than the downstream; 2x keeps the bottleneck congested.
const BOTTLENECK: &str = "3M";
/// How long the upstream runs: at 6 Mb/s (and the lossless class at ≥ 1.5 Mb/s through
/// the bottleneck) its backlog leaves in about 2.5 s.
const UPSTREAM_SECS: &str = "5";
/// The downstream keeps running this long after the upstream stopped, to drain.
const DRAIN: Duration = Duration::from_millis(1500);

/// An 802.1Q-tagged IPv4/UDP frame, ECN-capable (ECT(0), like RoCEv2 traffic), with a
/// 4-byte big-endian sequence number at the start of the UDP payload ([`SEQ_AT`]).
fn tagged_frame(src: [u8; 6], pcp: u8, seq: u32) -> Vec<u8> {
    let mut f = ipv4_frame(DST, src, 0, 2, seq, FRAME_LEN - 4);
    f.splice(12..12, [0x81, 0x00].into_iter().chain((((pcp as u16) << 13) | VID).to_be_bytes()));
    f
}

/// Offset of the sequence number: Ethernet 14 + tag 4 + IPv4 20 + UDP 8.
const SEQ_AT: usize = 46;

fn pcp_of(f: &[u8]) -> Option<u8> {
    (f.len() >= 22 && f[12] == 0x81 && f[13] == 0x00).then(|| f[14] >> 5)
}

fn seq_of(f: &[u8]) -> u32 {
    u32::from_be_bytes(f[SEQ_AT..SEQ_AT + 4].try_into().unwrap())
}

/// ECN codepoint of a tagged IPv4 frame.
fn ecn_of(f: &[u8]) -> u8 {
    f[19] & 3
}

/// The downstream's WRED/ECN profile on the bottleneck's queue 3 (marking only) in the
/// ECN runs: Kmin/Kmax a few frames deep, far below the Xoff point of the lossless PG.
const ECN_KMIN: u64 = 8_000;
const ECN_KMAX: u64 = 16_000;

/// Every port: declared 100 Mb/s (PFC quanta: 0xFFFF = 335 ms), 802.1p trusted, PFC on 3
/// (or on none). The shaped ports (memif link, bottleneck) use a 9100-byte MTU: the
/// shaper's bucket is two maximum frames, and at a few Mb/s two 1500-byte frames are ~4 ms
/// of tokens, less than the CFS time slices of 4 busy-polling threads on 2 cores (with mtu
/// 1500 the 6M shaper delivered ~5.2 Mb/s); 2 x 9122 bytes (~25 ms) rides them out.
fn incast_port(name: &str, devargs: &str, shaped: bool, pfc: &[u8]) -> Port {
    Port::new(name, devargs)
        .speed("100M")
        .set("cable_length", "\"5m\"")
        .set("trust", "\"pcp\"")
        .mtu(if shaped { 9100 } else { 1500 })
        .pfc_enable(pfc)
}

const SCHEDULER: &str = r#"[qos.scheduler]
"1" = { type = "DWRR", weight = 15 }
"3" = { type = "DWRR", weight = 15 }"#;

fn upstream_cfg(dir: &Path, prefix: &str, link: &str) -> SwitchConfig {
    let d = dir.display();
    SwitchConfig::new(&format!("{prefix}-up"), "0@1,1@1")
        .memory_mb(256)
        .toml("[switch]\nrx_ring_size = 256\ntx_ring_size = 256\nmbuf_count = 8192")
        .port(incast_port("Ethernet0", &format!("net_pcap0,rx_pcap={d}/a.pcap"), false, &[3]))
        .port(incast_port("Ethernet4", &format!("net_pcap1,rx_pcap={d}/b.pcap"), false, &[3]))
        .port(
            incast_port("Ethernet8", &format!("net_memif0,role=client,id=0,socket={link}"), true, &[3])
                .set("shaper_rate", "\"6M\""),
        )
        .toml(SCHEDULER)
        .toml("[buffer]\ntotal_size = \"16MiB\"")
        .one_worker()
}

fn downstream_cfg(dir: &Path, prefix: &str, link: &str, pfc: bool, bottleneck: &str, ecn: bool) -> SwitchConfig {
    let d = dir.display();
    let ecn_toml = format!(
        "[qos.wred_profile.ECN]\ngreen_min_threshold = {ECN_KMIN}\ngreen_max_threshold = {ECN_KMAX}\n\
         ecn = \"ecn_all\"\n[qos.queue]\n\"Ethernet4|3\" = {{ wred_profile = \"ECN\" }}"
    );
    let (pfc_enable, pg, queue): (&[u8], _, _) = if pfc {
        (
            &[3],
            "\"Ethernet0|3\" = \"pg_lossless_profile\"\n\"Ethernet0|0\" = \"ingress_lossy_profile\"\n\"Ethernet0|4\" = \"ingress_lossy_profile\"\n\
             \"Ethernet4|3\" = \"pg_lossless_profile\"\n\"Ethernet4|0\" = \"ingress_lossy_profile\"\n\"Ethernet4|4\" = \"ingress_lossy_profile\"",
            "\"Ethernet0|0-2\" = \"queue_lossy_profile\"\n\"Ethernet0|4-7\" = \"queue_lossy_profile\"\n\
             \"Ethernet4|0-2\" = \"queue_lossy_profile\"\n\"Ethernet4|4-7\" = \"queue_lossy_profile\"",
        )
    } else {
        (
            &[],
            "\"Ethernet0|0\" = \"ingress_lossy_profile\"\n\"Ethernet0|3-4\" = \"ingress_lossy_profile\"\n\
             \"Ethernet4|0\" = \"ingress_lossy_profile\"\n\"Ethernet4|3-4\" = \"ingress_lossy_profile\"",
            "\"Ethernet0|0-7\" = \"queue_lossy_profile\"\n\"Ethernet4|0-7\" = \"queue_lossy_profile\"",
        )
    };
    SwitchConfig::new(&format!("{prefix}-down"), "0@0,1@0")
        .memory_mb(256)
        .toml("[switch]\nrx_ring_size = 256\ntx_ring_size = 256\nmbuf_count = 4096")
        .port(incast_port("Ethernet0", &format!("net_memif0,role=server,id=0,socket={link}"), true, pfc_enable))
        .port(
            incast_port("Ethernet4", &format!("net_pcap0,tx_pcap={d}/out.pcap"), true, pfc_enable)
                .set("shaper_rate", &format!("\"{bottleneck}\"")),
        )
        .toml(SCHEDULER)
        .toml(&format!(
            r#"[buffer]
total_size = "512KiB"
[buffer.pool.ingress_lossless_pool]
size = "384KiB"
type = "ingress"
[buffer.pool.egress_lossy_pool]
size = "128KiB"
type = "egress"
[buffer.profile.pg_lossless_profile]
pool = "ingress_lossless_pool"
size = 4096
xoff = "64KiB"
xon = 4096
xon_offset = 12288
dynamic_th = -3
[buffer.profile.ingress_lossy_profile]
pool = "ingress_lossless_pool"
dynamic_th = 3
[buffer.profile.queue_lossy_profile]
pool = "egress_lossy_pool"
dynamic_th = -2
[buffer.pg]
{pg}
[buffer.queue]
{queue}"#
        ))
        .toml(if ecn { &ecn_toml } else { "" })
        .one_worker()
}

/// A spawned switch, killed if the test panics before it exits.
struct Proc {
    child: Option<Child>,
    name: &'static str,
    log: std::path::PathBuf,
    out: std::path::PathBuf,
}

impl Proc {
    fn spawn(name: &'static str, dir: &TestDir, cfg: &Path, json: &Path, duration: &str) -> Proc {
        let log = dir.join(&format!("{name}.stderr"));
        let out = dir.join(&format!("{name}.stdout"));
        let child = Command::new(BIN)
            .args([
                "run",
                "--config",
                cfg.to_str().unwrap(),
                "--duration",
                duration,
                "--stats-json",
                json.to_str().unwrap(),
            ])
            .env("RUST_LOG", "info")
            .stdout(Stdio::from(std::fs::File::create(&out).unwrap()))
            .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
            .spawn()
            .expect("spawn pfcswitch");
        Proc { child: Some(child), name, log, out }
    }

    fn logs(&self) -> String {
        format!(
            "--- {} stdout ---\n{}\n--- {} stderr ---\n{}",
            self.name,
            std::fs::read_to_string(&self.out).unwrap_or_default(),
            self.name,
            std::fs::read_to_string(&self.log).unwrap_or_default()
        )
    }

    /// Wait until the log shows the lcores forwarding (the memif server is listening).
    fn wait_forwarding(&mut self, timeout: Duration) {
        let t0 = Instant::now();
        loop {
            if std::fs::read_to_string(&self.log).unwrap_or_default().contains("forwarding:") {
                return;
            }
            if let Some(st) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("{} exited early ({st})\n{}", self.name, self.logs());
            }
            assert!(t0.elapsed() < timeout, "{} not forwarding after {timeout:?}\n{}", self.name, self.logs());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn interrupt(&self) {
        let pid = self.child.as_ref().unwrap().id().to_string();
        let _ = Command::new("kill").args(["-INT", &pid]).status();
    }

    /// Wait for exit (success required), killing it after `timeout`.
    fn wait_ok(&mut self, timeout: Duration) {
        let t0 = Instant::now();
        let child = self.child.as_mut().unwrap();
        let st = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            if t0.elapsed() > timeout {
                let _ = child.kill();
                let _ = child.wait();
                self.child = None;
                panic!("{} still running after {timeout:?}: killed\n{}", self.name, self.logs());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        self.child = None;
        assert!(st.success(), "{} failed ({st})\n{}", self.name, self.logs());
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

struct Outcome {
    up: serde_json::Value,
    down: serde_json::Value,
    /// Frames out of the bottleneck, in order.
    out: Vec<Vec<u8>>,
    logs: String,
    _dir: TestDir,
}

fn run_incast(pfc: bool) -> Outcome {
    run_incast_with(pfc, BOTTLENECK, false)
}

fn run_incast_with(pfc: bool, bottleneck: &str, ecn: bool) -> Outcome {
    let dir = TestDir::new(if pfc { "incast-on" } else { "incast-off" });
    let prefix = dir.prefix();
    // Abstract socket namespace (memif's default): unique per test, no file to clean.
    let link = dir.join("link.sock").display().to_string();
    let a: Vec<_> = (0..FRAMES as u32).map(|i| tagged_frame(SRC_A, LOSSLESS_PCP, i)).collect();
    let b: Vec<_> = (0..FRAMES as u32).map(|i| tagged_frame(SRC_B, LOSSY_PCP, i)).collect();
    write_pcap(&dir.join("a.pcap"), &a);
    write_pcap(&dir.join("b.pcap"), &b);
    let (up_cfg, down_cfg) = (dir.join("up.toml"), dir.join("down.toml"));
    upstream_cfg(&dir.path, &prefix, &link).write(&up_cfg);
    downstream_cfg(&dir.path, &prefix, &link, pfc, bottleneck, ecn).write(&down_cfg);
    let (up_json, down_json) = (dir.join("up.json"), dir.join("down.json"));

    let t0 = Instant::now();
    // Downstream first (memif server), stopped by SIGINT once the upstream is done.
    let mut down = Proc::spawn("downstream", &dir, &down_cfg, &down_json, "45");
    down.wait_forwarding(Duration::from_secs(15));
    let mut up = Proc::spawn("upstream", &dir, &up_cfg, &up_json, UPSTREAM_SECS);
    up.wait_ok(Duration::from_secs(25));
    std::thread::sleep(DRAIN);
    down.interrupt();
    down.wait_ok(Duration::from_secs(15));
    eprintln!(
        "incast pfc={}: both switches done in {:.1} s",
        if pfc { "on" } else { "off" },
        t0.elapsed().as_secs_f64()
    );

    // EAL leaves its runtime directory behind; remove ours (both processes have exited).
    for side in ["up", "down"] {
        let _ = std::fs::remove_dir_all(format!("/var/run/dpdk/{prefix}-{side}"));
    }
    let logs = format!("{}\n{}", up.logs(), down.logs());
    let (up_j, down_j) = (read_json(&up_json), read_json(&down_json));
    let out = read_pcap(&dir.join("out.pcap"));
    Outcome { up: up_j, down: down_j, out, logs, _dir: dir }
}

fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn tc(p: &serde_json::Value, tc: usize) -> &serde_json::Value {
    p["tc"].as_array().and_then(|a| a.get(tc)).unwrap_or_else(|| panic!("no tc[{tc}] in {}", p["name"]))
}

fn prio(p: &serde_json::Value, field: &str, n: usize) -> u64 {
    u(&p["pfc"][field][n])
}

/// What both runs check: the upstream sent its whole backlog, lost nothing, and the
/// downstream received it all; both switches conserve packets and mbufs.
fn common_checks(o: &Outcome) -> (Vec<u32>, Vec<u32>) {
    let (up, down) = (&o.up, &o.down);
    let ctx = || format!("\nupstream: {up}\ndownstream: {down}\n{}", o.logs);
    assert_conserved(up);
    assert_conserved(down);
    let up_link = port(up, "Ethernet8");
    for name in ["Ethernet0", "Ethernet4", "Ethernet8"] {
        let p = port(up, name);
        assert_eq!(u(&p["drops_total"]), 0, "upstream {name} dropped{}", ctx());
        assert_eq!(u(&p["lossless_drops"]), 0, "upstream {name} lossless drops{}", ctx());
    }
    assert_eq!(u(&port(up, "Ethernet0")["rx_packets"]), FRAMES as u64, "sender A backlog not read{}", ctx());
    assert_eq!(u(&port(up, "Ethernet4")["rx_packets"]), FRAMES as u64, "sender B backlog not read{}", ctx());
    assert_eq!(
        u(&up_link["tx_packets"]),
        2 * FRAMES as u64,
        "upstream did not send its whole backlog in {UPSTREAM_SECS} s{}",
        ctx()
    );
    let d_in = port(down, "Ethernet0");
    assert_eq!(
        u(&d_in["rx_packets"]),
        2 * FRAMES as u64,
        "downstream did not receive everything the upstream sent{}",
        ctx()
    );
    assert_eq!(u(&tc(d_in, 3)["rx"]), FRAMES as u64, "{}", ctx());
    assert_eq!(u(&tc(d_in, 1)["rx"]), FRAMES as u64, "{}", ctx());
    assert_eq!(
        u(&d_in["drops"]["flushed_at_stop"]) + u(&port(down, "Ethernet4")["drops"]["flushed_at_stop"]),
        0,
        "downstream not drained at stop{}",
        ctx()
    );
    // Per class, what left the bottleneck, from the capture.
    let (mut lossless, mut lossy) = (Vec::new(), Vec::new());
    for f in &o.out {
        match pcp_of(f) {
            Some(LOSSLESS_PCP) => lossless.push(seq_of(f)),
            Some(LOSSY_PCP) => lossy.push(seq_of(f)),
            other => panic!("unexpected frame in out.pcap (pcp {other:?}, {} bytes){}", f.len(), ctx()),
        }
    }
    assert_eq!(lossless.len() as u64, u(&tc(d_in, 3)["tx"]), "capture vs counters, TC3{}", ctx());
    assert_eq!(lossy.len() as u64, u(&tc(d_in, 1)["tx"]), "capture vs counters, TC1{}", ctx());
    (lossless, lossy)
}

#[test]
fn incast_pfc_on_lossless_class_loses_nothing() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let o = run_incast(true);
    let (lossless, lossy) = common_checks(&o);
    let (up, down) = (&o.up, &o.down);
    let ctx = || format!("\nupstream: {up}\ndownstream: {down}\n{}", o.logs);
    let d_in = port(down, "Ethernet0");
    let up_link = port(up, "Ethernet8");

    // Lossless: every frame of sender A out of the bottleneck, once, in order.
    assert_eq!(lossless, (0..FRAMES as u32).collect::<Vec<_>>(), "PCP 3 frames lost, duplicated or reordered{}", ctx());
    for p in down["ports"].as_array().unwrap() {
        assert_eq!(u(&p["lossless_drops"]), 0, "downstream lossless drops on {}{}", p["name"], ctx());
        assert_eq!(u(&p["lossless_nic_loss"]), 0, "downstream NIC loss on {}{}", p["name"], ctx());
    }
    assert_eq!(u(&tc(d_in, 3)["dropped"]), 0, "{}", ctx());

    // PFC happened, for priority 3 only, on both sides of the link.
    assert!(prio(d_in, "tx_pause", 3) > 0, "downstream sent no PAUSE{}", ctx());
    assert!(prio(d_in, "tx_resume", 3) > 0, "downstream sent no RESUME{}", ctx());
    assert!(prio(up_link, "rx_pause", 3) > 0, "upstream received no PAUSE{}", ctx());
    assert!(prio(up_link, "rx_resume", 3) > 0, "upstream received no RESUME{}", ctx());
    assert!(prio(up_link, "rx_pause_duration_us", 3) > 0, "upstream never paused{}", ctx());
    assert!(u(&up_link["mac_control_rx"]) > 0 && u(&up_link["mac_control_rx"]) <= u(&d_in["control_tx"]), "{}", ctx());
    assert!(u(&down["pfc_reaction"]["count"]) > 0, "{}", ctx());
    for n in (0..8).filter(|&n| n != LOSSLESS_PCP as usize) {
        for f in ["tx_pause", "tx_resume"] {
            assert_eq!(prio(d_in, f, n), 0, "downstream {f}[{n}]{}", ctx());
        }
        for f in ["rx_pause", "rx_resume", "rx_pause_duration_us"] {
            assert_eq!(prio(up_link, f, n), 0, "upstream {f}[{n}]{}", ctx());
        }
    }
    // No PFC frame towards the bottleneck port, nor from the upstream at all (its
    // buffer holds both backlogs without reaching Xoff).
    assert_eq!(u(&port(down, "Ethernet4")["control_tx"]), 0, "{}", ctx());

    // Lossy, same link, same run: dropped, never paused.
    let lossy_drops = u(&tc(d_in, 1)["dropped"]);
    assert!(lossy_drops > 0, "the lossy class was not dropped: no congestion?{}", ctx());
    assert_eq!(lossy.len() as u64 + lossy_drops, FRAMES as u64, "{}", ctx());
    assert_eq!(u(&d_in["drops"]["lossy_threshold"]), lossy_drops, "{}", ctx());
    assert!(lossy.windows(2).all(|w| w[0] < w[1]), "PCP 1 frames reordered{}", ctx());
    eprintln!(
        "pfc on: lossless {}/{} delivered, 0 dropped; lossy {} delivered, {} dropped; PAUSE {} RESUME {} sent, upstream paused {} us",
        lossless.len(),
        FRAMES,
        lossy.len(),
        lossy_drops,
        prio(d_in, "tx_pause", 3),
        prio(d_in, "tx_resume", 3),
        prio(up_link, "rx_pause_duration_us", 3)
    );
}

#[test]
fn incast_pfc_off_lossless_class_drops() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let o = run_incast(false);
    let (lossless, lossy) = common_checks(&o);
    let (up, down) = (&o.up, &o.down);
    let ctx = || format!("\nupstream: {up}\ndownstream: {down}\n{}", o.logs);
    let d_in = port(down, "Ethernet0");
    let up_link = port(up, "Ethernet8");

    // No PFC anywhere.
    for p in down["ports"].as_array().unwrap() {
        assert_eq!(u(&p["control_tx"]), 0, "downstream {} sent PFC with pfc_enable = []{}", p["name"], ctx());
    }
    assert_eq!(u(&up_link["mac_control_rx"]), 0, "{}", ctx());
    for n in 0..8 {
        assert_eq!(prio(up_link, "rx_pause", n), 0, "{}", ctx());
    }

    // The would-be lossless class loses frames at the bottleneck (as lossy drops: with
    // PFC off it is an ordinary class there).
    let lossless_drops = u(&tc(d_in, 3)["dropped"]);
    assert!(lossless_drops > 0, "PCP 3 not dropped without PFC: no congestion?{}", ctx());
    assert_eq!(lossless.len() as u64 + lossless_drops, FRAMES as u64, "{}", ctx());
    assert!(lossless.windows(2).all(|w| w[0] < w[1]), "{}", ctx());
    let lossy_drops = u(&tc(d_in, 1)["dropped"]);
    assert_eq!(lossy.len() as u64 + lossy_drops, FRAMES as u64, "{}", ctx());
    assert_eq!(u(&d_in["drops"]["lossy_threshold"]), lossless_drops + lossy_drops, "{}", ctx());
    assert_eq!(u(&d_in["lossless_drops"]), 0, "no lossless class on the downstream, so no lossless drops{}", ctx());
    eprintln!(
        "pfc off: lossless {}/{} delivered, {} dropped; lossy {} delivered, {} dropped",
        lossless.len(),
        FRAMES,
        lossless_drops,
        lossy.len(),
        lossy_drops
    );
}

/// ECN under incast (marking where the incast builds its queue): the same chained
/// switches with a marking profile on the bottleneck's lossless queue. Congested (3M bottleneck): CE marks
/// are counted and every counted mark is a CE frame in the capture, the lossless class
/// still loses nothing. Not congested (the bottleneck at the port speed, fed at 6M): no
/// mark at all.
#[test]
fn incast_ecn_marks_only_when_congested() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for (bottleneck, congested) in [(BOTTLENECK, true), ("100M", false)] {
        let o = run_incast_with(true, bottleneck, true);
        let (lossless, _) = common_checks(&o);
        let ctx = || format!("\nbottleneck {bottleneck}\ndownstream: {}\n{}", o.down, o.logs);
        assert_eq!(lossless, (0..FRAMES as u32).collect::<Vec<_>>(), "PCP 3 frames lost or reordered{}", ctx());
        let q3 = &port(&o.down, "Ethernet4")["queues"][3];
        let marked = q3["ecn_marked_packets"].as_u64().unwrap();
        let ce = o.out.iter().filter(|f| pcp_of(f) == Some(LOSSLESS_PCP) && ecn_of(f) == 3).count() as u64;
        assert_eq!(marked, ce, "counter vs CE frames in the capture{}", ctx());
        assert_eq!(q3["wred_dropped_packets"], 0, "{}", ctx());
        assert!(
            o.out.iter().filter(|f| pcp_of(f) == Some(LOSSY_PCP)).all(|f| ecn_of(f) == 2),
            "queue 1 has no profile"
        );
        if congested {
            assert!(marked > 0, "no CE mark at a congested bottleneck{}", ctx());
        } else if marked > 0 {
            // Fed at 6 Mb/s into 100 Mb/s, queue 3 reaches Kmin only while the bottleneck's
            // TX lcore is away: for Kmin's 8,000 B, 10.7 ms (docs/testing.md: a loaded
            // machine is stated, not hidden; on a quiet one a mark here fails).
            let needs_ns = ECN_KMIN * 8 * 1_000_000_000 / 6_000_000;
            let away = lcores_away_ns(&o.down);
            assert!(away > needs_ns, "CE marks without congestion (no lcore away over {needs_ns} ns){}", ctx());
            eprintln!("note: {marked} CE marks at 100M, allowed: an lcore was away {:.1} ms", away as f64 / 1e6);
        }
        eprintln!("ecn incast, bottleneck {bottleneck}: {marked} of {} PCP-3 frames marked CE", lossless.len());
    }
}
