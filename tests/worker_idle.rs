//! `[lcores] worker_idle = "adaptive"`: an idle instance gives its CPUs back (several
//! switches can share a small machine) and still forwards the first packet after idle.
//! Measured from /proc: the whole process's CPU time over two idle seconds, poll vs
//! adaptive. Needs root for the veth that delivers the packet after idle.

mod common;
use common::*;

use std::time::Duration;

/// CPU seconds (user + system) the process has used, from /proc/<pid>/stat.
fn cpu_s(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    ticks / 100.0 // USER_HZ
}

fn idle_cpu(tag: &str, idle: &str) -> Option<(f64, Option<f64>)> {
    if !is_root() {
        eprintln!("SKIP: needs root (veth pair)");
        return None;
    }
    let d = TestDir::new(tag);
    let n = std::process::id() % 100_000;
    let veth = Veth::new(&format!("idl{n}{}a", tag.len()), &format!("idl{n}{}b", tag.len()));
    write_pcap(&d.join("in1.pcap"), &[]);
    let cfg = veth_and_pcap(&d, &veth.a).lcores_set("worker_idle", &format!("\"{idle}\"")).one_worker();
    let cfg = cfg.write(&d.join("t.toml"));
    let mut sw = RunningSwitch::spawn(&cfg, &d.join("stats.json"), &[]);
    sw.wait_forwarding(Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(500));
    let pid = sw.pid();
    // Two seconds: /proc counts in 10 ms ticks, 1 % of one second.
    let c0 = cpu_s(pid);
    std::thread::sleep(Duration::from_secs(2));
    let used = (cpu_s(pid) - c0) / 2.0;
    // The first packet after idle: flooded to Ethernet4 (out1.pcap).
    let t = veth.inject(&eth_frame(BCAST, mac(0x42), 7, 64));
    std::thread::sleep(Duration::from_millis(300));
    let log = sw.stop();
    let out = read_pcap_ts(&d.join("out1.pcap"));
    let first = out.iter().find(|(_, f)| f[6..12] == mac(0x42)).map(|(ts, _)| (*ts as f64 - t as f64) / 1e3);
    assert!(first.is_some(), "{idle}: the packet after idle was not forwarded\n{log}");
    Some((used, first))
}

#[test]
fn adaptive_worker_gives_the_cpu_back_and_still_forwards() {
    let Some((poll, poll_us)) = idle_cpu("poll", "poll") else { return };
    let Some((adaptive, adaptive_us)) = idle_cpu("adaptive", "adaptive") else { return };
    // net_pcap's TX timestamps and this clock are offset by up to milliseconds: the
    // difference of the two runs is the cost of waking up.
    eprintln!(
        "idle CPU (mean of 2 s): poll {:.0} %, adaptive {:.1} %; first packet after idle: adaptive {:+.0} µs vs poll",
        poll * 100.0,
        adaptive * 100.0,
        adaptive_us.unwrap_or(f64::NAN) - poll_us.unwrap_or(f64::NAN)
    );
    assert!(poll > 0.5, "a polling worker uses its CPU: {poll:.2} s a second");
    // Measured idle, quiet machine: 6–7 % of a CPU in a release build, 9.5–10.5 % in the
    // debug build the test suite runs (each wake-up costs more there; the same before
    // this round's live changes); polling: ~100 %. The old 10 % bound sat on the debug
    // figure.
    assert!(adaptive < 0.15, "an idle adaptive instance used {:.1} % of a CPU", adaptive * 100.0);
}

/// The PAUSE reaction when the worker that crosses Xoff (it polls Ethernet0's RX) is not
/// the one that transmits on Ethernet0 (`cross`), against the same worker doing both.
/// Both adaptive and idle when the lossless burst comes: the transmitting worker naps, and
/// the PAUSE must not wait for its nap (up to 1 ms) to end. Returns the reaction (Xoff
/// crossing → PAUSE handed to the driver) of the first PAUSE, µs.
fn first_pause_reaction(tag: &str, cross: bool) -> Option<f64> {
    if !is_root() {
        eprintln!("SKIP: needs root (veth pair)");
        return None;
    }
    let d = TestDir::new(tag);
    let n = std::process::id() % 100_000;
    let veth = Veth::new(&format!("rx{n}{}a", tag.len()), &format!("rx{n}{}b", tag.len()));
    let x = mac(0xcc);
    write_pcap(&d.join("in1.pcap"), &[vlan_frame(mac(0x01), x, 0, 1, 0, 0, 100)]);
    let (w1_tx, w2_tx) = if cross { ("Ethernet4", "Ethernet0") } else { ("Ethernet0", "Ethernet4") };
    let cfg = veth_and_pcap(&d, &veth.a)
        .edit_port("Ethernet0", |p| p.speed("10G").set("shaper_rate", "\"10G\""))
        .edit_port("Ethernet4", |p| p.set("tx_enable", "false"))
        .toml(&pcap_pair_buffer(&EXACT_PROFILE))
        .lcores_set("worker_idle", "\"adaptive\"")
        .worker(1, &["Ethernet0:0"], &[w1_tx])
        .worker(2, &["Ethernet4:0"], &[w2_tx])
        // The RX worker alone on CPU 1; the other with the control lcore on CPU 0.
        .eal_lcores("0@0,1@1,2@0")
        .write(&d.join("t.toml"));
    let json = d.join("stats.json");
    let mut sw = RunningSwitch::spawn(&cfg, &json, &[]);
    sw.wait_forwarding(Duration::from_secs(30));
    // Long enough idle for both workers to nap 1 ms at a time.
    std::thread::sleep(Duration::from_millis(500));
    for k in 0..60 {
        veth.inject(&vlan_frame(x, mac(0x42), 3, 1, 0x33, k, 1000));
    }
    std::thread::sleep(Duration::from_millis(300));
    sw.stop();
    let j = read_json(&json);
    assert_conserved(&j);
    let r = &j["pfc_reaction"];
    assert!(r["count"].as_u64().unwrap() >= 1, "no PAUSE: {j}");
    Some(r["max_ns"].as_u64().unwrap() as f64 / 1e3)
}

#[test]
fn a_napping_tx_owner_does_not_delay_another_workers_pause() {
    let Some(same) = first_pause_reaction("same", false) else { return };
    // Three runs, the median: the woken worker shares CPU 0 with the control lcore, and
    // once in a few runs the scheduler lets it wait 1.6–5 ms whatever woke it (seen on a
    // quiet machine). Without the doorbell two of three runs wait for the nap (926,
    // 1856, 270 µs when it was added), so the median still catches that.
    let mut cross: Vec<f64> = Vec::new();
    for tag in ["cross", "cross2", "cross23"] {
        let Some(r) = first_pause_reaction(tag, true) else { return };
        cross.push(r);
    }
    cross.sort_by(f64::total_cmp);
    let median = cross[1];
    eprintln!(
        "first PAUSE reaction, adaptive workers: same worker {same:.1} µs, another (napping) worker {cross:.1?} µs"
    );
    // A nap is up to 1 ms; a doorbell's wake-up is a scheduler wake-up.
    assert!(
        median < 400.0,
        "the PAUSE waited for the transmitting worker's nap: median {median:.1} µs of {cross:.1?} (same worker: {same:.1} µs)"
    );
}
