//! A control plane that heals (docs/routing.md, "Netlink that heals", "A FIB that heals"):
//! the routing control thread under a real EAL and the DPDK FIB, the kernel in a network
//! namespace.
//!
//! * An rtnetlink overrun during the dump and during events (a tiny receive buffer, the
//!   test knob `PFCSWITCH_NETLINK_RCVBUF`, and `ip -batch` storms of route adds and deletes)
//!   ends with the FIB equal to the kernel's routes, the thread alive, and the resyncs
//!   counted.
//! * A route the FIB refused (its tbl8 groups all used) appears once routes are deleted.
//! * Events queued on the socket are committed together: 5000 route adds made while the
//!   writer waits for a grace period (this thread, a QSBR reader, holds it) take a few
//!   batches, not one per datagram.
//!
//! Needs root; skipped otherwise. Bounds are generous (a loaded 2-CPU machine): what is
//! asserted is that the FIB converges, not how fast.

mod common;
use common::*;

use std::collections::HashSet;
use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pfcswitch::dpdk::fib::{route_tables, RouteLookup, TableSizes};
use pfcswitch::dpdk::{Eal, Qsbr};
use pfcswitch::route::{NextHopTables, Rib, Target, NO_ROUTE};

fn v4(s: &str) -> u32 {
    u32::from(s.parse::<Ipv4Addr>().unwrap())
}

fn eal(d: &TestDir) -> Eal {
    let args = in_process_eal_args(d, 512);
    Eal::init(&args).expect("EAL")
}

/// A namespace with `Ethernet0` (a veth, up, 10.0.0.0/31) for the representor of port 0.
fn namespace(tag: &str) -> Netns {
    let ns = Netns::add(&format!("pfcsw{tag}{}", std::process::id() % 100_000));
    for cmd in [
        "link add Ethernet0 type veth peer name e0peer",
        "link set e0peer up",
        "link set Ethernet0 up",
        "addr add 10.0.0.0/31 dev Ethernet0",
    ] {
        ns.ip(cmd);
    }
    ns
}

fn batch(ns: &Netns, d: &TestDir, name: &str, lines: &str) -> Command {
    let path = d.path.join(name);
    std::fs::write(&path, lines).unwrap();
    let mut c = Command::new("ip");
    c.args(["-n", &ns.0, "-force", "-batch"]).arg(path);
    c
}

/// The /24s of 100.0.0.0/8 and 101.0.0.0/8 the kernel's main table has.
fn kernel_24s(ns: &Netns) -> HashSet<String> {
    let out = sh(&format!("ip -n {} -4 route show table main", ns.0));
    assert!(out.status.success(), "{}", show(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|p| (p.starts_with("100.") || p.starts_with("101.")) && p.ends_with("/24"))
        .map(str::to_string)
        .collect()
}

/// The storm's address space: 100.a.b.0/24 and 101.a.b.0/24 for i < n.
fn net(first: u8, i: u32) -> String {
    format!("{first}.{}.{}.0/24", i / 256, i % 256)
}

/// Where the FIB and the kernel differ over the storm's /24s (at most a few, for the message).
fn differences(lookup: &RouteLookup, kernel: &HashSet<String>, n: u32) -> Vec<String> {
    let mut diff = Vec::new();
    for first in [100u8, 101] {
        for i in 0..n {
            let p = net(first, i);
            let a = v4(&format!("{first}.{}.{}.1", i / 256, i % 256));
            let in_fib = matches!(Target::decode(lookup.lookup4(a)), Some(Target::NextHop(_)));
            if in_fib != kernel.contains(&p) {
                diff.push(format!("{p}: kernel {} fib {in_fib}", kernel.contains(&p)));
            }
        }
    }
    diff
}

/// One EAL per process: the two cases run in turn, each with its own tables, namespace
/// and control thread.
#[test]
fn the_control_plane_heals() {
    if !is_root() {
        eprintln!("SKIP: needs root for network namespaces");
        return;
    }
    let d = TestDir::new("route-heal");
    let eal = eal(&d);
    a_refused_route_is_installed_once_space_is_freed(&d);
    overrun_during_the_dump_and_events_heals(&d);
    a_burst_is_committed_in_a_few_batches(&d);
    drop(eal);
}

fn overrun_during_the_dump_and_events_heals(d: &TestDir) {
    const N: u32 = 20_000;
    let ns = namespace("hov");
    // 20k routes before the thread starts, so its dump takes many reads.
    let mut pre = String::new();
    for i in 0..N {
        writeln!(pre, "route add {} via 10.0.0.1 dev Ethernet0", net(100, i)).unwrap();
    }
    let out = batch(&ns, d, "pre.batch", &pre).output().unwrap();
    assert!(out.status.success(), "{}", show(&out));
    // Storm 1, during the dump: 20k adds in 101/8, then half of each /8 deleted.
    let mut storm1 = String::new();
    for i in 0..N {
        writeln!(storm1, "route add {} via 10.0.0.1 dev Ethernet0", net(101, i)).unwrap();
    }
    for i in (0..N).step_by(2) {
        writeln!(storm1, "route del {}", net(100, i)).unwrap();
        writeln!(storm1, "route del {}", net(101, i + 1)).unwrap();
    }
    // Storm 2, once synced: the deleted half of 100/8 back, 101/8 gone but a tenth.
    let mut storm2 = String::new();
    for i in (0..N).step_by(2) {
        writeln!(storm2, "route add {} via 10.0.0.1 dev Ethernet0", net(100, i)).unwrap();
    }
    for i in (0..N).step_by(2).filter(|i| i % 10 != 0) {
        writeln!(storm2, "route del {}", net(101, i)).unwrap();
    }

    let qsbr = Qsbr::new(1).unwrap();
    let sizes = TableSizes { v4_routes: 131_072, v4_tbl8: 256, v6_routes: 1024, v6_tbl8: 1024 };
    let (lookup, writer) = route_tables(sizes, qsbr.clone()).unwrap();
    let rib = Rib::new(writer, Arc::new(NextHopTables::new()), qsbr.clone(), vec!["Ethernet0".into()]);
    let stop = Arc::new(AtomicBool::new(false));
    // This thread reads the FIB like a worker: online (a QSBR reader) only while it looks.
    let reader = qsbr.reader(0).unwrap();
    reader.offline();

    // A few KiB of receive buffer: the storm overruns it at once.
    std::env::set_var(pfcswitch::kernel::netlink::RCVBUF_ENV, "4096");
    let mut storm = batch(&ns, d, "storm1.batch", &storm1).spawn().unwrap();
    let (thread, status) = pfcswitch::kernel::sync::spawn(Some(ns.0.clone()), rib, stop.clone()).unwrap();
    assert!(storm.wait().unwrap().success());
    std::env::remove_var(pfcswitch::kernel::netlink::RCVBUF_ENV);

    let converged = |what: &str, limit: Duration| {
        let t0 = Instant::now();
        loop {
            let synced = status.synced.load(Ordering::Acquire);
            let kernel = kernel_24s(&ns);
            reader.online();
            let diff = differences(&lookup, &kernel, N);
            reader.quiescent();
            reader.offline();
            if synced && diff.is_empty() {
                eprintln!("route_heal: {what}: FIB equals the kernel after {:?}", t0.elapsed());
                return;
            }
            assert!(
                t0.elapsed() < limit,
                "{what}: FIB not equal to the kernel after {limit:?}: synced {synced}, error {:?}, resyncs {}, {} differences, e.g. {:?}",
                status.error.lock().unwrap(),
                status.resyncs.load(Ordering::Relaxed),
                diff.len(),
                &diff[..diff.len().min(5)]
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    };
    converged("storm during the dump", Duration::from_secs(120));
    let after_dump = status.resyncs.load(Ordering::Relaxed);
    // This reader online and silent during the storm: the writer's first commit waits for
    // it, so the storm surely overruns the socket (the writer alone may keep up with `ip`).
    reader.online();
    let out = batch(&ns, d, "storm2.batch", &storm2).output().unwrap();
    reader.quiescent();
    reader.offline();
    assert!(out.status.success(), "{}", show(&out));
    converged("storm during events", Duration::from_secs(120));
    let resyncs = status.resyncs.load(Ordering::Relaxed);
    eprintln!("route_heal: resyncs {after_dump} during the first storm, {resyncs} in all");
    assert!(after_dump >= 1, "the first storm overran nothing: the test did not test");
    assert!(resyncs > after_dump, "the second storm overran nothing: the test did not test");
    let h = status.health();
    assert!(h.alive && h.synced && !h.fib_out_of_sync && h.resyncs == resyncs, "{h:?}");
    assert!(h.last_resync.is_some(), "{h:?}");

    stop.store(true, Ordering::Relaxed);
    drop(reader);
    let rib = thread.join().unwrap();
    assert_eq!(status.error.lock().unwrap().clone(), None);
    drop(rib);
    drop(lookup);
    drop(qsbr);
}

fn a_refused_route_is_installed_once_space_is_freed(d: &TestDir) {
    let ns = namespace("hrf");
    let qsbr = Qsbr::new(1).unwrap();
    // 64 tbl8 groups (DPDK rounds 16 up to a bitmap slab): one holds 10.0.0.0/31's /32
    // and /31, each /25 below takes another.
    let sizes = TableSizes { v4_routes: 1024, v4_tbl8: 16, v6_routes: 1024, v6_tbl8: 1024 };
    let (lookup, writer) = route_tables(sizes, qsbr.clone()).unwrap();
    let rib = Rib::new(writer, Arc::new(NextHopTables::new()), qsbr.clone(), vec!["Ethernet0".into()]);
    let stop = Arc::new(AtomicBool::new(false));
    let reader = qsbr.reader(0).unwrap();
    reader.offline();
    let (thread, status) = pfcswitch::kernel::sync::spawn(Some(ns.0.clone()), rib, stop.clone()).unwrap();
    let t0 = Instant::now();
    while !status.synced.load(Ordering::Acquire) {
        assert!(t0.elapsed() < Duration::from_secs(30), "no sync: {:?}", status.error.lock().unwrap());
        std::thread::sleep(Duration::from_millis(10));
    }

    const ROUTES: u32 = 96;
    let addr = |i: u32| v4(&format!("100.{i}.0.1"));
    let mut adds = String::new();
    for i in 0..ROUTES {
        writeln!(adds, "route add 100.{i}.0.0/25 via 10.0.0.1 dev Ethernet0").unwrap();
    }
    let out = batch(&ns, d, "adds.batch", &adds).output().unwrap();
    assert!(out.status.success(), "{}", show(&out));
    // Every add was seen once the writer counted 96 outcomes: installed or refused.
    let installed = |i: u32| {
        reader.online();
        let v = lookup.lookup4(addr(i));
        reader.quiescent();
        reader.offline();
        matches!(Target::decode(v), Some(Target::NextHop(_)))
    };
    let t0 = Instant::now();
    let (inside, refused) = loop {
        let inside: Vec<u32> = (0..ROUTES).filter(|&i| installed(i)).collect();
        let errors = status.stats.lock().unwrap().errors;
        if inside.len() as u64 + errors >= u64::from(ROUTES) {
            break (inside.clone(), (0..ROUTES).filter(|i| !inside.contains(i)).collect::<Vec<u32>>());
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "adds not seen: {} in, {errors} errors", inside.len());
        std::thread::sleep(Duration::from_millis(20));
    };
    eprintln!("route_heal: {} /25s installed, {} refused (table full)", inside.len(), refused.len());
    assert!(!refused.is_empty() && !inside.is_empty(), "the table was not filled: the test did not test");
    let h = status.health();
    assert_eq!((h.routes_refused, h.fib_out_of_sync), (refused.len() as u64, true), "{h:?}");

    // Free room for every refused one: delete as many installed routes.
    let mut dels = String::new();
    for i in inside.iter().take(refused.len()) {
        writeln!(dels, "route del 100.{i}.0.0/25").unwrap();
    }
    let out = batch(&ns, d, "dels.batch", &dels).output().unwrap();
    assert!(out.status.success(), "{}", show(&out));
    let t0 = Instant::now();
    loop {
        let missing: Vec<u32> = refused.iter().copied().filter(|&i| !installed(i)).collect();
        if missing.is_empty() {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "refused routes still not in the FIB 20 s after room was made: {missing:?} ({:?})",
            status.stats.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("route_heal: the {} refused routes installed {:?} after the deletes", refused.len(), t0.elapsed());
    let h = status.health();
    assert_eq!((h.routes_refused, h.fib_out_of_sync), (0, false), "{h:?}");
    reader.online();
    for i in inside.iter().take(refused.len()) {
        assert_eq!(lookup.lookup4(addr(*i)), NO_ROUTE, "deleted 100.{i}.0.0/25 still in the FIB");
    }
    reader.offline();

    stop.store(true, Ordering::Relaxed);
    drop(reader);
    let rib = thread.join().unwrap();
    assert_eq!(status.error.lock().unwrap().clone(), None);
    drop(rib);
    drop(lookup);
    drop(qsbr);
}

fn a_burst_is_committed_in_a_few_batches(d: &TestDir) {
    const N: u32 = 5000;
    let ns = namespace("hbt");
    let qsbr = Qsbr::new(1).unwrap();
    let sizes = TableSizes { v4_routes: 16_384, v4_tbl8: 256, v6_routes: 1024, v6_tbl8: 1024 };
    let (lookup, writer) = route_tables(sizes, qsbr.clone()).unwrap();
    let rib = Rib::new(writer, Arc::new(NextHopTables::new()), qsbr.clone(), vec!["Ethernet0".into()]);
    let stop = Arc::new(AtomicBool::new(false));
    let reader = qsbr.reader(0).unwrap();
    reader.offline();
    let (thread, status) = pfcswitch::kernel::sync::spawn(Some(ns.0.clone()), rib, stop.clone()).unwrap();
    let t0 = Instant::now();
    while !status.synced.load(Ordering::Acquire) {
        assert!(t0.elapsed() < Duration::from_secs(30), "no sync: {:?}", status.error.lock().unwrap());
        std::thread::sleep(Duration::from_millis(10));
    }
    let events = || status.stats.lock().unwrap().events;
    let (batches0, events0) = (status.batches.load(Ordering::Relaxed), events());
    // Online and silent: the writer's next commit waits for this reader.
    reader.online();
    // Whichever batch the writer commits first now waits (its counters too); whatever comes
    // after queues on the socket.
    ns.ip("route add 100.0.0.0/24 via 10.0.0.1 dev Ethernet0");
    std::thread::sleep(Duration::from_millis(200));
    let mut adds = String::new();
    for i in 1..=N {
        writeln!(adds, "route add {} via 10.0.0.1 dev Ethernet0", net(100, i)).unwrap();
    }
    let out = batch(&ns, d, "burst.batch", &adds).output().unwrap();
    assert!(out.status.success(), "{}", show(&out));
    // Let the writer go: everything queued meanwhile is read and committed.
    reader.quiescent();
    reader.offline();
    let t0 = Instant::now();
    while events() < events0 + u64::from(N) + 1 {
        assert!(t0.elapsed() < Duration::from_secs(30), "{} of {} events applied", events() - events0, N + 1);
        std::thread::sleep(Duration::from_millis(10));
    }
    let batches = status.batches.load(Ordering::Relaxed) - batches0;
    eprintln!("route_heal: {} route adds committed in {batches} batches", N + 1);
    // The first add alone, then the burst in batches of at most 4096 datagrams (or 50 ms).
    assert!(batches <= 20, "{batches} batches for {} events: committed per datagram", N + 1);
    reader.online();
    assert!(matches!(Target::decode(lookup.lookup4(v4("100.0.19.1"))), Some(Target::NextHop(_))));
    reader.offline();

    stop.store(true, Ordering::Relaxed);
    drop(reader);
    let rib = thread.join().unwrap();
    drop(rib);
    drop(lookup);
    drop(qsbr);
}
