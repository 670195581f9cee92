//! Kernel nexthop objects (docs/routing.md, "Nexthop objects"): with
//! `net.ipv4.nexthop_compat_mode = 0` a route carries only `RTA_NH_ID`, and a change of an
//! object sends no route message. The routing control thread under a real EAL, the DPDK FIB
//! read through the workers' lookup API (a registered QSBR reader), the kernel in a network
//! namespace:
//!
//! * `ip nexthop` objects, a weighted group, routes of both families with `nhid`: programmed
//!   with the right next hops; `ip nexthop replace` of the group and of a member changes the
//!   FIB; deleting an object, or the carrier of the link it goes through, withdraws the
//!   routes through it (the kernel deletes them without a message);
//! * objects replaced and deleted in storms that overrun a tiny receive buffer, while the
//!   thread starts and once it is synced: after the resyncs the FIB equals the kernel;
//! * FRR's zebra (which uses nexthop objects on this kernel) and staticd: static routes,
//!   ECMP and IPv6, in the FIB; removing a path in vtysh changes it;
//! * FRR's bgpd: a prefix a peer in another namespace announces over two eBGP sessions is
//!   an ECMP group in the FIB; one session down leaves the other path.
//!
//! Needs root; skipped otherwise. Bounds are generous (a loaded 2-CPU machine): what is
//! asserted is what the FIB ends up holding.

mod common;
use common::*;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::IpAddr;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pfcswitch::dpdk::fib::{route_tables, RouteLookup, TableSizes};
use pfcswitch::dpdk::{Eal, Qsbr, QsbrReader};
use pfcswitch::route::{NextHopTables, Rib, Target};

/// One EAL per process: the cases run in turn, each with its own tables, namespace and
/// control thread.
#[test]
fn nexthop_objects_reach_the_dpdk_fib() {
    if !is_root() {
        eprintln!("SKIP: needs root for network namespaces");
        return;
    }
    let d = TestDir::new("route-nhobj");
    let eal = Eal::init(&in_process_eal_args(&d, 512)).expect("EAL");
    ip_nexthop_objects_with_compat_mode_0();
    a_resync_reconciles_nexthop_objects(&d);
    frr_with_nexthop_objects_programs_the_fib(&d);
    bgp_routes_from_a_peer_namespace(&d);
    drop(eal);
}

/// A namespace with `Ethernet0` (10.0.0.0/31, fc00::/127) and `Ethernet4` (10.0.0.2/31),
/// veths standing for the representors of ports 0 and 1, `lo` up (a blackhole object
/// needs it), nexthop_compat_mode 0.
fn namespace(tag: &str) -> Netns {
    let ns = Netns::add(&format!("pfcswnh{tag}{}", std::process::id() % 100_000));
    let o = sh(&format!("ip netns exec {} sysctl -qw net.ipv4.nexthop_compat_mode=0", ns.0));
    assert!(o.status.success(), "{}", show(&o));
    for cmd in [
        "link set lo up",
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
        ns.ip(cmd);
    }
    ns
}

fn batch(ns: &Netns, d: &TestDir, name: &str, lines: &str) -> Command {
    let path = d.path.join(name);
    std::fs::write(&path, lines).unwrap();
    let mut c = Command::new("ip");
    c.args(["-n", &ns.0, "-batch"]).arg(path);
    c
}

/// The switch's routing pieces on a namespace: FIB, next-hop tables, the control thread.
struct Router {
    lookup: RouteLookup,
    tables: Arc<NextHopTables>,
    qsbr: Arc<Qsbr>,
    stop: Arc<AtomicBool>,
    thread: Option<pfcswitch::kernel::sync::SyncThread<pfcswitch::dpdk::fib::RouteWriter, Qsbr>>,
    status: Arc<pfcswitch::kernel::sync::SyncStatus>,
}

impl Router {
    fn start(ns: &Netns) -> Router {
        let qsbr = Qsbr::new(1).unwrap();
        let sizes = TableSizes { v4_routes: 16_384, v4_tbl8: 256, v6_routes: 1024, v6_tbl8: 1024 };
        let (lookup, writer) = route_tables(sizes, qsbr.clone()).unwrap();
        let tables = Arc::new(NextHopTables::new());
        let rib = Rib::new(writer, tables.clone(), qsbr.clone(), vec!["Ethernet0".into(), "Ethernet4".into()]);
        let stop = Arc::new(AtomicBool::new(false));
        let (thread, status) = pfcswitch::kernel::sync::spawn(Some(ns.0.clone()), rib, stop.clone()).unwrap();
        Router { lookup, tables, qsbr, stop, thread: Some(thread), status }
    }

    /// What the FIB holds for `a`: the egress ports of its next hop or of its group's
    /// members (sorted, a weight repeats a member), a special target, or "none". Call it
    /// while online as a QSBR reader.
    fn fib(&self, a: &str) -> String {
        let v = match a.parse::<IpAddr>().unwrap() {
            IpAddr::V4(v) => self.lookup.lookup4(u32::from(v)),
            IpAddr::V6(v) => self.lookup.lookup6(&v.octets()),
        };
        let port = |id: u16| self.tables.next_hop(id).map(|n| n.port).unwrap_or(u16::MAX);
        match Target::decode(v) {
            None => "none".into(),
            Some(Target::NextHop(id)) => format!("ports {:?}", [port(id)]),
            Some(Target::Group(g)) => {
                let mut ports: Vec<u16> = self.tables.group(g).into_iter().map(port).collect();
                ports.sort();
                format!("ports {ports:?}")
            }
            Some(t) => format!("{t:?}"),
        }
    }

    /// Wait until every `(address, what the FIB should hold)` holds (`limit` at most).
    fn wait(&self, reader: &QsbrReader, what: &str, want: &[(&str, &str)], limit: Duration) {
        let t0 = Instant::now();
        loop {
            reader.online();
            let got: Vec<String> = want.iter().map(|(a, _)| self.fib(a)).collect();
            reader.quiescent();
            reader.offline();
            if got.iter().zip(want).all(|(g, (_, w))| g == w) {
                return;
            }
            assert!(
                t0.elapsed() < limit,
                "{what}: after {limit:?} the FIB holds {:?}, want {want:?} (synced {}, error {:?})",
                want.iter().map(|w| w.0).zip(&got).collect::<Vec<_>>(),
                self.status.synced.load(Ordering::Acquire),
                self.status.error.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let rib = self.thread.take().unwrap().join().unwrap();
        assert_eq!(self.status.error.lock().unwrap().clone(), None);
        assert_eq!(rib.stats().errors, 0, "{:?}", rib.stats());
        drop(rib);
        drop(self.qsbr);
    }
}

const SECS: Duration = Duration::from_secs(30);

fn ip_nexthop_objects_with_compat_mode_0() {
    let ns = namespace("ip");
    // In the kernel before the thread starts (its dump): two objects, a group with
    // weights 1 and 3, a route through the group.
    for cmd in [
        "nexthop add id 1 via 10.0.0.1 dev Ethernet0",
        "nexthop add id 2 via 10.0.0.3 dev Ethernet4",
        "nexthop add id 10 group 1/2,3",
        "route add 192.168.0.0/16 nhid 10",
    ] {
        ns.ip(cmd);
    }
    let r = Router::start(&ns);
    let reader = r.qsbr.reader(0).unwrap();
    reader.offline();
    r.wait(&reader, "the dump", &[("192.168.1.1", "ports [0, 1, 1, 1]")], SECS);
    // `show ip route`'s view: the group's members with their weights.
    let view = r.status.view(Duration::ZERO, SECS).expect("view");
    let row = view.routes.iter().find(|row| row.prefix.to_string() == "192.168.0.0/16").expect("row");
    assert_eq!(row.nexthops.iter().map(|h| (h.0, h.3)).collect::<Vec<_>>(), vec![(0, 1), (1, 3)]);

    // Events: IPv6 through an object, a blackhole object, a route through a single object.
    ns.ip("nexthop add id 3 via fc00::1 dev Ethernet0");
    ns.ip("-6 route add 2001:db8::/32 nhid 3");
    ns.ip("nexthop add id 4 blackhole");
    ns.ip("route add 198.51.100.0/24 nhid 4");
    ns.ip("route add 172.16.0.0/12 nhid 2");
    r.wait(
        &reader,
        "routes through objects",
        &[("2001:db8::1", "ports [0]"), ("198.51.100.1", "Blackhole"), ("172.16.0.1", "ports [1]")],
        SECS,
    );
    // The group replaced, then a member: no route message comes, the FIB follows.
    ns.ip("nexthop replace id 10 group 2");
    r.wait(&reader, "group replaced", &[("192.168.1.1", "ports [1]")], SECS);
    ns.ip("nexthop replace id 2 via 10.0.0.1 dev Ethernet0");
    r.wait(&reader, "member replaced", &[("192.168.1.1", "ports [0]"), ("172.16.0.1", "ports [0]")], SECS);
    // Object 2 deleted: the kernel deletes the route through it and the group it left
    // empty, and the route through that.
    ns.ip("nexthop del id 2");
    r.wait(&reader, "object deleted", &[("192.168.1.1", "none"), ("172.16.0.1", "none")], SECS);
    assert_eq!(text(&sh(&format!("ip -n {} route show 192.168.0.0/16", ns.0))).trim(), "");
    ns.ip("nexthop del id 3");
    ns.ip("nexthop del id 4");
    r.wait(&reader, "IPv6 object deleted", &[("2001:db8::1", "none"), ("198.51.100.1", "none")], SECS);
    // Ethernet4 loses its carrier (its peer goes down): the kernel flushes the objects
    // through it and deletes their routes, without a message for either.
    ns.ip("nexthop add id 5 via 10.0.0.3 dev Ethernet4");
    ns.ip("nexthop add id 6 via 10.0.0.1 dev Ethernet0");
    ns.ip("nexthop add id 11 group 5/6");
    ns.ip("route add 10.70.0.0/16 nhid 5");
    ns.ip("route add 10.71.0.0/16 nhid 11");
    r.wait(&reader, "routes through Ethernet4", &[("10.70.0.1", "ports [1]"), ("10.71.0.1", "ports [0, 1]")], SECS);
    ns.ip("link set e4peer down");
    r.wait(&reader, "carrier lost", &[("10.70.0.1", "none"), ("10.71.0.1", "ports [0]")], SECS);
    assert_eq!(text(&sh(&format!("ip -n {} route show 10.70.0.0/16", ns.0))).trim(), "");
    drop(reader);
    r.stop();
}

/// What the kernel's main table holds for 100.0.0.0/16's /24s: prefix → "ports [p]", the
/// port of the object the route goes through (Ethernet0 = 0, Ethernet4 = 1).
fn kernel_routes(ns: &Netns) -> HashMap<String, String> {
    let json = |args: &str| -> serde_json::Value {
        let o = sh(&format!("ip -n {} -j {args}", ns.0));
        assert!(o.status.success(), "{}", show(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let dev: HashMap<u64, String> = json("nexthop show")
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| Some((n["id"].as_u64()?, n["dev"].as_str()?.to_string())))
        .collect();
    json("route show")
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| {
            let dst = r["dst"].as_str()?;
            let port = match dev.get(&r["nhid"].as_u64()?)?.as_str() {
                "Ethernet0" => 0,
                "Ethernet4" => 1,
                _ => return None,
            };
            dst.starts_with("100.0.").then(|| (dst.to_string(), format!("ports [{port}]")))
        })
        .collect()
}

fn a_resync_reconciles_nexthop_objects(d: &TestDir) {
    const N: u32 = 250;
    let ns = namespace("rs");
    let obj = |i: u32| 1000 + i;
    let net = |i: u32| format!("100.0.{i}.0/24");
    let mut pre = String::new();
    for i in 0..N {
        writeln!(pre, "nexthop add id {} via 10.0.0.1 dev Ethernet0", obj(i)).unwrap();
        writeln!(pre, "route add {} nhid {}", net(i), obj(i)).unwrap();
    }
    // Routes without objects, so that the dump takes many reads.
    for i in 0..8192 {
        writeln!(pre, "route add 101.{}.{}.0/24 via 10.0.0.1 dev Ethernet0", i / 256, i % 256).unwrap();
    }
    let out = batch(&ns, d, "nh-pre.batch", &pre).output().unwrap();
    assert!(out.status.success(), "{}", show(&out));
    // Storm 1, while the thread dumps: every object flips between the ports 100 times
    // (each flip an event; none a route message), then even objects end on Ethernet4, odd ones on
    // Ethernet0, and every third is deleted (the kernel deletes its route without a
    // message). Storm 2, once synced: the same flips, and every fifth left is deleted.
    let flips = |s: &mut String, i: u32| {
        for _ in 0..50 {
            writeln!(s, "nexthop replace id {} via 10.0.0.3 dev Ethernet4", obj(i)).unwrap();
            writeln!(s, "nexthop replace id {} via 10.0.0.1 dev Ethernet0", obj(i)).unwrap();
        }
    };
    let mut storm1 = String::new();
    for i in 0..N {
        flips(&mut storm1, i);
    }
    for i in 0..N {
        if i % 2 == 0 {
            writeln!(storm1, "nexthop replace id {} via 10.0.0.3 dev Ethernet4", obj(i)).unwrap();
        }
        if i % 3 == 0 {
            writeln!(storm1, "nexthop del id {}", obj(i)).unwrap();
        }
    }
    let mut storm2 = String::new();
    for i in (0..N).filter(|i| i % 3 != 0) {
        flips(&mut storm2, i);
        if i % 2 == 0 {
            writeln!(storm2, "nexthop replace id {} via 10.0.0.3 dev Ethernet4", obj(i)).unwrap();
        }
        if i % 5 == 0 {
            writeln!(storm2, "nexthop del id {}", obj(i)).unwrap();
        }
    }

    // A few KiB of receive buffer (read once, when the thread starts): storms overrun it.
    std::env::set_var(pfcswitch::kernel::netlink::RCVBUF_ENV, "4096");
    let r = Router::start(&ns);
    std::env::remove_var(pfcswitch::kernel::netlink::RCVBUF_ENV);
    // This reader online and silent during the storm: the writer's first commit waits for
    // it, so the storm surely overruns the socket (the writer alone may keep up with `ip`).
    let reader = r.qsbr.reader(0).unwrap();
    let mut storm = batch(&ns, d, "nh-storm1.batch", &storm1).spawn().unwrap();
    assert!(storm.wait().unwrap().success());
    reader.quiescent();
    reader.offline();

    let converged = |what: &str| {
        let t0 = Instant::now();
        loop {
            let synced = r.status.synced.load(Ordering::Acquire);
            let kernel = kernel_routes(&ns);
            reader.online();
            let diff: Vec<String> = (0..N)
                .map(|i| (net(i), format!("100.0.{i}.1")))
                .filter_map(|(p, a)| {
                    let want = kernel.get(&p).map(String::as_str).unwrap_or("none");
                    let got = r.fib(&a);
                    (got != want).then(|| format!("{p}: kernel {want}, FIB {got}"))
                })
                .collect();
            reader.quiescent();
            reader.offline();
            if synced && diff.is_empty() {
                eprintln!("route_nexthop_objects: {what}: FIB equals the kernel after {:?}", t0.elapsed());
                return kernel.len();
            }
            assert!(
                t0.elapsed() < Duration::from_secs(120),
                "{what}: FIB not equal to the kernel after 120 s: synced {synced}, resyncs {}, {} differences, e.g. {:?}",
                r.status.resyncs.load(Ordering::Relaxed),
                diff.len(),
                &diff[..diff.len().min(5)]
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    };
    let left = converged("storm while the thread starts");
    assert_eq!(left, (0..N).filter(|i| i % 3 != 0).count(), "the kernel deleted the routes of deleted objects");
    let after_dump = r.status.resyncs.load(Ordering::Relaxed);
    // This reader online and silent during the storm: the writer's next commit waits for
    // it, so the storm surely overruns the socket.
    reader.online();
    let out = batch(&ns, d, "nh-storm2.batch", &storm2).output().unwrap();
    reader.quiescent();
    reader.offline();
    assert!(out.status.success(), "{}", show(&out));
    converged("storm during events");
    let resyncs = r.status.resyncs.load(Ordering::Relaxed);
    eprintln!("route_nexthop_objects: resyncs {after_dump} after the first storm, {resyncs} in all");
    assert!(after_dump >= 1, "the first storm overran nothing: the test did not test");
    assert!(resyncs > after_dump, "the second storm overran nothing: the test did not test");
    let h = r.status.health();
    assert!(h.alive && h.synced && !h.fib_out_of_sync, "{h:?}");
    drop(reader);
    r.stop();
}

const FRR: &str = "/usr/lib/frr";

/// An FRR daemon of the pathspace `ns` (sockets in /var/run/frr/<ns>/), run in `ns` with
/// its configuration in `dir`; killed when dropped.
fn frr_daemon(ns: &Netns, dir: &std::path::Path, daemon: &str) -> Proc {
    let out = std::fs::File::create(dir.join(format!("{daemon}.out"))).unwrap();
    let child = Command::new("ip")
        .args(["netns", "exec", &ns.0, &format!("{FRR}/{daemon}"), "-N", &ns.0, "-f"])
        .arg(dir.join(format!("{daemon}.conf")))
        .arg("-i")
        .arg(format!("/var/run/frr/{}/{daemon}.pid", ns.0))
        .arg("--log")
        .arg(format!("file:{}", dir.join(format!("{daemon}.log")).display()))
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .unwrap();
    Proc(child)
}

fn frr_with_nexthop_objects_programs_the_fib(d: &TestDir) {
    if !std::path::Path::new(&format!("{FRR}/zebra")).exists() {
        eprintln!("SKIP (FRR case): {FRR}/zebra not installed (scripts/setup.sh installs frr)");
        return;
    }
    let ns = namespace("frr");
    let dir = d.path.join("frr");
    let run_dir = RunDir(format!("/var/run/frr/{}", ns.0));
    let run_dir = &run_dir.0;
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(run_dir).unwrap();
    std::fs::write(dir.join("zebra.conf"), "hostname nhobj\n!\n").unwrap();
    std::fs::write(
        dir.join("staticd.conf"),
        "hostname nhobj\n!\nip route 10.60.0.0/16 10.0.0.1\nip route 10.61.0.0/16 10.0.0.1\n\
         ip route 10.61.0.0/16 10.0.0.3\nipv6 route 2001:db8:60::/48 fc00::1\n!\n",
    )
    .unwrap();
    // FRR drops to its user: its files and run directory are its own.
    let o = sh(&format!("chmod 755 {0} && chown -R frr:frr {1} {run_dir}", d.path.display(), dir.display()));
    assert!(o.status.success(), "{}", show(&o));

    let r = Router::start(&ns);
    let reader = r.qsbr.reader(0).unwrap();
    reader.offline();
    r.wait(&reader, "synced", &[("10.0.0.1", "Glean")], SECS);
    let zebra = frr_daemon(&ns, &dir, "zebra");
    // staticd finds zebra's socket once zebra made it.
    until(SECS, || std::path::Path::new(&format!("{run_dir}/zserv.api")).exists()).expect("zebra's socket");
    let staticd = frr_daemon(&ns, &dir, "staticd");
    let logs = || {
        ["zebra.out", "zebra.log", "staticd.out", "staticd.log"]
            .iter()
            .map(|f| format!("{f}: {}", std::fs::read_to_string(dir.join(f)).unwrap_or_default()))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let t0 = Instant::now();
    while !text(&sh(&format!("ip -n {} route show 10.61.0.0/16", ns.0))).contains("nhid") {
        assert!(t0.elapsed() < Duration::from_secs(60), "zebra installed no route with nhid in 60 s\n{}", logs());
        std::thread::sleep(Duration::from_millis(100));
    }
    // zebra installs nexthop objects: the routes carry nhid (compat mode 0: nothing else).
    let routes = text(&sh(&format!("ip -n {0} route; ip -n {0} -6 route; ip -n {0} nexthop", ns.0)));
    eprintln!("route_nexthop_objects: the kernel as zebra programmed it:\n{routes}");
    r.wait(
        &reader,
        "FRR's static routes",
        &[("10.60.0.1", "ports [0]"), ("10.61.0.1", "ports [0, 1]"), ("2001:db8:60::1", "ports [0]")],
        Duration::from_secs(60),
    );
    let vtysh = |cmd: &str| {
        let o = sh(&format!("ip netns exec {0} vtysh -N {0} -c 'configure terminal' -c '{cmd}'", ns.0));
        assert!(o.status.success(), "vtysh {cmd}: {}", show(&o));
    };
    vtysh("no ip route 10.61.0.0/16 10.0.0.3");
    r.wait(&reader, "an ECMP path removed in FRR", &[("10.61.0.1", "ports [0]")], Duration::from_secs(60));
    vtysh("no ip route 10.60.0.0/16 10.0.0.1");
    vtysh("no ipv6 route 2001:db8:60::/48 fc00::1");
    r.wait(
        &reader,
        "static routes removed in FRR",
        &[("10.60.0.1", "none"), ("2001:db8:60::1", "none")],
        Duration::from_secs(60),
    );
    drop(staticd);
    drop(zebra);
    drop(reader);
    r.stop();
}

fn bgpd_conf(asn: u32, id: &str, peers: &[&str], peer_as: u32, network: Option<&str>) -> String {
    let mut c = format!(
        "hostname as{asn}\n!\nrouter bgp {asn}\n bgp router-id {id}\n no bgp ebgp-requires-policy\n\
         no bgp network import-check\n timers bgp 3 9\n"
    );
    for p in peers {
        writeln!(c, " neighbor {p} remote-as {peer_as}\n neighbor {p} timers connect 1").unwrap();
    }
    c.push_str(" address-family ipv4 unicast\n  maximum-paths 16\n");
    if let Some(n) = network {
        writeln!(c, "  network {n}").unwrap();
    }
    c.push_str(" exit-address-family\n!\n");
    c
}

fn bgp_routes_from_a_peer_namespace(d: &TestDir) {
    if !std::path::Path::new(&format!("{FRR}/bgpd")).exists() {
        eprintln!("SKIP (BGP case): {FRR}/bgpd not installed");
        return;
    }
    let ns = namespace("bgp");
    // The peer: another namespace holding the far ends of both links.
    let peer = Netns::add(&format!("pfcswnhpeer{}", std::process::id() % 100_000));
    for cmd in [format!("link set e0peer netns {}", peer.0), format!("link set e4peer netns {}", peer.0)] {
        ns.ip(&cmd);
    }
    for cmd in [
        "link set lo up",
        "link set e0peer up",
        "link set e4peer up",
        "addr add 10.0.0.1/31 dev e0peer",
        "addr add 10.0.0.3/31 dev e4peer",
    ] {
        peer.ip(cmd);
    }
    let mut dirs = Vec::new();
    let mut run_dirs = Vec::new();
    for (n, bgpd) in [
        (&ns, bgpd_conf(65001, "10.0.0.0", &["10.0.0.1", "10.0.0.3"], 65002, None)),
        (&peer, bgpd_conf(65002, "10.0.0.1", &["10.0.0.0", "10.0.0.2"], 65001, Some("10.80.0.0/16"))),
    ] {
        let dir = d.path.join(format!("frr-{}", n.0));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("zebra.conf"), "hostname z\n!\n").unwrap();
        std::fs::write(dir.join("bgpd.conf"), bgpd).unwrap();
        let run_dir = RunDir(format!("/var/run/frr/{}", n.0));
        std::fs::create_dir_all(&run_dir.0).unwrap();
        let o = sh(&format!("chmod 755 {0} && chown -R frr:frr {1} {2}", d.path.display(), dir.display(), run_dir.0));
        assert!(o.status.success(), "{}", show(&o));
        dirs.push(dir);
        run_dirs.push(run_dir);
    }
    let r = Router::start(&ns);
    let reader = r.qsbr.reader(0).unwrap();
    reader.offline();
    r.wait(&reader, "synced", &[("10.0.0.1", "Glean")], SECS);
    let mut daemons = Vec::new();
    for (n, dir, run_dir) in [(&ns, &dirs[0], &run_dirs[0].0), (&peer, &dirs[1], &run_dirs[1].0)] {
        daemons.push(frr_daemon(n, dir, "zebra"));
        until(SECS, || std::path::Path::new(&format!("{run_dir}/zserv.api")).exists()).expect("zebra's socket");
        daemons.push(frr_daemon(n, dir, "bgpd"));
    }
    let logs = || {
        dirs.iter()
            .flat_map(|dir| ["bgpd.log", "bgpd.out"].map(|f| dir.join(f)))
            .map(|f| format!("{}: {}", f.display(), std::fs::read_to_string(&f).unwrap_or_default()))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let t0 = Instant::now();
    while !text(&sh(&format!("ip -n {} route show 10.80.0.0/16", ns.0))).contains("nhid") {
        assert!(t0.elapsed() < Duration::from_secs(120), "no BGP route with nhid in 120 s\n{}", logs());
        std::thread::sleep(Duration::from_millis(200));
    }
    // Both sessions: the prefix over two paths (zebra may install one path first).
    r.wait(&reader, "the BGP route over two sessions", &[("10.80.0.1", "ports [0, 1]")], Duration::from_secs(120));
    let routes = text(&sh(&format!("ip -n {0} route show 10.80.0.0/16; ip -n {0} nexthop", ns.0)));
    eprintln!("route_nexthop_objects: the BGP route as zebra programmed it:\n{routes}");
    // One session down (the peer shuts it): the other path is left.
    let o = sh(&format!(
        "ip netns exec {0} vtysh -N {0} -c 'configure terminal' -c 'router bgp 65002' -c 'neighbor 10.0.0.2 shutdown'",
        peer.0
    ));
    assert!(o.status.success(), "vtysh: {}", show(&o));
    r.wait(&reader, "one BGP session down", &[("10.80.0.1", "ports [0]")], Duration::from_secs(120));
    drop(daemons);
    drop(reader);
    r.stop();
}

/// FRR's run directory of a pathspace, removed when dropped.
struct RunDir(String);

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
