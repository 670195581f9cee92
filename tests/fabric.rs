//! The leaf-spine fabric on one machine (`scripts/fabric.sh`, docs/operating.md "Fabric on one
//! machine"): three pfcswitch processes (2 leaves, 1 spine, memif between them), kernel
//! hosts h1, h2, h3 in network namespaces on af_packet veths, real kernel sockets.
//!
//! * incast with PFC: h1 and h2 at 3 Mbit/s each into h3's 5 Mbit/s port — every datagram
//!   arrives, no switch drops the lossless class, and PAUSE goes hop by hop: leaf 2 pauses
//!   the spine, the spine pauses leaf 1.
//! * incast without PFC: leaf 2 drops the excess.
//! * tcp: h1 → h3 TCP in the lossless class: goodput near the 5 Mbit/s bottleneck, no
//!   lossless drop.
//!
//! Needs root; skipped otherwise.

mod common;
use common::*;

use serde_json::Value;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// One fabric at a time: they share namespace, veth and socket names (`fab…`), and cargo
/// runs a file's tests on parallel threads.
static ONE_FABRIC: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn fabric(args: &[&str]) -> Value {
    let _one = ONE_FABRIC.lock().unwrap_or_else(|e| e.into_inner());
    let out = Command::new("python3")
        .arg(format!("{ROOT}/scripts/fabric.py"))
        .args(args)
        .env("PFCSW_BIN", BIN)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "fabric.py {args:?}: {}", show(&out));
    eprintln!("{stdout}");
    serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn leaf_spine_incast_tcp_and_the_control_case() {
    if !is_root() {
        eprintln!("SKIP: needs root (namespaces, veths, EAL)");
        return;
    }
    let on = fabric(&["incast", "--duration", "3"]);
    assert_eq!(on["conserved"], true);
    assert_eq!(on["lost"], 0, "{on}");
    for sw in ["leaf1", "spine1", "leaf2"] {
        assert_eq!(on["lossless_drops"][sw], 0, "{sw}: {on}");
    }
    // Hop by hop toward the senders: leaf2 → spine1 → leaf1.
    assert!(on["pause_tx"]["leaf2"].as_u64().unwrap() > 0, "{on}");
    assert!(on["pause_rx"]["spine1"].as_u64().unwrap() > 0, "{on}");
    assert!(on["pause_tx"]["spine1"].as_u64().unwrap() > 0, "{on}");
    assert!(on["pause_rx"]["leaf1"].as_u64().unwrap() > 0, "{on}");

    let off = fabric(&["incast", "--pfc", "off", "--duration", "3"]);
    assert!(off["lossless_drops"]["leaf2"].as_u64().unwrap() > 0, "{off}");
    assert!(off["lost"].as_u64().unwrap() > 0, "{off}");
    assert_eq!(off["pause_tx"]["leaf2"], 0);

    let tcp = fabric(&["tcp", "--duration", "3"]);
    for sw in ["leaf1", "spine1", "leaf2"] {
        assert_eq!(tcp["lossless_drops"][sw], 0, "{sw}: {tcp}");
    }
    assert_eq!(tcp["received_bytes"], tcp["sent_bytes"]);
    let goodput = tcp["goodput_bps"].as_u64().unwrap();
    assert!(goodput > 1_000_000 && goodput <= 5_200_000, "goodput {goodput} b/s through a 5 Mbit/s port");
}

/// Two switches, two parallel links: one lossless burst to an unknown MAC loops until
/// every link direction is paused with packets queued and nothing moves (and the lossless
/// class no longer crosses); the watchdog (`action = "drop"`) breaks it and h1 → h2 flows;
/// `flood_lossless = false` never lets it form.
#[test]
fn pfc_deadlock_in_a_loop_and_what_breaks_it() {
    if !is_root() {
        eprintln!("SKIP: needs root (namespaces, veths, EAL)");
        return;
    }
    let stuck = fabric(&["deadlock", "--duration", "2"]);
    assert_eq!(stuck["deadlocked"], true, "{stuck}");
    assert_eq!(stuck["udp_received"], 0, "{stuck}");
    assert_eq!(stuck["conserved"], true);
    for sw in ["loop-a", "loop-b"] {
        for link in ["Ethernet8", "Ethernet12"] {
            let l = &stuck["links"][sw][link];
            assert_eq!(l["sent_between"], 0, "{sw} {link}: {l}");
            assert!(l["queued"][1].as_u64().unwrap() > 0, "{sw} {link}: {l}");
        }
    }

    let wd = fabric(&["deadlock", "--duration", "2", "--watchdog", "on"]);
    assert_eq!(wd["deadlocked"], false, "{wd}");
    let storms: u64 = ["loop-a", "loop-b"].iter().map(|s| wd["storms"][s].as_u64().unwrap()).sum();
    assert!(storms >= 1, "{wd}");
    assert_eq!(wd["udp_received"], wd["udp_sent"], "{wd}");

    let no_flood = fabric(&["deadlock", "--duration", "2", "--flood-lossless", "off"]);
    assert_eq!(no_flood["deadlocked"], false, "{no_flood}");
    assert_eq!(no_flood["pause_tx"]["loop-b"], 0, "{no_flood}");
    assert_eq!(no_flood["udp_received"], no_flood["udp_sent"], "{no_flood}");
}

/// The routed leaf-spine clos-2-4-4 (`scripts/fabric.sh clos-2-4-4 ecmp`, docs/fabric.md):
/// ten pfcswitch instances, each in its namespace with FRR's zebra and bgpd; no route in
/// any TOML. BGP converges, every switch's dataplane FIB holds the ToRs' /24s with the
/// equal-cost next hops BGP found (two spines, two leaves), every host pings every other
/// across the pods, and 64 UDP flows spread over both spines and both pod-2 leaves, no
/// flow split over two paths. The full fabric (not a reduced one): it is up and down again
/// in about 40 s on two loaded CPUs.
#[test]
fn clos_2_4_4_bgp_routes_reach_the_fib_and_ecmp_uses_both_spines() {
    if !is_root() || !std::path::Path::new("/usr/lib/frr/bgpd").exists() {
        eprintln!("SKIP: needs root (namespaces, veths, EAL) and FRR (scripts/setup.sh)");
        return;
    }
    let _one = ONE_FABRIC.lock().unwrap_or_else(|e| e.into_inner());
    let out = Command::new("python3")
        .arg(format!("{ROOT}/scripts/fabric.py"))
        .args(["clos-2-4-4", "ecmp"])
        .env("PFCSW_BIN", BIN)
        .env("PFCGEN_BIN", GEN_BIN)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "fabric.py clos-2-4-4 ecmp: {}", show(&out));
    eprintln!("{stdout}");
    let e: Value =
        serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    // Routes: learned over BGP, mirrored from the kernel into each dataplane.
    assert_eq!(e["fib_converged"], true, "{e}");
    for spine in ["s1", "s2"] {
        for tor in ["t1", "t2", "t3", "t4"] {
            assert_eq!(e["fib_paths"][spine][tor], 2, "{spine} -> {tor}: two leaves: {e}");
        }
    }
    for (leaf, far) in [("l1", ["t3", "t4"]), ("l2", ["t3", "t4"]), ("l3", ["t1", "t2"]), ("l4", ["t1", "t2"])] {
        for tor in far {
            assert_eq!(e["fib_paths"][leaf][tor], 2, "{leaf} -> {tor}: two spines: {e}");
        }
    }
    assert_eq!(e["fib_paths"]["t1"]["t4"], 2, "t1 -> t4: two leaves: {e}");
    // Reachability across the pods (each of 8 hosts pings the 7 others).
    assert_eq!(e["host_pairs_reachable"], 56, "{e}");
    // ECMP: 64 flows on both spines and both pod-2 leaves, none split.
    assert_eq!(e["flows"], 64, "{e}");
    assert_eq!(e["flows_not_on_one_path"], 0, "{e}");
    assert_eq!(e["spines_used"], serde_json::json!(["s1", "s2"]), "{e}");
    assert_eq!(e["pod2_leaves_used"], serde_json::json!(["l3", "l4"]), "{e}");
    for link in ["l1>s1", "l1>s2", "l2>s1", "l2>s2"] {
        assert!(e["links"][link].as_u64().unwrap() > 0, "{link} carried nothing: {e}");
    }
}
