//! `pfcswitch probe` on every shipped configuration, in every headroom mode: the switch,
//! running on net_pcap vdevs with a stalled egress, pauses, resumes and first drops at
//! exactly the packets `pfcswitch thresholds` computes, for every lossless (port, PG).

mod common;
use common::*;

/// Every configuration under dpdk-config/, fabric ones included.
fn shipped() -> Vec<String> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/dpdk-config");
    let mut v = Vec::new();
    for dir in [root.to_string(), format!("{root}/fabric")] {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "toml") {
                v.push(p.display().to_string());
            }
        }
    }
    v.sort();
    assert!(v.len() >= 10, "{v:?}");
    v
}

/// Lossless (port, PG) rows of `thresholds` for `cfg`.
fn lossless_rows(cfg: &str) -> usize {
    let out = run_switch(&["thresholds", "--config", cfg, "--json"]);
    assert!(out.status.success(), "{}", show(&out));
    serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap().as_array().unwrap().len()
}

fn probe_all(mode: &str) {
    let mut failed = Vec::new();
    for cfg in shipped() {
        let out = run_switch(&["probe", "--config", &cfg, "--headroom-policy", mode]);
        let text = String::from_utf8_lossy(&out.stdout);
        let ok_rows = text.lines().filter(|l| l.ends_with("  ok")).count();
        eprintln!("{cfg} ({mode}): {ok_rows} rows ok");
        if !out.status.success() || ok_rows != lossless_rows(&cfg) || !text.contains(&format!("(headroom: {mode})")) {
            failed.push(format!("{cfg}:\n{}", show(&out)));
        }
    }
    assert!(failed.is_empty(), "probe failed:\n{}", failed.join("\n"));
}

#[test]
fn probe_static() {
    probe_all("static");
}

#[test]
fn probe_shared_pool() {
    probe_all("shared_pool");
}

#[test]
fn probe_dsh() {
    probe_all("dsh");
}

/// What `probe` refuses: a file that is not a valid configuration (one line, exit 2), a
/// mode that does not exist.
#[test]
fn probe_refuses_bad_input() {
    let d = TestDir::new("probe_bad");
    let bad = d.join("bad.toml");
    std::fs::write(&bad, "[[port]]\nname = \"a\"\n").unwrap();
    let out = run_switch(&["probe", "--config", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert_eq!(String::from_utf8_lossy(&out.stderr).trim().lines().count(), 1, "{}", show(&out));
    let cfg = concat!(env!("CARGO_MANIFEST_DIR"), "/dpdk-config/pcap.toml");
    let out = run_switch(&["probe", "--config", cfg, "--headroom-policy", "dynamic"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not one of"), "{}", show(&out));
}
