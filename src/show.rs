//! `pfcswitch show ...` / `clear ...`: SONiC-style tables from a running instance's
//! telemetry (the same `/pfcswitch/...` commands `dpdk-telemetry.py` reads). Pure logic
//! over JSON: what to ask ([`fetch`], given a function that sends one command), `clear`
//! snapshots, and formatting; the socket is in `dpdk::telemetry`.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::counters::{
    Q_DROPS, Q_ECN_MARKED_BYTES, Q_ECN_MARKED_PACKETS, Q_TX_BYTES, Q_TX_PACKETS, Q_WRED_DROPPED_BYTES,
    Q_WRED_DROPPED_PACKETS,
};

/// What `show`/`clear` can display, with the telemetry command behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    PfcCounters,
    QueueCounters,
    QueueWredCounters,
    PgWatermarkShared,
    PgWatermarkHeadroom,
    BufferPool,
    PfcwdStats,
    Latency,
    PortCounters,
    Conservation,
    /// SONiC's `show headroom-pool watermark`: the shared headroom pool (or DSH's
    /// insurance headroom) and its use.
    HeadroomPool,
    /// SONiC's `show mac`: the learned MACs per VLAN.
    Mac,
    /// `show lldp neighbors` (lldpctl's layout): each port's peer.
    LldpNeighbors,
    /// `show dcbx`: per port the PFC, ETS and Application TLVs sent and the peer's.
    Dcbx,
}

/// The command listing the port names (and this instance's start time).
pub const PORTS_COMMAND: &str = "/pfcswitch/ports";

impl View {
    /// Parse the words after `show`/`clear` (SONiC spelling).
    pub fn parse(words: &[String]) -> Result<View, String> {
        let w: Vec<&str> = words.iter().map(|s| s.as_str()).collect();
        Ok(match w.as_slice() {
            ["pfc", "counters"] => View::PfcCounters,
            ["queue", "counters"] => View::QueueCounters,
            ["queue", "wredcounters"] => View::QueueWredCounters,
            ["priority-group", "watermark", "shared"] => View::PgWatermarkShared,
            ["priority-group", "watermark", "headroom"] => View::PgWatermarkHeadroom,
            ["buffer", "pool"] | ["buffer_pool"] | ["buffer", "pool", "watermark"] => View::BufferPool,
            ["pfcwd", "stats"] => View::PfcwdStats,
            ["latency"] => View::Latency,
            ["counters"] | ["interfaces", "counters"] => View::PortCounters,
            ["conservation"] => View::Conservation,
            ["headroom-pool", "watermark"] | ["headroom-pool"] => View::HeadroomPool,
            ["mac"] | ["mac", "address-table"] => View::Mac,
            ["lldp", "neighbors"] | ["lldp", "neighbor"] | ["lldp", "table"] => View::LldpNeighbors,
            ["dcbx"] => View::Dcbx,
            _ => {
                return Err(format!(
                    "unknown view '{}': expected one of: pfc counters | queue counters | queue wredcounters | priority-group watermark shared|headroom | buffer pool | pfcwd stats | latency | counters | conservation | headroom-pool watermark | ip route | ipv6 route | arp | ndp | mac | lldp neighbors | dcbx",
                    words.join(" ")
                ))
            }
        })
    }

    pub fn command(self) -> &'static str {
        match self {
            View::PfcCounters => "/pfcswitch/pfc_counters",
            View::QueueCounters | View::QueueWredCounters => "/pfcswitch/queue_counters",
            View::PgWatermarkShared | View::PgWatermarkHeadroom => "/pfcswitch/pg_watermark",
            View::BufferPool | View::HeadroomPool => "/pfcswitch/buffer_pool",
            View::PfcwdStats => "/pfcswitch/pfcwd",
            View::Latency => "/pfcswitch/latency",
            View::PortCounters => "/pfcswitch/port_counters",
            View::Conservation => "/pfcswitch/conservation",
            View::Mac => "/pfcswitch/mac",
            View::LldpNeighbors | View::Dcbx => "/pfcswitch/lldp",
        }
    }

    /// Whether the command answers per port (and takes a port name).
    pub fn per_port(self) -> bool {
        !matches!(self, View::BufferPool | View::HeadroomPool | View::Mac)
    }

    /// Replies whose per-port objects nest (LLDP TLVs), which DPDK telemetry carries
    /// flattened to `a/b/0` keys: [`fetch`] nests them again.
    pub fn nested(self) -> bool {
        matches!(self, View::LldpNeighbors | View::Dcbx)
    }

    /// Counters (cleared by snapshot) as opposed to gauges and watermarks. Conservation
    /// is a balance with a gauge (in flight) in it: a difference of two would not balance.
    pub fn clearable(self) -> bool {
        matches!(
            self,
            View::PfcCounters | View::QueueCounters | View::QueueWredCounters | View::PfcwdStats | View::PortCounters
        )
    }
}

/// Reading a view from the switch failed.
#[derive(Debug, thiserror::Error)]
pub enum ShowError {
    #[error("{0}")]
    Query(String),
    /// The switch answered with an error object.
    #[error("{cmd}: {msg}")]
    Switch { cmd: String, msg: String },
    #[error("{cmd}: unexpected reply {reply} (is the switch the same pfcswitch version?)")]
    Unexpected { cmd: String, reply: String },
}

/// A view as read from the switch, and when that switch started.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub value: Value,
    pub start_time_ns: u64,
}

/// Read `view` through `query` (sends one telemetry command, returns the reply's data):
/// the port names first, then each port on its own, merged. One port per reply keeps
/// every reply under DPDK's 16 KB limit, so the result is complete for any number of ports.
pub fn fetch<E: std::fmt::Display>(
    view: View,
    query: &mut dyn FnMut(&str) -> Result<Value, E>,
) -> Result<Reading, ShowError> {
    let mut ask = |cmd: &str| -> Result<Map<String, Value>, ShowError> {
        match query(cmd).map_err(|e| ShowError::Query(e.to_string()))? {
            Value::Object(m) => match m.get("error") {
                Some(e) => Err(ShowError::Switch {
                    cmd: cmd.to_string(),
                    msg: e.as_str().map_or_else(|| e.to_string(), String::from),
                }),
                None => Ok(m),
            },
            other => Err(ShowError::Unexpected { cmd: cmd.to_string(), reply: other.to_string() }),
        }
    };
    let ports = ask(PORTS_COMMAND)?;
    let names: Vec<String> = match ports.get("ports") {
        Some(Value::Array(a)) => a.iter().filter_map(|n| n.as_str().map(String::from)).collect(),
        _ => {
            return Err(ShowError::Unexpected {
                cmd: PORTS_COMMAND.to_string(),
                reply: Value::Object(ports).to_string(),
            })
        }
    };
    let start_time_ns = ports.get("start_time_ns").and_then(Value::as_u64).unwrap_or(0);
    let value = if view.per_port() {
        let mut all = Map::new();
        for n in &names {
            all.extend(ask(&format!("{},{n}", view.command()))?);
        }
        if view.nested() {
            for v in all.values_mut() {
                *v = unflatten(v);
            }
        }
        all
    } else {
        ask(view.command())?
    };
    Ok(Reading { value: Value::Object(value), start_time_ns })
}

/// The separator of flattened keys (`dpdk::telemetry` flattens with `/`: DPDK 22.11 keeps
/// only letters, digits, `_` and `/` in a dictionary key).
pub const FLAT_SEP: char = '/';

/// An object with `a/b/c` keys (DPDK telemetry allows one level of containers; deeper
/// objects arrive flattened) nested again; objects whose keys are 0..n become arrays.
pub fn unflatten(v: &Value) -> Value {
    fn insert(m: &mut Map<String, Value>, path: &[&str], x: Value) {
        match path {
            [] => {}
            [k] => {
                m.insert(k.to_string(), x);
            }
            [k, rest @ ..] => {
                let e = m.entry(k.to_string()).or_insert_with(|| Value::Object(Map::new()));
                if !e.is_object() {
                    *e = Value::Object(Map::new());
                }
                if let Value::Object(inner) = e {
                    insert(inner, rest, x);
                }
            }
        }
    }
    fn arrays(v: Value) -> Value {
        match v {
            Value::Object(m) => {
                let is_array = !m.is_empty() && (0..m.len()).all(|i| m.contains_key(&i.to_string()));
                if is_array {
                    let mut m = m;
                    Value::Array(
                        (0..m.len()).map(|i| arrays(m.remove(&i.to_string()).unwrap_or(Value::Null))).collect(),
                    )
                } else {
                    Value::Object(m.into_iter().map(|(k, x)| (k, arrays(x))).collect())
                }
            }
            x => x,
        }
    }
    let Value::Object(flat) = v else { return v.clone() };
    let mut out = Map::new();
    for (k, x) in flat {
        let path: Vec<&str> = k.split(FLAT_SEP).collect();
        insert(&mut out, &path, x.clone());
    }
    arrays(Value::Object(out))
}

/// Which switch a reading came from: the pid (from the telemetry greeting) and the start
/// time. A `clear` snapshot applies only to the instance it was taken of; a switch
/// restarted under the same file prefix starts from zero and must show its raw counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Instance {
    pub pid: u64,
    pub start_time_ns: u64,
}

/// What `clear` stores.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Snapshot {
    pub instance: Instance,
    pub data: Value,
}

/// Where `clear` keeps the snapshot of `view`: in `dir`, the instance's own runtime
/// directory (DPDK creates it 0700 for its user), never a shared temporary directory.
pub fn snapshot_path(dir: &Path, view: View) -> PathBuf {
    dir.join(format!("pfcswitch-clear{}.json", view.command().replace('/', "_")))
}

/// Write a snapshot without following links or trusting what is there: a fresh file
/// (O_EXCL|O_NOFOLLOW, mode 0600) beside `path`, then renamed over it.
pub fn write_snapshot(path: &Path, s: &Snapshot) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let text = serde_json::to_string(s).map_err(std::io::Error::other)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)?;
    let written = f.write_all(text.as_bytes()).and_then(|_| f.sync_all()).and_then(|_| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// The snapshot at `path`, if there is a readable one that the caller's user owns and that
/// is not a symbolic link (an older format counts as none).
pub fn read_snapshot(path: &Path) -> Option<Snapshot> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let mut f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path).ok()?;
    let me = std::fs::metadata("/proc/self").ok()?.uid();
    let meta = f.metadata().ok()?;
    if meta.uid() != me || !meta.is_file() {
        return None;
    }
    let mut text = String::new();
    f.read_to_string(&mut text).ok()?;
    serde_json::from_str(&text).ok()
}

/// What `show` displays: the reading less the snapshot, when the view is clearable and
/// the snapshot was taken of this same instance.
pub fn since_clear(view: View, cur: Value, snap: Option<&Snapshot>, now: &Instance) -> Value {
    match snap {
        Some(s) if view.clearable() && s.instance == *now => subtract(&cur, &s.data),
        _ => cur,
    }
}

/// Keys that are gauges or watermarks (or not counts at all): `clear` leaves them alone.
fn is_gauge(key: &str) -> bool {
    const SUFFIXES: [&str; 11] = [
        "_depth",
        "occupancy",
        "_watermark",
        "_off",
        "threshold",
        "_in_flight",
        "size",
        "_used",
        "_ns",
        "_ms",
        "_status",
    ];
    SUFFIXES.iter().any(|s| key.ends_with(s))
}

/// `cur − snapshot` for every counter leaf; gauges as they are now (counters only go up;
/// a counter below its snapshot shows raw).
pub fn subtract(cur: &Value, snap: &Value) -> Value {
    match (cur, snap) {
        (Value::Object(c), Value::Object(s)) => Value::Object(
            c.iter()
                .map(|(k, v)| {
                    let d = match s.get(k) {
                        Some(sv) if !is_gauge(k) => subtract(v, sv),
                        _ => v.clone(),
                    };
                    (k.clone(), d)
                })
                .collect(),
        ),
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
    out.sort_by_key(|(k, _)| {
        (k.trim_start_matches(|c: char| !c.is_ascii_digit()).parse::<u64>().unwrap_or(u64::MAX), k.clone())
    });
    out
}

/// The human table for a view.
pub fn render(view: View, v: &Value) -> String {
    let ps = ports(v);
    match view {
        View::Mac => render_mac(v),
        View::PfcCounters => render_pfc_counters(&ps),
        View::QueueCounters => render_queue_counters(&ps),
        View::QueueWredCounters => render_queue_wred_counters(&ps),
        View::PgWatermarkShared | View::PgWatermarkHeadroom => render_pg_watermark(view, &ps),
        View::BufferPool => render_buffer_pool(&ps),
        View::HeadroomPool => render_headroom_pool(&ps),
        View::Latency => render_latency(&ps),
        View::PfcwdStats => render_pfcwd(&ps),
        View::Conservation => render_conservation(&ps),
        View::LldpNeighbors => render_lldp_neighbors(&ps),
        View::Dcbx => render_dcbx(&ps),
        View::PortCounters => render_port_counters(&ps),
    }
}

/// `show pfc counters`: Rx and Tx PFC frames per port and priority.
fn render_pfc_counters(ps: &[(String, Map<String, Value>)]) -> String {
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
fn render_queue_counters(ps: &[(String, Map<String, Value>)]) -> String {
    let h: Vec<String> = ["Port", "TxQ", "Counter/pkts", "Counter/bytes", "Drop/pkts", "Depth/pkts"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut rows = Vec::new();
    for (p, o) in ps {
        for q in 0..8 {
            rows.push(vec![
                p.clone(),
                format!("UC{q}"),
                get(o, &Q_TX_PACKETS.telemetry_key("UC", q)),
                get(o, &Q_TX_BYTES.telemetry_key("UC", q)),
                get(o, &Q_DROPS.telemetry_key("UC", q)),
                get(o, &format!("UC{q}_depth")),
            ]);
        }
    }
    table(&h, &rows)
}

/// `show queue wredcounters`: WRED drops and ECN marks per port and queue.
fn render_queue_wred_counters(ps: &[(String, Map<String, Value>)]) -> String {
    let h: Vec<String> = ["Port", "TxQ", "WredDrp/pkts", "WredDrp/bytes", "EcnMarked/pkts", "EcnMarked/bytes"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut rows = Vec::new();
    for (p, o) in ps {
        for q in 0..8 {
            rows.push(vec![
                p.clone(),
                format!("UC{q}"),
                get(o, &Q_WRED_DROPPED_PACKETS.telemetry_key("UC", q)),
                get(o, &Q_WRED_DROPPED_BYTES.telemetry_key("UC", q)),
                get(o, &Q_ECN_MARKED_PACKETS.telemetry_key("UC", q)),
                get(o, &Q_ECN_MARKED_BYTES.telemetry_key("UC", q)),
            ]);
        }
    }
    table(&h, &rows)
}

/// `show priority-group watermark shared|headroom`.
fn render_pg_watermark(view: View, ps: &[(String, Map<String, Value>)]) -> String {
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

/// `show buffer pool`: the pools' sizes and watermarks.
fn render_buffer_pool(ps: &[(String, Map<String, Value>)]) -> String {
    let h: Vec<String> = [
        "Pool",
        "Size",
        "Occupancy",
        "Shared watermark",
        "Headroom watermark",
        "Headroom pool (xoff)",
        "Threshold (T)",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
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
fn render_headroom_pool(ps: &[(String, Map<String, Value>)]) -> String {
    let h: Vec<String> =
        ["Pool", "Headroom pool (xoff)", "Headroom used", "Headroom watermark"].iter().map(|s| s.to_string()).collect();
    let rows: Vec<Vec<String>> = ps
        .iter()
        .filter(|(_, o)| o.get("headroom_watermark").is_some())
        .map(|(p, o)| vec![p.clone(), get(o, "xoff"), get(o, "headroom_used"), get(o, "headroom_watermark")])
        .collect();
    table(&h, &rows)
}

/// `show latency`: per port and TC quantiles.
fn render_latency(ps: &[(String, Map<String, Value>)]) -> String {
    let h: Vec<String> =
        ["Port", "TC", "Packets", "p50(us)", "p99(us)", "p99.9(us)", "max(us)"].iter().map(|s| s.to_string()).collect();
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
fn render_port_counters(ps: &[(String, Map<String, Value>)]) -> String {
    let h: Vec<String> = [
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
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
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
        let h: Vec<String> = ["Iface", "Punted for", "Packets", "Rate-limited"].iter().map(|s| s.to_string()).collect();
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
        let h: Vec<String> = ["Iface", "Trap group", "Passed", "Dropped"].iter().map(|s| s.to_string()).collect();
        s.push_str(&format!("\nCoPP (per ingress port and trap group)\n{}", table(&h, &copp)));
    }
    s
}

/// SONiC's `show mac` table: No., Vlan, MacAddress, Port, Type (every entry is learned:
/// Dynamic). VLAN 0 is the VLAN-unaware domain (ports in no VLAN).
fn render_mac(v: &Value) -> String {
    let h: Vec<String> = ["No.", "Vlan", "MacAddress", "Port", "Type"].iter().map(|s| s.to_string()).collect();
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

/// `clear fdb all` / `clear fdb vlan Vlan1000` (SONiC's `sonic-clear fdb ...`): the
/// telemetry command that removes those entries; None if the words are not an FDB clear.
pub fn fdb_clear_command(words: &[String]) -> Option<Result<String, String>> {
    let w: Vec<&str> = words.iter().map(|s| s.as_str()).collect();
    match w.as_slice() {
        ["fdb", "all"] => Some(Ok("/pfcswitch/fdb_clear,all".to_string())),
        ["fdb", "vlan", v] => Some(Ok(format!("/pfcswitch/fdb_clear,{v}"))),
        ["fdb", ..] => Some(Err("expected: clear fdb all | clear fdb vlan VlanN".to_string())),
        _ => None,
    }
}

fn render_pfcwd(ps: &[(String, Map<String, Value>)]) -> String {
    // Without [pfcwd] every port says "watchdog": "off"; an empty table would look like
    // a watchdog with nothing to report.
    if !ps.is_empty() && ps.iter().all(|(_, o)| o.get("watchdog").and_then(Value::as_str) == Some("off")) {
        return "PFC watchdog is off (no [pfcwd] section in the configuration)\n".to_string();
    }
    let h: Vec<String> = ["Queue", "Status", "Storm detected/restored", "Tx OK/drop", "Rx OK/drop"]
        .iter()
        .map(|s| s.to_string())
        .collect();
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

/// A flag as telemetry carries it (a bool, or 0/1: DPDK telemetry has no bool).
fn truthy(v: &Value) -> bool {
    v.as_bool().unwrap_or(v.as_u64().is_some_and(|n| n != 0))
}

fn yes_no(v: &Value) -> String {
    if v.is_null() {
        "-".into()
    } else if truthy(v) {
        "yes".into()
    } else {
        "no".into()
    }
}

fn jstr(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        v => v.to_string(),
    }
}

/// lldpctl's `show neighbors` layout, one block per port with a peer.
fn render_lldp_neighbors(ps: &[(String, Map<String, Value>)]) -> String {
    if ps.iter().all(|(_, o)| o.get("lldp").and_then(Value::as_str) == Some("off")) {
        return "LLDP is off (no [lldp] enabled = true in the configuration)\n".to_string();
    }
    let bar = "-".repeat(79);
    let mut s = format!("{bar}\nLLDP neighbors:\n{bar}\n");
    for (p, o) in ps {
        let Some(n) = o.get("neighbor").filter(|n| n.is_object()) else { continue };
        s.push_str(&format!("Interface:    {p}, via: LLDP, age: {} s\n", jstr(&n["age_s"])));
        s.push_str("  Chassis:\n");
        s.push_str(&format!("    ChassisID:    {}\n", jstr(&n["chassis_id"])));
        s.push_str(&format!("    SysName:      {}\n", jstr(&n["system_name"])));
        s.push_str(&format!("    SysDescr:     {}\n", jstr(&n["system_description"])));
        s.push_str("  Port:\n");
        s.push_str(&format!("    PortID:       {}\n", jstr(&n["port_id"])));
        s.push_str(&format!("    PortDescr:    {}\n", jstr(&n["port_description"])));
        s.push_str(&format!("    TTL:          {}\n", jstr(&n["ttl"])));
        if let Some(pfc) = n.get("pfc").filter(|v| v.is_object()) {
            s.push_str(&format!(
                "  PFC:          willing {}, MBC {}, capability {}, enabled {}\n",
                yes_no(&pfc["willing"]),
                yes_no(&pfc["mbc"]),
                jstr(&pfc["cap"]),
                jstr(&pfc["enable"])
            ));
        }
        s.push_str(&format!("{bar}\n"));
    }
    s
}

/// ETS as `TC:tsa/bw%` for the TCs in use.
fn ets_text(e: &Value) -> String {
    let (Some(bw), Some(tsa)) = (e["tc_bw"].as_array(), e["tsa"].as_array()) else { return "-".into() };
    bw.iter()
        .zip(tsa)
        .enumerate()
        .map(|(tc, (b, t))| match t.as_str() {
            Some("ets") => format!("{tc}:{}%", jstr(b)),
            Some(t) => format!("{tc}:{t}"),
            None => format!("{tc}:?"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn app_text(a: &Value) -> String {
    let Some(a) = a.as_array() else { return "-".into() };
    let e: Vec<String> = a
        .iter()
        .map(|e| {
            let what = match e["selector"].as_u64() {
                Some(1) => "ethertype",
                Some(2) => "tcp",
                Some(3) => "udp",
                Some(4) => "tcp/udp",
                Some(5) => "dscp",
                _ => "sel?",
            };
            format!("{what} {}→{}", jstr(&e["protocol"]), jstr(&e["priority"]))
        })
        .collect();
    if e.is_empty() {
        "none".into()
    } else {
        e.join(", ")
    }
}

/// `show dcbx`: per port what we send and what the peer sent (PFC, ETS, Application), the
/// PFC mismatch flagged in the table and again as a warning line below it.
fn render_dcbx(ps: &[(String, Map<String, Value>)]) -> String {
    if ps.iter().all(|(_, o)| o.get("lldp").and_then(Value::as_str) == Some("off")) {
        return "LLDP is off (no [lldp] enabled = true in the configuration): no DCBX\n".to_string();
    }
    let h: Vec<String> =
        ["Port", "Peer", "PFC local", "PFC peer", "Peer willing", "Status"].iter().map(|s| s.to_string()).collect();
    let mut rows = Vec::new();
    let mut detail = String::new();
    let mut warnings = Vec::new();
    for (p, o) in ps {
        let local = o.get("local").cloned().unwrap_or(Value::Null);
        let peer = o.get("neighbor").cloned().unwrap_or(Value::Null);
        let mismatch = o.get("pfc_mismatch").is_some_and(truthy);
        let peer_name = if peer.is_object() {
            format!("{}/{}", jstr(&peer["system_name"]), jstr(&peer["port_id"]))
        } else {
            "-".into()
        };
        let status = if !peer.is_object() {
            "no peer"
        } else if mismatch {
            "PFC MISMATCH"
        } else {
            "ok"
        };
        rows.push(vec![
            p.clone(),
            peer_name,
            jstr(&local["pfc"]["enable"]),
            if peer["pfc"].is_object() { jstr(&peer["pfc"]["enable"]) } else { "-".into() },
            if peer["pfc"].is_object() { yes_no(&peer["pfc"]["willing"]) } else { "-".into() },
            status.into(),
        ]);
        if mismatch {
            warnings.push(format!(
                "warning: {p}: the peer's PFC enable set ({}) differs from ours ({})\n",
                jstr(&peer["pfc"]["enable"]),
                jstr(&local["pfc"]["enable"])
            ));
        }
        detail.push_str(&format!("{p}\n"));
        detail.push_str(&format!("  ETS local:  {}\n", ets_text(&local["ets_config"])));
        if peer.is_object() {
            detail.push_str(&format!("  ETS peer:   {}\n", ets_text(&peer["ets_config"])));
        }
        detail.push_str(&format!("  App local:  {}\n", app_text(&local["app"])));
        if peer.is_object() {
            detail.push_str(&format!("  App peer:   {}\n", app_text(&peer["app"])));
        }
    }
    format!("{}\n{detail}{}", table(&h, &rows), warnings.concat())
}

/// Per (ingress port, TC) with traffic: the balance; then the drops by reason per port
/// (as counted: MMU refusals on the ingress port, queue overflows and packets flushed at
/// stop on the egress port).
fn render_conservation(ps: &[(String, Map<String, Value>)]) -> String {
    let n = |o: &Map<String, Value>, k: String| o.get(&k).and_then(Value::as_u64).unwrap_or(0);
    let h: Vec<String> = ["Port", "TC", "RX", "Flood copies", "TX", "Dropped", "In flight", "Balance"]
        .iter()
        .map(|s| s.to_string())
        .collect();
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
        let h: Vec<String> = ["Port", "Drop reason", "Packets"].iter().map(|s| s.to_string()).collect();
        s.push_str(&format!("\nDrops by reason (per port as counted)\n{}", table(&h, &drops)));
    }
    s
}

/// `pfcswitch ecn`: the WRED profiles (SONiC `ecnconfig -l` fields) and which egress
/// queues use them.
pub fn render_ecn(cfg: &crate::config::Config) -> String {
    let q = &cfg.qos;
    if q.wred_profiles.is_empty() {
        return "No WRED profiles ([qos.wred_profile.<NAME>]): ECN marking is off.\n".to_string();
    }
    let opt = |v: Option<u64>| v.map_or("N/A".to_string(), |b| b.to_string());
    let mut s = String::new();
    for p in &q.wred_profiles {
        s.push_str(&format!("Profile: {}\n", p.name));
        let rows: Vec<Vec<String>> = [("green", &p.green), ("yellow", &p.yellow), ("red", &p.red)]
            .iter()
            .flat_map(|(c, w)| {
                [
                    vec![format!("{c}_min_threshold"), opt(w.min_threshold)],
                    vec![format!("{c}_max_threshold"), opt(w.max_threshold)],
                    vec![format!("{c}_drop_probability"), w.drop_probability.to_string()],
                    vec![format!("wred_{c}_enable"), w.enabled.to_string()],
                ]
            })
            .chain([vec!["ecn".to_string(), p.ecn.as_str().to_string()]])
            .collect();
        s.push_str(&table(&["Field".to_string(), "Value".to_string()], &rows));
        s.push('\n');
    }
    let mut rows = Vec::new();
    for (pi, qs) in q.queue_wred.iter().enumerate() {
        for (qi, b) in qs.iter().enumerate() {
            if let Some(i) = b {
                rows.push(vec![cfg.ports[pi].name.clone(), format!("UC{qi}"), q.wred_profiles[*i].name.clone()]);
            }
        }
    }
    if rows.is_empty() {
        s.push_str("No queue uses a WRED profile ([qos.queue] \"<port>|<q>\" = { wred_profile = ... }).\n");
    } else {
        s.push_str(&table(&["Port".to_string(), "TxQ".to_string(), "wred_profile".to_string()], &rows));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        assert_eq!(
            since_clear(View::PfcCounters, cur.clone(), Some(&snap), &Instance { pid: 43, start_time_ns: 1 }),
            cur
        );
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
            None if cmd == PORTS_COMMAND => Ok(json!({"ports": names, "start_time_ns": 5})),
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
}

/// The router's tables `show` can list (paged over telemetry: any number of rows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteTable {
    /// `show ip route`
    Ipv4Routes,
    /// `show ipv6 route`
    Ipv6Routes,
    /// `show arp`
    Arp,
    /// `show ndp`
    Ndp,
}

impl RouteTable {
    /// `ip route`, `ipv6 route`, `arp`, `ndp` (SONiC spelling); None for anything else.
    pub fn parse(words: &[String]) -> Option<RouteTable> {
        let w: Vec<&str> = words.iter().map(|s| s.as_str()).collect();
        Some(match w.as_slice() {
            ["ip", "route"] => RouteTable::Ipv4Routes,
            ["ipv6", "route"] => RouteTable::Ipv6Routes,
            ["arp"] => RouteTable::Arp,
            ["ndp"] => RouteTable::Ndp,
            _ => return None,
        })
    }

    /// The telemetry command and its family parameter.
    pub fn command(self) -> (&'static str, &'static str) {
        match self {
            RouteTable::Ipv4Routes => ("/pfcswitch/routes", "v4"),
            RouteTable::Ipv6Routes => ("/pfcswitch/routes", "v6"),
            RouteTable::Arp => ("/pfcswitch/neighbours", "v4"),
            RouteTable::Ndp => ("/pfcswitch/neighbours", "v6"),
        }
    }
}

/// Every row of `t`, page by page through `query` (one telemetry command each).
pub fn fetch_rows<E: std::fmt::Display>(
    t: RouteTable,
    query: &mut dyn FnMut(&str) -> Result<Value, E>,
) -> Result<Vec<String>, ShowError> {
    let (cmd, fam) = t.command();
    let mut rows = Vec::new();
    loop {
        let ask = format!("{cmd},{fam},{}", rows.len());
        let v = query(&ask).map_err(|e| ShowError::Query(e.to_string()))?;
        if let Some(e) = v.get("error") {
            return Err(ShowError::Switch {
                cmd: cmd.into(),
                msg: e.as_str().map_or_else(|| e.to_string(), String::from),
            });
        }
        let (Some(total), Some(Value::Array(page))) = (v.get("total").and_then(Value::as_u64), v.get("rows")) else {
            return Err(ShowError::Unexpected { cmd: cmd.into(), reply: v.to_string() });
        };
        rows.extend(page.iter().filter_map(|r| r.as_str().map(String::from)));
        if page.is_empty() || rows.len() as u64 >= total {
            return Ok(rows);
        }
    }
}

/// The table of `t` from its rows (`/pfcswitch/routes`: `prefix|code|metric|via|iface|mac|weight`,
/// one per next hop; `/pfcswitch/neighbours`: `address|mac|iface`), in SONiC's layout.
pub fn render_rows(t: RouteTable, rows: &[String]) -> String {
    let split = |r: &String| r.split('|').map(String::from).collect::<Vec<String>>();
    match t {
        RouteTable::Ipv4Routes | RouteTable::Ipv6Routes => {
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
                    "kernel" => format!("{head}{metric} handled by the kernel (unreachable, or not through a port)"),
                    gw => {
                        let w = if weight.is_empty() || weight == "1" {
                            String::new()
                        } else {
                            format!(", weight {weight}")
                        };
                        let res = if mac.is_empty() { " (unresolved)".to_string() } else { String::new() };
                        format!("{head}{metric} via {gw}, {iface}{w}{res}")
                    }
                };
                s.push_str(&line);
                s.push('\n');
            }
            s
        }
        RouteTable::Arp | RouteTable::Ndp => {
            let h: Vec<String> =
                ["Address", "MacAddress", "Iface", "Vlan", "Status"].iter().map(|s| s.to_string()).collect();
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
    }
}

/// The telemetry command of `show routing`.
pub const ROUTING_COMMAND: &str = "/pfcswitch/routing";

/// `show routing`: the routing control thread's health (`/pfcswitch/routing`), one line per
/// field, the writer's counters after it.
pub fn render_routing(v: &Value) -> String {
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

/// A table with left-aligned columns (SONiC's `show arp`).
fn left_table(header: &[String], rows: &[Vec<String>]) -> String {
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
