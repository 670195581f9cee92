//! Sysctls put back at stop (docs/routing.md "Kernel settings"): a routed
//! switch without `[control_plane] netns` writes its namespace's (there: the host's)
//! forwarding, redirect and reverse-path sysctls, and at stop writes back what they were.
//! The test runs the switch inside a namespace of its own (`ip netns exec`), standing in
//! for the host, with values a host might have.
//!
//! Needs root; skipped otherwise.

mod common;
use common::*;

use std::time::Duration;

const KEYS: [(&str, &str); 6] = [
    ("net/ipv4/ip_forward", "0"),
    ("net/ipv6/conf/all/forwarding", "0"),
    ("net/ipv4/conf/all/send_redirects", "1"),
    ("net/ipv4/conf/default/send_redirects", "1"),
    ("net/ipv4/conf/all/rp_filter", "2"),
    ("net/ipv4/conf/default/rp_filter", "1"),
];

fn read(ns: &Netns, key: &str) -> String {
    text(&sh(&format!("ip netns exec {} cat /proc/sys/{key}", ns.0))).trim().to_string()
}

#[test]
fn sysctls_written_at_start_are_restored_at_stop() {
    if !is_root() {
        eprintln!("SKIP: needs root for network namespaces");
        return;
    }
    let d = TestDir::new("sysctl-restore");
    let ns = Netns::add(&format!("pfcswsy{}", std::process::id() % 100_000));
    for (k, v) in KEYS {
        let o = sh(&format!("ip netns exec {} sh -c 'echo {v} > /proc/sys/{k}'", ns.0));
        assert!(o.status.success(), "{k}: {}", show(&o));
    }
    // No [control_plane] netns: the switch writes the namespace it runs in.
    let cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1")
        .memory_mb(1024)
        .port(Port::new("Ethernet0", "net_null0"))
        .port(Port::new("Ethernet4", "net_null1"))
        .toml("[interface]\nEthernet0 = [\"10.9.0.0/31\"]")
        .one_worker()
        .write(&d.join("t.toml"));
    let json = d.join("stats.json");
    let sw = std::process::Command::new("ip")
        .args(["netns", "exec", &ns.0, BIN, "run", "--config", cfg.to_str().unwrap(), "--duration", "6"])
        .args(["--stats-json", json.to_str().unwrap()])
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let during = until(Duration::from_secs(60), || read(&ns, "net/ipv4/ip_forward") == "1");
    let while_running: Vec<String> = KEYS.iter().map(|(k, _)| read(&ns, k)).collect();
    let out = sw.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", show(&out));
    assert!(during.is_some(), "the switch never turned forwarding on: {}", show(&out));
    assert_eq!(while_running, ["1", "1", "0", "0", "0", "0"], "the switch's settings while it runs");
    let after: Vec<(&str, String)> = KEYS.iter().map(|(k, _)| (*k, read(&ns, k))).collect();
    let before: Vec<(&str, String)> = KEYS.iter().map(|(k, v)| (*k, v.to_string())).collect();
    assert_eq!(after, before, "sysctls not restored at stop");
    assert!(text(&out).contains("restored to"), "the restore is not logged");
}
