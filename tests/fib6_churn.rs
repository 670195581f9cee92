//! `rte_fib6` under an ND flood's churn: DPDK 22.11's trie loses
//! tbl8 groups when prefixes are withdrawn; the writer rebuilds a copy when its pool runs
//! out (src/dpdk/fib.rs, docs/routing.md "rte_fib6 churn").

mod common;
use common::*;

use std::net::Ipv6Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use pfcswitch::dpdk::fib::{route_tables, TableSizes};
use pfcswitch::dpdk::{Eal, Qsbr};
use pfcswitch::route::{LpmWriter, Prefix6};

/// rte_fib6's trie (DPDK 22.11) loses tbl8 groups under add/withdraw churn: an ND flood's
/// /128s (and prefixes around them) added and withdrawn 10⁶ times must leave the table
/// accepting ordinary /64s, the DPDK heap flat, and every lookup right (the stable routes
/// from a registered reader all along, each churned prefix by the writer after each commit).
#[test]
fn fib6_churn_of_a_million_changes_keeps_tables_and_memory() {
    let d = TestDir::new("fib6-million");
    let args = in_process_eal_args(&d, 512);
    let eal = Eal::init(&args).expect("EAL");
    let qsbr = Qsbr::new(1).unwrap();
    // The switch's IPv6 sizes (32767 tbl8 groups: ~4000 /128s each needing 8 levels of its
    // own below its /64), a small IPv4 table.
    let sizes = TableSizes { v4_routes: 1024, v4_tbl8: 64, ..TableSizes::default() };
    let (lookup, mut w) = route_tables(sizes, qsbr.clone()).unwrap();
    let stable = |i: u16| Prefix6::new(Ipv6Addr::new(0x2001, 0xdb8, i, 0, 0, 0, 0, 0), 48);
    for i in 0..8u16 {
        w.set6(stable(i), 500 + u32::from(i)).unwrap();
    }
    w.commit().unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let mut reader = Some({
        let (lookup, stop, qsbr) = (lookup.clone(), stop.clone(), qsbr.clone());
        std::thread::spawn(move || {
            let r = qsbr.reader(0).unwrap();
            let (mut n, mut wrong) = (0u64, 0u64);
            while !stop.load(Ordering::Relaxed) {
                for i in 0..8u16 {
                    // In each stable /48, outside every churned prefix (…:ffff::/64).
                    let a = Ipv6Addr::new(0x2001, 0xdb8, i, 0xffff, 0, 0, (n >> 16) as u16, n as u16).octets();
                    if lookup.lookup6(&a) != 500 + u32::from(i) {
                        wrong += 1;
                    }
                    n += 1;
                }
                r.quiescent();
            }
            (n, wrong)
        })
    });

    // Per round: 120 spoofed-neighbour /128s (new addresses every round, as an ND flood's
    // sources are) and 2 /64s, added in one batch, checked, withdrawn in the next.
    const PER_ROUND: u32 = 122;
    let mut ops = 0u64;
    let mut wrong_churned = 0u64;
    let mut heap_after_warmup = 0u64;
    let t0 = Instant::now();
    let churned = |round: u32, j: u32| {
        let i = (round % 8) as u16;
        if j < 120 {
            let host = round.wrapping_mul(2_654_435_761) ^ j;
            Prefix6::new(Ipv6Addr::new(0x2001, 0xdb8, i, 1, (host >> 16) as u16, host as u16, j as u16, 0x1234), 128)
        } else {
            let sub = 2 + 2 * (round % 0x7ff0) + (j - 120);
            Prefix6::new(Ipv6Addr::new(0x2001, 0xdb8, i, sub as u16, 0, 0, 0, 0), 64)
        }
    };
    let mut round = 0u32;
    while ops < 1_000_000 {
        for j in 0..PER_ROUND {
            if let Err(e) = w.set6(churned(round, j), 1000 + j) {
                stop.store(true, Ordering::Relaxed);
                let _ = reader.take().map(|r| r.join());
                panic!("round {round} ({ops} changes, {} rebuilds): add {j} refused: {e}", w.fib6_rebuilds());
            }
        }
        w.commit().unwrap();
        for j in 0..PER_ROUND {
            let p = churned(round, j);
            if lookup.lookup6(&p.octets()) != 1000 + j {
                wrong_churned += 1;
            }
            w.del6(p).unwrap();
        }
        w.commit().unwrap();
        for j in [0, 119, 121] {
            let i = round % 8;
            if lookup.lookup6(&churned(round, j).octets()) != 500 + i {
                wrong_churned += 1;
            }
        }
        ops += 2 * u64::from(PER_ROUND);
        round += 1;
        if round == 100 {
            heap_after_warmup = eal.heap_allocated_bytes();
        }
    }
    let heap_end = eal.heap_allocated_bytes();
    // After the flood: ordinary /64s are accepted (each needs five tbl8 levels of its own).
    let mut refused = Vec::new();
    for k in 0..200u16 {
        let p = Prefix6::new(Ipv6Addr::new(0x2001, 0xdb8, 0x100 + k, 0, 0, 0, 0, 0), 64);
        if let Err(e) = w.set6(p, 3000 + u32::from(k)) {
            refused.push((k, e));
        }
    }
    w.commit().unwrap();
    stop.store(true, Ordering::Relaxed);
    let (n, wrong_stable) = reader.take().unwrap().join().unwrap();
    eprintln!(
        "fib6_churn: {ops} changes in {round} rounds, {:?}, {} rebuilds, heap {heap_after_warmup} → {heap_end} B, \
         reader {n} lookups ({wrong_stable} wrong), churned lookups wrong {wrong_churned}, /64s refused after {}",
        t0.elapsed(),
        w.fib6_rebuilds(),
        refused.len()
    );
    assert_eq!(wrong_stable, 0, "stable routes looked up wrong");
    assert_eq!(wrong_churned, 0, "churned routes looked up wrong");
    assert!(refused.is_empty(), "/64s refused after the churn: {:?}", &refused[..refused.len().min(3)]);
    assert_eq!(heap_end, heap_after_warmup, "the DPDK heap grew under churn");
    assert!(w.fib6_rebuilds() > 0, "the churn never exhausted the tbl8 pool: the test shows nothing");
    assert!(n > 1000, "the reader hardly ran: {n} lookups");
    for k in [0u16, 199] {
        let a = Ipv6Addr::new(0x2001, 0xdb8, 0x100 + k, 0, 0, 0, 0, 1).octets();
        assert_eq!(lookup.lookup6(&a), 3000 + u32::from(k));
    }
    drop(w);
    drop(lookup);
    drop(qsbr);
    drop(eal);
}
