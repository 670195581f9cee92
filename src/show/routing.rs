//! The router's views: its tables (`show ip route`, `ipv6 route`, `arp`, `ndp`) and
//! the routing control thread's health (`show routing`).

use serde_json::Value;

use super::table::{left_table, yes_no};

/// `show ip route` / `ipv6 route` from `/pfcswitch/routes` rows
/// (`prefix|code|metric|via|iface|mac|weight`, one per next hop), in FRR's layout.
pub(super) fn render_routes(rows: &[String]) -> String {
    let split = |r: &String| r.split('|').map(String::from).collect::<Vec<String>>();
    let mut s = String::from(
        "Codes: K - kernel route, C - connected, L - local address, N - neighbour host route\n       \
         * - in the dataplane's table (FIB); (unresolved): punted until the neighbour resolves\n\n",
    );
    let mut last = String::new();
    for r in rows.iter().map(split) {
        let [prefix, code, metric, via, iface, mac, weight] = &r[..] else { continue };
        let head = if *prefix == last {
            format!("  *{:width$}", "", width = prefix.len() + 1)
        } else {
            format!("{code}>* {prefix}")
        };
        last = prefix.clone();
        let metric = if metric.is_empty() { String::new() } else { format!(" [0/{metric}]") };
        let line = match via.as_str() {
            "direct" => format!("{head}{metric} is directly connected, {iface}"),
            "local" => format!("{head} is a local address"),
            "blackhole" => format!("{head}{metric} unreachable (blackhole)"),
            "kernel" => format!("{head}{metric} handled by the kernel (unreachable)"),
            "non-port" => format!("{head}{metric} dropped (not through a switch port)"),
            gw => {
                let w = if weight.is_empty() || weight == "1" { String::new() } else { format!(", weight {weight}") };
                let res = if mac.is_empty() { " (unresolved)".to_string() } else { String::new() };
                format!("{head}{metric} via {gw}, {iface}{w}{res}")
            }
        };
        s.push_str(&line);
        s.push('\n');
    }
    s
}

/// `show arp` / `show ndp` from `/pfcswitch/neighbours` rows (`address|mac|iface`), in
/// SONiC's layout.
pub(super) fn render_neighbours(rows: &[String]) -> String {
    let split = |r: &String| r.split('|').map(String::from).collect::<Vec<String>>();
    let h: Vec<String> = ["Address", "MacAddress", "Iface", "Vlan", "Status"].iter().map(|s| s.to_string()).collect();
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(split)
        .filter(|r| r.len() == 3)
        .map(|r| {
            let (mac, status) =
                if r[1].is_empty() { ("-".to_string(), "INCOMPLETE") } else { (r[1].clone(), "RESOLVED") };
            vec![r[0].clone(), mac, r[2].clone(), "-".to_string(), status.to_string()]
        })
        .collect();
    let mut s = left_table(&h, &body);
    s.push_str(&format!("Total number of entries {}\n", body.len()));
    s
}

/// `show routing`: the routing control thread's health (`/pfcswitch/routing`), one line per
/// field, the writer's counters after it.
pub(super) fn render_routing(v: &Value) -> String {
    let field = |k: &str| match v.get(k) {
        None | Some(Value::Null) => "-".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(x) => x.to_string(),
    };
    let rib = |k: &str| v.get("rib").and_then(|r| r.get(k)).map_or_else(|| "-".to_string(), |x| x.to_string());
    let rows: Vec<Vec<String>> = [
        // DPDK's telemetry sends booleans as 0/1.
        ("Thread alive", yes_no(&v["alive"])),
        ("Synced with the kernel", yes_no(&v["synced"])),
        ("FIB out of sync", yes_no(&v["fib_out_of_sync"])),
        ("Routes refused (FIB full)", field("routes_refused")),
        ("Resyncs", field("resyncs")),
        ("Last resync", field("last_resync")),
        ("Batches", field("batches")),
        ("Last batch age (ms)", field("last_batch_age_ms")),
        ("Heartbeat age (ms)", field("heartbeat_age_ms")),
        ("Undecodable dump messages", field("undecodable")),
        ("Events", rib("events")),
        ("LPM writes", rib("lpm_writes")),
        ("Refusals", rib("errors")),
        ("Refused, installed later", rib("retried_ok")),
        ("IPv6 table rebuilds (tbl8)", rib("fib_rebuilds")),
        ("Neighbours refused (bound)", rib("neighbours_refused")),
        ("Thread error", field("error")),
    ]
    .into_iter()
    .map(|(k, v)| vec![k.to_string(), v])
    .collect();
    left_table(&["Field".to_string(), "Value".to_string()], &rows)
}
