//! PFC watchdog on real EAL: a peer that keeps sending PAUSE for one priority (crafted
//! frames injected through a kernel veth into a net_pcap port) makes that queue stormed
//! within detection_time plus one poll; other priorities are unaffected; the storm is
//! restored after restoration_time without PAUSE; a stream of XON (quanta 0) frames is
//! not a storm. Needs root (veth); skipped with a message otherwise.

mod common;
use common::*;

use std::time::Duration;

const DETECT_MS: u64 = 200;
const RESTORE_MS: u64 = 300;
const POLL_MS: u64 = 10;
const FRAME: usize = 64;
const PER_PCP: usize = 6000;
const PEER: [u8; 6] = [0x02, 0, 0, 0, 0, 0x77];
const SRC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x52];
const DST: [u8; 6] = [0x02, 0, 0, 0, 0, 0xde];
/// PCP 3 data frames the storming peer sends during the storm.
const STORM_DATA: u64 = 20;

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn config(d: &TestDir, veth_a: &str, action: &str) -> SwitchConfig {
    veth_and_pcap(d, veth_a).toml(&format!(
        r#"[qos.scheduler]
"1" = {{ type = "DWRR", weight = 1 }}
"3" = {{ type = "DWRR", weight = 1 }}

[pfcwd]
action = "{action}"
detection_time = {DETECT_MS}
restoration_time = {RESTORE_MS}
poll_interval = {POLL_MS}"#
    ))
}

struct Run {
    out: Vec<(u64, u8)>,
    json: serde_json::Value,
    log: String,
}

/// Start the switch with a backlog of PCP 3 and PCP 1 frames flooded to port X, let
/// `script` inject frames into X, then stop and collect X's capture and the counters.
fn run(tag: &str, action: &str, script: impl FnOnce(&Veth)) -> Option<Run> {
    if !is_root() {
        eprintln!("SKIP: needs root (veth pair)");
        return None;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let d = TestDir::new(tag);
    let n = std::process::id() % 100_000;
    let veth = Veth::new(&format!("pwd{n}{}a", tag.len()), &format!("pwd{n}{}b", tag.len()));
    let mut frames = Vec::new();
    for i in 0..PER_PCP as u32 {
        frames.push(vlan_frame(DST, SRC, 3, 10, 0x33, i, FRAME));
        frames.push(vlan_frame(DST, SRC, 1, 10, 0x11, i, FRAME));
    }
    write_pcap(&d.join("in1.pcap"), &frames);
    let cfg = d.join("wd.toml");
    config(&d, &veth.a, action).write(&cfg);
    let mut sw = RunningSwitch::spawn(&cfg, &d.join("stats.json"), &[]);
    sw.wait_forwarding(Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(500));
    script(&veth);
    let log = sw.stop();
    drop(veth);
    let json = read_json(&d.join("stats.json"));
    let out =
        read_pcap_ts(&d.join("out0.pcap")).into_iter().filter_map(|(t, f)| frame_pcp(&f).map(|p| (t, p))).collect();
    assert_conserved(&json);
    Some(Run { out, json, log })
}

/// Inject PAUSE for priority 3 every 50 ms for `dur`: 2000 quanta = 102 ms at 10M, so
/// the pause is continuous while the storm lasts and ends soon after (a 0xFFFF pause
/// would last 3.4 s at this low speed, longer than the restoration time). Once the storm
/// is surely detected (500 ms in), the storming peer also sends `STORM_DATA` PCP 3 data
/// frames: what the watchdog does with them is its `rx_ok` / `rx_dropped`.
fn pause_storm(v: &Veth, dur: Duration) -> (u64, u64) {
    let f = pfc_frame(PEER, 0x08, [0, 0, 0, 2000, 0, 0, 0, 0]);
    let t0 = v.inject(&f);
    let mut last = t0;
    let mut data_sent = false;
    while now_ns() - t0 < dur.as_nanos() as u64 {
        std::thread::sleep(Duration::from_millis(50));
        last = v.inject(&f);
        if !data_sent && now_ns() - t0 > 500_000_000 {
            for i in 0..STORM_DATA {
                v.inject(&vlan_frame(SRC, PEER, 3, 10, 0x3d, i as u32, FRAME));
            }
            data_sent = true;
        }
    }
    (t0, last)
}

fn wd<'a>(j: &'a serde_json::Value, key: &str) -> &'a serde_json::Value {
    &port(j, "Ethernet0")["pfcwd"][key]
}

fn times(r: &Run, pcp: u8) -> Vec<u64> {
    r.out.iter().filter(|x| x.1 == pcp).map(|x| x.0).collect()
}

#[test]
fn storm_detected_within_detection_time_then_forwarded_then_restored() {
    let mut storm = (0, 0);
    let Some(r) = run("fwd", "forward", |v| {
        storm = pause_storm(v, Duration::from_millis(1200));
        std::thread::sleep(Duration::from_millis(RESTORE_MS + 400));
    }) else {
        return;
    };
    let (t0, last) = storm;
    // PCP 3 stops at the first PAUSE and, with action forward, flows again once the
    // storm is detected: the gap is the detection time (+ at most one poll and slack).
    let p3 = times(&r, 3);
    let stop = p3.iter().rev().find(|&&t| t <= t0 + 2_000_000).copied().expect("PCP 3 before the storm");
    let again = p3.iter().find(|&&t| t > t0 + 2_000_000).copied().expect("PCP 3 after detection");
    let gap_ms = (again - t0) as f64 / 1e6;
    eprintln!(
        "PCP3 last before storm {:.1} ms before, first after {:.1} ms after the first PAUSE",
        (t0 as f64 - stop as f64) / 1e6,
        gap_ms
    );
    assert!(gap_ms >= DETECT_MS as f64 - 5.0, "stormed too early: PCP 3 back after {gap_ms:.1} ms");
    // Once PFC is ignored, PCP 3's next frame may wait for the DWRR round PCP 1 is in:
    // one quantum (9238 B at weight 1) at the 1 Mb/s shaper is 74 ms.
    let dwrr_round_ms = (9238.0 + 24.0) * 8.0 / 1e6 * 1e3;
    assert!(
        gap_ms <= (DETECT_MS + POLL_MS) as f64 + dwrr_round_ms + 40.0,
        "stormed too late: PCP 3 back after {gap_ms:.1} ms\n{}",
        r.log
    );
    assert!(again < last, "PCP 3 must flow while PAUSE frames keep coming (PFC ignored)");
    // Other priorities unaffected: PCP 1 never stops for long.
    let p1 = times(&r, 1);
    let worst = p1.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
    assert!(worst < 400_000_000, "PCP 1 stopped for {} ms", worst / 1_000_000);
    assert_eq!(wd(&r.json, "prio3_storms_detected"), 1, "{}", port(&r.json, "Ethernet0")["pfcwd"]);
    assert_eq!(wd(&r.json, "prio3_storms_restored"), 1, "restored after {RESTORE_MS} ms of silence\n{}", r.log);
    assert_eq!(wd(&r.json, "prio4_storms_detected"), 0);
    assert_eq!(wd(&r.json, "prio3_status"), "operational");
    assert_eq!(port(&r.json, "Ethernet0")["drops"]["pfc_watchdog"], 0, "forward never drops");
    // The watchdog's packet counters: the storming peer's PCP 3 frames passed (rx_ok),
    // and PCP 3 left while its PAUSE was ignored (tx_ok).
    assert_eq!(wd(&r.json, "prio3_rx_ok"), STORM_DATA, "{}", port(&r.json, "Ethernet0")["pfcwd"]);
    assert_eq!(wd(&r.json, "prio3_rx_dropped"), 0);
    assert!(wd(&r.json, "prio3_tx_ok").as_u64().unwrap() > 0, "{}", port(&r.json, "Ethernet0")["pfcwd"]);
    assert_eq!(wd(&r.json, "prio4_tx_ok"), 0, "priority 4 was never stormed");
}

#[test]
fn xon_stream_is_not_a_storm_and_drop_action_drops() {
    let Some(r) = run("drop", "drop", |v| {
        // XON (quanta 0) frames for priority 3 every 20 ms for 800 ms: never a storm.
        let xon = pfc_frame(PEER, 0x08, [0; 8]);
        let t0 = v.inject(&xon);
        while now_ns() - t0 < 800_000_000 {
            std::thread::sleep(Duration::from_millis(20));
            v.inject(&xon);
        }
        std::thread::sleep(Duration::from_millis(100));
        // Then a real storm, and silence.
        pause_storm(v, Duration::from_millis(800));
        std::thread::sleep(Duration::from_millis(RESTORE_MS + 400));
    }) else {
        return;
    };
    let e0 = port(&r.json, "Ethernet0");
    assert_eq!(
        wd(&r.json, "prio3_storms_detected"),
        1,
        "XON frames counted as a storm, or the storm was missed: {}",
        e0["pfcwd"]
    );
    assert_eq!(wd(&r.json, "prio3_storms_restored"), 1);
    assert!(e0["pfc"]["rx_resume"][3].as_u64().unwrap() >= 30, "XON frames reached the switch");
    // Action drop: the stormed queue was flushed and arrivals dropped, counted by reason.
    let ingress = port(&r.json, "Ethernet4");
    let dropped = ingress["drops"]["pfc_watchdog"].as_u64().unwrap();
    assert!(dropped > 0, "no watchdog drops: {}", ingress["drops"]);
    assert_eq!(wd(&r.json, "prio3_tx_dropped").as_u64().unwrap(), dropped);
    assert_eq!(ingress["lossless_drops"], 0);
    // What the storming peer sent on the stormed priority was dropped at reception.
    assert_eq!(wd(&r.json, "prio3_rx_dropped"), STORM_DATA, "{}", e0["pfcwd"]);
    assert_eq!(wd(&r.json, "prio3_rx_ok"), 0);
    assert_eq!(wd(&r.json, "prio3_tx_ok"), 0, "action drop transmits nothing of PCP 3");
    assert_eq!(e0["drops"]["pfc_watchdog"], STORM_DATA);
}
