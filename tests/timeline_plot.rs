//! `run --timeline` records the buffer timeline during a real congestion (net_null at
//! full speed into a port shaped to 1 Gb/s, lossless TC), and `scripts/plot_timeline.py`
//! turns the CSV into a PNG.

mod common;
use common::*;

use std::process::Command;

#[test]
fn timeline_csv_is_recorded_and_plotted() {
    let d = TestDir::new("timeline");
    let cfg = format!(
        r#"[eal]
args = ["--no-huge", "-m", "512", "--no-pci", "--lcores=0@0,1@1"]
file_prefix = "{prefix}"
[[port]]
name = "Ethernet0"
devargs = "net_null0,size=1000"
speed = "100G"
mtu = 1500
default_tc = 3
[[port]]
name = "Ethernet4"
devargs = "net_null1,no-rx=1"
speed = "100G"
mtu = 1500
default_tc = 3
shaper_rate = "1G"
[buffer]
total_size = "1MiB"
"#,
        prefix = d.prefix()
    );
    let cfg_path = d.join("t.toml");
    std::fs::write(&cfg_path, cfg).unwrap();
    let csv = d.join("timeline.csv");
    let json = d.join("stats.json");
    let out = run_switch(&[
        "run", "--config", cfg_path.to_str().unwrap(), "--duration", "1", "--stats-json", json.to_str().unwrap(),
        "--timeline", csv.to_str().unwrap(), "--timeline-interval-us", "1000",
    ]);
    // net_null ignores PFC, so the lossless PG overflows: lossless drops are expected here
    // (the exit status is still success; conservation holds).
    assert!(out.status.success(), "{}", show(&out));
    assert_conserved(&read_json(&json));
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("t_us,port,pg,occupancy_bytes,shared_bytes,headroom_bytes,off,threshold_bytes,queue_depth_pkts,pfc_tx_frames"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(rows.len() > 200, "only {} samples", rows.len());
    // The congested PG went OFF and sent PFC frames at some point.
    assert!(rows.iter().any(|r| r[1] == "Ethernet0" && r[2] == "3" && r[6] == "1"), "PG 3 never OFF in the timeline");
    assert!(rows.iter().any(|r| r[9] != "0"), "no PFC frames in the timeline");

    let png = d.join("timeline.png");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/plot_timeline.py");
    let plot = Command::new("python3").arg(&script).arg(&csv).arg(&png).output().unwrap();
    assert!(plot.status.success(), "{}", show(&plot));
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.len() > 10_000 && bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG ({} bytes)", bytes.len());
}
