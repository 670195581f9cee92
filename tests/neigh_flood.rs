//! Neighbours, bounded (docs/routing.md "Neighbours, bounded"):
//! an IPv6 ND flood from spoofed sources (each solicitation a new neighbour in the kernel)
//! through a veth into the switch's namespace, with the routing control thread mirroring
//! that namespace into the DPDK FIB. The mirror holds at most its bound, the rest is
//! counted; the kernel's table holds at most its gc_thresh3; IPv6 routing through a real
//! neighbour keeps working, and a /64 added after the flood is installed and resolved.
//!
//! Needs root; skipped otherwise.

mod common;
use common::*;

use std::net::Ipv6Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pfcswitch::dpdk::fib::{route_tables, RouteLookup, TableSizes};
use pfcswitch::dpdk::{Eal, Qsbr};
use pfcswitch::route::{NeighbourLimits, NextHopTables, Resolved, Rib, Target};
use pfcswitch::wire::MacAddr;

const FLOOD: u32 = 3000;

/// What the FIB does with `dst`: the neighbour MAC it forwards to, if resolved.
fn forwards_to(lookup: &RouteLookup, tables: &NextHopTables, dst: &str) -> Option<MacAddr> {
    let a: Ipv6Addr = dst.parse().unwrap();
    let t = Target::decode(lookup.lookup6(&a.octets()))?;
    match tables.resolve(t, 0) {
        Resolved::Forward { mac, .. } => Some(mac),
        _ => None,
    }
}

fn gc_thresh3() -> u64 {
    std::fs::read_to_string("/proc/sys/net/ipv6/neigh/default/gc_thresh3").unwrap().trim().parse().unwrap()
}

#[test]
fn an_nd_flood_leaves_the_tables_bounded_and_routing_working() {
    if !is_root() {
        eprintln!("SKIP: needs root for network namespaces");
        return;
    }
    let d = TestDir::new("neigh-flood");
    let args = in_process_eal_args(&d, 512);
    let eal = Eal::init(&args).expect("EAL");
    let id = std::process::id() % 100_000;
    let sw = Netns::add(&format!("pfcswnf{id}"));
    let host = Netns::add(&format!("pfchnf{id}"));
    sw.ip(&format!("link add Ethernet0 type veth peer name h0 netns {}", host.0));
    sw.ip("link set Ethernet0 up");
    host.ip("link set h0 up");
    sw.ip("addr add fd00:1::1/64 dev Ethernet0 nodad");
    host.ip("addr add fd00:1::2/64 dev h0 nodad");
    let host_mac: MacAddr =
        text(&sh(&format!("ip netns exec {} cat /sys/class/net/h0/address", host.0))).trim().parse().unwrap();

    let qsbr = Qsbr::new(1).unwrap();
    let (lookup, writer) = route_tables(TableSizes::default(), qsbr.clone()).unwrap();
    let tables = Arc::new(NextHopTables::new());
    let mut rib = Rib::new(writer, tables.clone(), qsbr.clone(), vec!["Ethernet0".into()]);
    rib.set_neighbour_limits(NeighbourLimits { total: 300, per_interface: 200 });
    let stop = Arc::new(AtomicBool::new(false));
    let (thread, status) = pfcswitch::kernel::sync::spawn(Some(sw.0.clone()), rib, stop.clone()).unwrap();
    assert!(until(Duration::from_secs(30), || status.synced.load(Ordering::Acquire)).is_some(), "never synced");

    // A route through the host, and the host resolved (a ping).
    sw.ip("-6 route add 2001:db8:1::/64 via fd00:1::2");
    let ping = sh(&format!("ip netns exec {} ping -6 -c 3 -i 0.2 -W 2 fd00:1::2", sw.0));
    assert!(ping.status.success(), "{}", show(&ping));
    let routed = until(Duration::from_secs(10), || forwards_to(&lookup, &tables, "2001:db8:1::7") == Some(host_mac));
    assert!(routed.is_some(), "the route through the host never resolved in the FIB");

    // The flood: FLOOD solicitations from new spoofed sources.
    let out =
        sh(&format!("ip netns exec {} python3 scripts/host_traffic.py nd-flood h0 fd00:1::1 fd00:1:: {FLOOD}", host.0));
    assert!(out.status.success(), "{}", show(&out));
    std::thread::sleep(Duration::from_millis(500));
    let kernel = text(&sh(&format!("ip -n {} -6 neigh show dev Ethernet0", sw.0))).lines().count() as u64;
    let view = status.view(Duration::ZERO, Duration::from_secs(10)).expect("a view of the RIB");
    let mirrored = view.neighbours.len();
    let refused = view.stats.neighbours_refused;
    let spoofed_in_fib = (0..FLOOD)
        .filter(|i| {
            let a = format!("fd00:1::5f00:{:x}:1:{:x}", i >> 16, i & 0xffff);
            forwards_to(&lookup, &tables, &a).is_some()
        })
        .count();
    eprintln!(
        "neigh_flood: {FLOOD} spoofed solicitations: kernel {kernel} neighbours (gc_thresh3 {}), mirrored {mirrored}, \
         refused {refused}, spoofed sources forwarded by the FIB {spoofed_in_fib}",
        gc_thresh3()
    );
    assert!(mirrored <= 200, "{mirrored} neighbours mirrored, bound 200");
    assert!(spoofed_in_fib < 200, "{spoofed_in_fib} spoofed neighbours in the FIB");
    assert!(refused > 0, "nothing refused: the flood did not reach the mirror");
    assert!(kernel <= gc_thresh3() + 1, "the kernel holds {kernel} neighbours, gc_thresh3 {}", gc_thresh3());

    // IPv6 routing still works: the old route, and a /64 added after the flood.
    assert_eq!(forwards_to(&lookup, &tables, "2001:db8:1::7"), Some(host_mac));
    sw.ip("-6 route add 2001:db8:2::/64 via fd00:1::2");
    let routed = until(Duration::from_secs(10), || forwards_to(&lookup, &tables, "2001:db8:2::9") == Some(host_mac));
    assert!(routed.is_some(), "a /64 added after the flood is not routed");
    assert!(status.synced.load(Ordering::Acquire));

    stop.store(true, Ordering::Relaxed);
    drop(thread.join().unwrap());
    drop((host, sw));
    drop(lookup);
    drop(qsbr);
    drop(eal);
}
