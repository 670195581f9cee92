//! `show ip route`'s source (`/pfcswitch/routes`, docs/routing.md "Counters"): a listing's
//! first page is what the dataplane uses now (before, a view up to a second old was served,
//! so a route already in the FIB could be missing), and the pages after it walk one view
//! without gaps or repeats.
//!
//! Needs root; skipped otherwise.

mod common;
use common::*;

use pfcswitch::dpdk::telemetry::{socket_path, Client};
use std::time::Duration;

fn rows(tel: &mut Client, offset: usize) -> (usize, Vec<String>) {
    let v = tel.query(&format!("/pfcswitch/routes,v4,{offset}")).expect("routes");
    let rows = v["rows"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .filter_map(|r| r.as_str().map(String::from))
        .collect();
    (v["total"].as_u64().expect("total") as usize, rows)
}

#[test]
fn the_first_page_is_current_and_pages_walk_one_view() {
    if !is_root() {
        eprintln!("SKIP: needs root for network namespaces");
        return;
    }
    let d = TestDir::new("route-view");
    let ns = Netns::add(&format!("pfcswrv{}", std::process::id() % 100_000));
    let cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1")
        .memory_mb(1024)
        .port(Port::new("Ethernet0", "net_null0"))
        .port(Port::new("Ethernet4", "net_null1"))
        .toml(&format!(
            "[switch]\nmbuf_count = 16383\n[control_plane]\nnetns = \"{}\"\n[interface]\nEthernet0 = [\"10.9.0.0/31\"]",
            ns.0
        ))
        .one_worker()
        .write(&d.join("t.toml"));
    let mut sw = RunningSwitch::spawn(&cfg, &d.join("stats.json"), &[]);
    sw.wait_forwarding(Duration::from_secs(120));
    let mut tel = Client::connect(&socket_path(&d.prefix())).expect("telemetry socket");
    let status = |tel: &mut Client| {
        let v = tel.query("/pfcswitch/routing").expect("routing");
        (v["batches"].as_u64().expect("batches"), v["rib"]["lpm_writes"].as_u64().expect("lpm_writes"))
    };
    // 1. A route the writer has committed is on the next first page.
    let _ = rows(&mut tel, 0); // a view taken now, before the route exists
    let (b0, w0) = status(&mut tel);
    let o = sh(&format!("ip -n {} route add 10.60.0.0/16 via 10.9.0.1 dev Ethernet0", ns.0));
    assert!(o.status.success(), "{}", show(&o));
    let committed = until(Duration::from_secs(30), || {
        let (b, w) = status(&mut tel);
        b > b0 && w > w0
    });
    assert!(committed.is_some(), "the route never reached the FIB");
    let (_, first) = rows(&mut tel, 0);
    assert!(first.iter().any(|r| r.starts_with("10.60.0.0/16|K|")), "committed but not listed: {first:?}");
    // 2. 600 more routes: several pages, every row once.
    let batch: String =
        (0..600).map(|i| format!("route add 10.61.{}.{}/32 via 10.9.0.1 dev Ethernet0\n", i / 200, i % 200)).collect();
    std::fs::write(d.join("batch"), batch).unwrap();
    let o = sh(&format!("ip -n {} -batch {}", ns.0, d.join("batch").display()));
    assert!(o.status.success(), "{}", show(&o));
    let listed = until(Duration::from_secs(60), || rows(&mut tel, 0).0 >= 600);
    assert!(listed.is_some(), "600 routes never listed");
    let (total, mut all) = rows(&mut tel, 0);
    while all.len() < total {
        let (_, page) = rows(&mut tel, all.len());
        assert!(!page.is_empty(), "an empty page at {} of {total}", all.len());
        all.extend(page);
    }
    let distinct: std::collections::BTreeSet<&String> = all.iter().collect();
    assert_eq!((all.len(), distinct.len()), (total, total), "pages repeat or skip rows");
    assert_eq!(all.iter().filter(|r| r.starts_with("10.61.")).count(), 600);
    sw.stop();
}
