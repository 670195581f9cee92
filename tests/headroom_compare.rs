//! `scripts/headroom_compare.py` end to end on one point (N = 2, dsh, α = 1): the model
//! (examples/headroom_compare.rs) runs, its burst figure holds on a running switch (b
//! frames per sender: no PAUSE; b + 1: PAUSE), and the incast workload loses nothing.

mod common;
use common::*;

use std::process::Command;

#[test]
fn one_point_of_the_comparison_holds_on_a_running_switch() {
    let root = env!("CARGO_MANIFEST_DIR");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let st = Command::new(cargo).args(["build", "--example", "headroom_compare"]).current_dir(root).status().unwrap();
    assert!(st.success());
    let model = std::path::Path::new(BIN).parent().unwrap().join("examples/headroom_compare");
    let d = TestDir::new("hrc");
    let out = Command::new("python3")
        .args([&format!("{root}/scripts/headroom_compare.py"), "--bin", BIN, "--model"])
        .arg(&model)
        .args(["--out", d.path.to_str().unwrap(), "--senders", "2", "--modes", "dsh", "--dynamic-th", "0"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    let rows: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("headroom-compare.json")).unwrap()).unwrap();
    let r = &rows[0];
    assert_eq!((r["policy"].as_str(), r["senders"].as_u64()), (Some("dsh"), Some(2)), "{r}");
    assert_eq!(r["switch_check"], true, "{r}");
    assert_eq!(r["lossless_drops"], 0, "{r}");
    assert!(r["burst_stalled_frames"].as_u64().unwrap() > 100, "{r}");
}
