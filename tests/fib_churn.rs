//! The switch's tables under churn: a reader thread (a registered QSBR reader, as a worker
//! is) looks up addresses whose routes never change, while the one writer keeps adding and
//! withdrawing more-specific routes in the same /16s (tbl8 groups allocated, freed and
//! reused all the time), IPv4 and IPv6, in batches. The reader must never see anything but
//! the stable routes' values; the batches per second are printed.

mod common;
use common::*;

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pfcswitch::dpdk::fib::{route_tables, TableSizes};
use pfcswitch::dpdk::{Eal, Qsbr};
use pfcswitch::route::{LpmWriter, Prefix4, Prefix6};

#[test]
fn lookups_never_see_a_changing_table() {
    let d = TestDir::new("fib-churn");
    let args = in_process_eal_args(&d, 512);
    let eal = Eal::init(&args).expect("EAL");
    let qsbr = Qsbr::new(1).unwrap();
    let sizes = TableSizes { v4_routes: 4096, v4_tbl8: 512, v6_routes: 4096, v6_tbl8: 32_767 };
    let (lookup, mut w) = route_tables(sizes, qsbr.clone()).unwrap();
    // Stable: 10.<i>.0.0/16 → 100 + i, and the host 10.<i>.0.7/32 → 300 + i (a tbl8 group
    // that must survive its neighbours' churn); 2001:db8:<i>::/48 → 500 + i.
    for i in 0..16u8 {
        w.set4(Prefix4::new(Ipv4Addr::new(10, i, 0, 0), 16), 100 + u32::from(i)).unwrap();
        w.set4(Prefix4::new(Ipv4Addr::new(10, i, 0, 7), 32), 300 + u32::from(i)).unwrap();
        w.set6(Prefix6::new(Ipv6Addr::new(0x2001, 0xdb8, u16::from(i), 0, 0, 0, 0, 0), 48), 500 + u32::from(i))
            .unwrap();
    }
    w.commit().unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let looked = Arc::new(AtomicU64::new(0));
    let mut reader = Some({
        let (lookup, stop, looked, qsbr) = (lookup.clone(), stop.clone(), looked.clone(), qsbr.clone());
        std::thread::spawn(move || {
            let r = qsbr.reader(0).unwrap();
            let mut n = 0u64;
            let mut wrong = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                for i in 0..16u8 {
                    // Inside the /16 but outside every churned prefix (x.x.200+.x).
                    let a = u32::from(Ipv4Addr::new(10, i, 200 + (n % 50) as u8, (n % 251) as u8));
                    let h = u32::from(Ipv4Addr::new(10, i, 0, 7));
                    let a6 = Ipv6Addr::new(0x2001, 0xdb8, u16::from(i), 0xff00, 0, 0, 0, n as u16).octets();
                    let got = (lookup.lookup4(a), lookup.lookup4(h), lookup.lookup6(&a6));
                    let want = (100 + u32::from(i), 300 + u32::from(i), 500 + u32::from(i));
                    if got != want && wrong.len() < 10 {
                        wrong.push((i, got, want));
                    }
                    n += 1;
                }
                r.quiescent();
            }
            looked.store(n, Ordering::Relaxed);
            wrong
        })
    });

    // Churn: per batch, add /24../32 routes in the first 200 /24s of each /16 (and /56../64
    // in each /48), then withdraw them the next batch.
    let t0 = Instant::now();
    let mut batches = 0u64;
    let mut k = 0u32;
    // At most 300 batches: rte_fib6 (DPDK 22.11) does not give back every tbl8 group a
    // delete frees (docs/routing.md: 2048 groups last 118 batches of this churn).
    while t0.elapsed() < Duration::from_millis(1500) && batches < 300 {
        let add = batches.is_multiple_of(2);
        for j in 0..64u32 {
            let i = ((k + j) % 16) as u8;
            let third = ((k / 16 + j) % 200) as u8;
            let len = 24 + ((k + j) % 9) as u8;
            let p = Prefix4::new(Ipv4Addr::new(10, i, third, (j * 37 % 256) as u8), len);
            let p6 = Prefix6::new(
                Ipv6Addr::new(0x2001, 0xdb8, u16::from(i), u16::from(third), j as u16, 0, 0, 0),
                56 + (j % 9) as u8,
            );
            let r = if add {
                w.set4(p, 1000 + j).and_then(|_| w.set6(p6, 2000 + j))
            } else {
                w.del4(p).and_then(|_| w.del6(p6))
            };
            if let Err(e) = r {
                stop.store(true, Ordering::Relaxed);
                let _ = reader.take().map(|r| r.join());
                panic!("batch {batches} change {j}: {e}");
            }
        }
        w.commit().unwrap();
        if !add {
            k += 64;
        }
        batches += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let wrong = reader.take().unwrap().join().unwrap();
    let n = looked.load(Ordering::Relaxed);
    eprintln!(
        "fib_churn: {batches} batches of 64+64 changes in {:?} ({:.0} batches/s), {n} reader rounds, {} wrong",
        t0.elapsed(),
        batches as f64 / t0.elapsed().as_secs_f64(),
        wrong.len()
    );
    assert!(wrong.is_empty(), "the reader saw values of a table being changed: {wrong:?}");
    assert!(batches >= 10 && n > 1000, "too little happened to mean anything: {batches} batches, {n} lookups");
    drop(w);
    drop(lookup);
    drop(qsbr);
    drop(eal);
}
