//! A live change whose answer comes after the telemetry thread stopped waiting
//! (docs/live-config.md, "A late answer"): the change is in force, so the running text must
//! get it, and the next change must be made to a text holding it (before, the text never
//! got it and the next change silently reverted it). The test knobs make every answer late:
//! the telemetry thread waits 2 s, the control lcore installs at once and answers after 6 s.

mod common;
use common::*;

use std::process::Command;
use std::time::Duration;

/// Ethernet0's and Ethernet4's cable lengths in a saved running configuration.
fn saved_lengths(prefix: &str, file: &std::path::Path) -> Option<(f64, f64)> {
    let o = Command::new(BIN).args(["config", "--prefix", prefix, "save", file.to_str().unwrap()]).output().unwrap();
    if !o.status.success() {
        return None;
    }
    let text = std::fs::read_to_string(file).unwrap();
    let c = pfcswitch::config::from_str(&text, "saved.toml").unwrap_or_else(|e| panic!("{e}"));
    Some((c.ports[0].cable_length_m, c.ports[1].cable_length_m))
}

#[test]
fn a_late_answer_leaves_the_change_in_the_running_text() {
    let d = TestDir::new("live-late");
    let port = |name: &str, dev: &str| Port::new(name, dev).speed("10G").set("cable_length", "\"5m\"").pfc_enable(&[3]);
    let cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1")
        .toml("[switch]\nmbuf_count = 16383")
        .port(port("Ethernet0", "net_null0"))
        .port(port("Ethernet4", "net_null1"))
        .toml(&computed_headroom_buffer(&["Ethernet0", "Ethernet4"]))
        .one_worker()
        .write(&d.join("sw.toml"));
    // Read by the switch only (this test file has one test).
    std::env::set_var("PFCSW_TEST_ANSWER_WAIT_MS", "2000");
    std::env::set_var("PFCSW_TEST_REPLY_DELAY_MS", "6000");
    let mut sw = RunningSwitch::spawn(&cfg, &d.join("stats.json"), &[]);
    sw.wait_forwarding(Duration::from_secs(120));
    let prefix = d.prefix();
    let config = |args: &[&str]| Command::new(BIN).args(["config", "--prefix", &prefix]).args(args).output().unwrap();
    let saved = d.join("saved.toml");
    for (k, port) in ["Ethernet0", "Ethernet4"].iter().enumerate() {
        let o = config(&["interface", "cable-length", port, "40m"]);
        assert!(!o.status.success() && text(&o).contains("did not answer in time"), "{}", show(&o));
        // In force once the control lcore took it: the running text has it once the answer
        // comes; meanwhile a read (or a change) is refused, never made without it.
        let lengths = until(Duration::from_secs(60), || {
            saved_lengths(&prefix, &saved).is_some_and(|l| if k == 0 { l == (40.0, 5.0) } else { l == (40.0, 40.0) })
        });
        assert!(lengths.is_some(), "change {} not in the running text: {:?}", k + 1, saved_lengths(&prefix, &saved));
    }
    let log = sw.stop();
    assert_eq!(log.matches("cable_length = 40m: applied").count(), 2, "both changes installed once each: {log}");
}
