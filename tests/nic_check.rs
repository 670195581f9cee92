//! `pfcswitch nic-check` on every vdev kind this machine has (real EAL): the verdict each
//! gets, and what it says it could and could not verify there. docs/nic.md.

mod common;
use common::*;

use std::process::Command;

/// Run nic-check on `cfg`; (exit code, stdout).
fn nic_check(d: &TestDir, cfg: SwitchConfig) -> (Option<i32>, String) {
    let path = cfg.write(&d.join("nic.toml"));
    let o = Command::new(BIN)
        .args(["nic-check", "--config", path.to_str().unwrap()])
        .output()
        .expect("run pfcswitch nic-check");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.code().is_some(), "{}", show(&o));
    (o.status.code(), out)
}

/// The verdict line of `port`.
fn line<'a>(out: &'a str, port: &str) -> &'a str {
    out.lines().find(|l| l.starts_with(&format!("{port}: "))).unwrap_or_else(|| panic!("no line for {port} in\n{out}"))
}

fn two_ports(d: &TestDir, a: &str, b: &str) -> SwitchConfig {
    SwitchConfig::new(&d.prefix(), "0@0,1@1")
        .port(Port::new("Ethernet0", a))
        .port(Port::new("Ethernet4", b))
        .one_worker()
}

#[test]
fn net_null_is_ready_with_the_warning_that_it_has_no_peer() {
    let d = TestDir::new("nicnull");
    let (code, out) = nic_check(&d, two_ports(&d, "net_null0", "net_null1"));
    assert_eq!(code, Some(0), "{out}");
    assert!(out.lines().next().unwrap().starts_with("memory: --no-huge (fine for virtual devices)"), "{out}");
    for p in ["Ethernet0", "Ethernet4"] {
        let l = line(&out, p);
        assert!(l.starts_with(&format!("{p}: ready with warnings: net_null has no peer")), "{l}");
        assert!(l.contains("driver net_null") && l.contains("no flow-control op") && l.contains("link up"), "{l}");
        assert!(l.contains("a PFC frame was taken by tx_burst (no loop here to see it arrive)"), "{l}");
    }
}

#[test]
fn net_ring_is_ready_and_a_mempool_that_does_not_fit_is_not() {
    let d = TestDir::new("nicring");
    let cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1")
        .port(Port::new("Ethernet0", "net_ring0"))
        .port(Port::new("Ethernet4", "net_ring1"))
        .worker(1, &["Ethernet0:0", "Ethernet0:1", "Ethernet4:0"], &["Ethernet0", "Ethernet4"]);
    let (code, out) = nic_check(&d, cfg);
    assert_eq!(code, Some(0), "{out}");
    let l = line(&out, "Ethernet0");
    assert!(l.starts_with("Ethernet0: ready [driver net_ring; queues RX 2/"), "{l}");
    assert!(l.contains("rings in memory carry 0x8808"), "{l}");
    // A net_ring made from its name alone transmits into the rings it receives from.
    assert!(l.contains("a PFC frame sent here arrived unchanged on Ethernet0"), "{l}");

    // 64 MiB for EAL: the mempool cannot be made, the ports are not even tried.
    let d = TestDir::new("nicmem");
    let (code, out) = nic_check(&d, two_ports(&d, "net_ring2", "net_ring3").memory_mb(64));
    assert_eq!(code, Some(1), "{out}");
    assert!(out.lines().any(|l| l.starts_with("memory: mempool: ") && l.contains("Cannot allocate memory")), "{out}");
}

#[test]
fn net_tap_is_ready_with_flow_control_off() {
    let d = TestDir::new("nictap");
    let tag = std::process::id() % 10000;
    let (code, out) =
        nic_check(&d, two_ports(&d, &format!("net_tap0,iface=pfcnt{tag}a"), &format!("net_tap1,iface=pfcnt{tag}b")));
    assert_eq!(code, Some(0), "{out}");
    let l = line(&out, "Ethernet0");
    // net_tap has flow-control ops and accepts mode none (it has nothing else to turn off).
    assert!(l.starts_with("Ethernet0: ready [driver net_tap;"), "{l}");
    assert!(l.contains("flow control off, MAC-control frames to software accepted"), "{l}");
    assert!(l.contains("kernel TAP carries 0x8808"), "{l}");
    assert!(l.contains("a PFC frame was taken by tx_burst"), "{l}");
}

#[test]
fn net_memif_without_a_peer_has_link_down_and_a_memif_pair_carries_pfc() {
    let d = TestDir::new("nicmemif");
    let dir = d.path.display();
    let (code, out) = nic_check(
        &d,
        two_ports(
            &d,
            &format!("net_memif0,role=server,id=0,socket={dir}/m0.sock,socket-abstract=no"),
            &format!("net_memif1,role=server,id=0,socket={dir}/m1.sock,socket-abstract=no"),
        ),
    );
    assert_eq!(code, Some(0), "{out}");
    let l = line(&out, "Ethernet0");
    assert!(l.starts_with("Ethernet0: ready with warnings: link down"), "{l}");
    assert!(l.contains("driver net_memif") && l.contains("memif peer"), "{l}");
    assert!(!l.contains("PFC frame"), "nothing is sent to a port whose link is down: {l}");

    // A server and its client in this switch: a cable between two of its ports, over which
    // each port's PFC frame arrives on the other.
    let d = TestDir::new("nicmemif2");
    let dir = d.path.display();
    let cfg = two_ports(
        &d,
        &format!("net_memif2,role=server,id=0,socket={dir}/m.sock,socket-abstract=no"),
        &format!("net_memif3,role=client,id=0,socket={dir}/m.sock,socket-abstract=no"),
    )
    .memory_mb(1024);
    let (code, out) = nic_check(&d, cfg);
    assert_eq!(code, Some(0), "{out}");
    for (p, peer) in [("Ethernet0", "Ethernet4"), ("Ethernet4", "Ethernet0")] {
        let l = line(&out, p);
        assert!(l.starts_with(&format!("{p}: ready [driver net_memif;")), "{l}");
        assert!(l.contains(&format!("a PFC frame sent here arrived unchanged on {peer}")), "{l}");
    }
}

#[test]
fn net_af_packet_is_ready_and_refuses_queues_it_lacks() {
    let d = TestDir::new("nicafp");
    let tag = std::process::id() % 10000;
    let (a, b) = (format!("pfcnk{tag}a"), format!("pfcnk{tag}b"));
    let _veth = Veth::new(&a, &b);
    // Both ends of the veth: a cable between two ports of this switch.
    let (code, out) = nic_check(
        &d,
        SwitchConfig::new(&d.prefix(), "0@0,1@1")
            .port(Port::new("Ethernet0", &format!("net_af_packet0,iface={a}")).speed("auto"))
            .port(Port::new("Ethernet4", &format!("net_af_packet1,iface={b}")).speed("auto"))
            .one_worker(),
    );
    assert_eq!(code, Some(0), "{out}");
    for (p, peer) in [("Ethernet0", "Ethernet4"), ("Ethernet4", "Ethernet0")] {
        let l = line(&out, p);
        assert!(l.starts_with(&format!("{p}: ready [driver net_af_packet;")), "{l}");
        assert!(l.contains("link up"), "{l}");
        assert!(l.contains(&format!("a PFC frame sent here arrived unchanged on {peer}")), "{l}");
    }

    // Two RX queues polled, one qpair opened: not ready, exit 1.
    let d = TestDir::new("nicafp2");
    let cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1,2@1")
        .port(Port::new("Ethernet0", &format!("net_af_packet2,iface={a},qpairs=1")).speed("auto"))
        .worker(1, &["Ethernet0:0"], &["Ethernet0"])
        .worker(2, &["Ethernet0:1"], &[]);
    let (code, out) = nic_check(&d, cfg);
    assert_eq!(code, Some(1), "{out}");
    let l = line(&out, "Ethernet0");
    assert!(l.starts_with("Ethernet0: not ready: needs 2 RX / 1 TX queues, the PMD offers 1 / 1"), "{l}");
}

/// The same verdicts at `run`'s start, in the log.
#[test]
fn run_logs_the_verdicts_at_start() {
    let d = TestDir::new("nicrun");
    let cfg = two_ports(&d, "net_null0", "net_null1").write(&d.join("run.toml"));
    let out = run_switch(&["run", "--config", cfg.to_str().unwrap(), "--duration", "1"]);
    assert!(out.status.success(), "{}", show(&out));
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(log.contains("nic-check: Ethernet0: ready with warnings: net_null has no peer"), "{log}");
}

/// Not while a switch runs on the same configuration: one line, exit 2, and the running
/// switch is left alone.
#[test]
fn refused_while_a_switch_runs_on_the_same_configuration() {
    let d = TestDir::new("nicbusy");
    let cfg = two_ports(&d, "net_null0", "net_null1").write(&d.join("busy.toml"));
    let mut sw = RunningSwitch::spawn(&cfg, &d.join("stats.json"), &[]);
    sw.wait_forwarding(std::time::Duration::from_secs(60));
    let o = Command::new(BIN).args(["nic-check", "--config", cfg.to_str().unwrap()]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.trim().lines().count() == 1 && err.contains("a switch is running with file prefix"), "{err}");
    sw.stop();
}
