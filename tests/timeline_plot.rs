//! `run --timeline` records the buffer timeline during a real congestion (net_null at
//! full speed into a port shaped to 1 Gb/s, lossless TC), and `scripts/plot_timeline.py`
//! turns the CSV into a PNG. The stats JSON's latency covers exactly the packets sent.

mod common;
use common::*;

use std::process::Command;

#[test]
fn timeline_csv_is_recorded_and_plotted() {
    let d = TestDir::new("timeline");
    let cfg_path = SwitchConfig::new(&d.prefix(), "0@0,1@1")
        .port(Port::new("Ethernet0", "net_null0,size=1000").set("default_tc", "3"))
        .port(Port::new("Ethernet4", "net_null1,no-rx=1").set("default_tc", "3").set("shaper_rate", "\"1G\""))
        .toml("[buffer]\ntotal_size = \"1MiB\"")
        .write(&d.join("t.toml"));
    let csv = d.join("timeline.csv");
    let json = d.join("stats.json");
    let out = run_switch(&[
        "run",
        "--config",
        cfg_path.to_str().unwrap(),
        "--duration",
        "1",
        "--stats-json",
        json.to_str().unwrap(),
        "--timeline",
        csv.to_str().unwrap(),
        "--timeline-interval-us",
        "1000",
    ]);
    // net_null ignores PFC, so the lossless PG overflows: lossless drops are expected here
    // (the exit status is still success; conservation holds).
    assert!(out.status.success(), "{}", show(&out));
    let j = read_json(&json);
    assert_conserved(&j);
    assert_latency_covers_tx(&j);
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("t_us,port,series,index,occupancy_bytes,shared_bytes,headroom_bytes,off,threshold_bytes,pfc_tx_frames,depth_pkts"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(rows.iter().all(|r| r.len() == 11), "ragged rows");
    let pg: Vec<&Vec<&str>> = rows.iter().filter(|r| r[2] == "pg").collect();
    assert!(pg.len() > 200, "only {} PG samples", pg.len());
    // The congested PG went OFF and sent PFC frames at some point.
    assert!(pg.iter().any(|r| r[1] == "Ethernet0" && r[3] == "3" && r[7] == "1"), "PG 3 never OFF in the timeline");
    assert!(pg.iter().any(|r| r[9] != "0"), "no PFC frames in the timeline");
    // The queue that builds is the shaped egress port's queue 3, not Ethernet0's.
    let q3: Vec<u64> = rows
        .iter()
        .filter(|r| r[2] == "queue" && r[1] == "Ethernet4" && r[3] == "3")
        .map(|r| r[10].parse().unwrap())
        .collect();
    assert!(q3.iter().any(|&d| d > 10), "Ethernet4 queue 3 never built up: {:?}", &q3[..q3.len().min(20)]);

    let png = d.join("timeline.png");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/plot_timeline.py");
    let plot = Command::new("python3").arg(&script).arg(&csv).arg(&png).output().unwrap();
    assert!(plot.status.success(), "{}", show(&plot));
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.len() > 10_000 && bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG ({} bytes)", bytes.len());
}

/// Per egress port and TC: the histogram counted every packet sent (identity TC → queue
/// here, so the queue's tx_packets), and its percentiles are ordered.
fn assert_latency_covers_tx(j: &serde_json::Value) {
    let lat = j["latency"].as_object().expect("latency in the stats JSON");
    let mut seen = 0;
    for p in j["ports"].as_array().unwrap() {
        let name = p["name"].as_str().unwrap();
        for q in p["queues"].as_array().unwrap() {
            let (tc, tx) = (q["queue"].as_u64().unwrap(), q["tx_packets"].as_u64().unwrap());
            let l = &lat[name][tc.to_string()];
            if tx == 0 {
                assert!(l.is_null(), "{name} TC{tc}: latency without packets: {l}");
                continue;
            }
            seen += 1;
            assert_eq!(l["count"].as_u64(), Some(tx), "{name} TC{tc}: latency count vs tx packets");
            let v = |k: &str| l[k].as_u64().unwrap_or_else(|| panic!("{name} TC{tc}: no {k}: {l}"));
            assert!(
                v("p50_ns") > 0
                    && v("p50_ns") <= v("p99_ns")
                    && v("p99_ns") <= v("p999_ns")
                    && v("p999_ns") <= v("max_ns"),
                "{name} TC{tc}: {l}"
            );
        }
    }
    assert!(seen > 0, "no traffic: {}", j["latency"]);
}
