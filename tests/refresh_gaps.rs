//! PAUSE refresh gaps under control-plane load (docs/failure-behaviour.md, "Nothing beside
//! the lcores delays a PAUSE"). Measured the way the review did: a held PG, the pause time
//! at 10G (65535 quanta = 3.36 ms, refreshed every 1.68 ms), the gaps seen at the peer.
//!
//! Ethernet0 (10G, net_pcap) receives lossless frames for Ethernet4, which transmits
//! nothing (`tx_enable = false`): PG 3 of Ethernet0 stays OFF for the whole run and the
//! switch keeps refreshing its PAUSE toward Ethernet0's peer. Ethernet8 is a router
//! interface (the switch's netns) on a veth. Three phases, in slices: quiet slices alternate
//! with the others (each as long as the slice before it), so a change of the machine's
//! background load weighs on both sides alike:
//! * quiet;
//! * 20,000 route changes through the kernel (`ip -batch` in the switch's netns, 4 chunks of
//!   2,500 adds and 2,500 deletes; `ip` at the default priority, as a routing daemon runs);
//! * an LLDP flood into Ethernet8 (as fast as this process can write into the veth).
//!
//! `ip` and the flooding thread run on the worker's CPU, not the control lcore's (see
//! [`WORKER_CPU`]): the control lcore's late refreshes are the switch's doing.
//!
//! Per phase, two measurements (the slices summed):
//! * the switch's own count of late refreshes (`tx_late_refresh`: sent more than the pause
//!   time after the previous PAUSE, so the peer was free to send in between), from
//!   telemetry around each slice — what is asserted: churn and flood no worse than quiet
//!   by more than a stated margin;
//! * the gaps between PAUSE frames captured at the peer (net_pcap's `tx_pcap` writes every
//!   frame `tx_burst` takes, stamped at that moment): gaps longer than the pause time, p99,
//!   max — printed, and used only when the capture holds exactly the PAUSEs the switch
//!   counted (known complete).
//!
//! Needs root (network namespace, veth); skipped otherwise.

mod common;
use common::*;

use std::fmt::Write as _;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// 65535 quanta at 10G (512 bit-times each).
const PAUSE_NS: u64 = 65_535 * 512 / 10;
const SLICE: Duration = Duration::from_secs(2);

/// A peer's LLDPDU (chassis 02:00:00:00:00:99, port "swp7", TTL 120), padded to 60 bytes.
fn lldp_frame() -> Vec<u8> {
    let mut f = vec![0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e, 0x02, 0, 0, 0, 0, 0x99, 0x88, 0xcc];
    f.extend_from_slice(&[0x02, 0x07, 0x04, 0x02, 0, 0, 0, 0, 0x99]);
    f.extend_from_slice(&[0x04, 0x05, 0x05, b's', b'w', b'p', b'7']);
    f.extend_from_slice(&[0x06, 0x02, 0x00, 0x78, 0x00, 0x00]);
    f.resize(60, 0);
    f
}

/// One kind of phase (quiet, churn, flood) over all its slices: their wall-clock windows
/// (ns since the epoch) and the switch's counters of Ethernet0 priority 3 over them.
struct Phase {
    name: &'static str,
    windows: Vec<(u64, u64)>,
    pauses: u64,
    late: u64,
}

impl Phase {
    fn new(name: &'static str) -> Phase {
        Phase { name, windows: Vec::new(), pauses: 0, late: 0 }
    }

    /// Runs `during` as one slice of this phase, reading the counters around it.
    fn slice(&mut self, tel: &mut pfcswitch::dpdk::telemetry::Client, during: impl FnOnce()) {
        let (p0, l0) = pfc3(tel);
        let from = now_ns();
        during();
        self.windows.push((from, now_ns()));
        let (p1, l1) = pfc3(tel);
        self.pauses += p1 - p0;
        self.late += l1 - l0;
    }

    /// Late refreshes as a share of the PAUSEs sent.
    fn share(&self) -> f64 {
        self.late as f64 / self.pauses.max(1) as f64
    }

    /// Gaps (ns) between consecutive captured PAUSEs inside this phase's windows, sorted.
    fn gaps(&self, pauses: &[u64]) -> Vec<u64> {
        let mut g = Vec::new();
        for &(from, to) in &self.windows {
            let inside: Vec<u64> = pauses.iter().copied().filter(|&t| t >= from && t <= to).collect();
            g.extend(inside.windows(2).map(|w| w[1] - w[0]));
        }
        g.sort_unstable();
        g
    }
}

/// The CPU of the worker lcore (`--lcores 0@0,1@1`: the control lcore has CPU 0). The route
/// source and the flood run there: a CPU-bound process at the lcores' priority beside the
/// control lcore would take it off its CPU for whole scheduler slices, whatever the switch
/// does (on a switch, FRR runs on CPUs no lcore uses; this machine has none to spare).
/// What is measured on the control lcore is then what the switch's own threads (routing,
/// I/O, telemetry) and its LLDP handling cost it.
const WORKER_CPU: &str = "1";

fn pin_to_worker_cpu() {
    let mut set = nix::sched::CpuSet::new();
    set.set(WORKER_CPU.parse().unwrap()).unwrap();
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).expect("sched_setaffinity");
}

/// PAUSE frames (quanta > 0) and late refreshes of Ethernet0 priority 3 so far.
fn pfc3(tel: &mut pfcswitch::dpdk::telemetry::Client) -> (u64, u64) {
    let v = tel.query("/pfcswitch/pfc_counters,Ethernet0").expect("pfc_counters");
    (n(&v["Ethernet0"], "tx_pause3"), n(&v["Ethernet0"], "tx_late_refresh3"))
}

#[test]
fn pause_refresh_gaps_under_route_churn_and_lldp_flood() {
    if !is_root() {
        eprintln!("SKIP: needs root (network namespace, veth)");
        return;
    }
    let d = TestDir::new("refresh-gaps");
    let id = std::process::id() % 10_000;
    let ns = Netns::add(&format!("pfcswrg{id}"));
    let veth = Veth::new(&format!("rgp{id}a"), &format!("rgp{id}b"));
    // The switch opens its ports in its namespace: Ethernet8's end goes there (deleted
    // with the namespace).
    let o = sh(&format!("ip link set {0} netns {1} && ip -n {1} link set {0} up", veth.a, ns.0));
    assert!(o.status.success(), "{}", text(&o));
    // Lossless (PCP 3) unknown unicast for Ethernet4, which never transmits: more than the
    // Xoff point (the 36th frame), less than Xoff + headroom (46): nothing dropped.
    let frames: Vec<Vec<u8>> = (0..40).map(|i| vlan_frame(mac(0xbb), mac(0xaa), 3, 1, 0x33, i, 1000)).collect();
    write_pcap(&d.join("in0.pcap"), &frames);
    write_pcap(&d.join("in1.pcap"), &[]);
    let dir = d.path.display();
    let cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1")
        .memory_mb(1024)
        .port(
            Port::new("Ethernet0", &format!("net_pcap0,rx_pcap={dir}/in0.pcap,tx_pcap={dir}/out0.pcap"))
                .speed("10G")
                .set("trust", "\"pcp\"")
                .pfc_enable(&[3, 4]),
        )
        .port(
            Port::new("Ethernet4", &format!("net_pcap1,rx_pcap={dir}/in1.pcap,tx_pcap={dir}/out1.pcap"))
                .speed("10G")
                .set("trust", "\"pcp\"")
                .pfc_enable(&[3, 4])
                .set("tx_enable", "false"),
        )
        .port(
            // No lossless class: what the flood overflows of its RX ring is no lossless loss.
            Port::new("Ethernet8", &format!("net_pcap2,rx_iface_in={},tx_pcap={dir}/out2.pcap", veth.a))
                .speed("10G")
                .pfc_enable(&[]),
        )
        .toml(&lossless_buffer(&EXACT_PROFILE, 80_000, &["Ethernet0", "Ethernet4"]))
        .toml(&format!("[control_plane]\nnetns = \"{}\"\n[interface]\nEthernet8 = [\"10.77.0.1/24\"]", ns.0))
        .toml("[lldp]\nenabled = true\nhello_time = 1\nsystem_name = \"tor1\"\n")
        .one_worker()
        .write(&d.join("t.toml"));
    let json = d.join("stats.json");
    let mut sw = RunningSwitch::spawn(&cfg, &json, &["--duration", "600"]);
    sw.wait_forwarding(Duration::from_secs(60));
    let mut tel = pfcswitch::dpdk::telemetry::Client::connect(&pfcswitch::dpdk::telemetry::socket_path(&d.prefix()))
        .expect("telemetry");
    // The telemetry thread runs at nice 19 beside busy lcores: on a loaded machine an
    // answer may take seconds. The counters of a phase are those between its two readings.
    tel.set_timeout(Duration::from_secs(60));
    // PG 3 of Ethernet0 goes OFF once the pcap is read.
    let off = until(Duration::from_secs(30), || pfc3(&mut tel).0 >= 2);
    assert!(off.is_some(), "PG 3 of Ethernet0 never paused");

    // 10,000 host routes added, then deleted (20,000 changes), in 4 chunks of 2,500 + 2,500.
    for k in 0..4u32 {
        let mut lines = String::new();
        for verb in ["add", "del"] {
            for i in k * 2500..(k + 1) * 2500 {
                writeln!(
                    lines,
                    "route {verb} 10.{}.{}.{}/32 via 10.77.0.2",
                    100 + i / 65_536,
                    (i / 256) % 256,
                    i % 256
                )
                .unwrap();
            }
        }
        std::fs::write(d.join(&format!("churn{k}.batch")), lines).unwrap();
    }
    let batch = |k: u32| {
        let o = Command::new("taskset")
            .args(["-c", WORKER_CPU, "ip", "-n", &ns.0, "-batch"])
            .arg(d.join(&format!("churn{k}.batch")))
            .output()
            .unwrap();
        assert!(o.status.success(), "ip -batch: {}", show(&o));
    };
    let flooded = AtomicU64::new(0);
    let flood = |secs: Duration| {
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                pin_to_worker_cpu();
                let f = lldp_frame();
                while !stop.load(Ordering::Relaxed) {
                    veth.inject(&f);
                    flooded.fetch_add(1, Ordering::Relaxed);
                }
            });
            std::thread::sleep(secs);
            stop.store(true, Ordering::Relaxed);
        });
    };

    // Quiet slices alternate with the others, each as long as the slice before it, so a
    // change of the machine's background load weighs on both sides alike.
    let (mut quiet, mut churn, mut lldp) =
        (Phase::new("quiet"), Phase::new("20k route changes"), Phase::new("LLDP flood"));
    quiet.slice(&mut tel, || std::thread::sleep(SLICE));
    let t = Instant::now();
    for k in 0..4 {
        let t0 = Instant::now();
        churn.slice(&mut tel, || batch(k));
        let took = t0.elapsed();
        quiet.slice(&mut tel, || std::thread::sleep(took.max(Duration::from_secs(1))));
    }
    let churn_took = t.elapsed();
    for _ in 0..2 {
        lldp.slice(&mut tel, || flood(SLICE));
        quiet.slice(&mut tel, || std::thread::sleep(SLICE));
    }
    let phases = [quiet, churn, lldp];
    let log = sw.stop();
    let j = read_json(&json);
    let e0 = port(&j, "Ethernet0");
    let e8 = port(&j, "Ethernet8");

    // The capture at the peer: every PAUSE for priority 3 on Ethernet0.
    let captured: Vec<u64> = read_pcap_ts(&d.join("out0.pcap"))
        .into_iter()
        .filter(|(_, f)| f.len() >= 30 && f[12..16] == [0x88, 0x08, 0x01, 0x01] && f[17] & (1 << 3) != 0)
        .filter(|(_, f)| u16::from_be_bytes([f[24], f[25]]) != 0)
        .map(|(t, _)| t)
        .collect();
    let counted = e0["pfc"]["tx_pause"][3].as_u64().unwrap();
    let complete = captured.len() as u64 == counted;
    let mut report = format!(
        "refresh gaps at 10G (pause time {:.2} ms): route churn took {churn_took:.1?}, {} LLDP frames flooded \
         ({} reached the control lcore, {} policed); capture {} PAUSEs, switch counted {counted}{}\n",
        PAUSE_NS as f64 / 1e6,
        flooded.load(Ordering::Relaxed),
        e8["lldp_rx"],
        e8["drops"]["lldp_policed"],
        captured.len(),
        if complete { " (complete)" } else { " (incomplete: gaps not used)" },
    );
    writeln!(
        report,
        "{:<18} {:>8} {:>6} {:>10} {:>9} {:>9}",
        "phase", "PAUSEs", "late", "gaps>3.36", "p99 ms", "max ms"
    )
    .unwrap();
    for p in &phases {
        let g = p.gaps(&captured);
        let over = g.iter().filter(|&&x| x > PAUSE_NS).count();
        let pct = |q: f64| g.get(((g.len() as f64 * q) as usize).min(g.len().saturating_sub(1))).copied().unwrap_or(0);
        writeln!(
            report,
            "{:<18} {:>8} {:>6} {:>10} {:>9.2} {:>9.2}",
            p.name,
            p.pauses,
            p.late,
            over,
            pct(0.99) as f64 / 1e6,
            g.last().copied().unwrap_or(0) as f64 / 1e6
        )
        .unwrap();
    }
    eprintln!("{report}");

    // PG 3 was held OFF throughout: one PAUSE edge, its RESUME only at stop, and
    // refreshes in every phase (every 1.68 ms while the control lcore runs; at load 20
    // on this 2-CPU machine, as few as 30 a second).
    assert_eq!((e0["pfc"]["tx_on2off"][3].as_u64(), e0["pfc"]["tx_resume"][3].as_u64()), (Some(1), Some(1)), "{e0}");
    for p in &phases {
        assert!(p.pauses >= 20, "{}: only {} PAUSEs: was PG 3 held?\n{report}\n{log}", p.name, p.pauses);
    }
    assert!(flooded.load(Ordering::Relaxed) >= 10_000, "the flood was too small to mean anything\n{report}");
    // Late refreshes as a share of the refreshes sent. The margin: twice the quiet share
    // plus 2 points. The review's regression (routing thread on the control lcore's CPU)
    // made 427 of ~6,000 refreshes late (7 %) against 7 quiet.
    let quiet = phases[0].share();
    for p in &phases[1..] {
        assert!(
            p.share() <= 2.0 * quiet + 0.02,
            "{}: {:.2} % of refreshes late against {:.2} % quiet\n{report}",
            p.name,
            100.0 * p.share(),
            100.0 * quiet
        );
    }
    assert_eq!(e0["lossless_drops"], 0, "{e0}");
    assert_conserved(&j);
}
