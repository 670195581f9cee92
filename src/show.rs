//! `pfcswitch show ...` / `clear ...`: SONiC-style tables from a running instance's
//! telemetry (the same `/pfcswitch/...` commands `dpdk-telemetry.py` reads). Pure
//! formatting over JSON; the socket is in `dpdk::telemetry`.

use serde_json::{Map, Value};

/// What `show`/`clear` can display, with the telemetry command behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    PfcCounters,
    QueueCounters,
    PgWatermarkShared,
    PgWatermarkHeadroom,
    BufferPool,
    PfcwdStats,
    Latency,
    PortCounters,
}

impl View {
    /// Parse the words after `show`/`clear` (SONiC spelling).
    pub fn parse(words: &[String]) -> Result<View, String> {
        let w: Vec<&str> = words.iter().map(|s| s.as_str()).collect();
        Ok(match w.as_slice() {
            ["pfc", "counters"] => View::PfcCounters,
            ["queue", "counters"] => View::QueueCounters,
            ["priority-group", "watermark", "shared"] => View::PgWatermarkShared,
            ["priority-group", "watermark", "headroom"] => View::PgWatermarkHeadroom,
            ["buffer", "pool"] | ["buffer_pool"] | ["buffer", "pool", "watermark"] => View::BufferPool,
            ["pfcwd", "stats"] => View::PfcwdStats,
            ["latency"] => View::Latency,
            ["counters"] | ["interfaces", "counters"] => View::PortCounters,
            _ => {
                return Err(format!(
                    "unknown view '{}': expected one of: pfc counters | queue counters | priority-group watermark shared|headroom | buffer pool | pfcwd stats | latency | counters",
                    words.join(" ")
                ))
            }
        })
    }

    pub fn command(self) -> &'static str {
        match self {
            View::PfcCounters => "/pfcswitch/pfc_counters",
            View::QueueCounters => "/pfcswitch/queue_counters",
            View::PgWatermarkShared | View::PgWatermarkHeadroom => "/pfcswitch/pg_watermark",
            View::BufferPool => "/pfcswitch/buffer_pool",
            View::PfcwdStats => "/pfcswitch/pfcwd",
            View::Latency => "/pfcswitch/latency",
            View::PortCounters => "/pfcswitch/port_counters",
        }
    }

    /// Counters (cleared by snapshot) as opposed to gauges and watermarks.
    pub fn clearable(self) -> bool {
        matches!(self, View::PfcCounters | View::QueueCounters | View::PfcwdStats | View::PortCounters)
    }
}

/// `cur − snapshot` for every numeric leaf (counters only go up; a restart shows raw).
pub fn subtract(cur: &Value, snap: &Value) -> Value {
    match (cur, snap) {
        (Value::Object(c), Value::Object(s)) => {
            Value::Object(c.iter().map(|(k, v)| (k.clone(), s.get(k).map_or(v.clone(), |sv| subtract(v, sv)))).collect())
        }
        (Value::Number(c), Value::Number(s)) => match (c.as_u64(), s.as_u64()) {
            (Some(a), Some(b)) if a >= b => (a - b).into(),
            _ => cur.clone(),
        },
        _ => cur.clone(),
    }
}

fn get(o: &Map<String, Value>, k: &str) -> String {
    match o.get(k) {
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => "N/A".to_string(),
    }
}

/// Render a table: header, dashes under each column, rows; right-aligned like SONiC.
pub fn table(header: &[String], rows: &[Vec<String>]) -> String {
    let mut w: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if i < w.len() {
                w[i] = w[i].max(c.len());
            }
        }
    }
    let line = |cells: &[String]| cells.iter().enumerate().map(|(i, c)| format!("{:>w$}", c, w = w[i])).collect::<Vec<_>>().join("  ");
    let mut out = String::new();
    out.push_str(&line(header));
    out.push('\n');
    out.push_str(&w.iter().map(|n| "-".repeat(*n)).collect::<Vec<_>>().join("  "));
    out.push('\n');
    for r in rows {
        out.push_str(&line(r));
        out.push('\n');
    }
    out
}

fn ports(v: &Value) -> Vec<(String, Map<String, Value>)> {
    let mut out = Vec::new();
    if let Value::Object(m) = v {
        for (k, x) in m {
            if let Value::Object(o) = x {
                out.push((k.clone(), o.clone()));
            }
        }
    }
    // Ethernet0, Ethernet4, Ethernet8, ... in numeric order.
    out.sort_by_key(|(k, _)| (k.trim_start_matches(|c: char| !c.is_ascii_digit()).parse::<u64>().unwrap_or(u64::MAX), k.clone()));
    out
}

/// The human table for a view.
pub fn render(view: View, v: &Value) -> String {
    let ps = ports(v);
    match view {
        View::PfcCounters => {
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
        View::QueueCounters => {
            let h: Vec<String> = ["Port", "TxQ", "Counter/pkts", "Counter/bytes", "Drop/pkts", "Depth/pkts"].iter().map(|s| s.to_string()).collect();
            let mut rows = Vec::new();
            for (p, o) in &ps {
                for q in 0..8 {
                    rows.push(vec![
                        p.clone(),
                        format!("UC{q}"),
                        get(o, &format!("UC{q}_packets")),
                        get(o, &format!("UC{q}_bytes")),
                        get(o, &format!("UC{q}_drops")),
                        get(o, &format!("UC{q}_depth")),
                    ]);
                }
            }
            table(&h, &rows)
        }
        View::PgWatermarkShared | View::PgWatermarkHeadroom => {
            let (title, key) = if view == View::PgWatermarkShared {
                ("Ingress shared pool occupancy per PG:", "shared_watermark")
            } else {
                ("Ingress headroom per PG:", "headroom_watermark")
            };
            let mut h = vec!["Port".to_string()];
            h.extend((0..8).map(|i| format!("PG{i}")));
            let rows: Vec<Vec<String>> = ps
                .iter()
                .map(|(p, o)| {
                    let mut r = vec![p.clone()];
                    r.extend((0..8).map(|i| get(o, &format!("PG{i}_{key}"))));
                    r
                })
                .collect();
            format!("{title}\n{}", table(&h, &rows))
        }
        View::BufferPool => {
            let h: Vec<String> = ["Pool", "Size", "Occupancy", "Shared watermark", "Headroom watermark", "Threshold (T)"].iter().map(|s| s.to_string()).collect();
            let rows: Vec<Vec<String>> = ps
                .iter()
                .map(|(p, o)| vec![p.clone(), get(o, "size"), get(o, "occupancy"), get(o, "shared_watermark"), get(o, "headroom_watermark"), get(o, "threshold")])
                .collect();
            table(&h, &rows)
        }
        View::Latency => {
            let h: Vec<String> = ["Port", "TC", "Packets", "p50(us)", "p99(us)", "p99.9(us)", "max(us)"].iter().map(|s| s.to_string()).collect();
            let us = |o: &Map<String, Value>, k: &str| o.get(k).and_then(|v| v.as_u64()).map_or("N/A".to_string(), |n| format!("{:.2}", n as f64 / 1000.0));
            let mut rows = Vec::new();
            for (p, o) in &ps {
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
        View::PfcwdStats => {
            let h: Vec<String> = ["Queue", "Status", "Storm detected/restored", "Tx OK/drop", "Rx OK/drop"].iter().map(|s| s.to_string()).collect();
            let mut rows = Vec::new();
            for (p, o) in &ps {
                for prio in 0..8 {
                    if !o.contains_key(&format!("prio{prio}_status")) {
                        continue;
                    }
                    rows.push(vec![
                        format!("{p}:{prio}"),
                        get(o, &format!("prio{prio}_status")),
                        format!("{}/{}", get(o, &format!("prio{prio}_storms_detected")), get(o, &format!("prio{prio}_storms_restored"))),
                        format!("{}/{}", get(o, &format!("prio{prio}_tx_ok")), get(o, &format!("prio{prio}_tx_dropped"))),
                        format!("{}/{}", get(o, &format!("prio{prio}_rx_ok")), get(o, &format!("prio{prio}_rx_dropped"))),
                    ]);
                }
            }
            table(&h, &rows)
        }
        View::PortCounters => {
            let h: Vec<String> = ["Iface", "RX_OK", "RX_BYTES", "TX_OK", "TX_BYTES", "DROPS", "IMISSED", "RX_NOMBUF"].iter().map(|s| s.to_string()).collect();
            let rows: Vec<Vec<String>> = ps
                .iter()
                .map(|(p, o)| {
                    let drops: u64 = o.iter().filter(|(k, _)| k.starts_with("drop_")).filter_map(|(_, v)| v.as_u64()).sum();
                    vec![p.clone(), get(o, "rx_packets"), get(o, "rx_bytes"), get(o, "tx_packets"), get(o, "tx_bytes"), drops.to_string(), get(o, "imissed"), get(o, "rx_nombuf")]
                })
                .collect();
            table(&h, &rows)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    #[test]
    fn clear_subtracts_counters() {
        let cur = json!({"Ethernet0": {"rx_pfc3": 10, "tx_pfc3": 4}});
        let snap = json!({"Ethernet0": {"rx_pfc3": 7, "tx_pfc3": 4}});
        assert_eq!(subtract(&cur, &snap), json!({"Ethernet0": {"rx_pfc3": 3, "tx_pfc3": 0}}));
    }

    #[test]
    fn parse_views() {
        let w = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert_eq!(View::parse(&w("pfc counters")).unwrap(), View::PfcCounters);
        assert_eq!(View::parse(&w("priority-group watermark headroom")).unwrap(), View::PgWatermarkHeadroom);
        assert!(View::parse(&w("bogus")).is_err());
    }
}
