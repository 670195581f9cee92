//! pfcgen's RoCEv2 on the wire, decoded by an independent dissector (Wireshark's
//! `tshark`, its InfiniBand/RRoCE dissector), and its notification point answering CE
//! with CNPs, one per flow per interval.
//!
//! One pfcgen process (a real EAL, `net_pcap`): its port reads `in.pcap` — 20 CE-marked
//! RoCEv2 frames of each of two flows (stream ids 7 and 8, built with pfcgen's own frame
//! builder as another pfcgen would send them) — and writes what it sends to `out.pcap`:
//! its own RoCEv2 stream (10 frames, tagged PCP 3, QP 0x10001) and the CNPs. With the CNP
//! interval stretched to 5 s (`--dcqcn-time-scale 100000`), the 40 CE frames, read within
//! far less than that, get exactly one CNP per flow; the other 38 are counted as
//! suppressed. tshark must decode every frame as InfiniBand (RRoCE), data as RC Send
//! Only (opcode 4) with the PSN its sequence number and the ICRC our code computes
//! (checked against a ConnectX-4 capture in `roce.rs`'s unit test; tshark shows it, it
//! does not check it), the CNPs as opcode 0x81 to QPs 0x10007 and 0x10008, and nothing
//! malformed (no expert message).
//!
//! Skipped (with a message) only when tshark is not installed.

mod common;
use common::*;

use std::process::Command;

use pfcswitch::pfcgen::frame::FrameBuilder;
use pfcswitch::pfcgen::roce;
use pfcswitch::pfcgen::spec::{resolve, CliSpec};
use pfcswitch::wire::MacAddr;

fn ce_frames(id: u16, n: u64) -> Vec<Vec<u8>> {
    let cli = CliSpec {
        ports: vec!["net_null0".into()],
        streams: vec![format!(
            "roce=true,id={id},size=200,ecn=ce,pcp=3,vlan=100,src_mac=02:00:00:00:00:{id:02x},dst_mac=02:00:00:00:00:99,src_ip=10.0.0.{id},dst_ip=10.0.1.1"
        )],
        ..Default::default()
    };
    let s = resolve(None, &cli).unwrap().streams.remove(0);
    let b = FrameBuilder::new(&s, MacAddr([2, 0, 0, 0, 0, id as u8]));
    (0..n)
        .map(|seq| {
            let mut f = vec![0u8; usize::from(b.size(seq)) - 4];
            b.build(seq, 0, &mut f);
            f
        })
        .collect()
}

const FIELDS: &[&str] = &[
    "frame.protocols",
    "infiniband.bth.opcode",
    "infiniband.bth.destqp",
    "infiniband.bth.psn",
    "infiniband.invariant.crc",
    "vlan.priority",
    "ip.dsfield.dscp",
    "ip.dsfield.ecn",
    "ip.checksum.status",
    "_ws.expert.message",
];

#[test]
fn roce_frames_and_cnps_decode_in_tshark() {
    if Command::new("tshark").arg("--version").output().map(|o| !o.status.success()).unwrap_or(true) {
        eprintln!("SKIP: tshark not installed (scripts/setup.sh installs it)");
        return;
    }
    let d = TestDir::new("pfcgen-roce");
    let mut input = ce_frames(7, 20);
    input.extend(ce_frames(8, 20));
    let (inp, out, json) = (d.join("in.pcap"), d.join("out.pcap"), d.join("gen.json"));
    write_pcap(&inp, &input);
    let st = Command::new(GEN_BIN)
        .args([
            "run",
            "--port",
            &format!("net_pcap0,rx_pcap={},tx_pcap={}", inp.display(), out.display()),
            "--stream",
            "roce=true,id=1,count=10,rate=1000pps,size=300,ecn=ect0,pcp=3,vlan=100,dst_mac=02:00:00:00:00:07",
            "--rx-streams",
            "16",
            "--cnp",
            "--dcqcn-time-scale",
            "100000",
            "--drain",
            "300ms",
            "--stats-interval",
            "0",
            "--stats-json",
            json.to_str().unwrap(),
            "--",
            "--no-huge",
            "-m",
            "256",
            "--no-pci",
            "--lcores=0@1",
            &format!("--file-prefix={}", d.prefix()),
        ])
        .output()
        .unwrap();
    let logs = format!("{}\n{}", String::from_utf8_lossy(&st.stdout), String::from_utf8_lossy(&st.stderr));
    assert!(st.status.success(), "pfcgen failed\n{logs}");
    let j = read_json(&json);
    let p = &j["ports"][0];
    assert_eq!(p["cnp_tx"], 2, "one CNP per flow in the interval\n{j}");
    assert_eq!(p["cnp_suppressed"], 38, "{j}");
    assert_eq!(p["rx_other"], 0, "every RoCEv2 frame read as pfcgen's\n{j}");
    let got = read_pcap(&out);
    assert_eq!(got.len(), 12, "10 data frames and 2 CNPs");
    for f in &got {
        let ip_len = usize::from(u16::from_be_bytes([f[20], f[21]]));
        assert!(roce::icrc_ok(&f[18..18 + ip_len]), "ICRC of {f:02x?}");
    }

    let mut args = vec!["-r", out.to_str().unwrap(), "-T", "fields", "-E", "separator=|", "-E", "occurrence=a"];
    for f in FIELDS {
        args.extend(["-e", f]);
    }
    let o = Command::new("tshark").args(&args).output().expect("run tshark");
    assert!(o.status.success(), "tshark: {}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split('|').collect()).collect();
    assert_eq!(rows.len(), 12, "{text}");
    let (mut data, mut cnps) = (0, Vec::new());
    for (f, r) in got.iter().zip(&rows) {
        assert_eq!(r.len(), FIELDS.len(), "{text}");
        assert!(r[0].contains("udp:infiniband"), "not decoded as RoCE: {}", r[0]);
        assert_eq!(r[9], "", "tshark expert message (malformed?): {r:?}");
        assert_eq!(r[8], "2", "IPv4 checksum status (2 = good): {r:?}");
        let ip_len = usize::from(u16::from_be_bytes([f[20], f[21]]));
        match r[1] {
            "4" => {
                let icrc = u32::from_str_radix(r[4].trim_start_matches("0x"), 16).unwrap();
                assert_eq!(icrc.to_be_bytes(), f[18 + ip_len - 4..18 + ip_len], "tshark's ICRC is the frame's: {r:?}");
                assert_eq!((r[2], r[5], r[7]), ("0x010001", "3", "2"), "{r:?}");
                assert_eq!(r[3].parse::<u32>().unwrap(), data, "PSN = sequence number");
                data += 1;
            }
            // Wireshark 4.0 names no CNP opcode ("Unknown (129)") and shows what follows the
            // BTH as vendor data, as it does for a ConnectX-4's own CNP: no ICRC field.
            "129" => {
                assert_eq!((r[5], r[6], r[7]), ("6", "48", "0"), "CNP: PCP 6, DSCP 48, Not-ECT: {r:?}");
                cnps.push(r[2].to_string());
            }
            op => panic!("opcode {op}: {r:?}"),
        }
    }
    cnps.sort();
    assert_eq!((data, cnps), (10, vec!["0x010007".to_string(), "0x010008".to_string()]));
    eprintln!("pfcgen RoCEv2: 10 data frames and 2 CNPs (38 CE frames within the interval suppressed), all decoded by tshark as RRoCE with nothing malformed");
}
