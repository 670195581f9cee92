//! SONiC's T0 shape on real EAL (docs/switching.md, "VLAN interfaces"): two kernel hosts in
//! Vlan1000 (untagged members Ethernet0 and Ethernet4), a third on a routed port
//! (Ethernet8) in another subnet, the switch in its own namespace with the kernel as its
//! control plane and a `Vlan1000` representor carrying the VLAN interface's address.
//!
//! * the VLAN hosts ping each other (bridged: TTL untouched);
//! * they ping the VLAN interface's address (punted up `Vlan1000`, answered by the kernel);
//! * they ping the routed host across the switch and back (TTL decremented once each way);
//! * routed UDP into and out of the VLAN at once (10 Mb/s each way for 1 s): every datagram
//!   arrives;
//! * `show mac` lists both hosts in Vlan1000.
//!
//! And the T0 lossless incast with senders that obey PFC (pfcgen on net_memif): routed
//! uplinks into Vlan1000's servers, 0 drops, PAUSE on the uplinks
//! (`t0_lossless_incast_from_the_uplinks_into_the_vlan`).
//!
//! Both need root; skipped otherwise.

mod common;
use common::*;

use std::time::Duration;

#[test]
fn vlan_interface_routes_between_a_vlan_and_a_routed_port() {
    if !is_root() {
        eprintln!("SKIP: needs root (namespaces, veth)");
        return;
    }
    let d = TestDir::new("vlanif");
    let p = format!("q{}", std::process::id() % 100_000);
    let hosts = Hosts::up_routed(&p, 3);
    // Host 2 joins host 1's subnet (the VLAN's): 198.18.1.3/24 via the VLAN interface.
    for cmd in [
        format!("ip addr flush dev {p}v2b"),
        format!("ip addr add 198.18.1.3/24 dev {p}v2b"),
        "ip route replace default via 198.18.1.1".to_string(),
    ] {
        let o = hosts.exec(2, &cmd);
        assert!(o.status.success(), "{cmd}: {}", text(&o));
    }
    let cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1")
        .memory_mb(1024)
        .port(Port::new("Ethernet0", &format!("net_af_packet0,iface={p}v1a")).speed("10G"))
        .port(Port::new("Ethernet4", &format!("net_af_packet1,iface={p}v2a")).speed("10G"))
        .port(Port::new("Ethernet8", &format!("net_af_packet2,iface={p}v3a")).speed("10G"))
        .toml(&format!(
            r#"[control_plane]
netns = "{p}sw"
[interface]
Ethernet8 = ["198.18.3.1/24"]
[vlan.Vlan1000]
[vlan_member]
"Vlan1000|Ethernet0" = {{ tagging_mode = "untagged" }}
"Vlan1000|Ethernet4" = {{ tagging_mode = "untagged" }}
[vlan_interface]
Vlan1000 = ["198.18.1.1/24"]
"#
        ))
        .one_worker()
        .write(&d.join("t.toml"));
    let json = d.join("stats.json");
    let mut sw = RunningSwitch::spawn(&cfg, &json, &[]);
    sw.wait_forwarding(Duration::from_secs(60));

    // 1. Bridged in the VLAN: TTL untouched.
    let out = text(&hosts.exec(1, "ping -c 3 -i 0.2 -W 2 198.18.1.3"));
    assert!(out.contains(" 0% packet loss") && out.contains("ttl=64"), "h1 -> h2 (bridged): {out}");
    // 2. The VLAN interface's address: answered by the kernel on Vlan1000.
    for h in [1, 2] {
        let out = text(&hosts.exec(h, "ping -c 2 -i 0.2 -W 2 198.18.1.1"));
        assert!(out.contains(" 0% packet loss"), "h{h} -> Vlan1000: {out}");
    }
    // 3. Routed out of and into the VLAN: the reply crossed the switch once.
    for h in [1, 2] {
        let out = text(&hosts.exec(h, "ping -c 3 -i 0.2 -W 2 198.18.3.2"));
        assert!(out.contains(" 0% packet loss") && out.contains("ttl=63"), "h{h} -> h3 (routed): {out}");
    }
    let out = text(&hosts.exec(3, "ping -c 3 -i 0.2 -W 2 198.18.1.3"));
    assert!(out.contains(" 0% packet loss") && out.contains("ttl=63"), "h3 -> h2 (routed into the VLAN): {out}");

    // 4. Routed UDP both ways at once, 10 Mb/s for 1 s each: h3 -> h2 into the VLAN, h1 ->
    //    h3 out of it. Every datagram arrives.
    let script = format!("{}/scripts/host_traffic.py", env!("CARGO_MANIFEST_DIR"));
    let recvs = [(2, 5000), (3, 5001)].map(|(h, port)| {
        let c = hosts.spawn(h, &format!("python3 {script} udp-recv {port} 5"));
        hosts.wait_udp_bound(h, port);
        c
    });
    let senders = [(3, "198.18.1.3", 5000), (1, "198.18.3.2", 5001)]
        .map(|(h, dst, port)| hosts.spawn(h, &format!("python3 {script} udp-send {dst} {port} 10000000 1 0 1000")));
    let json_of = |c: std::process::Child, what: &str| -> serde_json::Value {
        let o = c.wait_with_output().unwrap();
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{what}: {e}: {}", text(&o)))
    };
    let sent = senders.map(|c| json_of(c, "udp-send"));
    let got = recvs.map(|c| json_of(c, "udp-recv"));
    for (dir, (s, g)) in ["h3 -> h2 (into Vlan1000)", "h1 -> h3 (out of Vlan1000)"].iter().zip(sent.iter().zip(&got)) {
        assert!(s["sent"].as_u64().unwrap() >= 500, "{dir}: {s}");
        assert_eq!(g["received"], s["sent"], "{dir}: routed UDP lost");
    }
    let udp_sent: Vec<u64> = sent.iter().map(|s| s["sent"].as_u64().unwrap()).collect();

    // 5. show mac: both hosts in Vlan1000, on their ports.
    let mac_of = |h: u32| {
        let o = hosts.exec(h, &format!("cat /sys/class/net/{p}v{h}b/address"));
        text(&o).trim().to_ascii_lowercase()
    };
    let prefix = d.prefix();
    let o = run_switch(&["show", "--prefix", prefix.as_str(), "mac"]);
    assert!(o.status.success(), "show mac: {}", show(&o));
    let table = String::from_utf8_lossy(&o.stdout).to_ascii_lowercase();
    eprintln!("{}", String::from_utf8_lossy(&o.stdout));
    for (h, port) in [(1, "ethernet0"), (2, "ethernet4")] {
        let m = mac_of(h);
        assert!(
            table.lines().any(|l| l.contains("1000") && l.contains(&m) && l.contains(port)),
            "host {h} ({m}) not in Vlan1000 on {port}: {table}"
        );
    }

    let log = sw.stop();
    drop(hosts);
    let j = read_json(&json);
    assert_conserved(&j);
    let e0 = port(&j, "Ethernet0");
    // h1 -> h3: the first echo may go through the kernel (neighbour_miss) while it resolves h3.
    assert!(e0["routed_packets"].as_u64().unwrap() >= 2, "{e0}");
    assert!(e0["punted"]["arp"].as_u64().unwrap() >= 1, "{}", e0["punted"]);
    assert!(e0["routed_packets"].as_u64().unwrap() >= udp_sent[1], "{e0}");
    assert!(port(&j, "Ethernet8")["routed_packets"].as_u64().unwrap() >= 3 + udp_sent[0]);
    assert!(log.contains("router interface Vlan1000: representor Vlan1000 (kernel netdev Vlan1000)"), "{log}");
}

/// The T0 lossless incast (docs/switching.md, "VLAN interfaces"), senders that obey PFC:
/// two routed uplinks (Ethernet8, Ethernet12) each send DSCP 3 UDP at 30 Mb/s to the
/// router MAC for server A (192.168.0.2) in Vlan1000, and Ethernet8 15 Mb/s more to
/// server B (192.168.0.3); the servers are untagged Vlan1000 members (Ethernet0,
/// Ethernet4) whose egress drains at 30 Mb/s. Every link is net_memif to one pfcgen
/// (4 ports), the servers' neighbours are static in the switch's namespace and their
/// ports learned from a short broadcast each sends first. The switch routes each
/// datagram through Vlan1000 to its server's port (the VLAN's FDB), fills PG 3 of both
/// uplinks and PAUSEs them for priority 3: 0 lossless drops, every frame received once
/// and in order, the uplinks paused for a while.
#[test]
fn t0_lossless_incast_from_the_uplinks_into_the_vlan() {
    if !is_root() {
        eprintln!("SKIP: needs root (namespaces)");
        return;
    }
    const COUNT: u64 = 3000;
    let d = TestDir::new("vlanif-incast");
    let ns = Netns::add(&format!("v{}sw", std::process::id() % 100_000));
    let names = ["Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"];
    let sock = |i: usize| d.join(&format!("m{i}.sock")).display().to_string();
    let sw_mac = |i: usize| format!("02:00:00:00:01:{:02x}", 4 * i);
    let mut cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1")
        .memory_mb(1024)
        .toml("[switch]\nrx_ring_size = 256\ntx_ring_size = 512\nmbuf_count = 16383\nsw_response = \"80ms\"");
    for (i, name) in names.iter().enumerate() {
        let mut port = Port::new(name, &format!("net_memif{i},role=server,id=0,socket={},socket-abstract=no", sock(i)))
            .speed("100M")
            .set("mac", &format!("\"{}\"", sw_mac(i)))
            .set("cable_length", "\"5m\"")
            .pfc_enable(&[3]);
        if i < 2 {
            port = port.set("shaper_rate", "\"30M\"");
        }
        cfg = cfg.port(port);
    }
    // Headroom computed (sw_response 80 ms at 100 Mb/s, ~1 MB per PG): what a switch
    // descheduled on a loaded machine finds in its RX and memif rings.
    let cfg = cfg
        .toml(&format!(
            r#"[control_plane]
netns = "{}"
[interface]
Ethernet8 = ["10.0.8.1/24"]
Ethernet12 = ["10.0.12.1/24"]
[vlan.Vlan1000]
[vlan_member]
"Vlan1000|Ethernet0" = {{ tagging_mode = "untagged" }}
"Vlan1000|Ethernet4" = {{ tagging_mode = "untagged" }}
[vlan_interface]
Vlan1000 = ["192.168.0.1/21"]
"#,
            ns.0
        ))
        .toml(&computed_headroom_buffer(&names))
        .lcores_set("worker_idle", "\"adaptive\"")
        .one_worker()
        .write(&d.join("sw.toml"));
    let json = d.join("stats.json");
    let mut sw = RunningSwitch::spawn(&cfg, &json, &["--duration", "120"]);
    sw.wait_forwarding(Duration::from_secs(60));
    // The servers' neighbours, as the kernel would have them after ARP.
    let (mac_a, mac_b) = ("02:00:00:00:10:02", "02:00:00:00:10:03");
    for (ip, m) in [("192.168.0.2", mac_a), ("192.168.0.3", mac_b)] {
        let o = sh(&format!("ip -n {} neigh replace {ip} lladdr {m} dev Vlan1000 nud permanent", ns.0));
        assert!(o.status.success(), "neighbour {ip}: {}", text(&o));
    }

    // pfcgen (in the root namespace: the sockets are files, not in the switch namespace's
    // abstract socket space): g0/g1 the servers (a broadcast each first, so the switch learns them in
    // Vlan1000), g2/g3 the uplinks; the data starts 500 ms after the links are up.
    let mut gen = format!(
        "[eal]\nargs = [\"--no-huge\", \"-m\", \"256\", \"--no-pci\", \"--lcores=0@1\", \"--file-prefix={}-gen\"]\n",
        d.prefix()
    );
    for i in 0..4 {
        gen += &format!(
            "[[port]]\nname = \"g{i}\"\ndevargs = \"net_memif{i},role=client,id=0,socket={},socket-abstract=no\"\nspeed = \"100M\"\npfc_enable = [3]\n",
            sock(i)
        );
    }
    for (name, port, m) in [("learn_a", "g0", mac_a), ("learn_b", "g1", mac_b)] {
        gen += &format!(
            "[[stream]]\nname = \"{name}\"\nport = \"{port}\"\nrate = \"100pps\"\ncount = 3\nsrc_mac = \"{m}\"\n"
        );
    }
    let stream = |name: &str, port: usize, dst: &str, rate: &str| {
        format!(
            "[[stream]]\nname = \"{name}\"\nport = \"g{port}\"\nrate = \"{rate}\"\nsize = 1000\ndscp = 3\n\
             src_mac = \"02:00:00:00:20:{port:02x}\"\ndst_mac = \"{}\"\nsrc_ip = \"10.0.{}.2\"\ndst_ip = \"{dst}\"\nstart = \"500ms\"\n",
            sw_mac(port),
            4 * port
        )
    };
    gen += &stream("up8_a", 2, "192.168.0.2", "30Mbit/s");
    gen += &stream("up12_a", 3, "192.168.0.2", "30Mbit/s");
    gen += &stream("up8_b", 2, "192.168.0.3", "15Mbit/s");
    let gen_cfg = d.join("gen.toml");
    std::fs::write(&gen_cfg, gen).unwrap();
    let gen_json = d.join("gen.json");
    let t0 = std::time::Instant::now();
    let mut g = Proc(
        std::process::Command::new(GEN_BIN)
            .args(["run", "--config", gen_cfg.to_str().unwrap(), "--count", &COUNT.to_string()])
            .args(["--drain", "2s", "--stats-json", gen_json.to_str().unwrap()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::from(std::fs::File::create(d.join("gen.stderr")).unwrap()))
            .spawn()
            .unwrap(),
    );
    let st = g.0.wait().unwrap();
    let gen_s = t0.elapsed().as_secs_f64();
    assert!(st.success(), "pfcgen: {st}\n{}", std::fs::read_to_string(d.join("gen.stderr")).unwrap_or_default());
    let log = sw.stop();
    let j = read_json(&json);
    assert_conserved(&j);
    for p in names {
        assert_eq!(port(&j, p)["lossless_drops"], 0, "{p}: lossless drops\n{log}");
    }
    let gj = read_json(&gen_json);
    let stream_of = |name: &str| gj["streams"].as_array().unwrap().iter().find(|s| s["name"] == name).unwrap().clone();
    for name in ["up8_a", "up12_a", "up8_b"] {
        let s = stream_of(name);
        let u = |k: &str| s[k].as_u64().unwrap_or_else(|| panic!("{name}: no {k} in {s}"));
        assert_eq!(
            (u("tx_packets"), u("rx_packets"), u("lost"), u("reordered"), u("duplicates")),
            (COUNT, COUNT, 0, 0, 0),
            "{name}: sent / received / lost / reordered / duplicated"
        );
    }
    // Routed into the VLAN: each server's traffic left its own member port only.
    let q3 = |p: &str| port(&j, p)["queues"][3]["tx_packets"].as_u64().unwrap();
    assert_eq!((q3("Ethernet0"), q3("Ethernet4")), (2 * COUNT, COUNT), "queue 3 of the members");
    // PAUSE for priority 3, and only 3, on both uplinks; the generator obeyed it.
    let gport = |g: &str| gj["ports"].as_array().unwrap().iter().find(|p| p["name"] == g).unwrap().clone();
    let mut summary = Vec::new();
    for (e, g) in [("Ethernet8", "g2"), ("Ethernet12", "g3")] {
        let sp = port(&j, e);
        assert!(sp["routed_packets"].as_u64().unwrap() >= COUNT, "{e}: {sp}");
        let tx: Vec<u64> = sp["pfc"]["tx_pause"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
        assert!(tx[3] >= 1 && tx.iter().enumerate().all(|(i, &n)| i == 3 || n == 0), "{e} tx_pause {tx:?}");
        let paused_us = gport(g)["pfc"]["rx_pause_duration_us"][3].as_u64().unwrap();
        assert!(paused_us > 0, "{g}: priority 3 never paused: {}", gport(g)["pfc"]);
        summary.push(format!("{e}: {} PAUSE sent, generator paused {paused_us} us", tx[3]));
    }
    for p in ["Ethernet0", "Ethernet4"] {
        assert_eq!(port(&j, p)["pfc"]["tx_pause"][3], 0, "{p} paused a server");
    }
    eprintln!("T0 incast: 3 x {COUNT} frames routed into Vlan1000 in {gen_s:.1} s, 0 lost; {}", summary.join("; "));
}
