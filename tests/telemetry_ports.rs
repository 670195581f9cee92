//! A switch with more ports than one DPDK telemetry reply holds (16 KB in DPDK 22.11):
//! `show` asks port by port and lists every port; a whole-switch command answers with an
//! error object naming the port parameter instead of a truncated reply; a single port can
//! be asked by name.

mod common;
use common::*;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

const PORTS: usize = 16;

fn names() -> Vec<String> {
    (0..PORTS).map(|i| format!("Ethernet{}", 4 * i)).collect()
}

/// Replies of `dpdk-telemetry.py -f prefix` to `cmds`, in order.
fn dpdk_telemetry(prefix: &str, cmds: &[&str]) -> Vec<serde_json::Value> {
    let mut py = Command::new("dpdk-telemetry.py")
        .args(["-f", prefix])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dpdk-telemetry.py (Debian package dpdk)");
    let mut stdin = py.stdin.take().unwrap();
    for c in cmds {
        writeln!(stdin, "{c}").unwrap();
    }
    drop(stdin);
    let out = py.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let replies: Vec<serde_json::Value> = text
        .lines()
        .map(|l| l.trim_start_matches("--> "))
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .filter(|v: &serde_json::Value| v.get("version").is_none()) // the greeting
        .collect();
    assert_eq!(replies.len(), cmds.len(), "{text}");
    replies
}

#[test]
fn show_lists_every_port_of_a_big_switch() {
    let d = TestDir::new("tele16");
    let prefix = d.prefix();
    // No [lcores]: the default mapping (one worker for every port).
    let mut cfg = SwitchConfig::new(&prefix, "0@0,1@1")
        .toml("[switch]\nrx_ring_size = 64\ntx_ring_size = 64\n[buffer]\ntotal_size = \"2MiB\"");
    for (i, n) in names().iter().enumerate() {
        cfg = cfg.port(Port::new(n, &format!("net_null{i},no-rx=1")).speed("10G"));
    }
    let cfg_path = cfg.write(&d.join("t.toml"));
    let json = d.join("stats.json");
    let mut child = Command::new(BIN)
        .args([
            "run",
            "--config",
            cfg_path.to_str().unwrap(),
            "--duration",
            "30",
            "--stats-json",
            json.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("forwarding:") {
                let _ = tx.send(());
            }
        }
    });
    assert!(rx.recv_timeout(Duration::from_secs(30)).is_ok(), "switch did not start");

    let sh = |args: &[&str]| {
        let mut a = vec!["show", "--prefix", prefix.as_str()];
        a.extend_from_slice(args);
        let out = Command::new(BIN).args(&a).output().unwrap();
        assert!(out.status.success(), "show {args:?}: {}", show(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let ours: serde_json::Value = serde_json::from_str(&sh(&["--json", "pfc", "counters"])).unwrap();
    let listed: Vec<&String> = ours.as_object().unwrap().keys().collect();
    assert_eq!(listed.len(), PORTS, "{listed:?}");
    for n in names() {
        assert_eq!(ours[&n]["tx_pfc3"], 0, "{n}: {}", ours[&n]);
        assert!(ours[&n].get("rx_on2off3").is_some(), "{n}: no rx_on2off3");
    }
    let table = sh(&["pfc", "counters"]);
    for n in names() {
        assert_eq!(
            table.lines().filter(|l| l.trim_start().starts_with(&format!("{n} "))).count(),
            2,
            "{n} in the Rx and Tx tables:\n{table}"
        );
    }
    let cons: serde_json::Value = serde_json::from_str(&sh(&["--json", "conservation"])).unwrap();
    assert_eq!(cons.as_object().unwrap().len(), PORTS);
    assert_eq!(cons["Ethernet60"]["TC3_in_flight"], 0);
    assert!(sh(&["conservation"]).contains("In flight"));
    assert!(sh(&["pfcwd", "stats"]).contains("PFC watchdog is off"));

    // DPDK's own client: the whole reply would not fit, so it is an error naming the
    // parameter; one port by name; the port list.
    let r = dpdk_telemetry(
        &prefix,
        &[
            "/pfcswitch/pfc_counters",
            "/pfcswitch/pfc_counters,Ethernet60",
            "/pfcswitch/ports",
            "/pfcswitch/latency,nosuchport",
        ],
    );
    let err = r[0]["/pfcswitch/pfc_counters"]["error"].as_str().unwrap_or_else(|| panic!("no error object: {}", r[0]));
    assert!(err.contains("/pfcswitch/pfc_counters,<port>") && err.contains("16384"), "{err}");
    let one = r[1]["/pfcswitch/pfc_counters"].as_object().unwrap();
    assert_eq!(one.keys().collect::<Vec<_>>(), ["Ethernet60"]);
    assert_eq!(one["Ethernet60"], ours["Ethernet60"]);
    let listed: Vec<&str> =
        r[2]["/pfcswitch/ports"]["ports"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(listed, names());
    assert!(r[3]["/pfcswitch/latency"]["error"].as_str().unwrap().contains("unknown port"), "{}", r[3]);

    let _ = Command::new("kill").args(["-INT", &child.id().to_string()]).status();
    assert!(child.wait().unwrap().success());
    assert_conserved(&read_json(&json));
}
