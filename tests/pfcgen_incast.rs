//! End to end with senders that obey PFC: pfcgen → switch A → switch B (bottleneck) →
//! pfcgen, every link net_memif, three processes (one EAL each, no hugepages).
//!
//! ```text
//!  pfcgen g0 ══ Ethernet0 ┐                                              
//!  (s0, PCP 3)            ├ switch A  Ethernet8 ══ Ethernet0  switch B  Ethernet4 ══ g2 pfcgen
//!  pfcgen g1 ══ Ethernet4 ┘           (client)     (server)   shaper = bottleneck     (receiver)
//!  (s1, PCP 3)       ◄── PFC ──                ◄── PFC ──
//! ```
//!
//! Incast 2:1: two streams of PCP 3, each offered at the bottleneck's rate, meet in A and
//! leave B through an egress shaped to that rate. With PFC on, B pauses A, A's buffer
//! fills and A pauses the generator, which stops those streams at a frame boundary (the
//! switch's own `PfcRx`): **0 lost, 0 reordered, 0 duplicated**, PAUSE frames received by
//! the generator, and the senders' achieved rate is the bottleneck's (what the receiver
//! got), not what they offered. With PFC off on B, the same traffic loses frames at the
//! bottleneck.
//!
//! The receiver's MAC is learned first (a short broadcast from g2, as a host's ARP
//! would), so the senders' frames are not flooded back to the other sender.
//!
//! Short in CI (`PFCGEN_INCAST_COUNT`, default 4000 frames per sender); the soak of
//! docs/pfcgen.md runs the same test with `PFCGEN_INCAST_COUNT=5000000
//! PFCGEN_INCAST_SIZE=64 PFCGEN_INCAST_BOTTLENECK=200M`.

mod common;
use common::*;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

const RX_MAC: &str = "02:00:00:00:00:c2";

fn env_or(k: &str, d: &str) -> String {
    std::env::var(k).unwrap_or_else(|_| d.to_string())
}

/// Frames per sender, frame size (with FCS), the bottleneck's shaper rate.
fn params() -> (u64, u64, String) {
    (
        env_or("PFCGEN_INCAST_COUNT", "4000").parse().expect("PFCGEN_INCAST_COUNT"),
        env_or("PFCGEN_INCAST_SIZE", "1000").parse().expect("PFCGEN_INCAST_SIZE"),
        env_or("PFCGEN_INCAST_BOTTLENECK", "30M"),
    )
}

/// The buffer of both switches: PG 3 lossless on every port (or nothing lossless), a
/// headroom that covers a generator and a switch descheduled for a few ms on a loaded
/// 2-core machine (and what a memif ring holds), frames of `size` bytes.
fn buffer(ports: &[&str], pfc: bool, size: u64) -> String {
    let total = (8u64 << 20).min((size * 12_000).max(4 << 20));
    let xoff = (512u64 << 10).min(total / 4);
    let (mut pg, mut queue) = (String::new(), String::new());
    for p in ports {
        if pfc {
            pg += &format!("\"{p}|3\" = \"pg_lossless_profile\"\n\"{p}|0\" = \"ingress_lossy_profile\"\n\"{p}|4\" = \"ingress_lossy_profile\"\n");
            queue += &format!("\"{p}|0-2\" = \"queue_lossy_profile\"\n\"{p}|4-7\" = \"queue_lossy_profile\"\n");
        } else {
            pg += &format!("\"{p}|0\" = \"ingress_lossy_profile\"\n\"{p}|3-4\" = \"ingress_lossy_profile\"\n");
            queue += &format!("\"{p}|0-7\" = \"queue_lossy_profile\"\n");
        }
    }
    format!(
        r#"[buffer]
total_size = {total}
[buffer.pool.ingress_lossless_pool]
size = {lossless}
type = "ingress"
[buffer.pool.egress_lossy_pool]
size = {lossy}
type = "egress"
[buffer.profile.pg_lossless_profile]
pool = "ingress_lossless_pool"
size = 4096
xoff = {xoff}
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
{pg}[buffer.queue]
{queue}"#,
        lossless = total * 3 / 4,
        lossy = total / 4,
    )
}

/// The switches' MTU and mbufs for frames of `size`: MTU 9100 for the usual 1000-byte
/// frames (the shaper's bucket is two maximum frames: ~1.5 ms at 100M rides out the time
/// slices of busy-polling processes), 1500 with more mbufs for the small frames of the
/// soak (a 4 MiB buffer of 64-byte frames).
fn mtu_mbufs(size: u64) -> (u32, u32) {
    if size <= 512 {
        (1500, 65535)
    } else {
        (9100, 16383)
    }
}

/// Every port's declared speed (switches and generator alike: PFC quanta are bit-times at
/// it): 100 Mb/s (0xFFFF quanta = 335 ms, far above any scheduling delay here), 1 Gb/s
/// (33.5 ms) for a bottleneck above 100 Mb/s.
fn speed() -> &'static str {
    if pfcswitch::units::parse_speed(&params().2).unwrap() > 100_000_000 {
        "1G"
    } else {
        "100M"
    }
}

/// Every switch port: the declared [`speed`], 802.1p trusted.
fn sw_port(name: &str, devargs: &str, pfc: &[u8]) -> Port {
    Port::new(name, devargs).speed(speed()).set("cable_length", "\"5m\"").set("trust", "\"pcp\"").pfc_enable(pfc)
}

fn switch(prefix: &str, lcores: &str, ports: Vec<Port>, names: &[&str], pfc: bool, size: u64) -> SwitchConfig {
    let (mtu, mbufs) = mtu_mbufs(size);
    let mut c = SwitchConfig::new(prefix, lcores)
        .memory_mb(512)
        .toml(&format!("[switch]\nrx_ring_size = 512\ntx_ring_size = 512\nmbuf_count = {mbufs}"));
    for p in ports {
        c = c.port(p.mtu(mtu));
    }
    c.toml(&buffer(names, pfc, size)).lcores_set("worker_idle", "\"adaptive\"").one_worker()
}

/// A child process killed if the test fails before it exits.
struct Proc {
    child: Option<Child>,
    name: &'static str,
    out: std::path::PathBuf,
    err: std::path::PathBuf,
}

impl Proc {
    fn spawn(name: &'static str, dir: &TestDir, cmd: &mut Command) -> Proc {
        let (out, err) = (dir.join(&format!("{name}.stdout")), dir.join(&format!("{name}.stderr")));
        let child = cmd
            .env("RUST_LOG", "info")
            .stdout(Stdio::from(std::fs::File::create(&out).unwrap()))
            .stderr(Stdio::from(std::fs::File::create(&err).unwrap()))
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {name}: {e}"));
        Proc { child: Some(child), name, out, err }
    }
    fn logs(&self) -> String {
        let r = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        format!("--- {} stdout ---\n{}\n--- {} stderr ---\n{}", self.name, r(&self.out), self.name, r(&self.err))
    }
    fn wait_log(&mut self, needle: &str, timeout: Duration) {
        let t0 = Instant::now();
        while !std::fs::read_to_string(&self.err).unwrap_or_default().contains(needle) {
            if let Some(st) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("{} exited early ({st})\n{}", self.name, self.logs());
            }
            assert!(t0.elapsed() < timeout, "{}: no '{needle}' after {timeout:?}\n{}", self.name, self.logs());
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    fn interrupt(&self) {
        let _ = Command::new("kill").args(["-INT", &self.child.as_ref().unwrap().id().to_string()]).status();
    }
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
    gen: serde_json::Value,
    a: serde_json::Value,
    b: serde_json::Value,
    logs: String,
    secs: f64,
    _dir: TestDir,
}

/// What the senders are: plain UDP (the first two tests), or RoCEv2 through B's ECN
/// marking ([`ecn_profile`]) to a receiver that answers CE with CNPs, the senders
/// ignoring them (`Roce`) or reacting with DCQCN (`Dcqcn`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Senders {
    Udp,
    Roce,
    Dcqcn,
}

/// DCQCN-style marking (RED on the instantaneous queue, SONiC's `WRED_PROFILE`) on B's
/// bottleneck queue 3: Kmin 5 KB, Kmax 200 KB, Pmax 1 % as in the DCQCN paper. A marked
/// byte sits behind at most Kmax, far below the ~700 KB a PG holds before Xoff.
fn ecn_profile() -> &'static str {
    "[qos]\nwred_seed = 11\n[qos.wred_profile.DCQCN]\ngreen_min_threshold = 5000\ngreen_max_threshold = 200000\n\
     green_drop_probability = 1\nwred_green_enable = true\necn = \"ecn_all\"\n\
     [qos.queue]\n\"Ethernet4|3\" = { wred_profile = \"DCQCN\" }\n"
}

/// DCQCN's time scale for the senders and the CNP interval: 40 Gbit/s over the
/// bottleneck, so that the paper's loop (its timers, CNP interval and rate steps, in
/// bytes and packets) runs as at 40G (docs/dcqcn.md).
fn time_scale() -> f64 {
    40e9 / pfcswitch::units::parse_speed(&params().2).unwrap() as f64
}

fn run(pfc: bool) -> Outcome {
    run_with(pfc, Senders::Udp)
}

fn run_with(pfc: bool, senders: Senders) -> Outcome {
    let (count, size, bottleneck) = params();
    let dir = TestDir::new(match (pfc, senders) {
        (false, _) => "gen-incast-off",
        (true, Senders::Udp) => "gen-incast-on",
        (true, Senders::Roce) => "gen-incast-roce",
        (true, Senders::Dcqcn) => "gen-incast-dcqcn",
    });
    let prefix = dir.prefix();
    let sock = |n: &str| dir.join(&format!("{n}.sock")).display().to_string();
    let (sa0, sa1, link, sb1) = (sock("a0"), sock("a1"), sock("link"), sock("b1"));
    let memif = |i: u32, role: &str, s: &str| format!("net_memif{i},role={role},id=0,socket={s}");
    let b_pfc: &[u8] = if pfc { &[3] } else { &[] };
    let a_cfg = switch(
        &format!("{prefix}-a"),
        "0@1,1@1",
        vec![
            sw_port("Ethernet0", &memif(0, "server", &sa0), &[3]),
            sw_port("Ethernet4", &memif(1, "server", &sa1), &[3]),
            sw_port("Ethernet8", &memif(2, "client", &link), &[3]),
        ],
        &["Ethernet0", "Ethernet4", "Ethernet8"],
        true,
        size,
    )
    .write(&dir.join("a.toml"));
    let b_cfg = switch(
        &format!("{prefix}-b"),
        "0@0,1@0",
        vec![
            sw_port("Ethernet0", &memif(0, "server", &link), b_pfc),
            sw_port("Ethernet4", &memif(1, "server", &sb1), b_pfc).set("shaper_rate", &format!("\"{bottleneck}\"")),
        ],
        &["Ethernet0", "Ethernet4"],
        pfc,
        size,
    )
    .toml(if senders == Senders::Udp { "" } else { ecn_profile() })
    .write(&dir.join("b.toml"));
    let roce = match senders {
        Senders::Udp => "",
        Senders::Roce => "roce = true\n",
        Senders::Dcqcn => "roce = true\ndcqcn = true\n",
    };
    let cnp = if senders == Senders::Udp {
        String::new()
    } else {
        // PFCGEN_INCAST_DCQCN="byte_counter = \"64KiB\"" (TOML lines): other reaction-point parameters, by hand.
        format!("[cnp]\nenable = true\n[dcqcn]\ntime_scale = {}\n{}\n", time_scale(), env_or("PFCGEN_INCAST_DCQCN", ""))
    };
    let gen_cfg = dir.join("gen.toml");
    let stream = |i: u32, port: &str| {
        format!(
            "[[stream]]\nname = \"s{i}\"\nport = \"{port}\"\nrate = \"{bottleneck}bit/s\"\nsize = {size}\npcp = 3\nvlan = 100\n\
             ecn = \"ect0\"\ndst_port = 4791\nsrc_port = \"49152-65535\"\nsrc_mac = \"02:00:00:00:00:a{i}\"\ndst_mac = \"{RX_MAC}\"\n\
             src_ip = \"10.0.0.{}\"\ndst_ip = \"10.0.1.1\"\nstart = \"300ms\"\n{roce}",
            i + 1
        )
    };
    std::fs::write(
        &gen_cfg,
        format!(
            "{cnp}[eal]\nargs = [\"--no-huge\", \"-m\", \"256\", \"--no-pci\", \"--lcores=0@1\", \"--file-prefix={prefix}-gen\"]\n\
             [[port]]\nname = \"g0\"\ndevargs = \"{}\"\nspeed = \"{speed}\"\n\
             [[port]]\nname = \"g1\"\ndevargs = \"{}\"\nspeed = \"{speed}\"\n\
             [[port]]\nname = \"g2\"\ndevargs = \"{}\"\nspeed = \"{speed}\"\n\
             {}{}\
             [[stream]]\nname = \"learn\"\nport = \"g2\"\nrate = \"100pps\"\ncount = 3\nsrc_mac = \"{RX_MAC}\"\npcp = 1\nvlan = 100\n",
            memif(0, "client", &sa0),
            memif(1, "client", &sa1),
            memif(2, "client", &sb1),
            stream(0, "g0"),
            stream(1, "g1"),
            speed = speed(),
        ),
    )
    .unwrap();
    let (a_json, b_json, gen_json) = (dir.join("a.json"), dir.join("b.json"), dir.join("gen.json"));
    let run_sw = |cfg: &Path, json: &Path| {
        let mut c = Command::new(BIN);
        c.args(["run", "--config", cfg.to_str().unwrap(), "--stats-json", json.to_str().unwrap(), "--duration", "600"]);
        c
    };
    // By hand (PFCGEN_INCAST_PLOT=DIR): the senders' rates, B's bottleneck queue and the
    // switches' PAUSE frames over time, for scripts/plot_dcqcn.py (docs/dcqcn.md).
    let plot = std::env::var("PFCGEN_INCAST_PLOT").ok().filter(|_| senders != Senders::Udp);
    let tag = if senders == Senders::Dcqcn { "dcqcn" } else { "pfc" };
    let t0 = Instant::now();
    let mut b = Proc::spawn("switch-b", &dir, &mut run_sw(&b_cfg, &b_json));
    b.wait_log("forwarding:", Duration::from_secs(20));
    let mut a = Proc::spawn("switch-a", &dir, &mut run_sw(&a_cfg, &a_json));
    a.wait_log("forwarding:", Duration::from_secs(20));
    let mut gen_cmd = Command::new(GEN_BIN);
    gen_cmd.args([
        "run",
        "--config",
        gen_cfg.to_str().unwrap(),
        "--count",
        &count.to_string(),
        "--drain",
        "1s",
        "--stats-json",
        gen_json.to_str().unwrap(),
    ]);
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let poller = plot.as_ref().map(|d| {
        gen_cmd.args(["--stats-interval", "100ms", "--rates-csv", &format!("{d}/{tag}-rates.csv")]);
        let (done, path, prefix) = (done.clone(), format!("{d}/{tag}-switch.csv"), prefix.clone());
        std::thread::spawn(move || poll_switches(&path, &prefix, &done))
    });
    let mut g = Proc::spawn("pfcgen", &dir, &mut gen_cmd);
    g.wait_ok(Duration::from_secs(60 + 2 * count * (size + 20) * 8 / 1_000_000));
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    if let Some(p) = poller {
        p.join().unwrap();
    }
    let secs = t0.elapsed().as_secs_f64();
    a.interrupt();
    a.wait_ok(Duration::from_secs(20));
    b.interrupt();
    b.wait_ok(Duration::from_secs(20));
    let logs = format!("{}\n{}\n{}", g.logs(), a.logs(), b.logs());
    Outcome { gen: read_json(&gen_json), a: read_json(&a_json), b: read_json(&b_json), logs, secs, _dir: dir }
}

fn stream<'a>(g: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    g["streams"].as_array().unwrap().iter().find(|s| s["name"] == name).unwrap_or_else(|| panic!("no stream {name}"))
}

fn gen_port<'a>(g: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    g["ports"].as_array().unwrap().iter().find(|s| s["name"] == name).unwrap_or_else(|| panic!("no port {name}"))
}

fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn pfcgen_incast_pfc_on_is_lossless_and_paced_by_pause() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (count, _, bottleneck) = params();
    let o = run(true);
    let ctx = || format!("\ngen: {}\nA: {}\nB: {}\n{}", o.gen, o.a, o.b, o.logs);
    assert_conserved(&o.a);
    assert_conserved(&o.b);
    for sw in [&o.a, &o.b] {
        for p in sw["ports"].as_array().unwrap() {
            assert_eq!(u(&p["lossless_drops"]), 0, "lossless drops on {}{}", p["name"], ctx());
        }
    }
    let (mut tx_bps, mut rx_bps, mut stops) = (0.0, 0.0, 0);
    for name in ["s0", "s1"] {
        let s = stream(&o.gen, name);
        assert_eq!(u(&s["tx_packets"]), count, "{name} did not send its count{}", ctx());
        assert_eq!(
            (u(&s["rx_packets"]), u(&s["lost"]), u(&s["reordered"]), u(&s["duplicates"])),
            (count, 0, 0, 0),
            "{name}: received / lost / reordered / duplicated{}",
            ctx()
        );
        tx_bps += f(&s["tx_wire_bps"]);
        rx_bps += f(&s["rx_wire_bps"]);
        stops += u(&s["pfc_stops"]);
    }
    // PAUSE reached the generator, for priority 3 only, and stopped the streams.
    let mut pauses = 0;
    for p in ["g0", "g1"] {
        let pfc = &gen_port(&o.gen, p)["pfc"];
        pauses += u(&pfc["rx_pause"][3]);
        for n in (0..8).filter(|&n| n != 3) {
            assert_eq!(u(&pfc["rx_pause"][n]), 0, "{p}: PAUSE for priority {n}{}", ctx());
        }
    }
    assert!(pauses > 0 && stops > 0, "no PAUSE seen by the generator ({pauses} frames, {stops} stops){}", ctx());
    assert!(u(&port(&o.b, "Ethernet0")["pfc"]["tx_pause"][3]) > 0, "B sent no PAUSE{}", ctx());
    // Offered 2 × the bottleneck; once PFC governs them (from their first stop on: before
    // it the switches' buffers fill up to Xoff at the offered rate), the senders go at
    // the rate the receiver gets, the bottleneck's.
    let shaper = pfcswitch::units::parse_speed(&bottleneck).unwrap() as f64;
    let paced: f64 = ["s0", "s1"].iter().map(|n| f(&stream(&o.gen, n)["tx_wire_bps_after_first_stop"])).sum();
    assert!(tx_bps < 0.75 * 2.0 * shaper, "senders at {tx_bps} b/s: not held back{}", ctx());
    assert!(
        (paced - rx_bps).abs() < 0.1 * rx_bps,
        "senders under PFC at {paced} b/s, receiver at {rx_bps} b/s{}",
        ctx()
    );
    eprintln!(
        "pfcgen incast, PFC on: {} frames in {:.1} s, 0 lost, 0 reordered; {pauses} PAUSE frames received by the \
         generator ({stops} stream stops, paused {:?} us on g0/g1); senders {:.2} Mb/s ({:.2} Mb/s under PFC), receiver {:.2} Mb/s, bottleneck {:.2} Mb/s",
        2 * count,
        o.secs,
        [u(&gen_port(&o.gen, "g0")["pfc"]["rx_pause_duration_us"][3]), u(&gen_port(&o.gen, "g1")["pfc"]["rx_pause_duration_us"][3])],
        tx_bps / 1e6,
        paced / 1e6,
        rx_bps / 1e6,
        shaper / 1e6
    );
}

#[test]
fn pfcgen_incast_pfc_off_loses_frames() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (count, _, _) = params();
    let o = run(false);
    let ctx = || format!("\ngen: {}\nA: {}\nB: {}\n{}", o.gen, o.a, o.b, o.logs);
    assert_conserved(&o.a);
    assert_conserved(&o.b);
    let mut lost = 0;
    for name in ["s0", "s1"] {
        let s = stream(&o.gen, name);
        assert_eq!(u(&s["tx_packets"]), count, "{}", ctx());
        assert_eq!(u(&s["rx_packets"]) + u(&s["lost"]), count, "{}", ctx());
        assert_eq!(u(&s["duplicates"]), 0, "{}", ctx());
        lost += u(&s["lost"]);
    }
    assert!(lost > 0, "no loss at a 2:1 bottleneck without PFC{}", ctx());
    let b_in = port(&o.b, "Ethernet0");
    assert_eq!(u(&b_in["control_tx"]), 0, "B sent PFC with pfc_enable = []{}", ctx());
    let dropped = u(&b_in["tc"][3]["dropped"]);
    assert_eq!(dropped, lost, "the generator's loss is B's drops{}", ctx());
    eprintln!("pfcgen incast, PFC off: {lost} of {} frames lost at the bottleneck in {:.1} s", 2 * count, o.secs);
}

/// Every 100 ms until `done`: B's bottleneck queue 3 (packets), PAUSE frames B and A have
/// sent on priority 3, from `pfcswitch show --json` (CSV `t_unix_s,b_queue3_pkts,b_pause_tx,a_pause_tx`).
fn poll_switches(path: &str, prefix: &str, done: &std::sync::atomic::AtomicBool) {
    use std::io::Write;
    let show = |sw: &str, view: &[&str]| -> serde_json::Value {
        let o = Command::new(BIN).args(["show", "--prefix", &format!("{prefix}-{sw}"), "--json"]).args(view).output();
        o.ok().and_then(|o| serde_json::from_slice(&o.stdout).ok()).unwrap_or_default()
    };
    let pause = |j: &serde_json::Value| -> u64 {
        j.as_object().map_or(0, |m| m.values().map(|p| p["tx_pfc3"].as_u64().unwrap_or(0)).sum())
    };
    let mut f = std::fs::File::create(path).unwrap();
    writeln!(f, "t_unix_s,b_queue3_pkts,b_pause_tx,a_pause_tx").unwrap();
    while !done.load(std::sync::atomic::Ordering::Relaxed) {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
        let q = show("b", &["queue", "counters"])["Ethernet4"]["UC3_depth"].as_u64().unwrap_or(0);
        let (pb, pa) = (pause(&show("b", &["pfc", "counters"])), pause(&show("a", &["pfc", "counters"])));
        writeln!(f, "{t:.3},{q},{pb},{pa}").unwrap();
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Switch ports' PAUSE frames sent for priority 3, summed over both switches.
fn pause_sent(o: &Outcome) -> u64 {
    [&o.a, &o.b].iter().flat_map(|sw| sw["ports"].as_array().unwrap().iter()).map(|p| u(&p["pfc"]["tx_pause"][3])).sum()
}

/// The DCQCN loop closed: the same RoCEv2 incast with B marking ECN and the receiver
/// answering CE with CNPs, once with senders that ignore the CNPs and once with DCQCN.
/// DCQCN must leave the switches sending fewer PAUSE frames (asserted loosely: fewer, the
/// figures are printed), both runs lossless (0 lossless drops, 0 lost), and the DCQCN
/// senders must have cut their rate on CNPs.
#[test]
fn pfcgen_incast_dcqcn_sends_fewer_pauses() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (count, _, _) = params();
    let mut figures = Vec::new();
    for senders in [Senders::Roce, Senders::Dcqcn] {
        let o = run_with(true, senders);
        let ctx = || format!("\ngen: {}\nA: {}\nB: {}\n{}", o.gen, o.a, o.b, o.logs);
        assert_conserved(&o.a);
        assert_conserved(&o.b);
        for sw in [&o.a, &o.b] {
            for p in sw["ports"].as_array().unwrap() {
                assert_eq!(u(&p["lossless_drops"]), 0, "lossless drops on {}{}", p["name"], ctx());
            }
        }
        let (mut cnp_rx, mut min_rate) = (0, f64::MAX);
        for name in ["s0", "s1"] {
            let s = stream(&o.gen, name);
            assert_eq!(
                (u(&s["tx_packets"]), u(&s["rx_packets"]), u(&s["lost"]), u(&s["duplicates"])),
                (count, count, 0, 0),
                "{name}: sent / received / lost / duplicated{}",
                ctx()
            );
            cnp_rx += u(&s["cnp_rx"]);
            if senders == Senders::Dcqcn {
                min_rate = min_rate.min(f(&s["dcqcn"]["min_rate_bps"]));
            }
        }
        let marked = u(&port(&o.b, "Ethernet4")["queues"][3]["ecn_marked_packets"]);
        let cnp_tx = u(&o.gen["totals"]["cnp_tx"]);
        assert!(
            marked > 0 && cnp_tx > 0 && cnp_rx > 0,
            "B marked {marked}, CNPs sent {cnp_tx}, received {cnp_rx}{}",
            ctx()
        );
        if senders == Senders::Dcqcn {
            assert!(min_rate < 0.75 * f(&stream(&o.gen, "s0")["dcqcn"]["line_bps"]), "DCQCN never cut{}", ctx());
        }
        figures.push((pause_sent(&o), marked, cnp_tx, o.secs, min_rate));
    }
    let (pfc, dcqcn) = (figures[0], figures[1]);
    eprintln!(
        "pfcgen incast, RoCEv2 + ECN: PAUSE frames sent by the switches {} without DCQCN, {} with; CE marks {} / {}; \
         CNPs {} / {}; run {:.1} / {:.1} s; lowest DCQCN rate {:.2} Mb/s",
        pfc.0,
        dcqcn.0,
        pfc.1,
        dcqcn.1,
        pfc.2,
        dcqcn.2,
        pfc.3,
        dcqcn.3,
        dcqcn.4 / 1e6
    );
    assert!(pfc.0 > 0, "no PAUSE without DCQCN: the incast did not congest");
    assert!(dcqcn.0 < pfc.0, "DCQCN did not reduce PAUSE: {} with, {} without", dcqcn.0, pfc.0);
}
