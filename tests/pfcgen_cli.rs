//! The `pfcgen` command line: help, bad specs refused with one line and exit 2 before EAL
//! starts, the shipped example validates, and a short real run on net_null sends exactly
//! its count and writes the JSON summary.

mod common;
use common::*;

use std::process::Command;

fn gen(args: &[&str]) -> std::process::Output {
    Command::new(GEN_BIN).args(args).env("RUST_LOG", "info").output().expect("spawn pfcgen")
}

#[test]
fn help_documents_the_commands_and_keys() {
    let out = gen(&["--help"]);
    assert!(out.status.success(), "{}", show(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    for want in ["run", "check-config", "STREAM KEYS", "dst_port=4791", "pfc_enable"] {
        assert!(text.contains(want), "--help lacks {want}:\n{text}");
    }
    let run = String::from_utf8_lossy(&gen(&["run", "--help"]).stdout).into_owned();
    for want in ["--count", "--drain", "--stats-json", "STREAM KEYS"] {
        assert!(run.contains(want), "run --help lacks {want}:\n{run}");
    }
}

#[test]
fn bad_specs_are_one_line_and_exit_2_before_eal() {
    let cases: &[(&[&str], &str)] = &[
        (&["run", "--port", "net_null0", "--stream", "rate=3"], "--stream[0]: stream.rate:"),
        (&["run", "--port", "net_null0", "--stream", "size=63"], "--stream[0]: stream.size:"),
        (&["run", "--port", "net_null0", "--stream", "colour=red"], "--stream[0]: stream.colour: unknown field"),
        (&["run", "--port", "net_null0", "--duration", "-1"], "--duration:"),
        (&["run", "--stream", "rate=1pps"], "pfcgen: port: no port"),
        (&["check-config", "--config", "/nonexistent/gen.toml"], "/nonexistent/gen.toml: cannot read"),
    ];
    for (args, want) in cases {
        let out = gen(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}\n{}", show(&out));
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: not one line:\n{err}");
        assert!(err.starts_with(want), "{args:?}: {err}");
        assert!(!err.contains("EAL"), "{args:?}: EAL started:\n{err}");
    }
}

#[test]
fn shipped_example_validates() {
    let cfg = concat!(env!("CARGO_MANIFEST_DIR"), "/dpdk-config/pfcgen/memif.toml");
    let out = gen(&["check-config", "--config", cfg]);
    assert!(out.status.success(), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("stream roce-a (id 0): port p0"), "{}", show(&out));
}

#[test]
fn a_short_run_sends_its_count() {
    let d = TestDir::new("pfcgen-cli");
    let json = d.join("gen.json");
    let prefix = format!("--file-prefix={}", d.prefix());
    let out = gen(&[
        "run",
        "--port",
        "net_null0,no-rx=1",
        "--stream",
        "rate=2000pps,size=128,pcp=3,vlan=7",
        "--count",
        "50",
        "--drain",
        "0",
        "--stats-json",
        json.to_str().unwrap(),
        "--",
        "--no-huge",
        "-m",
        "256",
        "--no-pci",
        "--lcores=0@0",
        &prefix,
    ]);
    assert!(out.status.success(), "{}", show(&out));
    let j = read_json(&json);
    let s = &j["streams"][0];
    assert_eq!(
        (s["tx_packets"].as_u64(), s["tx_bytes"].as_u64(), s["priority"].as_u64()),
        (Some(50), Some(6400), Some(3)),
        "{j}"
    );
    assert_eq!(s["lost"], serde_json::Value::Null, "not received here: loss unknown, not 50\n{j}");
    // 50 frames at 2000/s: the last one may not leave before 49 intervals of 0.5 ms.
    let secs = j["elapsed_s"].as_f64().unwrap();
    assert!(secs >= 0.0245, "{secs} s: faster than the rate\n{j}");
    assert_eq!(j["ports"][0]["pmd"]["opackets"], 50, "{j}");
    assert_eq!(j["mbufs"]["in_use_after_stop"], 0, "{j}");
}
