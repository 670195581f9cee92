//! With a switch running on vdevs, `pfcswitch show pfc counters --json` and DPDK's own
//! `dpdk-telemetry.py` (`/pfcswitch/pfc_counters`) return the same numbers, and every
//! `show` table renders. The counters are made non-zero and then stable: the peer's PFC
//! frames arrive once (net_pcap), and the switch's own PAUSE has a 33 s refresh at 1 Mb/s.
//! A `clear` snapshot does not apply to a switch restarted under the same file prefix.

mod common;
use common::*;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

fn lossless_frame(i: u8) -> Vec<u8> {
    // 802.1Q PCP 3 (trust pcp): lossless TC 3; unknown unicast → flooded to the other port.
    let mut f = vec![0x02, 0, 0, 0, 0, 0xbb, 0x02, 0, 0, 0, 0, 0xaa, 0x81, 0x00, 0x60, 0x01, 0x88, 0xb5];
    f.resize(1000, i);
    f
}

#[test]
fn show_and_dpdk_telemetry_agree() {
    let d = TestDir::new("tele");
    let mut in0: Vec<Vec<u8>> = (0..60).map(|i| lossless_frame(i as u8)).collect();
    // The peer pauses our priority 4 twice and resumes priority 3 once.
    in0.push(pfc_frame(mac(0x99), 0x10, [0, 0, 0, 0, 0xffff, 0, 0, 0]));
    in0.push(pfc_frame(mac(0x99), 0x10, [0, 0, 0, 0, 0xffff, 0, 0, 0]));
    in0.push(pfc_frame(mac(0x99), 0x08, [0; 8]));
    write_pcap(&d.join("in0.pcap"), &in0);
    write_pcap(&d.join("in1.pcap"), &[]);
    let prefix = d.prefix();
    // PFC on 3 and 4 (also the default), TX of Ethernet4 off.
    let cfg_path = pcap_pair(&d, "1M")
        .edit_port("Ethernet0", |p| p.set("trust", "\"pcp\""))
        .edit_port("Ethernet4", |p| p.set("trust", "\"pcp\""))
        .toml("[buffer]\ntotal_size = \"200KiB\"")
        .write(&d.join("t.toml"));
    let json = d.join("stats.json");
    let mut child = start(&cfg_path, &json);

    let sh = |args: &[&str]| {
        let mut a = vec!["show", "--prefix", prefix.as_str()];
        a.extend_from_slice(args);
        let out = Command::new(BIN).args(&a).output().unwrap();
        assert!(out.status.success(), "show {args:?}: {}", common::show(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let ours: serde_json::Value = serde_json::from_str(&sh(&["--json", "pfc", "counters"])).unwrap();
    // DPDK's own client, reading the same command from the same socket.
    let mut py = Command::new("dpdk-telemetry.py")
        .args(["-f", &prefix])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dpdk-telemetry.py (Debian package dpdk-dev)");
    py.stdin.take().unwrap().write_all(b"/pfcswitch/pfc_counters\n").unwrap();
    let out = py.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .map(|l| l.trim_start_matches("--> "))
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON from dpdk-telemetry.py: {text}"));
    let theirs: serde_json::Value = serde_json::from_str(line).unwrap();
    assert_eq!(ours, theirs["/pfcswitch/pfc_counters"], "show --json and dpdk-telemetry.py disagree");
    let e0 = &ours["Ethernet0"];
    assert_eq!(e0["rx_pfc4"], 2, "{e0}");
    assert_eq!(e0["rx_pfc3"], 1);
    assert_eq!(e0["rx_resume3"], 1);
    assert_eq!(e0["tx_pfc3"], 1, "one PAUSE for the congested lossless PG, no refresh yet");

    // Every table renders with its SONiC header.
    let t = sh(&["pfc", "counters"]);
    assert!(t.contains("Port Rx") && t.contains("PFC7") && t.contains("Ethernet4"), "{t}");
    assert!(sh(&["queue", "counters"]).contains("Counter/pkts"));
    let wm = sh(&["priority-group", "watermark", "shared"]);
    assert!(wm.contains("Ingress shared pool occupancy per PG") && wm.contains("PG3"), "{wm}");
    assert!(sh(&["priority-group", "watermark", "headroom"]).contains("Ingress headroom per PG"));
    let bp = sh(&["buffer", "pool"]);
    assert!(bp.contains("ingress_lossless_pool") && bp.contains("Threshold"), "{bp}");
    assert!(sh(&["latency"]).contains("p99"));
    assert!(sh(&["counters"]).contains("RX_OK"));
    assert!(sh(&["pfcwd", "stats"]).contains("PFC watchdog is off"), "no [pfcwd]: say so, not an empty table");
    let cons: serde_json::Value = serde_json::from_str(&sh(&["--json", "conservation"])).unwrap();
    let c3 = &cons["Ethernet0"];
    assert_eq!(c3["TC3_rx"], 60, "{c3}");
    // Ethernet4 sends nothing: what the MMU did not refuse (the pcap peer ignores PAUSE
    // and overruns the headroom) is still buffered.
    assert!(c3["TC3_dropped"].as_u64().unwrap() < 60, "{c3}");
    assert_eq!(c3["TC3_dropped"], c3["drop_lossless_headroom_full"], "{c3}");
    assert_eq!(c3["TC3_in_flight"].as_u64().unwrap() + c3["TC3_dropped"].as_u64().unwrap(), 60, "{c3}");
    assert!(sh(&["conservation"]).contains("In flight"));
    let pgw: serde_json::Value =
        serde_json::from_str(&sh(&["--json", "priority-group", "watermark", "shared"])).unwrap();
    assert!(c3["drop_lossless_headroom_full"].as_u64().unwrap() > 0, "{c3}");
    assert_eq!(pgw["Ethernet0"]["PG3_lossless_drops"], c3["drop_lossless_headroom_full"], "{}", pgw["Ethernet0"]);
    // One port by name, through DPDK's own client.
    let one = dpdk_telemetry(&prefix, "/pfcswitch/pfc_counters,Ethernet4");
    assert_eq!(one["/pfcswitch/pfc_counters"], serde_json::json!({"Ethernet4": ours["Ethernet4"]}));

    // clear: show starts from zero, the live counters do not.
    let out = Command::new(BIN).args(["clear", "--prefix", &prefix, "pfc", "counters"]).output().unwrap();
    assert!(out.status.success(), "{}", show(&out));
    let after: serde_json::Value = serde_json::from_str(&sh(&["--json", "pfc", "counters"])).unwrap();
    assert_eq!(after["Ethernet0"]["rx_pfc4"], 0);
    let out = Command::new(BIN).args(["clear", "--prefix", &prefix, "queue", "counters"]).output().unwrap();
    assert!(out.status.success(), "{}", show(&out));
    let q: serde_json::Value = serde_json::from_str(&sh(&["--json", "queue", "counters"])).unwrap();
    assert!(q["Ethernet4"]["UC3_depth"].as_u64().unwrap() > 0, "a gauge is not cleared: {}", q["Ethernet4"]);
    // Queue 3 of Ethernet4 (TX off) holds every 1000-byte frame the MMU admitted: its
    // watermark is at least those bytes, and no other queue of it held any.
    let (depth, wm) =
        (q["Ethernet4"]["UC3_depth"].as_u64().unwrap(), q["Ethernet4"]["UC3_watermark"].as_u64().unwrap());
    assert!(wm >= 1000 * depth, "watermark {wm} B below {depth} queued frames: {}", q["Ethernet4"]);
    assert_eq!(q["Ethernet4"]["UC0_watermark"], 0, "{}", q["Ethernet4"]);
    let t = sh(&["queue", "watermark"]);
    assert!(
        t.contains("UC3") && t.lines().any(|l| l.trim_start().starts_with("Ethernet4") && l.contains(&wm.to_string())),
        "{t}"
    );
    // clear watermarks restarts the peak from what is held now (nothing leaves here, so
    // the same bytes), in the switch itself: the live reply changes, not a snapshot.
    let out = Command::new(BIN).args(["clear", "--prefix", &prefix, "watermarks"]).output().unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("Watermarks reset"),
        "{}",
        show(&out)
    );
    let q: serde_json::Value = serde_json::from_str(&sh(&["--json", "queue", "counters"])).unwrap();
    let again = q["Ethernet4"]["UC3_watermark"].as_u64().unwrap();
    assert!(
        again <= wm && again >= 1000 * q["Ethernet4"]["UC3_depth"].as_u64().unwrap(),
        "{again} after clear, {wm} before"
    );
    let out = Command::new(BIN).args(["clear", "--prefix", &prefix, "queue", "watermark"]).output().unwrap();
    assert!(out.status.success(), "SONiC's spelling: {}", show(&out));

    let _ = Command::new("kill").args(["-INT", &child.id().to_string()]).status();
    let status = child.wait().unwrap();
    assert!(status.success());
    let j = read_json(&json);
    assert_eq!(port(&j, "Ethernet0")["pfc"]["rx_pause"][4], 2, "live counters are not cleared");
    assert_conserved(&j);

    // Restarted under the same prefix: the counters start from zero again, and the old
    // instance's snapshot must not be subtracted from them.
    let mut child = start(&cfg_path, &json);
    let again: serde_json::Value = serde_json::from_str(&sh(&["--json", "pfc", "counters"])).unwrap();
    assert_eq!(
        again["Ethernet0"]["rx_pfc4"], 2,
        "the old snapshot was applied to a new instance: {}",
        again["Ethernet0"]
    );
    let _ = Command::new("kill").args(["-INT", &child.id().to_string()]).status();
    assert!(child.wait().unwrap().success());
}

/// Started as systemd would (`RUNTIME_DIRECTORY` set), the switch is found by `show` with
/// the same environment, and `clear` keeps its snapshot in the
/// instance's own runtime directory, private to the user.
#[test]
fn show_and_clear_under_runtime_directory() {
    use std::os::unix::fs::PermissionsExt;
    let d = TestDir::new("telert");
    write_pcap(&d.join("in0.pcap"), &(0..10).map(|i| lossless_frame(i as u8)).collect::<Vec<_>>());
    write_pcap(&d.join("in1.pcap"), &[]);
    let rt = d.join("rt");
    std::fs::create_dir_all(&rt).unwrap();
    let prefix = d.prefix();
    let cfg_path = pcap_pair(&d, "1M").write(&d.join("t.toml"));
    let json = d.join("stats.json");
    let mut child = start_in(&cfg_path, &json, Some(&rt));
    let run = |args: &[&str]| {
        let out = Command::new(BIN).args(args).env("RUNTIME_DIRECTORY", &rt).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", common::show(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let by_prefix: serde_json::Value =
        serde_json::from_str(&run(&["show", "--prefix", &prefix, "--json", "counters"])).unwrap();
    assert!(by_prefix.get("Ethernet0").is_some(), "{by_prefix}");
    let said = run(&["clear", "--prefix", &prefix, "pfc", "counters"]);
    let inst = rt.join("dpdk").join(&prefix);
    let snaps: Vec<_> = std::fs::read_dir(&inst)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("pfcswitch-clear"))
        .collect();
    assert_eq!(snaps.len(), 1, "{said}: {snaps:?}");
    assert_eq!(std::fs::metadata(&snaps[0]).unwrap().permissions().mode() & 0o777, 0o600);
    let _ = Command::new("kill").args(["-INT", &child.id().to_string()]).status();
    assert!(child.wait().unwrap().success());
}

/// Start the switch and wait until it forwards and has read its pcap input.
fn start(cfg: &std::path::Path, json: &std::path::Path) -> std::process::Child {
    start_in(cfg, json, None)
}

/// `start`, with EAL's runtime directory under `runtime_dir` when given.
fn start_in(
    cfg: &std::path::Path,
    json: &std::path::Path,
    runtime_dir: Option<&std::path::Path>,
) -> std::process::Child {
    let mut cmd = Command::new(BIN);
    if let Some(rt) = runtime_dir {
        cmd.env("RUNTIME_DIRECTORY", rt);
    }
    let mut child = cmd
        .args(["run", "--config", cfg.to_str().unwrap(), "--duration", "20", "--stats-json", json.to_str().unwrap()])
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
    std::thread::sleep(Duration::from_millis(1500));
    child
}

/// The reply of `dpdk-telemetry.py -f prefix` to one command.
fn dpdk_telemetry(prefix: &str, cmd: &str) -> serde_json::Value {
    let mut py = Command::new("dpdk-telemetry.py")
        .args(["-f", prefix])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dpdk-telemetry.py (Debian package dpdk)");
    writeln!(py.stdin.take().unwrap(), "{cmd}").unwrap();
    let out = py.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .map(|l| l.trim_start_matches("--> "))
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON from dpdk-telemetry.py: {text}"));
    serde_json::from_str(line).unwrap()
}
