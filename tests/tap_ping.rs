//! Kernel peers on net_tap: two network namespaces hold the switch's tap interfaces, and
//! `ping` crosses the switch. Needs root (namespaces); skipped with a message otherwise.

mod common;
use common::*;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn sh(cmd: &str) -> std::process::Output {
    Command::new("sh").arg("-c").arg(cmd).output().unwrap()
}

fn is_root() -> bool {
    sh("id -u").stdout.starts_with(b"0")
}

#[test]
fn ping_crosses_the_switch_between_namespaces() {
    if !is_root() {
        eprintln!("SKIP: needs root for network namespaces");
        return;
    }
    let d = TestDir::new("tap");
    let tag = std::process::id() % 100000;
    let (if0, if1) = (format!("pt{tag}a"), format!("pt{tag}b"));
    let (ns0, ns1) = (format!("pfcsw{tag}a"), format!("pfcsw{tag}b"));
    let cfg_path = SwitchConfig::new(&d.prefix(), "0@0,1@1")
        .port(Port::new("Ethernet0", &format!("net_tap0,iface={if0}")).speed("10G").set("cable_length", "\"1m\""))
        .port(Port::new("Ethernet4", &format!("net_tap1,iface={if1}")).speed("10G").set("cable_length", "\"1m\""))
        .one_worker()
        .write(&d.join("tap.toml"));
    let json = d.join("stats.json");
    let mut child = Command::new(BIN)
        .args([
            "run",
            "--config",
            cfg_path.to_str().unwrap(),
            "--duration",
            "40",
            "--stats-json",
            json.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let cleanup = |ns0: &str, ns1: &str| {
        sh(&format!("ip netns del {ns0} 2>/dev/null; ip netns del {ns1} 2>/dev/null"));
    };
    // Wait until the switch forwards (its ports are configured and started: moving a tap
    // interface to another namespace before that would hide it from the PMD's ioctls).
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut all = String::new();
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("forwarding:") {
                let _ = tx.send(());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    if rx.recv_timeout(Duration::from_secs(30)).is_err() {
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        panic!("switch never started forwarding\n{}\n{}", show(&out), reader.join().unwrap());
    }
    let t0 = Instant::now();
    while !(sh(&format!("ip link show {if0}")).status.success() && sh(&format!("ip link show {if1}")).status.success())
    {
        assert!(t0.elapsed() < Duration::from_secs(10), "tap interfaces never appeared");
        std::thread::sleep(Duration::from_millis(100));
    }
    cleanup(&ns0, &ns1);
    let setup = format!(
        "set -e; ip netns add {ns0}; ip netns add {ns1}; \
         ip link set {if0} netns {ns0}; ip link set {if1} netns {ns1}; \
         ip -n {ns0} link set lo up; ip -n {ns1} link set lo up; \
         ip -n {ns0} addr add 192.0.2.1/24 dev {if0}; ip -n {ns1} addr add 192.0.2.2/24 dev {if1}; \
         ip -n {ns0} link set {if0} up; ip -n {ns1} link set {if1} up"
    );
    let s = sh(&setup);
    assert!(s.status.success(), "namespace setup failed: {}", String::from_utf8_lossy(&s.stderr));
    let ping = sh(&format!("ip netns exec {ns0} ping -c 5 -i 0.2 -W 2 192.0.2.2"));
    let ping_out = String::from_utf8_lossy(&ping.stdout).into_owned();
    // Stop the switch with SIGINT, as an operator would.
    sh(&format!("kill -INT {}", child.id()));
    let out = child.wait_with_output().unwrap();
    let log = reader.join().unwrap();
    cleanup(&ns0, &ns1);
    assert!(ping.status.success(), "ping failed:\n{ping_out}\n{}\n{log}", show(&out));
    assert!(ping_out.contains(" 0% packet loss"), "{ping_out}");
    assert!(out.status.success(), "{}\n{log}", show(&out));
    let j = read_json(&json);
    // Both directions crossed the switch: echo requests + ARP one way, replies the other.
    assert!(port(&j, "Ethernet0")["rx_packets"].as_u64().unwrap() >= 5);
    assert!(port(&j, "Ethernet4")["rx_packets"].as_u64().unwrap() >= 5);
    assert!(port(&j, "Ethernet4")["tx_packets"].as_u64().unwrap() >= 5);
    assert_conserved(&j);
}
