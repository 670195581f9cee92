//! Unit tests of the views: parsing, fetching, clearing, rendering.

use super::routing::render_routing;
use super::*;
use serde_json::{json, Map, Value};

#[test]
fn mac_table_and_fdb_clear() {
    let v = json!({ "entries": ["20|02:00:00:00:00:4d|Ethernet12", "3|02:00:00:00:00:4d|Ethernet4"], "total": 2 });
    let t = render(View::Mac, &v);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines[0].split_whitespace().collect::<Vec<_>>(), ["No.", "Vlan", "MacAddress", "Port", "Type"]);
    assert_eq!(
        lines[3].split_whitespace().collect::<Vec<_>>(),
        ["2", "20", "02:00:00:00:00:4D", "Ethernet12", "Dynamic"]
    );
    assert_eq!(
        lines[2].split_whitespace().collect::<Vec<_>>(),
        ["1", "3", "02:00:00:00:00:4D", "Ethernet4", "Dynamic"]
    );
    assert_eq!(lines[4], "Total number of entries 2");
    assert_eq!(lines.len(), 5, "no flapping note");
    // A MAC held on its port for moving too often is flagged.
    let v = json!({ "entries": ["0|02:00:00:00:00:07|Ethernet0|flapping"], "total": 1 });
    let t = render(View::Mac, &v);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(
        lines[2].split_whitespace().collect::<Vec<_>>(),
        ["1", "0", "02:00:00:00:00:07", "Ethernet0", "Dynamic*"]
    );
    assert!(lines[4].starts_with("* flapping (1): "), "{t}");
    let more = json!({ "entries": ["0|02:00:00:00:00:01|Ethernet0"], "total": 300 });
    assert!(render(View::Mac, &more).contains("(the first 1 shown)\nTotal number of entries 300"));
    assert_eq!(View::parse(&["mac".to_string()]).unwrap(), View::Mac);
    assert!(!View::Mac.per_port() && !View::Mac.clearable());
    let w = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
    assert_eq!(fdb_clear_command(&w("fdb all")), Some(Ok("/pfcswitch/fdb_clear,all".into())));
    assert_eq!(fdb_clear_command(&w("fdb vlan Vlan1000")), Some(Ok("/pfcswitch/fdb_clear,Vlan1000".into())));
    assert!(matches!(fdb_clear_command(&w("fdb")), Some(Err(_))));
    assert_eq!(fdb_clear_command(&w("pfc counters")), None);
}

#[test]
fn pfc_table_has_sonic_shape() {
    let mut o = Map::new();
    for i in 0..8 {
        o.insert(format!("rx_pfc{i}"), (i as u64).into());
        o.insert(format!("tx_pfc{i}"), (10 * i as u64).into());
    }
    let v = json!({"Ethernet4": o.clone(), "Ethernet0": o});
    let t = render(View::PfcCounters, &v);
    let lines: Vec<_> = t.lines().collect();
    assert!(lines[0].contains("Port Rx") && lines[0].contains("PFC0") && lines[0].contains("PFC7"), "{t}");
    assert!(lines[2].trim_start().starts_with("Ethernet0"), "{t}");
    assert!(lines[3].trim_start().starts_with("Ethernet4"), "{t}");
    assert!(t.contains("Port Tx"));
    assert!(lines[2].ends_with(" 7"));
}

/// `show queue watermark` draws each queue's peak from the queue counters' reply;
/// `clear watermarks` (and SONiC's spellings) asks the switch to restart them.
#[test]
fn queue_watermark_view_and_clear() {
    let w = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
    let view = View::parse(&w("queue watermark")).unwrap();
    assert_eq!((view, view.command(), view.clearable()), (View::QueueWatermark, "/pfcswitch/queue_counters", false));
    let mut o = Map::new();
    for q in 0..8u64 {
        o.insert(format!("UC{q}_watermark"), (1000 * q).into());
        o.insert(format!("UC{q}_depth"), 1.into());
    }
    let t = render(View::QueueWatermark, &json!({ "Ethernet8": o }));
    let lines: Vec<_> = t.lines().collect();
    assert!(lines[0].contains("watermark") && lines[1].contains("UC0") && lines[1].contains("UC7"), "{t}");
    assert!(lines[3].starts_with("Ethernet8") && lines[3].trim_end().ends_with("7000"), "{t}");
    for words in ["watermarks", "queue watermark", "queue watermark unicast", "priority-group watermark shared"] {
        assert_eq!(watermark_clear_command(&w(words)), Some("/pfcswitch/watermark_clear"), "{words}");
    }
    assert_eq!(watermark_clear_command(&w("queue counters")), None);
}

#[test]
fn headroom_pool_view_is_sonics_command() {
    let w: Vec<String> = ["headroom-pool", "watermark"].iter().map(|s| s.to_string()).collect();
    let view = View::parse(&w).unwrap();
    assert_eq!((view, view.command(), view.per_port()), (View::HeadroomPool, "/pfcswitch/buffer_pool", false));
    let v = json!({
        "ingress_lossless_pool": {"xoff": 20000, "headroom_used": 3000, "headroom_watermark": 10000},
        "egress_lossy_pool": {"size": 80000}
    });
    let t = render(View::HeadroomPool, &v);
    let lines: Vec<_> = t.lines().collect();
    assert!(lines[0].contains("Headroom pool (xoff)") && lines[0].contains("Headroom watermark"), "{t}");
    assert_eq!(lines.len(), 3, "only the pool with headroom: {t}");
    assert!(lines[2].contains("ingress_lossless_pool") && lines[2].ends_with("10000"), "{t}");
}

#[test]
fn clear_subtracts_counters() {
    let cur = json!({"Ethernet0": {"rx_pfc3": 10, "tx_pfc3": 4}});
    let snap = json!({"Ethernet0": {"rx_pfc3": 7, "tx_pfc3": 4}});
    assert_eq!(subtract(&cur, &snap), json!({"Ethernet0": {"rx_pfc3": 3, "tx_pfc3": 0}}));
}

#[test]
fn clear_keeps_gauges() {
    let cur = json!({"Ethernet0": {"UC3_packets": 10, "UC3_depth": 4, "PG3_occupancy": 900, "PG3_shared_watermark": 800, "PG3_off": 1}});
    let snap = json!({"Ethernet0": {"UC3_packets": 7, "UC3_depth": 3, "PG3_occupancy": 100, "PG3_shared_watermark": 500, "PG3_off": 1}});
    assert_eq!(
        subtract(&cur, &snap),
        json!({"Ethernet0": {"UC3_packets": 3, "UC3_depth": 4, "PG3_occupancy": 900, "PG3_shared_watermark": 800, "PG3_off": 1}})
    );
}

#[test]
fn snapshot_of_another_instance_is_ignored() {
    let a = Instance { pid: 42, start_time_ns: 1 };
    let restarted = Instance { pid: 42, start_time_ns: 2 };
    let snap = Snapshot { instance: a, data: json!({"Ethernet0": {"rx_pfc3": 7}}) };
    let cur = json!({"Ethernet0": {"rx_pfc3": 10}});
    assert_eq!(since_clear(View::PfcCounters, cur.clone(), Some(&snap), &a), json!({"Ethernet0": {"rx_pfc3": 3}}));
    assert_eq!(since_clear(View::PfcCounters, cur.clone(), Some(&snap), &restarted), cur, "same pid, restarted");
    assert_eq!(since_clear(View::PfcCounters, cur.clone(), Some(&snap), &Instance { pid: 43, start_time_ns: 1 }), cur);
    // Round trip through the file, and a file in the old format (bare data) is no snapshot.
    let dir = std::env::temp_dir().join(format!("pfcsw-show-unit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = snapshot_path(&dir, View::PfcCounters);
    write_snapshot(&p, &snap).unwrap();
    assert_eq!(read_snapshot(&p), Some(snap));
    std::fs::write(&p, json!({"Ethernet0": {"rx_pfc3": 7}}).to_string()).unwrap();
    assert_eq!(read_snapshot(&p), None);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn snapshot_file_is_private_and_symlinks_are_not_followed() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = std::env::temp_dir().join(format!("pfcsw-show-priv-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let snap = Snapshot { instance: Instance { pid: 1, start_time_ns: 1 }, data: json!({"a": 1}) };
    // A link planted where the snapshot goes: replaced, its target untouched.
    let victim = dir.join("victim");
    std::fs::write(&victim, "keep").unwrap();
    let p = snapshot_path(&dir, View::PfcCounters);
    std::os::unix::fs::symlink(&victim, &p).unwrap();
    assert_eq!(read_snapshot(&p), None, "a symlink is not read");
    write_snapshot(&p, &snap).unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    let meta = std::fs::symlink_metadata(&p).unwrap();
    assert!(meta.file_type().is_file(), "the link was replaced by a file");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(read_snapshot(&p), Some(snap.clone()));
    // A snapshot owned by another user is ignored (root can test this by chown).
    if std::fs::metadata("/proc/self").unwrap().uid() == 0 {
        std::os::unix::fs::chown(&p, Some(65534), None).unwrap();
        assert_eq!(read_snapshot(&p), None, "another user's snapshot");
    }
    // No temporary file left behind.
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left.len(), 2, "{left:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A fake switch: per-port replies only, the whole reply refused like a big switch's.
fn fake(cmd: &str) -> Result<Value, String> {
    let names: Vec<String> = (0..16).map(|i| format!("Ethernet{}", 4 * i)).collect();
    match cmd.split_once(',') {
        None if cmd == commands::PORTS.name => Ok(json!({"ports": names, "start_time_ns": 5})),
        None if cmd == "/pfcswitch/buffer_pool" => Ok(json!({"ingress_lossless_pool": {"size": 1}})),
        None => Ok(json!({"error": "too large: ask one port at a time"})),
        Some((c, p)) if c == "/pfcswitch/pfc_counters" && names.iter().any(|n| n == p) => {
            Ok(json!({ p: {"rx_pfc3": 1} }))
        }
        Some(_) => Ok(json!({"error": "unknown port"})),
    }
}

#[test]
fn fetch_merges_one_port_at_a_time() {
    let r = fetch(View::PfcCounters, &mut fake).unwrap();
    assert_eq!(r.start_time_ns, 5);
    assert_eq!(r.value.as_object().unwrap().len(), 16);
    assert_eq!(r.value["Ethernet60"]["rx_pfc3"], 1);
    let t = render(View::PfcCounters, &r.value);
    assert!(t.contains("Ethernet0 ") && t.contains("Ethernet60 "), "{t}");
    assert!(fetch(View::BufferPool, &mut fake).unwrap().value["ingress_lossless_pool"].is_object());
    // An error object from the switch is an error, not an empty table.
    match fetch(View::QueueCounters, &mut fake) {
        Err(ShowError::Switch { cmd, msg }) => {
            assert!(cmd.starts_with("/pfcswitch/queue_counters,") && msg.contains("unknown"), "{cmd} {msg}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn pfcwd_off_says_so() {
    let v = json!({"Ethernet0": {"watchdog": "off"}, "Ethernet4": {"watchdog": "off"}});
    assert!(render(View::PfcwdStats, &v).contains("PFC watchdog is off"));
    let on = json!({"Ethernet0": {"watchdog": "on", "prio3_status": "operational", "prio3_storms_detected": 0}});
    assert!(render(View::PfcwdStats, &on).contains("Ethernet0:3"));
}

#[test]
fn conservation_table() {
    let v = json!({"Ethernet0": {"TC3_rx": 10, "TC3_flood_copies": 2, "TC3_tx": 8, "TC3_dropped": 1, "TC3_in_flight": 3, "drop_lossy_threshold": 1, "drop_runt": 0}});
    let t = render(View::Conservation, &v);
    assert!(t.contains("In flight") && t.contains(" ok"), "{t}");
    assert!(t.contains("lossy_threshold") && !t.contains("runt"), "{t}");
}

#[test]
fn unflatten_nests_and_makes_arrays() {
    let flat = json!({"lldp": "on", "local/pfc/enable": "3,4", "local/ets_config/tc_bw/0": 14,
                      "local/ets_config/tc_bw/1": 86, "local/app/0/protocol": 4791, "pfc_mismatch": 1});
    assert_eq!(
        unflatten(&flat),
        json!({"lldp": "on", "local": {"pfc": {"enable": "3,4"}, "ets_config": {"tc_bw": [14, 86]},
               "app": [{"protocol": 4791}]}, "pfc_mismatch": 1})
    );
}

#[test]
fn routing_health_table() {
    let t = render_routing(&json!({"alive": 1, "synced": false, "resyncs": 3, "routes_refused": 2,
        "fib_out_of_sync": true, "last_resync": "overrun (ENOBUFS): events lost", "last_batch_age_ms": null,
        "rib": {"events": 10, "errors": 2}}));
    for (k, v) in [
        ("Thread alive", "yes"),
        ("Synced with the kernel", "no"),
        ("FIB out of sync", "yes"),
        ("Resyncs", "3"),
        ("Last resync", "overrun (ENOBUFS): events lost"),
        ("Last batch age (ms)", "-"),
        ("Events", "10"),
    ] {
        assert!(t.lines().any(|l| l.starts_with(k) && l.trim_end().ends_with(v)), "{k} {v} in\n{t}");
    }
}

#[test]
fn parse_views() {
    let w = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
    assert_eq!(View::parse(&w("pfc counters")).unwrap(), View::PfcCounters);
    assert_eq!(View::parse(&w("priority-group watermark headroom")).unwrap(), View::PgWatermarkHeadroom);
    assert_eq!(View::parse(&w("conservation")).unwrap(), View::Conservation);
    assert!(View::parse(&w("bogus")).is_err());
}

/// [`View::def`] indexes [`VIEWS`] by the variant; no two views share a spelling.
#[test]
fn views_table_in_enum_order() {
    for (i, d) in VIEWS.iter().enumerate() {
        assert_eq!(d.view as usize, i, "{:?}", d.view);
        for w in d.words {
            let words: Vec<String> = w.iter().map(|s| s.to_string()).collect();
            assert_eq!(View::parse(&words), Ok(d.view), "{w:?}");
        }
    }
}

/// The commands and the list of views are the ones `show` printed before the table.
#[test]
fn commands_and_usage_unchanged() {
    let w = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
    for (words, cmd) in [
        ("pfc counters", "/pfcswitch/pfc_counters"),
        ("queue wredcounters", "/pfcswitch/queue_counters"),
        ("priority-group watermark headroom", "/pfcswitch/pg_watermark"),
        ("buffer_pool", "/pfcswitch/buffer_pool"),
        ("pfcwd stats", "/pfcswitch/pfcwd"),
        ("interfaces counters", "/pfcswitch/port_counters"),
        ("conservation", "/pfcswitch/conservation"),
        ("mac address-table", "/pfcswitch/mac"),
        ("lldp table", "/pfcswitch/lldp"),
        ("ipv6 route", "/pfcswitch/routes"),
        ("ndp", "/pfcswitch/neighbours"),
        ("routing", "/pfcswitch/routing"),
    ] {
        assert_eq!(View::parse(&w(words)).unwrap().command(), cmd, "{words}");
    }
    assert_eq!(
        View::parse(&w("bogus view")).unwrap_err(),
        "unknown view 'bogus view': expected one of: pfc counters | queue counters | queue wredcounters | queue watermark | priority-group watermark shared|headroom | buffer pool | pfcwd stats | latency | counters | conservation | headroom-pool watermark | ip route | ipv6 route | arp | ndp | mac | lldp neighbors | dcbx"
    );
    let clearable: Vec<View> = VIEWS.iter().map(|d| d.view).filter(|v| v.clearable()).collect();
    assert_eq!(
        clearable,
        [View::PfcCounters, View::QueueCounters, View::QueueWredCounters, View::PfcwdStats, View::PortCounters]
    );
}

/// A router table is read page by page with its family, and drawn from its rows.
#[test]
fn router_tables_page_and_render() {
    let rows: Vec<String> = (0..5).map(|i| format!("10.0.{i}.1|02:00:00:00:00:0{i}|Ethernet0")).collect();
    let mut asked = Vec::new();
    let got = fetch_rows(View::Arp, &mut |cmd: &str| -> Result<Value, String> {
        asked.push(cmd.to_string());
        let off: usize = cmd.rsplit(',').next().unwrap().parse().unwrap();
        Ok(json!({"total": 5, "offset": off, "rows": rows[off..(off + 2).min(5)]}))
    })
    .unwrap();
    assert_eq!(got, rows);
    assert_eq!(asked, ["/pfcswitch/neighbours,v4,0", "/pfcswitch/neighbours,v4,2", "/pfcswitch/neighbours,v4,4"]);
    let t = render(View::Arp, &json!(got));
    assert!(t.starts_with("Address") && t.ends_with("Total number of entries 5\n"), "{t}");
    assert!(t.contains("RESOLVED"), "{t}");
    let r = render(View::Ipv4Routes, &json!(["10.1.0.0/24|C|0|direct|Ethernet4||"]));
    assert!(r.contains("C>* 10.1.0.0/24 [0/0] is directly connected, Ethernet4"), "{r}");
}
