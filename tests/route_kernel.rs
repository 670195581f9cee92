//! The kernel as control plane: routes, addresses and neighbours made with `ip` in a
//! network namespace reach the DPDK FIB (rte_fib/rte_fib6 under a real EAL, read through
//! the workers' lookup API with a registered QSBR reader) through the control thread, each
//! within a bound; the largest delay seen is printed. Needs root; skipped otherwise.

mod common;
use common::*;

use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pfcswitch::dpdk::fib::{route_tables, TableSizes};
use pfcswitch::dpdk::{Eal, Qsbr};
use pfcswitch::route::{NextHopTables, Rib, Target, NO_ROUTE};
use pfcswitch::wire::MacAddr;

fn v4(s: &str) -> u32 {
    u32::from(s.parse::<Ipv4Addr>().unwrap())
}

#[test]
fn kernel_routes_reach_the_dpdk_fib() {
    if !is_root() {
        eprintln!("SKIP: needs root for network namespaces");
        return;
    }
    let d = TestDir::new("route-kernel");
    let ns = Netns::add(&format!("pfcswrt{}", std::process::id() % 100_000));
    let ip = |cmd: &str| {
        let out = sh(&format!("ip -n {} {cmd}", ns.0));
        assert!(out.status.success(), "ip {cmd}: {}", show(&out));
    };
    // Two veths stand for the representors of Ethernet0 and Ethernet4 (their peers up too,
    // for carrier: the kernel keeps routes over a link without carrier but marks them).
    for cmd in [
        "link add Ethernet0 type veth peer name e0peer",
        "link add Ethernet4 type veth peer name e4peer",
        "link set e0peer up",
        "link set e4peer up",
        "link set Ethernet0 up",
        "link set Ethernet4 up",
        "addr add 10.0.0.0/31 dev Ethernet0",
        "addr add 10.0.0.2/31 dev Ethernet4",
        "-6 addr add fc00::/127 dev Ethernet0 nodad",
    ] {
        ip(cmd);
    }

    let args = in_process_eal_args(&d, 512);
    let eal = Eal::init(&args).expect("EAL");
    let qsbr = Qsbr::new(2).unwrap();
    // This thread reads like a worker: it reports quiescent states while it polls and goes
    // offline while it runs `ip` (as a napping worker would).
    let reader = qsbr.reader(0).unwrap();
    let sizes = TableSizes { v4_routes: 1024, v4_tbl8: 256, v6_routes: 1024, v6_tbl8: 1024 };
    let (lookup, writer) = route_tables(sizes, qsbr.clone()).unwrap();
    let tables = Arc::new(NextHopTables::new());
    let rib = Rib::new(writer, tables.clone(), qsbr.clone(), vec!["Ethernet0".into(), "Ethernet4".into()]);
    let stop = Arc::new(AtomicBool::new(false));
    let (thread, status) = pfcswitch::kernel::sync::spawn(Some(ns.0.clone()), rib, stop.clone()).unwrap();

    let mut worst = Duration::ZERO;
    let mut wait_for = |what: &str, f: &dyn Fn() -> bool| {
        let t0 = Instant::now();
        loop {
            reader.quiescent();
            if f() {
                break;
            }
            assert!(t0.elapsed() < Duration::from_secs(5), "{what}: not in the FIB after 5 s ({:?})", status.error);
            std::thread::sleep(Duration::from_micros(100));
        }
        worst = worst.max(t0.elapsed());
    };
    let t4 = |a: &str| Target::decode(lookup.lookup4(v4(a)));
    wait_for("initial dump", &|| status.synced.load(Ordering::Acquire));
    // The dump: our addresses are to_us, the connected /31 gleans.
    assert_eq!(t4("10.0.0.0"), Some(Target::Local));
    assert_eq!(t4("10.0.0.1"), Some(Target::Glean));
    assert_eq!(t4("192.168.1.1"), None);

    let run = |cmd: &str| {
        reader.offline();
        ip(cmd);
        reader.online();
    };
    run("route add 192.168.0.0/16 via 10.0.0.1 dev Ethernet0");
    wait_for("route add", &|| matches!(t4("192.168.1.1"), Some(Target::NextHop(_))));
    let Some(Target::NextHop(id)) = t4("192.168.1.1") else { unreachable!() };
    assert_eq!(tables.next_hop(id).map(|n| (n.port, n.mac)), Some((0, None)));

    run("neigh add 10.0.0.1 lladdr 02:00:00:00:00:01 dev Ethernet0 nud permanent");
    let mac = MacAddr([2, 0, 0, 0, 0, 1]);
    wait_for("neighbour", &|| tables.next_hop(id).and_then(|n| n.mac) == Some(mac));
    assert_eq!(t4("10.0.0.1"), Some(Target::NextHop(id)), "the neighbour's host route shares the next hop");

    run("route add 172.16.0.0/12 nexthop via 10.0.0.1 dev Ethernet0 nexthop via 10.0.0.3 dev Ethernet4");
    wait_for("multipath", &|| matches!(t4("172.16.0.1"), Some(Target::Group(_))));
    let Some(Target::Group(g)) = t4("172.16.0.1") else { unreachable!() };
    let mut ports: Vec<u16> = tables.group(g).iter().map(|m| tables.next_hop(*m).unwrap().port).collect();
    ports.sort();
    assert_eq!(ports, vec![0, 1]);

    run("-6 route add 2001:db8::/32 via fc00::1 dev Ethernet0");
    let a6: std::net::Ipv6Addr = "2001:db8::7".parse().unwrap();
    wait_for("IPv6 route", &|| matches!(Target::decode(lookup.lookup6(&a6.octets())), Some(Target::NextHop(_))));
    let own6: std::net::Ipv6Addr = "fc00::".parse().unwrap();
    assert_eq!(Target::decode(lookup.lookup6(&own6.octets())), Some(Target::Local));

    run("route add blackhole 198.51.100.0/24");
    wait_for("blackhole", &|| t4("198.51.100.1") == Some(Target::Blackhole));
    run("route add default via 10.0.0.3 dev Ethernet4");
    wait_for("default route", &|| matches!(t4("8.8.8.8"), Some(Target::NextHop(_))));

    run("route del 192.168.0.0/16");
    wait_for("route del", &|| {
        matches!(t4("192.168.1.1"), Some(Target::NextHop(_))) && t4("192.168.1.1") != Some(Target::NextHop(id))
    });
    run("route del default");
    wait_for("default del", &|| lookup.lookup4(v4("192.168.1.1")) == NO_ROUTE);
    run("-6 route del 2001:db8::/32");
    wait_for("IPv6 route del", &|| lookup.lookup6(&a6.octets()) == NO_ROUTE);
    run("addr del 10.0.0.0/31 dev Ethernet0");
    wait_for("address del", &|| t4("10.0.0.0") != Some(Target::Local));

    eprintln!("route_kernel: largest delay from `ip` returning to the change in the DPDK FIB: {worst:?}");
    stop.store(true, Ordering::Relaxed);
    drop(reader);
    let rib = thread.join().unwrap();
    assert_eq!(status.error.lock().unwrap().clone(), None);
    assert_eq!(rib.stats().errors, 0, "{:?}", rib.stats());
    drop(rib);
    drop(lookup);
    drop(qsbr);
    drop(eal);
}
