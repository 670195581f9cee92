//! Table layout and the cell helpers every renderer uses.

use serde_json::{Map, Value};

pub(super) fn get(o: &Map<String, Value>, k: &str) -> String {
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
    let line = |cells: &[String]| {
        cells.iter().enumerate().map(|(i, c)| format!("{:>w$}", c, w = w[i])).collect::<Vec<_>>().join("  ")
    };
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

pub(super) fn ports(v: &Value) -> Vec<(String, Map<String, Value>)> {
    let mut out = Vec::new();
    if let Value::Object(m) = v {
        for (k, x) in m {
            if let Value::Object(o) = x {
                out.push((k.clone(), o.clone()));
            }
        }
    }
    // Ethernet0, Ethernet4, Ethernet8, ... in numeric order.
    out.sort_by_key(|(k, _)| {
        (k.trim_start_matches(|c: char| !c.is_ascii_digit()).parse::<u64>().unwrap_or(u64::MAX), k.clone())
    });
    out
}

/// A flag as telemetry carries it (a bool, or 0/1: DPDK telemetry has no bool).
pub(super) fn truthy(v: &Value) -> bool {
    v.as_bool().unwrap_or(v.as_u64().is_some_and(|n| n != 0))
}

pub(super) fn yes_no(v: &Value) -> String {
    if v.is_null() {
        "-".into()
    } else if truthy(v) {
        "yes".into()
    } else {
        "no".into()
    }
}

pub(super) fn jstr(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        v => v.to_string(),
    }
}

/// A table with left-aligned columns (SONiC's `show arp`).
pub(super) fn left_table(header: &[String], rows: &[Vec<String>]) -> String {
    let mut w: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(w.len()) {
            w[i] = w[i].max(c.len());
        }
    }
    let line = |cells: &[String]| {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{:<w$}", c, w = w[i]))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let mut out = line(header);
    out.push('\n');
    out.push_str(&w.iter().map(|n| "-".repeat(*n)).collect::<Vec<_>>().join("  "));
    out.push('\n');
    for r in rows {
        out.push_str(&line(r));
        out.push('\n');
    }
    out
}
