//! Routed lossless traffic between kernel hosts (docs/routing.md; the setup of
//! tests/routed_hosts.rs): hosts 1 and 2 send DSCP 3 (lossless) UDP bursts through a
//! routed pfcswitch to host 3, whose port drains at 100 Mb/s.
//!
//! * PFC by DSCP on routed ports: PAUSE for priority 3 reaches both senders' ports, 0
//!   lossless drops, every datagram received;
//! * ECN marks survive routing: CE-marked datagrams arrive with valid IPv4 checksums and
//!   TTL 63 (decoded with tshark when installed);
//! * punt flood: host 2 floods the switch's own address at full rate; the to_us class is
//!   held to its limit (6000 pps), the excess counted as punt drops, and paced lossless
//!   routed traffic through the switch meanwhile loses nothing.
//!
//! Needs root; skipped otherwise.

mod common;
use common::*;

use std::time::{Duration, Instant};

use pfcswitch::dpdk::telemetry::{socket_path, Client};
use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// (ECN codepoint, IPv4 checksum good, TTL) of a captured datagram.
type Datagram = (u8, bool, u8);

/// Frames of a capture decoded by tshark: (ECN, IPv4 checksum good, TTL) of each UDP
/// datagram to `port`, and the number of MAC-control (PFC) frames. None without tshark.
fn tshark_decode(pcap: &std::path::Path, port: u16) -> Option<(Vec<Datagram>, usize)> {
    let Ok(out) = std::process::Command::new("tshark")
        .args(["-r", pcap.to_str().unwrap(), "-o", "ip.check_checksum:TRUE", "-T", "fields", "-E", "separator=|"])
        .args(["-e", "udp.dstport", "-e", "ip.dsfield.ecn", "-e", "ip.checksum.status", "-e", "ip.ttl"])
        .args(["-e", "eth.type"])
        .output()
    else {
        eprintln!("SKIP tshark decoding: tshark not available");
        return None;
    };
    assert!(out.status.success(), "tshark: {}", text(&out));
    let mut data = Vec::new();
    let mut pfc = 0;
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let f: Vec<&str> = l.split('|').collect();
        if f.len() < 5 {
            continue;
        }
        if f[0] == port.to_string() {
            let good = matches!(f[2], "1" | "Good");
            data.push((f[1].parse().unwrap_or(255), good, f[3].parse().unwrap_or(0)));
        } else if f[4] == "0x8808" || f[4] == "0x00008808" {
            pfc += 1;
        }
    }
    Some((data, pfc))
}

#[test]
fn routed_lossless_incast_pauses_marks_and_survives_a_punt_flood() {
    if !is_root() {
        eprintln!("SKIP: needs root (namespaces, veth)");
        return;
    }
    let d = TestDir::new("routed-lossless");
    let p = format!("q{}", std::process::id() % 100_000);
    let hosts = Hosts::up_routed(&p, 3);
    // Hosts 1 and 2 send lossless (DSCP 3) bursts to host 3, whose port drains at 100 Mb/s:
    // the routed packets fill ingress PG 3 of Ethernet0 and Ethernet4 past Xoff (163 KB
    // each with both filling, 195 KB alone: 976 KB shared, α = 1/4), the rest lands in
    // their 500 KB headroom. Kernel hosts ignore PAUSE: a burst of 521 KB each (500
    // datagrams) is what the buffer holds without their help, however the two overlap.
    // ECN marks the lossless queue of Ethernet8 above 20 KB.
    let buffer = lossless_buffer(
        &LosslessProfile { pool: 4_000_000, size: 4000, xoff: 500_000, xon: 2084, xon_offset: 1042, dynamic_th: -2 },
        1_000_000,
        &["Ethernet0", "Ethernet4", "Ethernet8"],
    );
    let extra = format!(
        r#"{buffer}
[qos.wred_profile.RED]
green_min_threshold = 20000
green_max_threshold = 200000
green_drop_probability = 100
wred_green_enable = true
ecn = "ecn_all"
[qos.queue]
"Ethernet8|3" = {{ wred_profile = "RED" }}
"#
    );
    let cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1")
        .memory_mb(1024)
        .port(Port::new("Ethernet0", &format!("net_af_packet0,iface={p}v1a")).speed("10G"))
        .port(Port::new("Ethernet4", &format!("net_af_packet1,iface={p}v2a")).speed("10G"))
        .port(
            Port::new("Ethernet8", &format!("net_af_packet2,iface={p}v3a")).speed("10G").set("shaper_rate", "\"100M\""),
        )
        .toml(&format!(
            r#"[control_plane]
netns = "{p}sw"
[interface]
Ethernet0 = ["198.18.1.1/24"]
Ethernet4 = ["198.18.2.1/24"]
Ethernet8 = ["198.18.3.1/24"]
{extra}"#
        ))
        .one_worker()
        .write(&d.join("t.toml"));
    let json = d.join("stats.json");
    let mut sw = RunningSwitch::spawn(&cfg, &json, &[]);
    sw.wait_forwarding(Duration::from_secs(60));
    // Resolves the neighbours before the bursts. Only one reply is required: twice, with
    // the machine loaded (load average 8-14), the second of two pings went unanswered
    // (not understood yet; docs/routing.md, Limits).
    for h in [1, 2] {
        let out = text(&hosts.exec(h, "ping -c 3 -i 0.2 -W 2 198.18.3.2"));
        if !out.contains("ttl=63") {
            let log = sw.stop();
            let j = read_json(&json);
            panic!("h{h} -> h3: {out}\nswitch: {log}\n{}", serde_json::to_string_pretty(&j["ports"]).unwrap());
        }
    }
    let script = format!("{ROOT}/scripts/host_traffic.py");

    // 1. Incast, routed and lossless: PAUSE to both senders, nothing lost, ECN marks with
    //    valid checksums and TTL 63 at the receiver.
    let (cap3, cap1) = (d.join("h3.pcap"), d.join("h1.pcap"));
    let dump3 = hosts.capture(3, &format!("{p}v3b"), &cap3);
    let dump1 = hosts.capture(1, &format!("{p}v1b"), &cap1);
    // The receivers stop once they have what the senders say they sent (written to a file
    // when they are done), or after two minutes: no window a late sender could miss.
    let expect = |port: u16| d.join(&format!("expect{port}"));
    let recv = hosts.spawn(3, &format!("python3 {script} udp-recv 5000 120 {}", expect(5000).display()));
    hosts.wait_udp_bound(3, 5000);
    // TOS 14 = DSCP 3, ECT(0).
    let senders: Vec<_> = [1, 2]
        .iter()
        .map(|&h| hosts.spawn(h, &format!("python3 {script} udp-burst 198.18.3.2 5000 500 14 1000")))
        .collect();
    let sent: u64 = senders
        .into_iter()
        .map(|c| {
            let o = c.wait_with_output().unwrap();
            let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("udp-burst: {e}: {}", text(&o)));
            v["sent"].as_u64().unwrap()
        })
        .sum();
    std::fs::write(expect(5000), sent.to_string()).unwrap();
    let o = recv.wait_with_output().unwrap();
    let got: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("udp-recv: {e}: {}", text(&o)));
    for c in [dump3, dump1] {
        stop_capture(c);
    }
    assert_eq!(got["received"].as_u64().unwrap(), sent, "lossless datagrams lost: sent {sent}, {got}");

    // 2. Punt flood: host 2 floods the switch's own address (punted to_us) at full rate
    //    while host 1 sends lossless routed traffic to host 3 at 20 Mb/s.
    let mut tel = Client::connect(&socket_path(&d.prefix())).expect("telemetry socket");
    let e4_0 = counters(&mut tel, "Ethernet4");
    let router_mac =
        String::from_utf8_lossy(&sh(&format!("ip netns exec {p}sw cat /sys/class/net/{p}v2a/address")).stdout)
            .trim()
            .to_string();
    let recv = hosts.spawn(3, &format!("python3 {script} udp-recv 5001 120 {}", expect(5001).display()));
    hosts.wait_udp_bound(3, 5001);
    let flood = hosts.spawn(2, &format!("python3 {script} flood-ip {p}v2b {router_mac} 198.18.2.2 198.18.2.1 3"));
    let t_flood = Instant::now();
    let paced = hosts.exec(1, &format!("python3 {script} udp-send 198.18.3.2 5001 20000000 3 3 1000"));
    let fo = flood.wait_with_output().unwrap();
    let flood_s = t_flood.elapsed().as_secs_f64();
    let e4_1 = counters(&mut tel, "Ethernet4");
    let flooded: Value = serde_json::from_slice(&fo.stdout).unwrap_or_else(|e| panic!("flood-ip: {e}: {}", text(&fo)));
    let paced: Value =
        serde_json::from_slice(&paced.stdout).unwrap_or_else(|e| panic!("udp-send: {e}: {}", text(&paced)));
    std::fs::write(expect(5001), paced["sent"].to_string()).unwrap();
    let ro = recv.wait_with_output().unwrap();
    let got: Value = serde_json::from_slice(&ro.stdout).unwrap_or_else(|e| panic!("udp-recv: {e}: {}", text(&ro)));
    let punted = n(&e4_1, "punted_to_us") - n(&e4_0, "punted_to_us");
    let policed = n(&e4_1, "punt_dropped_to_us") - n(&e4_0, "punt_dropped_to_us");
    eprintln!(
        "punt flood: {} frames offered in {flood_s:.2} s ({:.0} pps); punted {punted} ({:.0} pps, limit 6000 pps + 600 burst), rate-limited {policed}; lossless routed {} sent, {} received",
        flooded["sent"],
        flooded["sent"].as_f64().unwrap() / flood_s,
        punted as f64 / flood_s,
        paced["sent"],
        got["received"]
    );
    assert!(policed > 0, "the flood was not rate-limited: {e4_1}");
    // The flood lasts 3 s (flood_s adds the sender's start-up): the rate times that, plus
    // the bucket (a tenth of a second). The limiter passes at least its bucket, whenever
    // the flooder ran (a flooder descheduled for most of the 3 s offers less than the rate
    // most of the time: a bound on the rate would measure the scheduler).
    assert!(punted as f64 <= 6000.0 * flood_s + 600.0, "punt limit not held: {punted} in {flood_s:.2} s");
    assert!(punted >= 600, "the limiter passed less than its bucket: {punted} in {flood_s:.2} s");
    assert_eq!(got["received"], paced["sent"], "lossless routed traffic lost datagrams during the flood");

    sw.stop();
    drop(hosts);
    let j = read_json(&json);
    assert_conserved(&j);
    for e in ["Ethernet0", "Ethernet4", "Ethernet8"] {
        assert_eq!(port(&j, e)["lossless_drops"], 0, "{e}: lossless drops");
    }
    for e in ["Ethernet0", "Ethernet4"] {
        let pfc = &port(&j, e)["pfc"];
        assert!(pfc["tx_pause"][3].as_u64().unwrap() >= 1, "{e}: no PAUSE for priority 3: {pfc}");
    }
    let q3 = &port(&j, "Ethernet8")["queues"][3];
    assert!(q3["ecn_marked_packets"].as_u64().unwrap() > 0, "no ECN mark: {q3}");
    assert!(port(&j, "Ethernet4")["drops"]["punt_rate_limited"].as_u64().unwrap() >= policed);
    if let Some((data, _)) = tshark_decode(&cap3, 5000) {
        // dumpcap may miss frames on a loaded machine (the socket above counted them all).
        assert!(!data.is_empty() && data.len() as u64 <= sent, "captured at host 3: {} of {sent}", data.len());
        assert!(data.iter().all(|&(_, good, ttl)| good && ttl == 63), "checksum or TTL wrong after routing");
        let ce = data.iter().filter(|x| x.0 == 3).count();
        assert!(ce > 0 && data.iter().all(|x| x.0 == 3 || x.0 == 2), "ECN: {ce} CE of {}", data.len());
        eprintln!(
            "ECN: {ce} of {} routed datagrams arrived CE-marked, all with valid checksums and TTL 63",
            data.len()
        );
    }
    if let Some((_, pfc)) = tshark_decode(&cap1, 5000) {
        assert!(pfc >= 1, "no PFC frame reached host 1");
    }
}
