//! `pfcswitch headroom --mtu M` and a running switch agree: for ports of MTU 1500, 4096
//! and 9100 (and other speeds, cables, one with a TX in-flight limit), the headroom the
//! command computes is the `xoff` the switch (real EAL, net_null ports, a buffer whose
//! lossless profile gives no `xoff`) holds for the port's lossless PG, read over telemetry
//! (`/pfcswitch/pg_watermark` `PG3_xoff`) and in its stats JSON. Both derive the frame from
//! the MTU in one place (`headroom::max_frame`); before, the command took the MTU for the
//! frame and computed 2 × 22 bytes less than the switch.

mod common;
use common::*;

use std::process::Command;
use std::time::Duration;

use pfcswitch::dpdk::telemetry::{socket_path, Client};

/// One port of the test: name, speed, cable, MTU, and the `tx_inflight_limit` (bytes) if set.
struct Case {
    port: &'static str,
    speed: &'static str,
    cable: &'static str,
    mtu: u32,
    tx_inflight: Option<u64>,
}

const CASES: [Case; 4] = [
    Case { port: "Ethernet0", speed: "100G", cable: "5m", mtu: 1500, tx_inflight: None },
    Case { port: "Ethernet4", speed: "100G", cable: "300m", mtu: 9100, tx_inflight: None },
    Case { port: "Ethernet8", speed: "25G", cable: "40m", mtu: 4096, tx_inflight: None },
    Case { port: "Ethernet12", speed: "10G", cable: "2m", mtu: 9100, tx_inflight: Some(65_536) },
];

/// `pfcswitch headroom --json` for one case: (headroom bytes, max frame).
fn cli_headroom(c: &Case) -> (u64, u64) {
    let mut args = vec![
        "headroom".to_string(),
        "--speed".into(),
        c.speed.into(),
        "--cable".into(),
        c.cable.into(),
        "--mtu".into(),
        c.mtu.to_string(),
        "--json".into(),
    ];
    if let Some(t) = c.tx_inflight {
        args.extend(["--tx-inflight".into(), t.to_string()]);
    }
    let out = Command::new(BIN).args(&args).output().unwrap();
    assert!(out.status.success(), "pfcswitch {args:?}: {}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    (v["headroom_bytes"].as_u64().unwrap(), v["max_frame"].as_u64().unwrap())
}

#[test]
fn headroom_command_agrees_with_the_running_switch_for_each_mtu() {
    let d = TestDir::new("hrcli");
    let names: Vec<&str> = CASES.iter().map(|c| c.port).collect();
    let mut cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1")
        .toml("[switch]\nrx_ring_size = 64\ntx_ring_size = 64\nmbuf_count = 2048")
        .toml(&computed_headroom_buffer(&names));
    for (i, c) in CASES.iter().enumerate() {
        let mut p = Port::new(c.port, &format!("net_null{i},no-rx=1"))
            .speed(c.speed)
            .mtu(c.mtu)
            .pfc_enable(&[3])
            .set("cable_length", &format!("\"{}\"", c.cable));
        if let Some(t) = c.tx_inflight {
            p = p.set("tx_inflight_limit", &t.to_string());
        }
        cfg = cfg.port(p);
    }
    let cfg = cfg.one_worker().write(&d.join("t.toml"));
    let json = d.join("stats.json");
    let mut sw = RunningSwitch::spawn(&cfg, &json, &[]);
    sw.wait_forwarding(Duration::from_secs(60));
    let mut tel = Client::connect(&socket_path(&d.prefix())).expect("telemetry socket");
    let live: Vec<u64> = CASES
        .iter()
        .map(|c| {
            let v = tel.query(&format!("/pfcswitch/pg_watermark,{}", c.port)).expect("telemetry");
            n(&v[c.port], "PG3_xoff")
        })
        .collect();
    let lossy_pg0 = {
        let v = tel.query("/pfcswitch/pg_watermark,Ethernet0").expect("telemetry");
        n(&v["Ethernet0"], "PG0_xoff")
    };
    let log = sw.stop();
    let st = read_json(&json);
    assert_eq!(lossy_pg0, 0, "a lossy PG has no headroom");
    for (c, live) in CASES.iter().zip(live) {
        let (cli, frame) = cli_headroom(c);
        eprintln!(
            "{} {} {} MTU {}: headroom --mtu {cli} B (frame {frame}), switch PG 3 xoff {live} B",
            c.port, c.speed, c.cable, c.mtu
        );
        assert_eq!(frame, u64::from(c.mtu) + 22, "headroom --mtu {} took a frame of {frame} B", c.mtu);
        assert_eq!(cli, live, "{}: headroom --mtu {} says {cli} B, the switch holds {live} B\n{log}", c.port, c.mtu);
        let pgs = port(&st, c.port)["pg_watermark"].as_array().unwrap().clone();
        let pg3 = pgs.iter().find(|g| g["pg"] == 3).unwrap_or_else(|| panic!("no PG 3 in {pgs:?}"));
        assert_eq!(pg3["headroom_size"].as_u64(), Some(cli), "{}: stats JSON {pg3}", c.port);
    }
    assert_conserved(&st);
}
