//! 802.1Q VLANs on real EAL (net_pcap ports, one worker): two VLANs on four ports.
//!
//! Vlan10: Ethernet0 and Ethernet4 untagged. Vlan20: Ethernet8 untagged, Ethernet12
//! tagged. Every port trusts PCP. One worker reads each port's file a 32-frame burst at a
//! time, ports in order: round 1 is each file's first burst (padded with runts, which are
//! dropped before anything else looks at them), round 2 its second, so everything round 1
//! learns is known in round 2. A PFC frame is never tagged on the way out (the port builds
//! it) and a tagged one received is not obeyed.
//!
//! Trunk/access with hosts in network namespaces (af_packet ports, needs root): a host that
//! marks priority by PCP only sends lossless traffic that is classified and paused by its
//! PCP (`pcp_marking_host_is_classified_and_paused_by_pcp`).

mod common;
use common::*;

/// The frame's payload tag: its last byte (both frame helpers fill with it; untagging a
/// 64-byte frame leaves 60 bytes, no padding).
fn tag_of(f: &[u8]) -> u8 {
    *f.last().unwrap()
}

/// `(vid, pcp)` of an 802.1Q-tagged frame.
fn vlan_of(f: &[u8]) -> Option<(u16, u8)> {
    (f.len() >= 16 && f[12..14] == [0x81, 0x00]).then(|| (u16::from_be_bytes([f[14], f[15]]) & 0xfff, f[14] >> 5))
}

/// Round-1 frames then runts up to a full burst, then the round-2 frames.
fn rounds(r1: Vec<Vec<u8>>, r2: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let mut v = r1;
    assert!(v.len() <= 32);
    while v.len() < 32 {
        v.push(eth_frame(mac(0xee), mac(0xef), 0, 40));
    }
    v.extend(r2);
    v
}

#[test]
fn two_vlans_on_four_ports() {
    let d = TestDir::new("vlan");
    let (a, b, m, x) = (mac(0xa), mac(0xb), mac(0x4d), mac(0x58));
    let mut s_tagged = vlan_frame(BCAST, a, 1, 10, 0x07, 0, 64);
    s_tagged[12..14].copy_from_slice(&[0x88, 0xa8]);
    let pfc = pfc_frame(m, 0b1000, [0, 0, 0, 0xffff, 0, 0, 0, 0]);
    let tagged_pfc = [&pfc[..12], &[0x81, 0x00, 0x60, 20], &pfc[12..]].concat();
    // Ethernet0 (Vlan10 untagged).
    let in0 = rounds(
        vec![
            eth_frame(BCAST, a, 0x01, 64),            // broadcast: Ethernet4 only
            eth_frame(x, a, 0x02, 64),                // unknown unicast: Ethernet4 only
            vlan_frame(BCAST, a, 1, 20, 0x03, 0, 64), // Vlan20 on a non-member: dropped
            vlan_frame(BCAST, a, 1, 10, 0x04, 0, 64), // its own VLAN, tagged: accepted, leaves untagged
            s_tagged,                                 // 802.1ad S-tag: dropped
        ],
        vec![
            eth_frame(m, a, 0x05, 64), // M as learned in Vlan10: Ethernet4 only
            eth_frame(b, a, 0x06, 64), // B is known in Vlan20 only: flooded in Vlan10
        ],
    );
    // Ethernet4 (Vlan10 untagged): M learned here in Vlan10.
    let in1 = rounds(vec![eth_frame(BCAST, m, 0x11, 64)], vec![]);
    // Ethernet8 (Vlan20 untagged).
    let in2 = rounds(
        vec![
            eth_frame(BCAST, b, 0x21, 64),           // untagged, TC 0: Ethernet12 tagged PCP 0
            vlan_frame(BCAST, b, 5, 0, 0x22, 0, 64), // priority-tagged PCP 5: Vlan20, TC 5
        ],
        vec![vlan_frame(m, b, 6, 0, 0x25, 0, 64)], // M as learned in Vlan20: Ethernet12 only
    );
    // Ethernet12 (Vlan20 tagged): M learned here in Vlan20.
    let in3 = rounds(
        vec![
            vlan_frame(BCAST, m, 6, 20, 0x31, 0, 64), // to Ethernet8, untagged
            vlan_frame(BCAST, m, 1, 10, 0x32, 0, 64), // Vlan10: not a member, dropped
            eth_frame(BCAST, m, 0x33, 64),            // untagged, no untagged VLAN: dropped
            tagged_pfc,                               // a tagged PFC frame: not obeyed, not forwarded
        ],
        vec![],
    );
    for (i, f) in [in0, in1, in2, in3].iter().enumerate() {
        write_pcap(&d.join(&format!("in{i}.pcap")), f);
    }
    let dir = d.path.display();
    let mut cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1").toml(
        r#"[switch]
burst_size = 32

[vlan.Vlan10]
[vlan.Vlan20]
vlanid = 20

[vlan_member]
"Vlan10|Ethernet0" = { tagging_mode = "untagged" }
"Vlan10|Ethernet4" = { tagging_mode = "untagged" }
"Vlan20|Ethernet8" = { tagging_mode = "untagged" }
"Vlan20|Ethernet12" = { tagging_mode = "tagged" }
"#,
    );
    for i in 0..4 {
        cfg = cfg.port(
            Port::new(
                &format!("Ethernet{}", 4 * i),
                &format!("net_pcap{i},rx_pcap={dir}/in{i}.pcap,tx_pcap={dir}/out{i}.pcap"),
            )
            .speed("10G")
            .set("trust", "\"pcp\""),
        );
    }
    let cfg = cfg.one_worker().write(&d.join("t.toml"));
    let j = run_for(&d, &cfg, "1.5");
    let out: Vec<Vec<Vec<u8>>> = (0..4).map(|i| read_pcap(&d.join(&format!("out{i}.pcap")))).collect();
    let tags = |i: usize| {
        let mut t: Vec<u8> = out[i].iter().map(|f| tag_of(f)).collect();
        t.sort();
        t
    };
    assert_eq!(tags(0), [0x11], "Ethernet0 gets Vlan10's floods only");
    assert_eq!(tags(1), [0x01, 0x02, 0x04, 0x05, 0x06], "Ethernet4: Vlan10 only, M's own frame");
    assert_eq!(tags(2), [0x31], "Ethernet8: Vlan20 only; M's unicast went to Ethernet12");
    assert_eq!(tags(3), [0x21, 0x22, 0x25], "Ethernet12: Vlan20 only");
    // Untagged members send untagged; the tagged member sends VID 20 with PCP = TC.
    for (i, o) in out.iter().enumerate().take(3) {
        for f in o {
            assert_eq!(vlan_of(f), None, "Ethernet{} sent a tagged frame {:x?}", 4 * i, &f[..18]);
            assert!(f.len() >= 60, "runt sent: {} bytes", f.len());
        }
    }
    let vl: Vec<(u8, Option<(u16, u8)>)> = out[3].iter().map(|f| (tag_of(f), vlan_of(f))).collect();
    let want = [(0x21, Some((20, 0))), (0x22, Some((20, 5))), (0x25, Some((20, 6)))];
    for w in want {
        assert!(vl.contains(&w), "Ethernet12 sent {vl:x?}, want {w:x?}");
    }
    // The payload behind the inserted tag is intact: EtherType 0x88b5 at 16.
    assert!(out[3].iter().all(|f| f[16..18] == [0x88, 0xb5] && f.len() == 68 || f.len() == 64));
    let drops = |p: &str| port(&j, p)["drops"]["vlan_not_member"].as_u64().unwrap();
    assert_eq!(
        (drops("Ethernet0"), drops("Ethernet4"), drops("Ethernet8"), drops("Ethernet12")),
        (2, 0, 0, 2),
        "vlan_not_member"
    );
    let e12 = port(&j, "Ethernet12");
    assert_eq!(e12["drops"]["bad_mac_control"], 1, "a tagged PFC frame is not MAC control: {}", e12["drops"]);
    assert_conserved(&j);
}

/// `(VID, PCP)` of every frame to `dst` (a MAC) in a capture, decoded by tshark (None
/// without tshark).
fn tshark_vlans_to(pcap: &std::path::Path, dst: &str) -> Option<Vec<(u16, u8)>> {
    let Ok(out) = std::process::Command::new("tshark")
        .args(["-r", pcap.to_str().unwrap(), "-Y", &format!("eth.dst == {dst}"), "-T", "fields"])
        .args(["-E", "separator=|", "-e", "vlan.id", "-e", "vlan.priority"])
        .output()
    else {
        eprintln!("SKIP tshark decoding: tshark not available");
        return None;
    };
    assert!(out.status.success(), "tshark: {}", text(&out));
    let parse = |l: &str| {
        let (v, p) = l.split_once('|')?;
        Some((v.parse().ok()?, p.parse().ok()?))
    };
    Some(String::from_utf8_lossy(&out.stdout).lines().map(|l| parse(l).unwrap_or((0, 255))).collect())
}

/// Trunk/access with a host that marks priority by 802.1p only (Intel E810's RDMA "VLAN
/// mode", older ConnectX setups): host 1 sends a burst of IPv4/UDP with DSCP 0 tagged VID
/// 100, PCP 3 — what a VLAN sub-interface with `egress-qos-map 0:3` sends; this machine's
/// kernel is built without 802.1Q (`CONFIG_VLAN_8021Q` unset, no `ip link ... type vlan`),
/// so the host's raw socket writes the tag itself (`host_traffic.py vlan-burst`). Both
/// switch ports are tagged members of Vlan100 trusting PCP; Ethernet4 drains at 20 Mb/s.
/// The burst is classified by its PCP (TC 3, lossless PG 3; DSCP 0 would be TC 1 under
/// `trust dscp`), fills PG 3 of Ethernet0 past Xoff, and the switch sends PAUSE for
/// priority 3, and for no other, to host 1. Host 2 receives every frame tagged VID 100 with
/// PCP 3 (TC 3 through `tc_to_dot1p`, identity). A host ignores PAUSE here: the burst (400
/// frames of 1004 bytes) is sized so the PG's headroom holds what arrives after Xoff.
/// Needs root; skipped otherwise.
#[test]
fn pcp_marking_host_is_classified_and_paused_by_pcp() {
    if !is_root() {
        eprintln!("SKIP: needs root (namespaces, veth)");
        return;
    }
    const COUNT: u64 = 400;
    let d = TestDir::new("vlan-pcp");
    let p = format!("t{}", std::process::id() % 100_000);
    let hosts = Hosts::up(&p, 2);
    // PG 3-4 lossless on both ports: headroom (xoff) 500 KB each, α = 1/8 of the 2 MB left
    // shared: Xoff at about 220 KB of a PG alone.
    let buffer = lossless_buffer(
        &LosslessProfile { pool: 4_000_000, size: 4000, xoff: 500_000, xon: 2084, xon_offset: 1042, dynamic_th: -3 },
        1_000_000,
        &["Ethernet0", "Ethernet4"],
    );
    let member = |name: &str, i: u32| {
        Port::new(name, &format!("net_af_packet{i},iface={p}v{}a", i + 1))
            .speed("10G")
            .set("trust", "\"pcp\"")
            .pfc_enable(&[3, 4])
    };
    let cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1")
        .memory_mb(1024)
        .port(member("Ethernet0", 0))
        .port(member("Ethernet4", 1).set("shaper_rate", "\"20M\""))
        .toml(&format!(
            r#"[vlan.Vlan100]
[vlan_member]
"Vlan100|Ethernet0" = {{ tagging_mode = "tagged" }}
"Vlan100|Ethernet4" = {{ tagging_mode = "tagged" }}
{buffer}"#
        ))
        .one_worker()
        .write(&d.join("t.toml"));
    let json = d.join("stats.json");
    let mut sw = RunningSwitch::spawn(&cfg, &json, &[]);
    sw.wait_forwarding(std::time::Duration::from_secs(60));
    let script = format!("{}/scripts/host_traffic.py", env!("CARGO_MANIFEST_DIR"));
    let run = |h: u32, args: &str| {
        let o = hosts.exec(h, &format!("python3 {script} vlan-burst {p}v{h}b {args}"));
        let v: serde_json::Value =
            serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("vlan-burst: {e}: {}", text(&o)));
        v["sent"].as_u64().unwrap()
    };
    let h2_mac = text(&hosts.exec(2, &format!("cat /sys/class/net/{p}v2b/address"))).trim().to_string();
    // Host 2 is learned in Vlan100 first (tagged broadcasts, PCP 0).
    assert_eq!(run(2, "ff:ff:ff:ff:ff:ff 100 0 0 64 3"), 3);
    let cap = d.join("h2.pcap");
    let dump = hosts.capture(2, &format!("{p}v2b"), &cap);
    let mut tel = pfcswitch::dpdk::telemetry::Client::connect(&pfcswitch::dpdk::telemetry::socket_path(&d.prefix()))
        .expect("telemetry socket");
    let tx0 = n(&counters(&mut tel, "Ethernet4"), "tx_packets");
    let sent = run(1, &format!("{h2_mac} 100 3 0 1000 {COUNT}"));
    // 420 KB at 20 Mb/s: 0.17 s; more for a loaded machine.
    let drained =
        until(std::time::Duration::from_secs(20), || n(&counters(&mut tel, "Ethernet4"), "tx_packets") >= tx0 + COUNT);
    std::thread::sleep(std::time::Duration::from_millis(300));
    stop_capture(dump);
    let log = sw.stop();
    drop(hosts);
    assert_eq!(sent, COUNT);
    let j = read_json(&json);
    assert_conserved(&j);
    let (e0, e4) = (port(&j, "Ethernet0"), port(&j, "Ethernet4"));
    assert!(drained.is_some(), "Ethernet4 did not send the burst: {}\n{log}", e4["queues"]);
    // Classified by PCP: TC 3 on ingress, egress queue 3, PG 3 filled into its headroom.
    let tc_rx: Vec<u64> = (0..8).map(|t| e0["tc"][t]["rx"].as_u64().unwrap()).collect();
    assert!(tc_rx[3] >= COUNT, "Ethernet0 TC rx {tc_rx:?}: the burst is not TC 3");
    assert!(tc_rx.iter().enumerate().all(|(t, &n)| t == 3 || n < 20), "Ethernet0 TC rx {tc_rx:?}");
    assert_eq!(e4["queues"][3]["tx_packets"], COUNT, "{}", e4["queues"]);
    let pg3 = e0["pg_watermark"].as_array().unwrap().iter().find(|w| w["pg"] == 3).unwrap();
    assert!(pg3["headroom"].as_u64().unwrap() > 0, "PG 3 of Ethernet0 never reached its headroom: {pg3}");
    // PAUSE for priority 3 only, to the sender; none to the receiver.
    let pause = |e: &serde_json::Value| -> Vec<u64> {
        e["pfc"]["tx_pause"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect()
    };
    let p0 = pause(e0);
    assert!(p0[3] >= 1 && p0.iter().enumerate().all(|(i, &n)| i == 3 || n == 0), "Ethernet0 tx_pause {p0:?}");
    assert_eq!(pause(e4), [0; 8], "Ethernet4 tx_pause");
    for e in [e0, e4] {
        assert_eq!(e["lossless_drops"], 0, "{}: lossless drops", e["name"]);
    }
    eprintln!(
        "PCP host: {COUNT} frames, Ethernet0 TC rx {tc_rx:?}, PG 3 watermark {pg3}, PAUSE tx {p0:?} ({} us paused)",
        e0["pfc"]["tx_pause_duration_us"][3]
    );
    // Host 2 got them tagged: VID 100, PCP 3.
    if let Some(tags) = tshark_vlans_to(&cap, &h2_mac) {
        assert_eq!(tags.len() as u64, COUNT, "frames captured at host 2");
        assert!(tags.iter().all(|&t| t == (100, 3)), "(VID, PCP) at host 2: {:?}", &tags[..tags.len().min(8)]);
    }
}
