//! The RX stages against their oracle (docs/layout.md, "The RX stages and their oracle"):
//! random bursts of every kind a port receives (unicast known and unknown, broadcast,
//! multicast, tagged in a VLAN, priority-tagged, QinQ, not a member, runts, oversize,
//! malformed IP, PFC, LLDP and other link-local frames, lossless and lossy classes) are
//! replayed on three net_pcap ports through the switch twice: once on the stages, once on
//! the old one-loop receive side (`PFCSW_RX_ORACLE=scalar`). Every output frame (in order,
//! per port) and every per-port counter must agree, without VLANs and with them.

mod common;
use common::*;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// A small deterministic generator (xorshift64*): the property's input is its seed.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const HOSTS: u8 = 6;

/// One random frame as host `src` on some port would send it.
fn frame(g: &mut Gen, src: u8, seq: u32) -> Vec<u8> {
    let dst = match g.below(10) {
        0 => BCAST,
        1 => [0x01, 0x00, 0x5e, 0x00, 0x00, 0x07],
        2 => mac(0x99), // never a source: unknown unicast
        3 => [0x01, 0x80, 0xc2, 0x00, 0x00, 0x03],
        _ => mac(0x10 + g.below(u64::from(HOSTS)) as u8),
    };
    let s = mac(0x10 + src);
    match g.below(24) {
        0 => return pfc_frame(s, 0b0000_1000, [0, 0, 0, g.below(64) as u16, 0, 0, 0, 0]),
        1 => {
            // LLDP to the nearest-bridge address.
            let mut f = vec![0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e];
            f.extend_from_slice(&s);
            f.extend_from_slice(&[0x88, 0xcc, 0x02, 0x07, 0x04]);
            f.resize(60, 0);
            return f;
        }
        2 => return eth_frame(dst, s, seq as u8, 40),   // runt
        3 => return eth_frame(dst, s, seq as u8, 1600), // longer than MTU 1500
        _ => {}
    }
    // The L3 payload: IPv4 in a DSCP (3 and 4 are lossless with pfc_enable [3, 4]), a
    // truncated IPv4 header, or not IP.
    let len = 60 + g.below(200) as usize;
    let mut l3 = Vec::new();
    let ethertype: [u8; 2] = match g.below(6) {
        0 => [0x88, 0xb5],
        1 => {
            l3.extend_from_slice(&[0x4f, 0x00, 0x00]); // IHL 15 in a short packet
            [0x08, 0x00]
        }
        _ => {
            let dscp = [0u8, 3, 4, 10, 46][g.below(5) as usize];
            let tot = (len - 14) as u16;
            l3.extend_from_slice(&[0x45, dscp << 2]);
            l3.extend_from_slice(&tot.to_be_bytes());
            l3.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, src, 10, 0, 1, 1]);
            [0x08, 0x00]
        }
    };
    l3.extend_from_slice(&seq.to_be_bytes());
    let tag: Option<[u8; 4]> = match g.below(8) {
        0 => Some([0x81, 0x00, 0x00, 10]), // VLAN 10
        1 => Some([0x81, 0x00, 0x60, 20]), // VLAN 20, PCP 3
        2 => Some([0x81, 0x00, 0x80, 0]),  // priority tag (VID 0), PCP 4
        3 => Some([0x88, 0xa8, 0x00, 10]), // S-tag, VLAN 10
        4 => Some([0x81, 0x00, 0x00, 30]), // VLAN 30: nobody's
        _ => None,
    };
    let mut f = Vec::with_capacity(len);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&s);
    if let Some(t) = tag {
        f.extend_from_slice(&t);
    }
    f.extend_from_slice(&ethertype);
    f.extend_from_slice(&l3);
    while f.len() < len {
        f.push(seq as u8);
    }
    f
}

/// The counters that must agree (not those that depend on when the TX side ran:
/// watermarks, PMD and ring figures).
const COMPARED: &[&str] = &[
    "rx_packets",
    "rx_bytes",
    "tx_packets",
    "tx_bytes",
    "drops",
    "drops_total",
    "flood_copies",
    "generated",
    "lossless_discards",
    "lossless_drops",
    "mac_control_rx",
    "lldp_rx",
    "punted",
    "punt_dropped",
    "routed_packets",
    "routed_bytes",
    "copp",
];

/// Run the switch once on `inputs` (one pcap per port), on the stages or the oracle;
/// returns the output frames per port and the compared counters.
fn run(tag: &str, vlans: bool, inputs: &[Vec<Vec<u8>>], oracle: bool) -> (Vec<Vec<Vec<u8>>>, serde_json::Value) {
    let d = TestDir::new(tag);
    let mut cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1");
    for (i, frames) in inputs.iter().enumerate() {
        write_pcap(&d.join(&format!("in{i}.pcap")), frames);
        let dir = d.path.display();
        let devargs = format!("net_pcap{i},rx_pcap={dir}/in{i}.pcap,tx_pcap={dir}/out{i}.pcap");
        cfg = cfg.port(Port::new(&format!("Ethernet{}", i * 4), &devargs).speed("10G").pfc_enable(&[3, 4]));
    }
    if vlans {
        cfg = cfg.toml(
            r#"[vlan.Vlan10]
[vlan.Vlan20]
[vlan_member]
"Vlan10|Ethernet0" = { tagging_mode = "untagged" }
"Vlan10|Ethernet4" = { tagging_mode = "tagged" }
"Vlan10|Ethernet8" = { tagging_mode = "tagged" }
"Vlan20|Ethernet4" = { tagging_mode = "tagged" }
"Vlan20|Ethernet8" = { tagging_mode = "untagged" }
"#,
        );
    }
    let path = cfg.one_worker().write(&d.join("switch.toml"));
    let json = d.join("stats.json");
    let out = std::process::Command::new(BIN)
        .args(["run", "--config", path.to_str().unwrap(), "--duration", "1.5", "--stats-json", json.to_str().unwrap()])
        .env("RUST_LOG", "warn")
        .env("PFCSW_RX_ORACLE", if oracle { "scalar" } else { "stages" })
        .output()
        .expect("spawn pfcswitch");
    assert!(out.status.success(), "{}", show(&out));
    let j = read_json(&json);
    assert_conserved(&j);
    let frames = (0..inputs.len()).map(|i| read_pcap(&d.join(&format!("out{i}.pcap")))).collect();
    let counters = j["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| COMPARED.iter().map(|k| (k.to_string(), p[*k].clone())).collect::<serde_json::Map<_, _>>())
        .collect::<Vec<_>>();
    (frames, serde_json::Value::from(counters))
}

/// Stages and oracle on the bursts of `seed`.
fn agree(seed: u64, vlans: bool) -> Result<(), TestCaseError> {
    let mut g = Gen(seed | 1);
    // Hosts 0-1 on Ethernet0, 2-3 on Ethernet4, 4-5 on Ethernet8; up to ~3 bursts each.
    let inputs: Vec<Vec<Vec<u8>>> = (0..3u8)
        .map(|p| {
            let n = 1 + g.below(90) as u32;
            (0..n)
                .map(|k| {
                    let src = 2 * p + g.below(2) as u8;
                    frame(&mut g, src, k)
                })
                .collect()
        })
        .collect();
    let tag = if vlans { "oraclev" } else { "oracle" };
    let (new_frames, new_counters) = run(tag, vlans, &inputs, false);
    let (old_frames, old_counters) = run(tag, vlans, &inputs, true);
    for (i, (n, o)) in new_frames.iter().zip(&old_frames).enumerate() {
        prop_assert_eq!(
            n.len(),
            o.len(),
            "seed {:#x}: port {} sent {} frames on the stages, {} on the oracle",
            seed,
            i,
            n.len(),
            o.len()
        );
        for (k, (a, b)) in n.iter().zip(o).enumerate() {
            prop_assert_eq!(a, b, "seed {:#x}: port {} frame {} differs", seed, i, k);
        }
    }
    prop_assert_eq!(new_counters, old_counters, "seed {:#x}: counters differ (stages, oracle)", seed);
    // The property is not vacuous: something was forwarded and something dropped.
    let sent: usize = new_frames.iter().map(Vec::len).sum();
    prop_assert!(sent > 0, "seed {:#x}: nothing forwarded", seed);
    Ok(())
}

fn check(vlans: bool) {
    let mut runner =
        TestRunner::new(Config { cases: 6, failure_persistence: None, max_shrink_iters: 0, ..Config::default() });
    runner.run(&any::<u64>(), |seed| agree(seed, vlans)).unwrap();
}

#[test]
fn stages_agree_with_the_oracle_without_vlans() {
    check(false);
}

#[test]
fn stages_agree_with_the_oracle_in_vlans() {
    check(true);
}
