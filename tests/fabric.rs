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
        .env("PFCGEN_BIN", GEN_BIN)
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

/// The routed leaf-spine clos-2-4-4 (`scripts/fabric.sh clos-2-4-4 all`, docs/fabric.md),
/// brought up once for everything: ten pfcswitch instances, each in its namespace with
/// FRR's zebra, bfdd and bgpd; no route in any TOML. Then, in sequence:
///
/// * ecmp: BGP converged, every switch's dataplane FIB holds the ToRs' /24s with the
///   equal-cost next hops BGP found (two spines, two leaves), every host pings every other
///   across the pods, and 64 UDP flows spread over both spines and both pod-2 leaves, no
///   flow split over two paths.
/// * incast with PFC: h11 + h31 → h41 at 3 Mbit/s each (393 frames/s of 1000 B: 786 kB/s
///   into h41's 625 kB/s) for 20 s from pfcgen senders that obey the ToRs' PAUSE. The
///   excess, 161 kB/s × 20 s = 3.2 MB, is more than every buffer on the paths could hold
///   (clos_topo.incast_buffer_bound(): each lossless PG on the paths full, reserved + its
///   Dynamic-Threshold share + all its headroom, plus the veths' in-flight bytes and the
///   senders' tbf queues: 2.1 MB, about 13 s of that excess). So zero loss means PAUSE
///   reached the senders and slowed them, not that a buffer was deep enough.
/// * incast without PFC: the same flows for 4 s in a class without PFC (DSCP 0, pfcgen
///   ignoring PAUSE): the congested switch drops.
/// * failover: under the lossless incast, the spine link carrying h11's flow is pulled;
///   BFD and BGP move the flow to the other spine; h31's flow loses nothing, h11's only
///   what was on the dead link: counted as `link_down`, or sent into the cut veth before
///   the switch saw its link fall (the veth's tx_dropped); no lossless drop elsewhere.
///
/// About 90 s on two loaded CPUs in the debug build.
#[test]
fn clos_2_4_4_bgp_ecmp_incast_and_failover_on_one_bring_up() {
    if !is_root() || !std::path::Path::new("/usr/lib/frr/bgpd").exists() {
        eprintln!("SKIP: needs root (namespaces, veths, EAL) and FRR (scripts/setup.sh)");
        return;
    }
    let all = fabric(&["clos-2-4-4", "all", "--duration", "20"]);
    let n = |v: &Value| v.as_u64().unwrap_or_else(|| panic!("not a count: {v} in {all}"));

    // ecmp. Routes: learned over BGP, mirrored from the kernel into each dataplane.
    let e = &all["ecmp"];
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
    // 64 flows on both spines and both pod-2 leaves, none split.
    assert_eq!(e["flows"], 64, "{e}");
    assert_eq!(e["flows_not_on_one_path"], 0, "{e}");
    assert_eq!(e["spines_used"], serde_json::json!(["s1", "s2"]), "{e}");
    assert_eq!(e["pod2_leaves_used"], serde_json::json!(["l3", "l4"]), "{e}");
    for link in ["l1>s1", "l1>s2", "l2>s1", "l2>s2"] {
        assert!(n(&e["links"][link]) > 0, "{link} carried nothing: {e}");
    }

    // incast with PFC: longer than the buffers can absorb, and nothing lost.
    let i = &all["incast"];
    assert!(n(&i["excess_bytes"]) > n(&i["buffer_bound_bytes"]), "the run must outlast the buffers: {i}");
    for flow in ["h11>h41", "h31>h41"] {
        let f = &i["lossless"][flow];
        assert!(n(&f["sent"]) > 2_000, "{flow} barely sent: {f}");
        assert_eq!(f["lost"], 0, "{flow} lost lossless datagrams: {f}");
        assert!(n(&f["pause_frames_rx"]) > 0, "{flow}: its sender was never paused: {f}");
        assert!(n(&f["pfc_stops"]) > 0, "{flow}: its sender never stopped: {f}");
    }
    // The senders were held back by at least the excess no buffer could hold.
    let held_back = i["offered_frames"].as_f64().unwrap() - i["sent_frames"].as_f64().unwrap();
    let must = (n(&i["excess_bytes"]) - n(&i["buffer_bound_bytes"])) as f64 / 1000.0;
    assert!(held_back >= must, "senders held back {held_back} frames, at least {must} expected: {i}");
    // incast without PFC: loss.
    let lost_off: u64 = ["h11>h41", "h31>h41"].iter().map(|f| n(&i["lossy"][*f]["lost"])).sum();
    assert!(lost_off > 0, "no loss without PFC: {i}");

    // failover: the flow moved, only what was on the dead link lost, as link_down.
    let f = &all["failover"];
    assert!(f["route_convergence_ms"].is_u64(), "the route never lost the dead path: {f}");
    assert_eq!(f["flows"]["h31>h41"]["lost"], 0, "h31's flow never crosses a spine: {f}");
    let h11 = &f["flows"]["h11>h41"];
    assert!(n(&f["h11_arrivals_after_pull"]) > 300, "h11's flow did not continue: {f}");
    assert!(n(&f["outage_ms"]) < 5_000, "h11's flow stopped for long: {f}");
    // What the switches held for the dead link (link_down), plus what they had sent into the
    // cut veth before their link poll saw it fall (the kernel's tx_dropped of its ends: the
    // frames on a pulled cable), plus those the af_packet PMD took but could not hand to
    // the downed veth (its `oerrors` on the two end ports).
    // Beyond those, what the leaf sent between the veth losing its carrier and the switch
    // reading that (≤ 8 ms) plus the kernel's linkwatch deactivating the queue (then a
    // noop qdisc drops without counting anywhere): at most 100 ms of the 5 Mbit/s link in
    // 1000-byte frames, 62 frames (seen: 3 to 27 uncounted).
    const UNCOUNTED_ON_THE_CABLE: u64 = 5_000_000 / 8 / 1000 / 10;
    let dead_link = n(&all["link_down"]) + n(&f["wire_dropped"]) + n(&f["tx_errors"]) + UNCOUNTED_ON_THE_CABLE;
    assert!(n(&h11["lost"]) <= dead_link, "h11 lost more than the dead link held ({dead_link}): {all}");
    // No lossless drop anywhere (the incasts, ecmp, the failover), except at the two ends of
    // the pulled link: once in eight runs, the spine whose veth end was set down counted 36
    // lossless drops as the link fell (docs/fabric.md, "Limits"); bounded here, not hidden.
    let ends = [f["pulled"]["spine"].as_str().unwrap(), f["pulled"]["leaf"].as_str().unwrap()];
    for (sw, r) in all["switches"].as_object().unwrap() {
        assert_eq!(r["conserved"], true, "{sw}: {r}");
        if ends.contains(&sw.as_str()) {
            assert!(n(&r["lossless_drops"]) <= 100, "{sw}, an end of the pulled link: {r}");
        } else {
            assert_eq!(r["lossless_drops"], 0, "{sw}: {r}");
        }
    }
}

/// clos-2-4-4 without BFD (`scripts/fabric.sh clos-2-4-4 link-pull --no-bfd`): a probe flow
/// h11 -> h41, a frame every 2.5 ms on otherwise idle links, and the pod-1 leaf -> spine
/// link carrying it pulled three times (put back in between, both paths back before the
/// next). The leaf's dataplane must leave the dead member within 50 ms (median of the
/// pulls): from the last probe frame the dead link delivered to the first the other spine
/// received from that leaf (kernel capture stamps at the receiving ends, one clock). It
/// reads its links' carrier every housekeeping pass and skips the dead ECMP member from
/// that burst on, before FRR (which learns of it from the representor going down)
/// withdraws anything. The longest gap in the flow at h41 around each pull is asserted
/// well under BGP's 3 s hold time only (on a loaded machine it also holds the scheduling
/// of the switches on the path), and reported. About 1-2 minutes on two loaded CPUs.
#[test]
fn clos_link_pull_without_bfd_moves_the_flow_off_the_dead_member_in_50_ms() {
    if !is_root() || !std::path::Path::new("/usr/lib/frr/bgpd").exists() {
        eprintln!("SKIP: needs root (namespaces, veths, EAL) and FRR (scripts/setup.sh)");
        return;
    }
    let all = fabric(&["clos-2-4-4", "link-pull", "--no-bfd", "--runs", "3"]);
    assert_eq!(all["bfd"], false, "{all}");
    let pulls = all["pulls"].as_array().unwrap_or_else(|| panic!("no pulls: {all}"));
    assert_eq!(pulls.len(), 3, "{all}");
    let ms = |r: &Value, k: &str| r[k].as_f64().unwrap_or_else(|| panic!("{k} missing in {r}"));
    for r in pulls {
        // Both paths come back once the link does (the next pull waits for it too).
        assert!(r["both_paths_back_s"].is_number(), "both paths never came back: {r}");
        assert!(ms(r, "outage_ms") < 1000.0, "h11's flow stopped for long at h41: {r}");
    }
    // Without BFD the kernel learns of it from the representor: the leaf's route loses the
    // dead path (bgpd drops the session on the interface going down) within the 2 s pull,
    // short of BGP's 3 s hold time; bgpd itself is slow on a loaded machine (0.1-1.3 s), so
    // once is required, not every time.
    assert!(
        pulls.iter().any(|r| r["route_ms"].is_number()),
        "the leaf's kernel route never lost the dead path within a pull: {all}"
    );
    let median = |k: &str| {
        let mut v: Vec<f64> = pulls.iter().map(|r| ms(r, k)).collect();
        v.sort_by(|a, b| a.total_cmp(b));
        (v[v.len() / 2], v)
    };
    let (moved, all_moved) = median("moved_ms");
    let (outage, all_outages) = median("outage_ms");
    eprintln!("link pulled without BFD: moved off the dead member {all_moved:?} ms, outage at h41 {all_outages:?} ms");
    assert!(
        moved <= 50.0,
        "the leaf moved h11's flow off the dead member {moved} ms after its last frame on it (median of \
         {all_moved:?}), more than 50 ms (outage at h41 {outage} ms): {all}"
    );
    for (sw, r) in all["switches"].as_object().unwrap() {
        assert_eq!(r["conserved"], true, "{sw}: {r}");
        assert_eq!(r["lossless_drops"], 0, "{sw}: {r}");
    }
}
