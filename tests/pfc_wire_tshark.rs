//! The switch's own PFC frames, decoded by an independent dissector (Wireshark's
//! `tshark`), not by our codec.
//!
//! Port A (`Ethernet0`, net_pcap) reads a burst of 1000-byte frames tagged PCP 3
//! (`trust = "pcp"`: lossless priority 3) that flood to port B (`Ethernet4`), whose data
//! TX is off (`tx_enable = false`). B's queue 3 holds them, A's ingress PG 3 crosses
//! Xoff, and the control lcore sends PFC PAUSE frames out of A (captured in A's
//! `tx_pcap`), refreshed while the PG stays above Xon. Then SIGUSR1 turns B's TX on, the
//! queue drains, and exactly one RESUME must follow. tshark must see: 60-byte MAC
//! Control frames (dst 01-80-C2-00-00-01, EtherType 0x8808) from A's MAC, opcode 0x0101
//! "Class Based Flow Control [CBFC] Pause", class-enable vector 0x0008 (C3 only), time
//! 65535 quanta for C3 and 0 for the other classes in every PAUSE, 0 in the RESUME,
//! which is the last PFC frame; no expert warnings.
//!
//! Skipped (with a message) only when tshark is not installed.

mod common;
use common::*;

use std::process::Command;
use std::time::Duration;

const FRAME: usize = 1000;
const PRIVATE: u64 = EXACT_PROFILE.size; // BUFFER_PROFILE size (φ)
const XOFF: u64 = EXACT_PROFILE.xoff; // headroom (η)
const LOSSLESS_POOL: u64 = EXACT_PROFILE.pool;
/// PGs with the lossless profile: 3 and 4 on both ports.
const LOSSLESS_PGS: u64 = 4;
/// A's speed: 65535 quanta = 335.5 ms, so the refresh (at half the pause time) is every
/// ~168 ms and easy to time.
const A_SPEED_BPS: u64 = 100_000_000;

/// Frames that take A's PG 3 past Xoff and into (not beyond) headroom: private, then
/// the shared segment up to T = α·(Bs − ω) with α = 1, then half the headroom.
fn frames_into_headroom() -> usize {
    let bs = LOSSLESS_POOL - LOSSLESS_PGS * (PRIVATE + XOFF);
    let f = FRAME as u64;
    let (mut p, mut s, mut n) = (0u64, 0u64, 0usize);
    loop {
        if p + f <= PRIVATE {
            p += f;
        } else if s < bs - s {
            s += f;
        } else {
            break;
        }
        n += 1;
    }
    n + (XOFF / f / 2) as usize
}

fn config(d: &TestDir) -> SwitchConfig {
    pcap_pair(d, "100M")
        .edit_port("Ethernet0", |p| p.set("trust", "\"pcp\""))
        .edit_port("Ethernet4", |p| p.set("trust", "\"pcp\""))
        .one_worker()
        .toml(&pcap_pair_buffer(&EXACT_PROFILE))
}

/// One frame as tshark decoded it.
#[derive(Debug)]
struct Decoded {
    time_ns: u64,
    len: usize,
    dst: String,
    src: String,
    ethertype: String,
    protocol: String,
    opcode: String,
    info: String,
    enbv: String,
    /// Pause time per class C0..C7 (None if tshark found no such field).
    times: [Option<u32>; 8],
    expert: String,
}

const FIELDS: &[&str] = &[
    "frame.time_epoch",
    "frame.len",
    "eth.dst",
    "eth.src",
    "eth.type",
    "_ws.col.Protocol",
    "macc.opcode",
    "_ws.col.Info",
    "macc.cbfc.enbv",
    "macc.cbfc.pause_time.c0",
    "macc.cbfc.pause_time.c1",
    "macc.cbfc.pause_time.c2",
    "macc.cbfc.pause_time.c3",
    "macc.cbfc.pause_time.c4",
    "macc.cbfc.pause_time.c5",
    "macc.cbfc.pause_time.c6",
    "macc.cbfc.pause_time.c7",
    "_ws.expert.message",
];

fn tshark(args: &[&str]) -> String {
    let out = Command::new("tshark").args(args).output().expect("run tshark");
    assert!(out.status.success(), "tshark {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn decode(pcap: &std::path::Path) -> Vec<Decoded> {
    let mut args = vec!["-r", pcap.to_str().unwrap(), "-T", "fields", "-E", "separator=|", "-E", "occurrence=a"];
    for f in FIELDS {
        args.push("-e");
        args.push(f);
    }
    tshark(&args)
        .lines()
        .map(|l| {
            let c: Vec<&str> = l.split('|').collect();
            assert_eq!(c.len(), FIELDS.len(), "tshark line: {l}");
            let secs: f64 = c[0].parse().unwrap_or_else(|_| panic!("time {}", c[0]));
            Decoded {
                time_ns: (secs * 1e9) as u64,
                len: c[1].parse().unwrap(),
                dst: c[2].into(),
                src: c[3].into(),
                ethertype: c[4].into(),
                protocol: c[5].into(),
                opcode: c[6].into(),
                info: c[7].into(),
                enbv: c[8].into(),
                times: std::array::from_fn(|i| c[9 + i].parse().ok()),
                expert: c[17].into(),
            }
        })
        .collect()
}

#[test]
fn switch_pfc_frames_decode_in_tshark() {
    if Command::new("tshark").arg("--version").output().map(|o| !o.status.success()).unwrap_or(true) {
        eprintln!("SKIP: tshark not installed (scripts/setup.sh installs it)");
        return;
    }
    let d = TestDir::new("tshark");
    let n = frames_into_headroom();
    let frames: Vec<_> = (0..n as u32).map(|i| vlan_frame(mac(0xbb), mac(0xaa), 3, 100, 0x33, i, FRAME)).collect();
    write_pcap(&d.join("in0.pcap"), &frames);
    write_pcap(&d.join("in1.pcap"), &[]);
    let cfg = d.join("tshark.toml");
    config(&d).write(&cfg);
    let json = d.join("stats.json");

    let mut sw = RunningSwitch::spawn(&cfg, &json, &[]);
    sw.wait_forwarding(Duration::from_secs(30));
    // PAUSE phase: B holds everything; A's PG 3 stays OFF and the PAUSE is refreshed.
    std::thread::sleep(Duration::from_millis(1200));
    let t_usr1 = now_ns();
    sw.signal("USR1");
    std::thread::sleep(Duration::from_millis(800));
    let log = sw.stop();
    let j = read_json(&json);
    let a = port(&j, "Ethernet0");
    let b = port(&j, "Ethernet4");
    let a_mac = a["mac"].as_str().unwrap().to_ascii_lowercase();

    // Everything arrived at B once its TX was on; nothing dropped.
    let out1 = read_pcap(&d.join("out1.pcap"));
    assert_eq!(out1, frames, "B's output differs from A's input\n{log}");
    assert_eq!(a["lossless_drops"], 0, "{}", a["drops"]);
    assert_eq!(a["drops_total"], 0, "{}", a["drops"]);
    assert_eq!(b["drops_total"], 0, "{}", b["drops"]);

    let dec = decode(&d.join("out0.pcap"));
    assert!(dec.len() >= 3, "expected PAUSE, refreshes and a RESUME on A, got {} frames\n{log}", dec.len());
    for (i, f) in dec.iter().enumerate() {
        let ctx = format!("frame {}: {f:?}", i + 1);
        assert_eq!(f.len, 60, "{ctx}");
        assert_eq!(f.dst, "01:80:c2:00:00:01", "{ctx}");
        assert_eq!(f.src, a_mac, "source must be A's MAC; {ctx}");
        assert_eq!(f.ethertype, "0x8808", "{ctx}");
        assert_eq!(f.protocol, "MAC CTRL", "{ctx}");
        assert_eq!(f.opcode, "0x0101", "{ctx}");
        assert_eq!(f.info, "Class Based Flow Control [CBFC] Pause", "{ctx}");
        assert_eq!(f.enbv, "0x0008", "class-enable vector: priority 3 only; {ctx}");
        assert!(f.expert.is_empty(), "tshark expert info: {ctx}");
        for (c, t) in f.times.iter().enumerate() {
            assert!(t.is_some(), "no pause time for C{c}; {ctx}");
            if c != 3 {
                assert_eq!(*t, Some(0), "C{c} time; {ctx}");
            }
        }
    }
    // PAUSE (0xFFFF for C3), its refreshes, and one RESUME (0) as the last frame.
    let (last, pauses) = dec.split_last().unwrap();
    assert_eq!(last.times[3], Some(0), "the last PFC frame must be the RESUME: {last:?}");
    assert!(
        pauses.iter().all(|f| f.times[3] == Some(0xffff)),
        "only PAUSEs before the one RESUME: {:?}",
        dec.iter().map(|f| f.times[3]).collect::<Vec<_>>()
    );
    // The RESUME answers the TX enable (draining B), not something earlier.
    assert!(
        last.time_ns + 20_000_000 >= t_usr1,
        "RESUME {:.1} ms before SIGUSR1",
        (t_usr1 - last.time_ns) as f64 / 1e6
    );
    assert!(last.time_ns < t_usr1 + 300_000_000, "RESUME {:.1} ms after SIGUSR1", (last.time_ns - t_usr1) as f64 / 1e6);
    assert!(pauses.iter().all(|f| f.time_ns < t_usr1 + 20_000_000), "PAUSE after TX was enabled");
    // Refreshed at about half the pause time, so the peer never un-pauses meanwhile.
    let pause_ns = 65535 * 512 * 1_000_000_000 / A_SPEED_BPS;
    let gaps: Vec<u64> = pauses.windows(2).map(|w| w[1].time_ns - w[0].time_ns).collect();
    eprintln!(
        "{} PAUSE frames, refresh gaps (ms): {:?}",
        pauses.len(),
        gaps.iter().map(|&g| g / 1_000_000).collect::<Vec<_>>()
    );
    assert!(pauses.len() >= 4, "PAUSE not refreshed during ~1.2 s of congestion: {} frames", pauses.len());
    assert!(
        gaps.iter().all(|&g| g > pause_ns / 4 && g < pause_ns * 3 / 4),
        "refresh gaps {gaps:?} ns, pause time {pause_ns} ns"
    );

    // The dissector's full decode says the same in words.
    let v = tshark(&["-r", d.join("out0.pcap").to_str().unwrap(), "-V"]);
    assert_eq!(v.matches("Type: MAC Control (0x8808)").count(), dec.len());
    assert_eq!(v.matches("Opcode: Class Based Flow Control [CBFC] Pause (0x0101)").count(), dec.len());
    assert_eq!(v.matches("CBFC Class Enable Vector: 0x0008, C3").count(), dec.len());
    assert_eq!(v.matches("        C3: 65535").count(), pauses.len());
    // And nothing it considers malformed or suspicious.
    let bad = tshark(&["-r", d.join("out0.pcap").to_str().unwrap(), "-Y", "_ws.expert || _ws.malformed || !macc"]);
    assert!(bad.trim().is_empty(), "tshark flags: {bad}");

    // Counters agree with the wire.
    assert_eq!(a["control_tx"].as_u64().unwrap() as usize, dec.len());
    assert_eq!(a["pfc"]["tx_pause"][3].as_u64().unwrap() as usize, pauses.len());
    assert_eq!(a["pfc"]["tx_resume"][3], 1);
    assert_eq!(a["pfc"]["tx_on2off"][3], 1);
    for p in 0..8 {
        if p != 3 {
            assert_eq!(a["pfc"]["tx_pause"][p], 0);
            assert_eq!(a["pfc"]["tx_resume"][p], 0);
        }
    }
    assert_eq!(b["tx_packets"].as_u64().unwrap() as usize, n);
    assert_eq!(b["control_tx"], 0, "B's ingress was never congested");
    assert_conserved(&j);
}
