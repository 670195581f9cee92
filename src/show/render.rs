//! The buffer, queue, PFC and port tables (SONiC's `show pfc counters`, `queue counters`,
//! `priority-group watermark`, `buffer pool`, ...).

use serde_json::{Map, Value};

use super::table::{get, table};
use crate::counters::{
    Q_DROPS, Q_ECN_MARKED_BYTES, Q_ECN_MARKED_PACKETS, Q_TX_BYTES, Q_TX_PACKETS, Q_WRED_DROPPED_BYTES,
    Q_WRED_DROPPED_PACKETS,
};

/// `show pfc counters`: Rx and Tx PFC frames per port and priority.
pub(super) fn render_pfc_counters(ps: &[(String, Map<String, Value>)]) -> String {
    let mut s = String::new();
    for dir in ["Rx", "Tx"] {
        let mut h = vec![format!("Port {dir}")];
        h.extend((0..8).map(|i| format!("PFC{i}")));
        let rows: Vec<Vec<String>> = ps
            .iter()
            .map(|(p, o)| {
                let mut r = vec![p.clone()];
                r.extend((0..8).map(|i| get(o, &format!("{}_pfc{i}", dir.to_lowercase()))));
                r
            })
            .collect();
        s.push_str(&table(&h, &rows));
        s.push('\n');
    }
    s
}

/// `show queue counters`: per port and TX queue.
pub(super) fn render_queue_counters(ps: &[(String, Map<String, Value>)]) -> String {
    let h = ["Port", "TxQ", "Counter/pkts", "Counter/bytes", "Drop/pkts", "Depth/pkts"];
    queue_table(ps, h, |o, q| {
        [
            get(o, &Q_TX_PACKETS.telemetry_key("UC", q)),
            get(o, &Q_TX_BYTES.telemetry_key("UC", q)),
            get(o, &Q_DROPS.telemetry_key("UC", q)),
            get(o, &format!("UC{q}_depth")),
        ]
    })
}

/// `show queue wredcounters`: WRED drops and ECN marks per port and queue.
pub(super) fn render_queue_wred_counters(ps: &[(String, Map<String, Value>)]) -> String {
    let h = ["Port", "TxQ", "WredDrp/pkts", "WredDrp/bytes", "EcnMarked/pkts", "EcnMarked/bytes"];
    queue_table(ps, h, |o, q| {
        [
            get(o, &Q_WRED_DROPPED_PACKETS.telemetry_key("UC", q)),
            get(o, &Q_WRED_DROPPED_BYTES.telemetry_key("UC", q)),
            get(o, &Q_ECN_MARKED_PACKETS.telemetry_key("UC", q)),
            get(o, &Q_ECN_MARKED_BYTES.telemetry_key("UC", q)),
        ]
    })
}

/// A row per port and unicast queue (UC0..UC7): port, queue, then `cells` of that queue.
fn queue_table(
    ps: &[(String, Map<String, Value>)],
    header: [&str; 6],
    cells: impl Fn(&Map<String, Value>, usize) -> [String; 4],
) -> String {
    let mut rows = Vec::new();
    for (p, o) in ps {
        for q in 0..8 {
            let mut row = vec![p.clone(), format!("UC{q}")];
            row.extend(cells(o, q));
            rows.push(row);
        }
    }
    table(&strings(&header), &rows)
}

/// A table header from its column names.
pub(super) fn strings(h: &[&str]) -> Vec<String> {
    h.iter().map(|s| s.to_string()).collect()
}

/// `show priority-group watermark shared|headroom`.
/// `title`: "Ingress shared pool occupancy per PG:" or "Ingress headroom per PG:";
/// `key`: `shared_watermark` or `headroom_watermark`.
pub(super) fn render_pg_watermark(ps: &[(String, Map<String, Value>)], title: &str, key: &str) -> String {
    render_watermark(ps, title, "PG", key)
}

/// `show queue watermark`: each egress queue's high-water mark, bytes.
pub(super) fn render_queue_watermark(ps: &[(String, Map<String, Value>)]) -> String {
    render_watermark(ps, "Egress queue watermark per unicast queue (bytes):", "UC", "watermark")
}

/// One row per port, a column per PG or queue (`prefix` PG or UC) of `{prefix}{i}_{key}`.
fn render_watermark(ps: &[(String, Map<String, Value>)], title: &str, prefix: &str, key: &str) -> String {
    let mut h = vec!["Port".to_string()];
    h.extend((0..8).map(|i| format!("{prefix}{i}")));
    let rows: Vec<Vec<String>> = ps
        .iter()
        .map(|(p, o)| {
            let mut r = vec![p.clone()];
            r.extend((0..8).map(|i| get(o, &format!("{prefix}{i}_{key}"))));
            r
        })
        .collect();
    format!("{title}\n{}", table(&h, &rows))
}

/// `show buffer pool`: the pools' sizes and watermarks.
pub(super) fn render_buffer_pool(ps: &[(String, Map<String, Value>)]) -> String {
    let h: Vec<String> = strings(&[
        "Pool",
        "Size",
        "Occupancy",
        "Shared watermark",
        "Headroom watermark",
        "Headroom pool (xoff)",
        "Threshold (T)",
    ]);
    let rows: Vec<Vec<String>> = ps
        .iter()
        .map(|(p, o)| {
            vec![
                p.clone(),
                get(o, "size"),
                get(o, "occupancy"),
                get(o, "shared_watermark"),
                get(o, "headroom_watermark"),
                get(o, "xoff"),
                get(o, "threshold"),
            ]
        })
        .collect();
    table(&h, &rows)
}

/// `show headroom-pool watermark`.
pub(super) fn render_headroom_pool(ps: &[(String, Map<String, Value>)]) -> String {
    let h: Vec<String> = strings(&["Pool", "Headroom pool (xoff)", "Headroom used", "Headroom watermark"]);
    let rows: Vec<Vec<String>> = ps
        .iter()
        .filter(|(_, o)| o.get("headroom_watermark").is_some())
        .map(|(p, o)| vec![p.clone(), get(o, "xoff"), get(o, "headroom_used"), get(o, "headroom_watermark")])
        .collect();
    table(&h, &rows)
}

/// `show latency`: per port and TC quantiles.
pub(super) fn render_latency(ps: &[(String, Map<String, Value>)]) -> String {
    let h: Vec<String> = strings(&["Port", "TC", "Packets", "p50(us)", "p99(us)", "p99.9(us)", "max(us)"]);
    let us = |o: &Map<String, Value>, k: &str| {
        o.get(k).and_then(|v| v.as_u64()).map_or("N/A".to_string(), |n| format!("{:.2}", n as f64 / 1000.0))
    };
    let mut rows = Vec::new();
    for (p, o) in ps {
        for tc in 0..8 {
            if o.contains_key(&format!("TC{tc}_count")) {
                rows.push(vec![
                    p.clone(),
                    tc.to_string(),
                    get(o, &format!("TC{tc}_count")),
                    us(o, &format!("TC{tc}_p50_ns")),
                    us(o, &format!("TC{tc}_p99_ns")),
                    us(o, &format!("TC{tc}_p999_ns")),
                    us(o, &format!("TC{tc}_max_ns")),
                ]);
            }
        }
    }
    table(&h, &rows)
}

/// `show interfaces counters`, with the router's punts by reason.
pub(super) fn render_port_counters(ps: &[(String, Map<String, Value>)]) -> String {
    let h: Vec<String> = strings(&[
        "Iface",
        "RX_OK",
        "RX_BYTES",
        "TX_OK",
        "TX_BYTES",
        "DROPS",
        "IMISSED",
        "RX_NOMBUF",
        "ROUTED",
        "PUNTED",
        "PUNT_DRP",
    ]);
    let rows: Vec<Vec<String>> = ps
        .iter()
        .map(|(p, o)| {
            let sum = |pfx: &str| -> u64 {
                o.iter().filter(|(k, _)| k.starts_with(pfx)).filter_map(|(_, v)| v.as_u64()).sum()
            };
            let drops = sum("drop_");
            vec![
                p.clone(),
                get(o, "rx_packets"),
                get(o, "rx_bytes"),
                get(o, "tx_packets"),
                get(o, "tx_bytes"),
                drops.to_string(),
                get(o, "imissed"),
                get(o, "rx_nombuf"),
                get(o, "routed_packets"),
                sum("punted_").to_string(),
                sum("punt_dropped_").to_string(),
            ]
        })
        .collect();
    let mut s = table(&h, &rows);
    // The router's exceptions, by reason, where there are any.
    let mut why = Vec::new();
    for (p, o) in ps {
        for r in crate::route::PuntReason::ALL {
            let (n, d) = (get(o, &format!("punted_{}", r.name())), get(o, &format!("punt_dropped_{}", r.name())));
            if n != "0" && n != "N/A" || d != "0" && d != "N/A" {
                why.push(vec![p.clone(), r.name().to_string(), n, d]);
            }
        }
    }
    if !why.is_empty() {
        let h: Vec<String> = strings(&["Iface", "Punted for", "Packets", "Rate-limited"]);
        s.push_str(&format!("\nTo the kernel (per ingress port and reason)\n{}", table(&h, &why)));
    }
    // Control-plane policing, per ingress port and trap group, where there is any.
    let mut copp = Vec::new();
    for (p, o) in ps {
        for g in crate::route::TrapGroup::ALL {
            let (n, d) = (get(o, &format!("copp_{}_passed", g.name())), get(o, &format!("copp_{}_dropped", g.name())));
            if n != "0" && n != "N/A" || d != "0" && d != "N/A" {
                copp.push(vec![p.clone(), g.name().to_string(), n, d]);
            }
        }
    }
    if !copp.is_empty() {
        let h: Vec<String> = strings(&["Iface", "Trap group", "Passed", "Dropped"]);
        s.push_str(&format!("\nCoPP (per ingress port and trap group)\n{}", table(&h, &copp)));
    }
    s
}

/// SONiC's `show mac` table: No., Vlan, MacAddress, Port, Type (every entry is learned:
/// Dynamic). VLAN 0 is the VLAN-unaware domain (ports in no VLAN).
pub(super) fn render_mac(v: &Value) -> String {
    let h: Vec<String> = strings(&["No.", "Vlan", "MacAddress", "Port", "Type"]);
    // Entries are `"<vid>|<mac>|<port>"`, sorted here by VLAN (as a number), then MAC.
    // A fourth field `flapping`: held on its port for moving too often (Type `Dynamic*`).
    let mut e: Vec<(u16, String, String, bool)> = v
        .get("entries")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|x| {
            let mut f = x.as_str()?.splitn(4, '|');
            let (vid, mac, port) = (f.next()?.parse().ok()?, f.next()?.to_uppercase(), f.next()?.to_string());
            Some((vid, mac, port, f.next() == Some("flapping")))
        })
        .collect();
    e.sort();
    let flapping = e.iter().filter(|x| x.3).count();
    let rows: Vec<Vec<String>> = e
        .into_iter()
        .enumerate()
        .map(|(i, (vid, mac, port, flap))| {
            vec![(i + 1).to_string(), vid.to_string(), mac, port, if flap { "Dynamic*" } else { "Dynamic" }.to_string()]
        })
        .collect();
    let total = v.get("total").and_then(Value::as_u64).unwrap_or(rows.len() as u64);
    let mut s = table(&h, &rows);
    if total > rows.len() as u64 {
        s.push_str(&format!("(the first {} shown)\n", rows.len()));
    }
    s.push_str(&format!("Total number of entries {total}\n"));
    if flapping > 0 {
        s.push_str(&format!("* flapping ({flapping}): moved too often, held on the port shown (fdb_move_limit)\n"));
    }
    s
}

/// `show pfcwd stats`: per port and lossless priority.
pub(super) fn render_pfcwd(ps: &[(String, Map<String, Value>)]) -> String {
    // Without [pfcwd] every port says "watchdog": "off"; an empty table would look like
    // a watchdog with nothing to report.
    if !ps.is_empty() && ps.iter().all(|(_, o)| o.get("watchdog").and_then(Value::as_str) == Some("off")) {
        return "PFC watchdog is off (no [pfcwd] section in the configuration)\n".to_string();
    }
    let h: Vec<String> = strings(&["Queue", "Status", "Storm detected/restored", "Tx OK/drop", "Rx OK/drop"]);
    let mut rows = Vec::new();
    for (p, o) in ps {
        for prio in 0..8 {
            if !o.contains_key(&format!("prio{prio}_status")) {
                continue;
            }
            rows.push(vec![
                format!("{p}:{prio}"),
                get(o, &format!("prio{prio}_status")),
                format!(
                    "{}/{}",
                    get(o, &format!("prio{prio}_storms_detected")),
                    get(o, &format!("prio{prio}_storms_restored"))
                ),
                format!("{}/{}", get(o, &format!("prio{prio}_tx_ok")), get(o, &format!("prio{prio}_tx_dropped"))),
                format!("{}/{}", get(o, &format!("prio{prio}_rx_ok")), get(o, &format!("prio{prio}_rx_dropped"))),
            ]);
        }
    }
    if rows.is_empty() {
        return "PFC watchdog is on, but no port has a lossless priority to watch\n".to_string();
    }
    table(&h, &rows)
}

/// Per (ingress port, TC) with traffic: the balance; then the drops by reason per port
/// (as counted: MMU refusals on the ingress port, queue overflows and packets flushed at
/// stop on the egress port).
pub(super) fn render_conservation(ps: &[(String, Map<String, Value>)]) -> String {
    let n = |o: &Map<String, Value>, k: String| o.get(&k).and_then(Value::as_u64).unwrap_or(0);
    let h: Vec<String> = strings(&["Port", "TC", "RX", "Flood copies", "TX", "Dropped", "In flight", "Balance"]);
    let mut rows = Vec::new();
    for (p, o) in ps {
        for tc in 0..8 {
            let (rx, cp, tx, dr, fl) = (
                n(o, format!("TC{tc}_rx")),
                n(o, format!("TC{tc}_flood_copies")),
                n(o, format!("TC{tc}_tx")),
                n(o, format!("TC{tc}_dropped")),
                n(o, format!("TC{tc}_in_flight")),
            );
            if rx + cp + tx + dr + fl == 0 {
                continue;
            }
            let ok = if rx + cp == tx + dr + fl { "ok" } else { "MISMATCH" };
            rows.push(vec![
                p.clone(),
                tc.to_string(),
                rx.to_string(),
                cp.to_string(),
                tx.to_string(),
                dr.to_string(),
                fl.to_string(),
                ok.to_string(),
            ]);
        }
    }
    let mut s = format!("Per ingress port and TC: RX + flood copies = TX + dropped + in flight\n{}", table(&h, &rows));
    let mut drops = Vec::new();
    for (p, o) in ps {
        let mut reasons: Vec<(&String, u64)> = o
            .iter()
            .filter(|(k, _)| k.starts_with("drop_"))
            .filter_map(|(k, v)| Some((k, v.as_u64()?)))
            .filter(|(_, v)| *v > 0)
            .collect();
        reasons.sort();
        for (k, v) in reasons {
            drops.push(vec![p.clone(), k.trim_start_matches("drop_").to_string(), v.to_string()]);
        }
    }
    if !drops.is_empty() {
        let h: Vec<String> = strings(&["Port", "Drop reason", "Packets"]);
        s.push_str(&format!("\nDrops by reason (per port as counted)\n{}", table(&h, &drops)));
    }
    s
}
