//! `rte_fib6` at a ToR's size: 32 768 /48s spread over the address space, in the tables as
//! the switch sizes them for `[control_plane] max_ipv6_routes = 32768` (src/dpdk/fib.rs,
//! docs/routing.md "IPv6 table size"), against the default sizes, which refuse most of them.

mod common;
use common::*;

use std::net::Ipv6Addr;

use pfcswitch::dpdk::fib::{route_tables, TableSizes};
use pfcswitch::dpdk::{Eal, Qsbr};
use pfcswitch::route::{LpmWriter, Prefix6};

const ROUTES: u32 = 32_768;

/// /48 number `n`: spread over 2000::/3 by a multiplicative hash, so most have a /24 of
/// their own and need three tbl8 groups each (bytes 3, 4 and 5).
fn scattered(n: u32) -> Prefix6 {
    let h = u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 19; // 45 bits
    let a = 1 << 45 | h; // the address's first 48 bits: 001 then the hash
    Prefix6::new(Ipv6Addr::new((a >> 32) as u16, (a >> 16) as u16, a as u16, 0, 0, 0, 0, 0), 48)
}

/// How many of the scattered /48s the tables accept, and how many of those then look up
/// wrong; one commit per 4096 adds.
fn install(sizes: TableSizes) -> (u32, u32) {
    let qsbr = Qsbr::new(1).unwrap();
    let (lookup, mut w) = route_tables(sizes, qsbr).unwrap();
    let mut ok = Vec::new();
    for n in 0..ROUTES {
        if w.set6(scattered(n), 100 + (n % 1000)).is_ok() {
            ok.push(n);
        }
        if n % 4096 == 4095 {
            w.commit().unwrap();
        }
    }
    w.commit().unwrap();
    let wrong = ok
        .iter()
        .filter(|&&n| {
            let mut a = scattered(n).octets();
            a[15] = 1;
            lookup.lookup6(&a) != 100 + (n % 1000)
        })
        .count() as u32;
    (ok.len() as u32, wrong)
}

#[test]
fn scattered_48s_fit_in_a_table_sized_for_them() {
    let d = TestDir::new("fib6-scale");
    let args = in_process_eal_args(&d, 1024);
    let eal = Eal::init(&args).expect("EAL");
    let small = TableSizes { v4_routes: 1024, v4_tbl8: 64, ..TableSizes::default() };
    let (default_ok, default_wrong) = install(small);
    let heap0 = eal.heap_allocated_bytes();
    let (sized_ok, sized_wrong) = install(small.with_ipv6_routes(ROUTES));
    eprintln!(
        "fib6_scale: {ROUTES} scattered /48s: default sizes ({} groups) took {default_ok}, \
         max_ipv6_routes = {ROUTES} ({} groups) took {sized_ok}",
        small.v6_tbl8,
        small.with_ipv6_routes(ROUTES).v6_tbl8
    );
    assert_eq!((default_wrong, sized_wrong), (0, 0), "installed /48s looked up wrong");
    assert!(default_ok < ROUTES, "the default sizes held all {ROUTES}: the test shows nothing");
    assert_eq!(sized_ok, ROUTES, "a table sized for {ROUTES} /48s refused some");
    assert_eq!(eal.heap_allocated_bytes(), heap0, "the tables' memory was not given back");
    drop(eal);
}
