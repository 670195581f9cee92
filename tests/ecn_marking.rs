//! ECN marking at dequeue on real EAL instances (WRED/ECN for RoCEv2), the
//! sonic-mgmt `test_dequeue_ecn` method: the egress port starts with TX off, a backlog of
//! 101 × 1024-byte packets builds on one queue, TX is enabled, and the capture shows which
//! packets left marked CE. Kmin 50000, Kmax 51000, Pmax 100: a packet dequeued from a
//! queue at depth q (itself included) is marked surely at q ≥ Kmax, never below Kmin, with
//! probability (q − Kmin)/(Kmax − Kmin) in between. The boundary index is computed here
//! from the thresholds; tshark decodes the ECN field and checks the IPv4 checksums.

mod common;
use common::*;

use std::process::Command;
use std::time::Duration;

const N: usize = 101;
const LEN: usize = 1024;
const KMIN: u64 = 50_000;
const KMAX: u64 = 51_000;

/// DSCP 3 → TC 3 (lossless, PFC on) and DSCP 0 → TC 1 (lossy), SONiC's default map.
const DSCP_LOSSLESS: u8 = 3;
const DSCP_LOSSY: u8 = 0;

/// What a packet at backlog index `i` (0 = first out) must be: Some(true) marked/dropped
/// for sure, Some(false) surely not, None: decided by the random draw.
fn expected(i: usize) -> Option<bool> {
    let depth = ((N - i) * LEN) as u64;
    if depth >= KMAX {
        Some(true)
    } else if depth < KMIN {
        Some(false)
    } else {
        None
    }
}

/// Run the switch on `frames` into Ethernet0, TX of Ethernet4 off until they are all
/// queued; WRED profile W (ecn_all, wred_green_enable) on queues 1 and 3 of Ethernet4.
fn run(tag: &str, frames: &[Vec<u8>]) -> (TestDir, serde_json::Value) {
    run_with(tag, frames, &[3, 4])
}

/// [`run`] with PFC on `egress_pfc` of Ethernet4 (Ethernet0 keeps 3 and 4).
fn run_with(tag: &str, frames: &[Vec<u8>], egress_pfc: &[u8]) -> (TestDir, serde_json::Value) {
    let d = TestDir::new(tag);
    write_pcap(&d.join("in0.pcap"), frames);
    write_pcap(&d.join("in1.pcap"), &[]);
    let cfg = pcap_pair(&d, "10G")
        .edit_port("Ethernet4", |p| p.pfc_enable(egress_pfc))
        .toml(&format!(
            r#"[buffer]
total_size = "2MiB"
[qos]
wred_seed = 7
[qos.wred_profile.W]
green_min_threshold = {KMIN}
green_max_threshold = {KMAX}
green_drop_probability = 100
wred_green_enable = true
ecn = "ecn_all"
[qos.queue]
"Ethernet4|1" = {{ wred_profile = "W" }}
"Ethernet4|3" = {{ wred_profile = "W" }}"#
        ))
        .write(&d.join("ecn.toml"));
    let json = d.join("stats.json");
    let mut sw = RunningSwitch::spawn(&cfg, &json, &[]);
    sw.wait_forwarding(Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(800));
    sw.signal("USR1"); // TX on
    std::thread::sleep(Duration::from_millis(800));
    sw.stop();
    let j = read_json(&json);
    assert_conserved(&j);
    (d, j)
}

fn queue(j: &serde_json::Value, q: usize) -> &serde_json::Value {
    &port(j, "Ethernet4")["queues"][q]
}

/// (ECN field, IPv4 checksum good) of every frame of a capture, decoded by tshark.
fn tshark_ecn(pcap: &std::path::Path) -> Option<Vec<(u8, bool)>> {
    let out = Command::new("tshark")
        .args(["-r", pcap.to_str().unwrap(), "-o", "ip.check_checksum:TRUE", "-T", "fields"])
        .args(["-e", "ip.dsfield.ecn", "-e", "ip.checksum.status"])
        .output();
    let out = match out {
        Ok(o) if o.status.success() => o,
        _ => {
            eprintln!("SKIP tshark decoding: tshark not available");
            return None;
        }
    };
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                let mut f = l.split('\t');
                let ecn = f.next().unwrap_or("").trim().parse().unwrap_or(255);
                // checksum.status: 1 = good (Wireshark's PROTO_CHECKSUM_E_GOOD; 0 = bad).
                let good = matches!(f.next().unwrap_or("").trim(), "1" | "Good");
                (ecn, good)
            })
            .collect(),
    )
}

#[test]
fn dequeue_marking_boundary_is_where_the_thresholds_put_it() {
    let frames: Vec<_> = (0..N as u32).map(|i| ipv4_frame(BCAST, mac(1), DSCP_LOSSLESS, 2, i, LEN)).collect();
    let (d, j) = run("ecn-exact", &frames);
    let out = read_pcap(&d.join("out1.pcap"));
    assert_eq!(out.len(), N, "every packet leaves (lossless queue: never dropped by WRED)");
    let marked: Vec<bool> = out.iter().map(|f| f[15] & 3 == 3).collect();
    for (i, &m) in marked.iter().enumerate() {
        let seq = u32::from_be_bytes(out[i][42..46].try_into().unwrap());
        assert_eq!(seq as usize, i, "order");
        if let Some(want) = expected(i) {
            assert_eq!(m, want, "packet {i} (depth {} at dequeue): marked {m}: {marked:?}", (N - i) * LEN);
        }
    }
    assert!(marked[0] && !marked[N - 1], "first CE, last not (test_dequeue_ecn)");
    let q3 = queue(&j, 3);
    assert_eq!(q3["ecn_marked_packets"].as_u64().unwrap(), marked.iter().filter(|&&m| m).count() as u64);
    assert_eq!(q3["ecn_marked_bytes"].as_u64().unwrap(), q3["ecn_marked_packets"].as_u64().unwrap() * LEN as u64);
    assert_eq!(q3["wred_dropped_packets"], 0);
    if let Some(dec) = tshark_ecn(&d.join("out1.pcap")) {
        assert_eq!(dec.len(), N);
        for (i, (ecn, good)) in dec.iter().enumerate() {
            assert!(good, "frame {i}: IPv4 checksum not valid after marking");
            assert_eq!(*ecn, if marked[i] { 3 } else { 2 }, "frame {i}: tshark ECN");
        }
    }
}

#[test]
fn not_ect_dropped_on_the_lossy_queue_never_on_the_lossless_one() {
    // Interleaved: 101 Not-ECT lossy and 101 Not-ECT lossless packets, two queues of the
    // same depth profile.
    let mut frames = Vec::new();
    for i in 0..N as u32 {
        frames.push(ipv4_frame(BCAST, mac(1), DSCP_LOSSY, 0, i, LEN));
        frames.push(ipv4_frame(BCAST, mac(1), DSCP_LOSSLESS, 0, i, LEN));
    }
    let (d, j) = run("ecn-notect", &frames);
    let out = read_pcap(&d.join("out1.pcap"));
    let lossy: Vec<u32> = out
        .iter()
        .filter(|f| f[15] >> 2 == DSCP_LOSSY)
        .map(|f| u32::from_be_bytes(f[42..46].try_into().unwrap()))
        .collect();
    let lossless = out.iter().filter(|f| f[15] >> 2 == DSCP_LOSSLESS).count();
    assert_eq!(lossless, N, "lossless queue: no WRED drop");
    assert!(out.iter().all(|f| f[15] & 3 == 0), "Not-ECT packets are never marked");
    let q1 = queue(&j, 1);
    let dropped = q1["wred_dropped_packets"].as_u64().unwrap();
    assert_eq!(dropped as usize + lossy.len(), N, "lossy: out + WRED drops = in");
    assert_eq!(q1["wred_dropped_bytes"].as_u64().unwrap(), dropped * LEN as u64);
    assert_eq!(port(&j, "Ethernet4")["drops"]["wred"].as_u64().unwrap(), dropped);
    assert_eq!(queue(&j, 3)["wred_dropped_packets"], 0);
    // Which ones: the lossy queue's depth at each dequeue is its own backlog (the two
    // queues are served in turn, each from its own depth).
    for (i, want) in (0..N).map(|i| (i, expected(i))) {
        if let Some(w) = want {
            assert_eq!(!lossy.contains(&(i as u32)), w, "lossy packet {i}: dropped? {lossy:?}");
        }
    }
}

/// Lossless is the ingress PG's class: a packet that arrived on a PFC priority is never
/// dropped by WRED, even on an egress port whose own PFC settings differ (here it has
/// none), or its peer, paused to protect it, would lose it all the same.
#[test]
fn wred_never_drops_a_lossless_packet_on_a_port_without_pfc() {
    let frames: Vec<_> = (0..N as u32).map(|i| ipv4_frame(BCAST, mac(1), DSCP_LOSSLESS, 0, i, LEN)).collect();
    let (d, j) = run_with("ecn-mismatch", &frames, &[]);
    let out = read_pcap(&d.join("out1.pcap"));
    assert_eq!(queue(&j, 3)["wred_dropped_packets"], 0, "{}", queue(&j, 3));
    assert_eq!(out.len(), N, "every lossless packet leaves");
}

/// sonic-mgmt's `test_red_accuracy` method: thresholds far apart, Pmax 5 %, a deep backlog
/// of small ECT packets on a lossy queue. Packet k out of M queued leaves at depth
/// (M − k)·64 bytes; per bucket of depths the number of CE marks must lie within the
/// 99.9 % interval (normal approximation of the Poisson-binomial sum, ±3.3 σ, +1 for
/// discreteness) of Σ P(depth_k).
#[test]
fn marked_fraction_follows_the_configured_line() {
    const SMALL: usize = 64;
    const M: usize = 6000;
    const K_MIN: u64 = 32_000;
    const K_MAX: u64 = 384_000;
    const PMAX: f64 = 0.05;
    let d = TestDir::new("ecn-red");
    let frames: Vec<_> = (0..M as u32).map(|i| ipv4_frame(BCAST, mac(1), DSCP_LOSSY, 1, i, SMALL)).collect();
    write_pcap(&d.join("in0.pcap"), &frames);
    write_pcap(&d.join("in1.pcap"), &[]);
    let cfg = pcap_pair(&d, "10G")
        .toml(&format!(
            r#"[buffer]
total_size = "2MiB"
[qos.wred_profile.RED]
green_min_threshold = {K_MIN}
green_max_threshold = {K_MAX}
green_drop_probability = 5
ecn = "ecn_green"
[qos.queue]
"Ethernet4|1" = {{ wred_profile = "RED" }}"#
        ))
        .write(&d.join("red.toml"));
    let json = d.join("stats.json");
    let mut sw = RunningSwitch::spawn(&cfg, &json, &[]);
    sw.wait_forwarding(Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(800));
    sw.signal("USR1");
    std::thread::sleep(Duration::from_millis(800));
    sw.stop();
    let j = read_json(&json);
    assert_conserved(&j);
    let out = read_pcap(&d.join("out1.pcap"));
    // What the lossy MMU admitted is what left (ECT packets are marked, never dropped).
    let queued = out.len();
    assert!(queued > 2000, "only {queued} packets queued");
    assert_eq!(queue(&j, 1)["wred_dropped_packets"], 0);
    let marks: Vec<bool> = out.iter().map(|f| f[15] & 3 == 3).collect();
    assert_eq!(queue(&j, 1)["ecn_marked_packets"].as_u64().unwrap(), marks.iter().filter(|&&m| m).count() as u64);
    let p = |k: usize| {
        let depth = ((queued - k) * SMALL) as u64;
        if depth >= K_MAX {
            1.0
        } else if depth < K_MIN {
            0.0
        } else {
            (depth - K_MIN) as f64 / (K_MAX - K_MIN) as f64 * PMAX
        }
    };
    let buckets = 6;
    let per = queued / buckets;
    for b in 0..buckets {
        let range = b * per..if b + 1 == buckets { queued } else { (b + 1) * per };
        let mean: f64 = range.clone().map(p).sum();
        let var: f64 = range.clone().map(|k| p(k) * (1.0 - p(k))).sum();
        let got = range.clone().filter(|&k| marks[k]).count() as f64;
        let slack = 3.3 * var.sqrt() + 1.0;
        eprintln!("bucket {b} ({range:?}): {got} marked, expected {mean:.1} ± {slack:.1}");
        assert!((got - mean).abs() <= slack, "bucket {b}: {got} marked, expected {mean:.1} ± {slack:.1}");
    }
}
