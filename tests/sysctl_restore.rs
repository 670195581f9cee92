//! Kernel settings of a routed switch (docs/routing.md "Kernel settings"): forwarding,
//! redirects and reverse-path filtering are set on the representors, namespace-wide only
//! where Linux combines a device's value with `all`, and every value written is put back at
//! stop. The switch runs without `[control_plane] netns` (`allow_root_namespace`) inside a
//! namespace of its own (`ip netns exec`), standing in for the host, with values a host
//! might have.
//!
//! Needs root; skipped otherwise.

mod common;
use common::*;

use std::time::Duration;

/// Namespace-wide values before the switch starts.
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
fn forwarding_is_set_per_representor_and_restored_at_stop() {
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
    // Linux 6.17 has a per-interface IPv6 forwarding switch; before it, `all` decides.
    let per_if_v6 = std::path::Path::new("/proc/sys/net/ipv6/conf/all/force_forwarding").exists();
    // No [control_plane] netns: the switch writes the namespace it runs in.
    let cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1")
        .memory_mb(1024)
        .port(Port::new("Ethernet0", "net_null0"))
        .port(Port::new("Ethernet4", "net_null1"))
        .toml("[control_plane]\nallow_root_namespace = true\n[interface]\nEthernet0 = [\"10.9.0.0/31\"]")
        .one_worker()
        .write(&d.join("t.toml"));
    let json = d.join("stats.json");
    let sw = std::process::Command::new("ip")
        .args(["netns", "exec", &ns.0, BIN, "run", "--config", cfg.to_str().unwrap(), "--duration", "8"])
        .args(["--stats-json", json.to_str().unwrap()])
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let rep = |k: &str| read(&ns, &format!("net/{k}"));
    let during = until(Duration::from_secs(60), || rep("ipv4/conf/Ethernet0/forwarding") == "1");
    let while_running: Vec<String> = KEYS.iter().map(|(k, _)| read(&ns, k)).collect();
    let on_rep: Vec<String> = [
        "ipv4/conf/Ethernet0/forwarding",
        "ipv4/conf/Ethernet0/send_redirects",
        "ipv4/conf/Ethernet0/rp_filter",
        "ipv6/conf/Ethernet0/forwarding",
    ]
    .iter()
    .map(|k| rep(k))
    .collect();
    let force_v6 = rep("ipv6/conf/Ethernet0/force_forwarding");
    // The kernel forwards what arrives on the representor, with ip_forward still 0.
    let route = sh(&format!(
        "ip -n {0} route add 10.50.0.0/16 via 10.9.0.1 dev Ethernet0 && \
         ip -n {0} route get 10.50.0.1 from 10.9.0.1 iif Ethernet0",
        ns.0
    ));
    let out = sw.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", show(&out));
    assert!(during.is_some(), "the switch never turned forwarding on on its representor: {}", show(&out));
    // ip_forward and the defaults untouched; all.send_redirects and all.rp_filter to 0 (Linux
    // ORs the first with the device's and takes the larger of the second); IPv6 forwarding
    // namespace-wide only where the kernel has no force_forwarding.
    let v6_all = if per_if_v6 { "0" } else { "1" };
    assert_eq!(while_running, ["0", v6_all, "0", "1", "0", "1"], "namespace-wide values while it runs");
    assert_eq!(on_rep, ["1", "0", "0", "1"], "the representor's values while it runs");
    if per_if_v6 {
        assert_eq!(force_v6, "1", "IPv6 force_forwarding on the representor");
    }
    assert!(route.status.success(), "the kernel does not forward from the representor: {}", text(&route));
    let after: Vec<(&str, String)> = KEYS.iter().map(|(k, _)| (*k, read(&ns, k))).collect();
    let before: Vec<(&str, String)> = KEYS.iter().map(|(k, v)| (*k, v.to_string())).collect();
    assert_eq!(after, before, "sysctls not restored at stop");
    let log = text(&out);
    assert!(log.contains("restored to"), "the restore is not logged");
    assert!(log.contains("control_plane.allow_root_namespace: routing in"), "no warning for the root namespace: {log}");
}
