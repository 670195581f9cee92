//! Routing-table costs under a real EAL: ns per lookup in DPDK's `rte_lpm`, `rte_fib`,
//! `rte_lpm6` and `rte_fib6` (single lookups and bursts of 32), the pure per-packet steps
//! around them (flow hash, `route::forward`), and the time to load 100k IPv4 routes (the
//! raw table, and the whole writer path: kernel events → `Rib` → tables).
//!
//! Run: `cargo bench --bench route` (≈ 1 min, EAL with --no-huge; prints a table).
//! `cargo test --benches` runs it as a smoke test (small tables, a few seconds).
//! docs/routing.md lists the figures and the choices they made.

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use std::time::Instant;

use pfcswitch::dpdk::fib::{route_tables, TableSizes};
use pfcswitch::dpdk::lpm::{Fib4, Fib6, Lpm4, Lpm6};
use pfcswitch::dpdk::{Eal, Qsbr};
use pfcswitch::route::{self, KernelEvent, KernelRoute, NextHopTables, Path, Prefix, Rib, RouteKind, Target};
use pfcswitch::wire::{IpPair, L3Header};

/// xorshift64*: deterministic route sets and addresses.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// An Internet-like IPv4 mix: 60 % /24, 36 % /16../23, 3 % /25../30, 1 % /32.
fn v4_routes(n: usize, rng: &mut Rng) -> Vec<(u32, u8)> {
    (0..n)
        .map(|_| {
            let r = rng.next();
            let len = match r % 100 {
                0..=59 => 24,
                60..=95 => 16 + (r >> 8) as u8 % 8,
                96..=98 => 25 + (r >> 8) as u8 % 6,
                _ => 32,
            };
            let a = (r >> 32) as u32 | 0x0100_0000;
            (a & (u32::MAX << (32 - u32::from(len))), len)
        })
        .collect()
}

/// IPv6: /48, /56, /64 in 2000::/3.
fn v6_routes(n: usize, rng: &mut Rng) -> Vec<([u8; 16], u8)> {
    (0..n)
        .map(|_| {
            let r = rng.next();
            let len = [48u8, 56, 64][(r % 3) as usize];
            let hi = (u128::from(rng.next()) << 64 | u128::from(rng.next())) & (u128::MAX >> 3) | (1u128 << 125);
            let a = hi & (u128::MAX << (128 - u32::from(len)));
            (a.to_be_bytes(), len)
        })
        .collect()
}

/// Addresses inside the routes (hits), shuffled.
fn v4_addrs(routes: &[(u32, u8)], n: usize, rng: &mut Rng) -> Vec<u32> {
    (0..n)
        .map(|_| {
            let (a, l) = routes[(rng.next() % routes.len() as u64) as usize];
            a | ((rng.next() as u32) & !(u32::MAX.checked_shl(32 - u32::from(l)).unwrap_or(0)))
        })
        .collect()
}

fn v6_addrs(routes: &[([u8; 16], u8)], n: usize, rng: &mut Rng) -> Vec<[u8; 16]> {
    (0..n)
        .map(|_| {
            let (a, _) = routes[(rng.next() % routes.len() as u64) as usize];
            let mut b = a;
            b[8..16].copy_from_slice(&rng.next().to_be_bytes());
            b
        })
        .collect()
}

/// Best of 3: ns per item of `f`, which handles `items` items.
fn ns_per(items: usize, mut f: impl FnMut() -> u64) -> f64 {
    let mut best = f64::MAX;
    let mut sink = 0u64;
    for _ in 0..3 {
        let t = Instant::now();
        sink = sink.wrapping_add(f());
        best = best.min(t.elapsed().as_nanos() as f64 / items as f64);
    }
    black_box(sink);
    best
}

const BURST: usize = 32;
const ROUNDS: usize = 8;

fn bench_bulk<A: Copy>(addrs: &[A], lookup: impl Fn(&[A], &mut [u32])) -> f64 {
    ns_per(addrs.len() * ROUNDS, || {
        let mut out = [0u32; BURST];
        let mut s = 0u64;
        for _ in 0..ROUNDS {
            for c in addrs.chunks(BURST) {
                lookup(c, &mut out);
                s = s.wrapping_add(u64::from(out[0]));
            }
        }
        s
    })
}

fn bench_single<A>(addrs: &[A], lookup: impl Fn(&A) -> Option<u32>) -> f64 {
    ns_per(addrs.len() * ROUNDS, || {
        let mut s = 0u64;
        for _ in 0..ROUNDS {
            for a in addrs {
                s = s.wrapping_add(u64::from(lookup(a).unwrap_or(0)));
            }
        }
        s
    })
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` does not: a quick smoke run then.
    let full = std::env::args().any(|a| a == "--bench");
    let (n4, n6, mem) = if full { (100_000, 8_000, "2048") } else { (5_000, 1_000, "768") };
    let prefix = format!("pfcsw-bench-route-{}", std::process::id());
    let args: Vec<String> =
        ["bench", "--no-huge", "-m", mem, "--no-pci", "-l", "0", "--log-level=error", "--file-prefix", &prefix]
            .iter()
            .map(|s| s.to_string())
            .collect();
    let eal = Eal::init(&args).expect("EAL");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let r4 = v4_routes(n4, &mut rng);
    let a4 = v4_addrs(&r4, 1 << 16, &mut rng);
    let r6 = v6_routes(n6, &mut rng);
    let a6 = v6_addrs(&r6, 1 << 16, &mut rng);
    // A ToR's traffic: few destinations, the table's lines hot in cache (1024 addresses,
    // repeated).
    let hot4: Vec<u32> = (0..1 << 16).map(|i| a4[i % 1024 % 64 * 16 + i % 1024 / 64]).collect();
    let hot6: Vec<[u8; 16]> = (0..1 << 16).map(|i| a6[i % 1024 % 64 * 16 + i % 1024 / 64]).collect();
    let mut rows: Vec<(String, String)> = Vec::new();
    let mut row = |k: &str, v: String| {
        println!("{k:<48} {v}");
        rows.push((k.to_string(), v));
    };

    // ---- IPv4: rte_lpm (with RCU, as the switch uses it) vs rte_fib ----
    let qsbr = Qsbr::new(4).expect("qsbr");
    {
        let mut lpm = Lpm4::new(131_072, 16_384, Some(qsbr.clone())).expect("lpm");
        let t = Instant::now();
        for (i, (a, l)) in r4.iter().enumerate() {
            lpm.add(*a, *l, 16 + (i % 8000) as u32).expect("lpm add");
        }
        row(&format!("lpm4 load {n4} routes (raw rte_lpm_add)"), format!("{:.1} ms", t.elapsed().as_secs_f64() * 1e3));
        row("lpm4 lookup single (ns)", format!("{:.2}", bench_single(&a4, |a| lpm.lookup(*a))));
        row("lpm4 lookup bulk 32 (ns/addr)", format!("{:.2}", bench_bulk(&a4, |c, o| lpm.lookup_bulk(c, o))));
        row("lpm4 hot: single (ns)", format!("{:.2}", bench_single(&hot4, |a| lpm.lookup(*a))));
        row("lpm4 hot: bulk 32 (ns/addr)", format!("{:.2}", bench_bulk(&hot4, |c, o| lpm.lookup_bulk(c, o))));
    }
    {
        let mut fib = Fib4::new(131_072, 16_384).expect("fib");
        let t = Instant::now();
        for (i, (a, l)) in r4.iter().enumerate() {
            fib.add(*a, *l, 16 + (i % 8000) as u32).expect("fib add");
        }
        row(&format!("fib4 load {n4} routes (raw rte_fib_add)"), format!("{:.1} ms", t.elapsed().as_secs_f64() * 1e3));
        // The bulk path hands DPDK the caller's addresses and an uninitialised result
        // array: it must give what one-by-one lookups give (0 for no route), past one
        // bulk call's 64 too.
        let mut bulk = vec![u32::MAX; a4.len().min(1000)];
        fib.lookup_bulk(&a4[..bulk.len()], &mut bulk);
        let single: Vec<u32> = a4[..bulk.len()].iter().map(|a| fib.lookup(*a).unwrap_or(0)).collect();
        assert_eq!(bulk, single, "fib4 bulk lookup differs from one by one");
        row("fib4 lookup single (bulk of 1) (ns)", format!("{:.2}", bench_single(&a4, |a| fib.lookup(*a))));
        row("fib4 lookup bulk 32 (ns/addr)", format!("{:.2}", bench_bulk(&a4, |c, o| fib.lookup_bulk(c, o))));
        row("fib4 hot: single (bulk of 1) (ns)", format!("{:.2}", bench_single(&hot4, |a| fib.lookup(*a))));
        row("fib4 hot: bulk 32 (ns/addr)", format!("{:.2}", bench_bulk(&hot4, |c, o| fib.lookup_bulk(c, o))));
    }
    // ---- IPv6: rte_lpm6 vs rte_fib6 ----
    {
        let mut lpm6 = Lpm6::new(65_536, 65_536).expect("lpm6");
        let t = Instant::now();
        for (i, (a, l)) in r6.iter().enumerate() {
            lpm6.add(a, *l, 16 + (i % 8000) as u32).expect("lpm6 add");
        }
        row(&format!("lpm6 load {n6} routes (raw)"), format!("{:.1} ms", t.elapsed().as_secs_f64() * 1e3));
        row("lpm6 lookup single (ns)", format!("{:.2}", bench_single(&a6, |a| lpm6.lookup(a))));
        row("lpm6 lookup bulk 32 (ns/addr)", format!("{:.2}", bench_bulk(&a6, |c, o| lpm6.lookup_bulk(c, o))));
        row("lpm6 hot: single (ns)", format!("{:.2}", bench_single(&hot6, |a| lpm6.lookup(a))));
        row("lpm6 hot: bulk 32 (ns/addr)", format!("{:.2}", bench_bulk(&hot6, |c, o| lpm6.lookup_bulk(c, o))));
    }
    {
        let mut fib6 = Fib6::new(65_536, 32_767).expect("fib6");
        let t = Instant::now();
        for (i, (a, l)) in r6.iter().enumerate() {
            fib6.add(a, *l, 16 + (i % 8000) as u32).expect("fib6 add");
        }
        row(&format!("fib6 load {n6} routes (raw)"), format!("{:.1} ms", t.elapsed().as_secs_f64() * 1e3));
        row("fib6 lookup single (bulk of 1) (ns)", format!("{:.2}", bench_single(&a6, |a| fib6.lookup(a))));
        row("fib6 lookup bulk 32 (ns/addr)", format!("{:.2}", bench_bulk(&a6, |c, o| fib6.lookup_bulk(c, o))));
        row("fib6 hot: single (bulk of 1) (ns)", format!("{:.2}", bench_single(&hot6, |a| fib6.lookup(a))));
        row("fib6 hot: bulk 32 (ns/addr)", format!("{:.2}", bench_bulk(&hot6, |c, o| fib6.lookup_bulk(c, o))));
    }

    // ---- the switch's tables through the whole writer path ----
    let tables = Arc::new(NextHopTables::new());
    let (lookup, writer) = route_tables(TableSizes::default(), qsbr.clone()).expect("tables");
    let mut rib = Rib::new(writer, tables.clone(), qsbr.clone(), vec!["Ethernet0".into(), "Ethernet4".into()]);
    rib.apply([
        KernelEvent::Link { ifindex: 10, name: "Ethernet0".into(), carrier: true },
        KernelEvent::Link { ifindex: 11, name: "Ethernet4".into(), carrier: true },
    ]);
    // Resolved gateways, so `forward` below returns Route (the fast path's case).
    rib.apply([(10, "10.0.0.1"), (10, "10.0.0.3"), (10, "10.0.0.5"), (10, "10.0.0.7"), (11, "10.0.1.1")].map(
        |(i, a)| KernelEvent::Neigh {
            add: true,
            ifindex: i,
            addr: a.parse().unwrap(),
            mac: Some(pfcswitch::wire::MacAddr([2, 0, 0, 0, 1, i as u8])),
        },
    ));
    let gw = |i: u32| -> Vec<Path> {
        vec![
            Path { ifindex: 10, gateway: Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1 + (i % 4) as u8 * 2))), weight: 1 },
            Path { ifindex: 11, gateway: Some(IpAddr::V4(Ipv4Addr::new(10, 0, 1, 1))), weight: 1 },
        ]
    };
    let events: Vec<KernelEvent> = r4
        .iter()
        .enumerate()
        .map(|(i, (a, l))| KernelEvent::Route {
            add: true,
            append: false,
            route: KernelRoute {
                prefix: Prefix::new(IpAddr::V4(Ipv4Addr::from(*a)), *l),
                metric: 0,
                kind: RouteKind::Unicast,
                paths: gw(i as u32),
                nh_id: None,
            },
        })
        .collect();
    let t = Instant::now();
    rib.apply(events);
    row(
        &format!("switch: {n4} IPv4 ECMP routes, events -> Rib -> 2 x rte_fib"),
        format!("{:.1} ms ({} installed)", t.elapsed().as_secs_f64() * 1e3, rib.installed().len()),
    );
    let events6: Vec<KernelEvent> = r6
        .iter()
        .map(|(a, l)| KernelEvent::Route {
            add: true,
            append: false,
            route: KernelRoute {
                prefix: Prefix::new(IpAddr::V6(Ipv6Addr::from(*a)), *l),
                metric: 0,
                kind: RouteKind::Unicast,
                paths: vec![Path { ifindex: 10, gateway: Some("fe80::1".parse().unwrap()), weight: 1 }],
                nh_id: None,
            },
        })
        .collect();
    let t = Instant::now();
    rib.apply(events6);
    row(
        &format!("switch: {n6} IPv6 routes, events -> Rib -> 2 x rte_fib6"),
        format!("{:.1} ms", t.elapsed().as_secs_f64() * 1e3),
    );
    let t = Instant::now();
    let n_churn = 1000.min(n6);
    for (i, (a, l)) in r4.iter().take(n_churn).enumerate() {
        rib.apply([KernelEvent::Route {
            add: true,
            append: false,
            route: KernelRoute {
                prefix: Prefix::new(IpAddr::V4(Ipv4Addr::from(*a)), *l),
                metric: 0,
                kind: RouteKind::Unicast,
                paths: gw(i as u32 + 1)[..1].to_vec(),
                nh_id: None,
            },
        }]);
    }
    row(
        "switch: IPv4 route replace, one batch each (us)",
        format!("{:.2}", t.elapsed().as_secs_f64() * 1e6 / n_churn as f64),
    );
    let t = Instant::now();
    for (a, l) in r6.iter().take(n_churn) {
        rib.apply([KernelEvent::Route {
            add: true,
            append: false,
            route: KernelRoute {
                prefix: Prefix::new(IpAddr::V6(Ipv6Addr::from(*a)), *l),
                metric: 0,
                kind: RouteKind::Unicast,
                paths: vec![Path { ifindex: 11, gateway: Some("fe80::2".parse().unwrap()), weight: 1 }],
                nh_id: None,
            },
        }]);
    }
    row(
        "switch: IPv6 route replace, one batch each (us)",
        format!("{:.2}", t.elapsed().as_secs_f64() * 1e6 / n_churn as f64),
    );
    assert!(rib.stats().errors == 0, "{:?}", rib.stats());
    row("switch lookup4 single (ns)", format!("{:.2}", bench_single(&a4, |a| Some(lookup.lookup4(*a)))));
    row("switch lookup4 bulk 32 (ns/addr)", format!("{:.2}", bench_bulk(&a4, |c, o| lookup.lookup4_bulk(c, o))));
    row("switch lookup4 hot: single (ns)", format!("{:.2}", bench_single(&hot4, |a| Some(lookup.lookup4(*a)))));
    row("switch lookup4 hot: bulk 32 (ns/addr)", format!("{:.2}", bench_bulk(&hot4, |c, o| lookup.lookup4_bulk(c, o))));
    row("switch lookup6 bulk 32 (ns/addr)", format!("{:.2}", bench_bulk(&a6, |c, o| lookup.lookup6_bulk(c, o))));

    // ---- the pure steps around the lookup ----
    let l3s: Vec<L3Header> = a4
        .iter()
        .enumerate()
        .map(|(i, a)| L3Header {
            addrs: IpPair::V4 { src: [10, 0, 0, 1], dst: a.to_be_bytes() },
            proto: 17,
            ttl: 64,
            len: 100,
            l4_a: i as u16,
            l4_b: 4791,
            fragment: false,
            checksum_ok: true,
            options: false,
        })
        .collect();
    row(
        "flow_hash v4 (ns)",
        format!("{:.2}", ns_per(l3s.len(), || l3s.iter().map(|h| u64::from(route::flow_hash(h, 7))).sum())),
    );
    let mtu = [9100u16, 9100];
    let vals: Vec<u32> = a4.iter().map(|a| lookup.lookup4(*a)).collect();
    assert!(vals.iter().all(|v| matches!(Target::decode(*v), Some(Target::NextHop(_) | Target::Group(_)))));
    row(
        "route::forward after lookup (ECMP, hash) (ns)",
        format!(
            "{:.2}",
            ns_per(l3s.len(), || {
                l3s.iter()
                    .zip(&vals)
                    .map(|(h, v)| match route::forward(h, *v, &tables, 7, &mtu, true, 0) {
                        route::Decision::Route(r) => u64::from(r.port),
                        _ => 1000,
                    })
                    .sum()
            })
        ),
    );
    drop(rib);
    drop(lookup);
    drop(qsbr);
    drop(eal);
}
