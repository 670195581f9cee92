//! Exact counts, in the style of sonic-mgmt's `PFCtest` / `XonHysteresisTest`: the egress
//! port does not transmit (`tx_enable = false`), frames of a lossless TC are injected one
//! by one (net_pcap), and the test computes from the configuration (private, α, pool,
//! frame size) which packet's admission reaches the Xoff point and which is the first to
//! be dropped. Each count is checked on both sides of its boundary by separate runs:
//! n−1 packets → no PAUSE, n → PAUSE; m → no drop, m+1 → exactly one lossless drop.
//! Then TX is enabled (SIGUSR1) and exactly one RESUME follows the PAUSEs.

mod common;
use common::*;

use std::process::{Command, Stdio};
use std::time::Duration;

const FRAME: usize = 1000;
const PRIVATE: u64 = EXACT_PROFILE.size; // BUFFER_PROFILE size (φ)
const XOFF: u64 = EXACT_PROFILE.xoff; // headroom (η)
const LOSSLESS_POOL: u64 = EXACT_PROFILE.pool;
const DYNAMIC_TH: i32 = EXACT_PROFILE.dynamic_th; // α = 1
/// PGs with the lossless profile: PG 3 and 4 on both ports.
const LOSSLESS_PGS: u64 = 4;

/// Independent model of the admission rules (docs/design.md §2, SAI semantics): private while
/// it fits; shared while the PG's shared occupancy is below T = α·(Bs − Σω), the Xoff
/// point being reached when it gets to T; headroom while it fits (PAUSE on entering it if
/// not already sent); drop beyond.
fn boundaries() -> (usize, usize) {
    let bs = LOSSLESS_POOL - LOSSLESS_PGS * (PRIVATE + XOFF);
    let l = FRAME as u64;
    let (mut p, mut s, mut h) = (0u64, 0u64, 0u64);
    let mut pause_at = None;
    for k in 0.. {
        if p + l <= PRIVATE {
            p += l;
            continue;
        }
        let free = bs - s;
        let t = if DYNAMIC_TH >= 0 { free << DYNAMIC_TH } else { free >> -DYNAMIC_TH };
        if s < t && s + l <= bs {
            s += l;
            if s >= t && pause_at.is_none() {
                pause_at = Some(k);
            }
            continue;
        }
        if h + l <= XOFF {
            h += l;
            pause_at.get_or_insert(k);
            continue;
        }
        return (pause_at.expect("pause before drop"), k);
    }
    unreachable!()
}

/// An untagged IPv4 frame with DSCP 3 (SONiC default map: TC 3, lossless).
fn lossless_frame(seq: u16) -> Vec<u8> {
    let mut f = Vec::with_capacity(FRAME);
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0xbb]); // unknown unicast: flooded to the other port
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0xaa]);
    f.extend_from_slice(&[0x08, 0x00]);
    let total = (FRAME - 14) as u16;
    let mut ip = vec![
        0x45,
        3 << 2,
        (total >> 8) as u8,
        total as u8,
        (seq >> 8) as u8,
        seq as u8,
        0,
        0,
        64,
        17,
        0,
        0,
        192,
        0,
        2,
        1,
        192,
        0,
        2,
        2,
    ];
    let mut sum = 0u32;
    for c in ip.chunks(2) {
        sum += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let ck = !(sum as u16);
    ip[10] = (ck >> 8) as u8;
    ip[11] = ck as u8;
    f.extend_from_slice(&ip);
    f.resize(FRAME, 0x5a);
    f
}

fn config(d: &TestDir) -> SwitchConfig {
    pcap_pair(d, "100M").toml(&pcap_pair_buffer(&EXACT_PROFILE))
}

/// PFC frames in a capture: (class_enable, quanta of priority 3).
fn pfc_frames(frames: &[Vec<u8>]) -> Vec<(u16, u16)> {
    frames
        .iter()
        .filter(|f| {
            f.len() >= 34
                && f[0..6] == [0x01, 0x80, 0xc2, 0, 0, 1]
                && f[12..14] == [0x88, 0x08]
                && f[14..16] == [0x01, 0x01]
        })
        .map(|f| (u16::from_be_bytes([f[16], f[17]]), u16::from_be_bytes([f[18 + 6], f[19 + 6]])))
        .collect()
}

struct Outcome {
    pfc: Vec<(u16, u16)>,
    json: serde_json::Value,
    out1: usize,
}

/// Run the switch on `n` lossless frames; if `enable_tx_after` is set, SIGUSR1 after
/// that long (TX on), then stop.
fn run(n: usize, enable_tx_after: Option<Duration>) -> Outcome {
    run_with(n, enable_tx_after, &[], config)
}

/// [`run`], with `before` injected ahead of the lossless frames and the configuration
/// `base` builds.
fn run_with(
    n: usize,
    enable_tx_after: Option<Duration>,
    before: &[Vec<u8>],
    base: impl Fn(&TestDir) -> SwitchConfig,
) -> Outcome {
    let d = TestDir::new("exact");
    let frames: Vec<_> = before.iter().cloned().chain((0..n).map(|i| lossless_frame(i as u16))).collect();
    write_pcap(&d.join("in0.pcap"), &frames);
    write_pcap(&d.join("in1.pcap"), &[]);
    let cfg = base(&d).write(&d.join("exact.toml"));
    let json = d.join("stats.json");
    let mut child = Command::new(BIN)
        .args(["run", "--config", cfg.to_str().unwrap(), "--stats-json", json.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
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
    assert!(rx.recv_timeout(Duration::from_secs(30)).is_ok(), "switch did not start");
    // Conditions, not delays: on a loaded host the worker may take seconds to read the
    // injected frames (100 000 fillers in one test), or to send the held ones.
    let prefix = d.prefix();
    let received = wait_counter(&prefix, "Ethernet0", "rx_packets", frames.len() as u64);
    assert!(received >= frames.len() as u64, "Ethernet0 received {received} of {} frames", frames.len());
    // Time for a PAUSE to leave if one were due (too short only makes "no PAUSE" pass).
    std::thread::sleep(Duration::from_millis(300));
    if let Some(after) = enable_tx_after {
        std::thread::sleep(after);
        let _ = Command::new("kill").args(["-USR1", &child.id().to_string()]).status();
        // All the lossless frames leave unless some were dropped (the caller checks);
        // the RESUME follows the drain, or is sent at stop.
        wait_counter(&prefix, "Ethernet4", "tx_packets", n as u64);
        std::thread::sleep(Duration::from_millis(300));
    }
    let _ = Command::new("kill").args(["-INT", &child.id().to_string()]).status();
    let out = child.wait_with_output().unwrap();
    let log = reader.join().unwrap();
    assert!(out.status.success(), "{}\n{log}", show(&out));
    let j = read_json(&json);
    assert_conserved(&j);
    let o = Outcome {
        pfc: pfc_frames(&read_pcap(&d.join("out0.pcap"))),
        json: j,
        out1: read_pcap(&d.join("out1.pcap")).len(),
    };
    // Every PFC frame on the wire is counted, and only those (whichever lcore sent it).
    let e0 = port(&o.json, "Ethernet0");
    let pauses = o.pfc.iter().filter(|&&(ce, q)| ce & 0x08 != 0 && q != 0).count() as u64;
    let resumes = o.pfc.iter().filter(|&&(ce, q)| ce & 0x08 != 0 && q == 0).count() as u64;
    assert_eq!(e0["pfc"]["tx_pause"][3].as_u64().unwrap(), pauses, "PAUSE frames counted vs captured");
    assert_eq!(e0["pfc"]["tx_resume"][3].as_u64().unwrap(), resumes, "RESUME frames counted vs captured");
    o
}

/// Polls `show interfaces counters` until `port`'s `key` reaches `want` (at most 60 s);
/// returns the last value read.
fn wait_counter(prefix: &str, port: &str, key: &str, want: u64) -> u64 {
    let t0 = std::time::Instant::now();
    loop {
        let o =
            Command::new(BIN).args(["show", "--prefix", prefix, "--json", "interfaces", "counters"]).output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
        let got = v[port][key].as_u64().unwrap_or(0);
        if got >= want || t0.elapsed() > Duration::from_secs(60) {
            return got;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The PFC frames sent while the switch ran. A switch that stops with PG 3 OFF ends with
/// one RESUME, sent at stop so that the peer does not stay paused for a pause time after
/// the switch is gone (docs/lossless.md, "On a real NIC"); it is checked here and left
/// out.
fn while_running(o: &Outcome) -> &[(u16, u16)] {
    match o.pfc.split_last() {
        Some((&(0x0008, 0), rest)) => rest,
        _ => panic!("PG 3 was OFF at stop but no RESUME ended the capture: {:?}", o.pfc),
    }
}

fn lossless_drops(o: &Outcome) -> u64 {
    port(&o.json, "Ethernet0")["lossless_drops"].as_u64().unwrap()
}

#[test]
fn pause_exactly_at_xoff_and_drop_exactly_past_headroom() {
    let (pause_at, drop_at) = boundaries();
    // With these numbers: 4 private, shared up to T, headroom of 10 frames.
    eprintln!("model: PAUSE at packet #{pause_at}, first drop at #{drop_at}");
    assert!(pause_at > 4 && drop_at == pause_at + (XOFF as usize / FRAME), "model: pause {pause_at}, drop {drop_at}");

    // Packets 0..pause_at-1: no PAUSE yet.
    let o = run(pause_at, None);
    assert!(o.pfc.is_empty(), "PAUSE before packet #{pause_at}: {:?}", o.pfc);
    assert_eq!(lossless_drops(&o), 0);
    assert_eq!(o.out1, 0, "tx_enable = false port sent data");

    // Packet #pause_at reaches the Xoff point: PAUSE for priority 3, full quanta.
    let o = run(pause_at + 1, None);
    assert!(!while_running(&o).is_empty(), "no PAUSE after packet #{pause_at}");
    assert!(while_running(&o).iter().all(|&(ce, q)| ce == 0x0008 && q == 0xffff), "{:?}", o.pfc);
    assert_eq!(lossless_drops(&o), 0);
    let e0 = port(&o.json, "Ethernet0");
    assert!(e0["pfc"]["tx_pause"][3].as_u64().unwrap() >= 1);
    assert_eq!(e0["pfc"]["tx_on2off"][3], 1);

    // Headroom absorbs up to packet #drop_at-1 ...
    let o = run(drop_at, None);
    assert_eq!(lossless_drops(&o), 0, "dropped before headroom was full");
    // ... and packet #drop_at is the first lossless drop.
    let o = run(drop_at + 1, None);
    assert_eq!(lossless_drops(&o), 1, "expected exactly one drop at packet #{drop_at}");
    let wm = &port(&o.json, "Ethernet0")["pg_watermark"];
    let pg3 = wm.as_array().unwrap().iter().find(|w| w["pg"] == 3).unwrap();
    assert_eq!(pg3["headroom"].as_u64().unwrap(), XOFF, "headroom watermark");
}

#[test]
fn exactly_one_resume_when_tx_drains() {
    let (pause_at, drop_at) = boundaries();
    let n = (pause_at + drop_at) / 2; // some packets in headroom
    let o = run(n, Some(Duration::from_millis(300)));
    assert_eq!(o.out1, n, "all packets leave once TX is enabled");
    assert_eq!(lossless_drops(&o), 0);
    assert!(o.pfc.len() >= 2, "{:?}", o.pfc);
    let (last, before) = o.pfc.split_last().unwrap();
    assert_eq!(*last, (0x0008, 0), "last PFC frame must be the RESUME: {:?}", o.pfc);
    assert!(before.iter().all(|&(ce, q)| ce == 0x0008 && q == 0xffff), "one RESUME only, after PAUSEs: {:?}", o.pfc);
    let e0 = port(&o.json, "Ethernet0");
    assert_eq!(e0["pfc"]["tx_resume"][3], 1);
}

/// The control lcore naps (`control_nap = "10ms"`, far longer than the 42 µs refresh
/// interval of a PAUSE at 400G) once PFC has been quiet for a millisecond; the worker that
/// sends the first PAUSE after such a spell refreshes it itself until the control lcore
/// takes the note over. Ahead of the lossless frames, PFC frames naming no priority
/// (consumed, no effect) keep the worker busy for some milliseconds so that the control
/// lcore is asleep when the crossing comes. Checked by counts, not by timing (this VM
/// stalls a vCPU for milliseconds now and then): the worker refreshed, and every PAUSE on
/// the wire is counted exactly once, whichever lcore sent it (checked in `run_with`).
#[test]
fn pause_refreshed_while_control_lcore_naps() {
    let (pause_at, drop_at) = boundaries();
    let filler: Vec<_> = (0..100_000).map(|_| pfc_frame(mac(0xaa), 0, [0; 8])).collect();
    let o = run_with((pause_at + drop_at) / 2, None, &filler, |d| {
        config(d).edit_port("Ethernet0", |p| p.speed("400G")).lcores_set("control_nap", "\"10ms\"").one_worker()
    });
    assert_eq!(lossless_drops(&o), 0);
    let running = while_running(&o);
    assert!(
        running.iter().all(|&(ce, q)| ce == 0x0008 && q == 0xffff),
        "PAUSEs only: {:?}",
        &running[..running.len().min(8)]
    );
    let refreshes = o.json["workers"][0]["pause_refreshes"].as_u64().unwrap();
    assert!(refreshes >= 1, "the worker did not refresh its PAUSE while the control lcore napped");
    assert!(running.len() as u64 > refreshes, "{} PAUSE frames, {refreshes} of them worker refreshes", running.len());
    eprintln!("{} PAUSE frames, {refreshes} refreshed by the worker", o.pfc.len());
}

/// `pfcswitch thresholds --json` for Ethernet0's PG 3 and [`FRAME`]-byte frames.
fn thresholds_json(cfg: &std::path::Path) -> serde_json::Value {
    let frame = FRAME.to_string();
    let out = run_switch(&[
        "thresholds",
        "--config",
        cfg.to_str().unwrap(),
        "--port",
        "Ethernet0",
        "--pg",
        "3",
        "--frame-size",
        &frame,
        "--json",
    ]);
    assert!(out.status.success(), "{}", show(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `pfcswitch thresholds` reads the same boundaries off the MMU the switch runs: the
/// packet that sends PAUSE and the first drop (1-based) are the independent model's, which
/// the runs above check against a running switch; every lossless (port, PG) is listed; a
/// port that does not exist is one line and exit 2.
#[test]
fn thresholds_command_agrees_with_the_model() {
    let (pause_at, drop_at) = boundaries();
    let d = TestDir::new("thr");
    let cfg = config(&d).one_worker().write(&d.join("t.toml"));
    let rows = thresholds_json(&cfg);
    let cfg = cfg.to_str().unwrap();
    let r = &rows[0];
    assert_eq!(rows.as_array().unwrap().len(), 1, "{rows}");
    assert_eq!(r["pause_at"], pause_at as u64 + 1, "{r}");
    assert_eq!(r["first_drop"], drop_at as u64 + 1, "{r}");
    assert_eq!(r["drop_reason"], "lossless_headroom_full", "{r}");
    assert_eq!(r["egress"], "Ethernet4");
    let xon = r["xon_after_drained"].as_u64().expect("a RESUME while draining");
    assert!(xon >= 1 && xon <= drop_at as u64, "{r}");
    assert!(r["xon_occupancy_bytes"].as_u64().unwrap() < r["pause_occupancy_bytes"].as_u64().unwrap(), "{r}");

    let all = run_switch(&["thresholds", "--config", cfg]);
    let text = String::from_utf8_lossy(&all.stdout);
    assert!(all.status.success() && text.contains("PAUSE at packet"), "{}", show(&all));
    for (p, pg) in [("Ethernet0", 3), ("Ethernet0", 4), ("Ethernet4", 3), ("Ethernet4", 4)] {
        assert!(
            text.lines().any(|l| l.starts_with(p) && l.split_whitespace().nth(1) == Some(&pg.to_string())),
            "{text}"
        );
    }
    let bad = run_switch(&["thresholds", "--config", cfg, "--port", "Ethernet9"]);
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.trim().lines().count() == 1 && err.contains("Ethernet9"), "{err}");
}

/// [`config`] with SAI's shared headroom pool: 6000 bytes for the four lossless PGs, less
/// than one PG's own 10000 — an over-subscribed pool a single PG can exhaust.
fn shared_pool_config(d: &TestDir) -> SwitchConfig {
    let buffer = pcap_pair_buffer(&EXACT_PROFILE)
        .replacen("total_size = 200000\n", "total_size = 200000\nheadroom_policy = \"shared_pool\"\n", 1)
        .replacen("type = \"ingress\"\n", "type = \"ingress\"\nxoff = 6000\n", 1);
    pcap_pair(d, "100M").toml(&buffer)
}

/// `headroom_policy = "shared_pool"` on a running switch: the PAUSE and the first drop
/// land exactly where `pfcswitch thresholds` says, and the drop comes from the pool (6
/// packets of headroom), not the PG's 10000-byte cap (10 packets).
#[test]
fn shared_headroom_pool_pauses_and_drops_where_thresholds_says() {
    let d = TestDir::new("thr_pool");
    let cfg = shared_pool_config(&d).one_worker().write(&d.join("t.toml"));
    let rows = thresholds_json(&cfg);
    let (pause_at, first_drop) =
        (rows[0]["pause_at"].as_u64().unwrap() as usize, rows[0]["first_drop"].as_u64().unwrap() as usize);
    assert_eq!(first_drop - pause_at, 6, "headroom from the 6000-byte pool: {rows}");

    let o = run_with(pause_at - 1, None, &[], shared_pool_config);
    assert!(o.pfc.is_empty(), "PAUSE before packet #{pause_at}: {:?}", o.pfc);
    let o = run_with(pause_at, None, &[], shared_pool_config);
    assert!(!while_running(&o).is_empty(), "no PAUSE at packet #{pause_at}");
    let o = run_with(first_drop - 1, None, &[], shared_pool_config);
    assert_eq!(lossless_drops(&o), 0, "dropped before packet #{first_drop}");
    let o = run_with(first_drop, None, &[], shared_pool_config);
    assert_eq!(lossless_drops(&o), 1, "expected exactly one drop at packet #{first_drop}");
    assert_eq!(o.json["buffer_pool"]["ingress_lossless_pool"]["xoff"], 6000);
    assert_eq!(o.json["buffer_pool"]["ingress_lossless_pool"]["headroom_watermark"], 6000);
}

/// [`config`] with Dynamic and Shared Headroom: no per-PG headroom, one insurance xoff
/// (10000 bytes) per port.
fn dsh_config(d: &TestDir) -> SwitchConfig {
    let buffer = pcap_pair_buffer(&EXACT_PROFILE).replacen(
        "total_size = 200000\n",
        "total_size = 200000\nheadroom_policy = \"dsh\"\n",
        1,
    );
    pcap_pair(d, "100M").toml(&buffer)
}

/// `headroom_policy = "dsh"` on a running switch, PG 3 alone: the queue-level PAUSE
/// (priority 3) at the packet `thresholds` names, then the port-level PAUSE, which also
/// pauses priority 4 though PG 4 received nothing; the port's insurance headroom takes
/// the packets after it without a drop, up to the first drop `thresholds` names. With TX
/// enabled the port and the PG resume: a RESUME for priority 4 and one for priority 3.
#[test]
fn dsh_pauses_the_whole_port_and_insurance_absorbs() {
    let d = TestDir::new("thr_dsh");
    let cfg = dsh_config(&d).one_worker().write(&d.join("t.toml"));
    let rows = thresholds_json(&cfg);
    let at = |k: &str| rows[0][k].as_u64().unwrap_or_else(|| panic!("{k}: {rows}")) as usize;
    let (pause_at, port_pause_at, first_drop) = (at("pause_at"), at("port_pause_at"), at("first_drop"));
    assert!(pause_at < port_pause_at && port_pause_at < first_drop, "{rows}");
    // The insurance (one xoff) takes the packets after the port-level point (that packet
    // too when shared refused it rather than crossed with it).
    assert!((first_drop - port_pause_at).abs_diff(XOFF as usize / FRAME) <= 1, "insurance = one xoff: {rows}");

    // Just before the port-level point: only priority 3 is paused.
    let o = run_with(port_pause_at - 1, None, &[], dsh_config);
    let ce: u16 = o.pfc.iter().fold(0, |m, &(c, _)| m | c);
    assert_eq!(ce, 0x0008, "only priority 3 before the port-level PAUSE: {:?}", o.pfc);
    // At it: priority 4 too (its own frame, full quanta).
    let o = run_with(port_pause_at, None, &[], dsh_config);
    let ce: u16 = o.pfc.iter().fold(0, |m, &(c, _)| m | c);
    assert_eq!(ce, 0x0018, "priorities 3 and 4 after the port-level PAUSE: {:?}", o.pfc);
    assert_eq!(port(&o.json, "Ethernet0")["pfc"]["tx_on2off"][4], 1);
    // Insurance: no drop up to first_drop − 1, then exactly one.
    let o = run_with(first_drop - 1, Some(Duration::from_millis(300)), &[], dsh_config);
    assert_eq!(lossless_drops(&o), 0, "dropped inside the insurance headroom");
    assert_eq!(o.out1, first_drop - 1, "all packets leave once TX is enabled");
    let e0 = port(&o.json, "Ethernet0");
    assert_eq!((e0["pfc"]["tx_resume"][3].as_u64(), e0["pfc"]["tx_resume"][4].as_u64()), (Some(1), Some(1)));
    let o = run_with(first_drop, None, &[], dsh_config);
    assert_eq!(lossless_drops(&o), 1, "expected exactly one drop at packet #{first_drop}");
    let pool = &o.json["buffer_pool"]["ingress_lossless_pool"];
    assert_eq!(pool["xoff"], 2 * XOFF, "Σ insurance over the two ports: {pool}");
    assert_eq!(pool["headroom_watermark"], XOFF, "the insurance was full at the drop: {pool}");
}
