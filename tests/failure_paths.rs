//! Failure paths end cleanly and say what happened. A worker that cannot be launched makes
//! the ones already running stop at once (they used to wait 5 s for it); a panic on a
//! worker lcore prints one line naming the lcore and where, and ends the process (no
//! lcore left spinning). Faults are injected with the test knobs PFCSW_FAULT_LAUNCH and
//! PFCSW_FAULT_PANIC (lcore ids).

mod common;
use common::*;

use std::process::Command;
use std::time::{Duration, Instant};

fn two_workers(d: &TestDir) -> std::path::PathBuf {
    write_pcap(&d.join("in0.pcap"), &(0..10).map(|i| eth_frame(mac(0xbb), mac(0xaa), i, 64)).collect::<Vec<_>>());
    write_pcap(&d.join("in1.pcap"), &[]);
    let dir = d.path.display();
    SwitchConfig::new(&d.prefix(), "0@0,1@1,2@1")
        .port(Port::new("Ethernet0", &format!("net_pcap0,rx_pcap={dir}/in0.pcap,tx_pcap={dir}/out0.pcap")).speed("10G"))
        .port(Port::new("Ethernet4", &format!("net_pcap1,rx_pcap={dir}/in1.pcap,tx_pcap={dir}/out1.pcap")).speed("10G"))
        .worker(1, &["Ethernet0:0"], &["Ethernet0"])
        .worker(2, &["Ethernet4:0"], &["Ethernet4"])
        .write(&d.join("t.toml"))
}

/// Run the switch with `knob=value`, core dumps off; (status, stderr, wall time).
fn run_with(cfg: &std::path::Path, knob: &str, value: &str) -> (std::process::ExitStatus, String, Duration) {
    let t0 = Instant::now();
    let out = Command::new("sh")
        .args([
            "-c",
            "ulimit -c 0; exec \"$@\"",
            "sh",
            BIN,
            "run",
            "--config",
            cfg.to_str().unwrap(),
            "--duration",
            "20",
        ])
        .env(knob, value)
        .output()
        .unwrap();
    (out.status, String::from_utf8_lossy(&out.stderr).into_owned(), t0.elapsed())
}

#[test]
fn launch_failure_stops_the_others_at_once() {
    let d = TestDir::new("launchfail");
    let cfg = two_workers(&d);
    let (status, stderr, took) = run_with(&cfg, "PFCSW_FAULT_LAUNCH", "2");
    assert!(!status.success(), "{stderr}");
    assert!(stderr.contains("lcore 2"), "the failure names the lcore: {stderr}");
    assert!(took < Duration::from_secs(4), "took {took:?}: the launched worker waited for the missing one\n{stderr}");
}

#[test]
fn worker_panic_names_the_lcore_and_ends_the_process() {
    let d = TestDir::new("panic");
    let cfg = two_workers(&d);
    let (status, stderr, took) = run_with(&cfg, "PFCSW_FAULT_PANIC", "2");
    assert!(!status.success(), "{stderr}");
    let line = stderr.lines().find(|l| l.contains("panicked")).unwrap_or_else(|| panic!("no panic line: {stderr}"));
    assert!(line.starts_with("pfcswitch: worker lcore 2 panicked at src/"), "{line}");
    assert!(line.contains("injected fault"), "{line}");
    assert!(took < Duration::from_secs(15), "the process did not end: {took:?}");
}
