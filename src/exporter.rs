//! `pfcswitch exporter`: the switch's live counters in the Prometheus text format (0.0.4),
//! read over DPDK telemetry exactly as `pfcswitch show` reads them ([`crate::show::fetch`],
//! one port per reply). Pure: given a function that sends one telemetry command, [`gather`]
//! returns the page; the HTTP server and the socket are the binary's.
//!
//! Names follow Prometheus conventions: the `pfcswitch_` prefix, base units (`_bytes`,
//! `_seconds`), `_total` on counters (added by the encoder), one metric per quantity with
//! labels for where it was counted (`port`, `priority`, `queue`, `pg`, `tc`, `reason`,
//! `pool`, `quantile`): `pfcswitch_pfc_tx_pause_frames_total{port="Ethernet0",priority="3"}`.
//! Every scalar counter a port reports becomes `pfcswitch_port_<name>_total`, so counters
//! added to `/pfcswitch/port_counters` later (routed, punted, ...) are exported without a
//! change here; drops by reason are one metric, `pfcswitch_port_drops_total{reason}`.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::prometheus_text;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use serde_json::{Map, Value};

use crate::counters::{PG_COUNTERS, QUEUE_COUNTERS};
use crate::show::{fetch, ShowError, View};

/// The `Content-Type` of the page.
pub const CONTENT_TYPE: &str = prometheus_text::CONTENT_TYPE;

/// Metric name prefix.
pub const PREFIX: &str = "pfcswitch";

type Labels = Vec<(String, String)>;

/// A sample's value: integer counts and bytes, or seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Num {
    Int(u64),
    Float(f64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
}

/// One metric family being collected: its help, kind and samples.
struct Fam {
    help: &'static str,
    kind: Kind,
    samples: Vec<(Labels, Num)>,
}

/// Families by name (without prefix or `_total`), in a stable order.
#[derive(Default)]
pub struct Metrics {
    fams: BTreeMap<String, Fam>,
}

fn labels(pairs: &[(&str, String)]) -> Labels {
    pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

impl Metrics {
    fn add(&mut self, name: &str, help: &'static str, kind: Kind, l: Labels, v: Num) {
        self.fams
            .entry(name.to_string())
            .or_insert_with(|| Fam { help, kind, samples: Vec::new() })
            .samples
            .push((l, v));
    }

    fn counter(&mut self, name: &str, help: &'static str, l: Labels, v: u64) {
        self.add(name, help, Kind::Counter, l, Num::Int(v));
    }

    fn gauge(&mut self, name: &str, help: &'static str, l: Labels, v: u64) {
        self.add(name, help, Kind::Gauge, l, Num::Int(v));
    }

    /// The page in the Prometheus text format.
    pub fn encode(self) -> String {
        let mut reg = Registry::with_prefix(PREFIX);
        for (name, f) in self.fams {
            let float = f.samples.iter().any(|(_, v)| matches!(v, Num::Float(_)));
            let as_f64 = |v: Num| match v {
                Num::Int(i) => i as f64,
                Num::Float(x) => x,
            };
            let as_u64 = |v: Num| match v {
                Num::Int(i) => i,
                Num::Float(x) => x as u64,
            };
            match (f.kind, float) {
                (Kind::Counter, false) => {
                    let fam = Family::<Labels, Counter<u64>>::default();
                    for (l, v) in f.samples {
                        fam.get_or_create(&l).inc_by(as_u64(v));
                    }
                    reg.register(name, f.help, fam);
                }
                (Kind::Counter, true) => {
                    let fam = Family::<Labels, Counter<f64, AtomicU64>>::default();
                    for (l, v) in f.samples {
                        fam.get_or_create(&l).inc_by(as_f64(v));
                    }
                    reg.register(name, f.help, fam);
                }
                (Kind::Gauge, false) => {
                    let fam = Family::<Labels, Gauge<i64>>::default();
                    for (l, v) in f.samples {
                        fam.get_or_create(&l).set(i64::try_from(as_u64(v)).unwrap_or(i64::MAX));
                    }
                    reg.register(name, f.help, fam);
                }
                (Kind::Gauge, true) => {
                    let fam = Family::<Labels, Gauge<f64, AtomicU64>>::default();
                    for (l, v) in f.samples {
                        fam.get_or_create(&l).set(as_f64(v));
                    }
                    reg.register(name, f.help, fam);
                }
            }
        }
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_text::encode(&mut out, &reg);
        out
    }
}

fn num(o: &Map<String, Value>, k: &str) -> Option<u64> {
    o.get(k).and_then(Value::as_u64)
}

/// `{"Ethernet0": {...}, ...}` as (port, object) pairs.
fn per_port(v: &Value) -> Vec<(String, &Map<String, Value>)> {
    v.as_object()
        .map(|m| m.iter().filter_map(|(k, o)| o.as_object().map(|o| (k.clone(), o))).collect())
        .unwrap_or_default()
}

/// `/pfcswitch/port_counters`: every scalar as a counter, drops by reason, PMD loss.
pub fn add_port_counters(m: &mut Metrics, v: &Value) {
    for (port, o) in per_port(v) {
        for (k, x) in o {
            let Some(n) = x.as_u64() else { continue };
            let p = labels(&[("port", port.clone())]);
            if let Some(reason) = k.strip_prefix("drop_") {
                m.counter(
                    "port_drops",
                    "Packets dropped, by reason (counted on the ingress port, or the egress port for egress reasons)",
                    labels(&[("port", port.clone()), ("reason", reason.to_string())]),
                    n,
                );
            } else {
                m.counter(&format!("port_{k}"), "Port counter, as in /pfcswitch/port_counters", p, n);
            }
        }
    }
}

/// `/pfcswitch/pfc_counters`: PAUSE and RESUME frames, pause time and ON→OFF transitions
/// per port, direction and priority.
pub fn add_pfc_counters(m: &mut Metrics, v: &Value) {
    for (port, o) in per_port(v) {
        for prio in 0..8 {
            let l = || labels(&[("port", port.clone()), ("priority", prio.to_string())]);
            for dir in ["rx", "tx"] {
                let get = |what: &str| num(o, &format!("{dir}_{what}{prio}"));
                let (pause, resume, dur, on2off) =
                    (get("pause"), get("resume"), get("pause_duration_us"), get("on2off"));
                let (hp, hr, hd, ho): (&'static str, &'static str, &'static str, &'static str) = if dir == "rx" {
                    (
                        "PFC PAUSE frames (quanta > 0) received for the priority",
                        "PFC RESUME frames (quanta 0) received for the priority",
                        "Time the priority was paused by received PFC frames",
                        "Transitions of the priority from running to paused by received PFC",
                    )
                } else {
                    (
                        "PFC PAUSE frames (quanta > 0) sent for the priority",
                        "PFC RESUME frames (quanta 0) sent for the priority",
                        "Time the switch kept the priority paused with its PFC frames",
                        "Transitions of the priority from resumed to paused by the switch's PFC",
                    )
                };
                if let Some(n) = pause {
                    m.counter(&format!("pfc_{dir}_pause_frames"), hp, l(), n);
                }
                if let Some(n) = resume {
                    m.counter(&format!("pfc_{dir}_resume_frames"), hr, l(), n);
                }
                if let Some(us) = dur {
                    m.add(
                        &format!("pfc_{dir}_pause_duration_seconds"),
                        hd,
                        Kind::Counter,
                        l(),
                        Num::Float(us as f64 / 1e6),
                    );
                }
                if let Some(n) = on2off {
                    m.counter(&format!("pfc_{dir}_on2off_transitions"), ho, l(), n);
                }
            }
            if let Some(n) = num(o, &format!("tx_late_refresh{prio}")) {
                let h = "PFC refreshes sent after the previous PAUSE had expired (the peer could resume)";
                m.counter("pfc_tx_late_refreshes", h, l(), n);
            }
        }
    }
}

/// `/pfcswitch/queue_counters`: the per-queue counters (one list, `QUEUE_COUNTERS`), depth and watermark.
pub fn add_queue_counters(m: &mut Metrics, v: &Value) {
    for (port, o) in per_port(v) {
        for q in 0..8 {
            let l = || labels(&[("port", port.clone()), ("queue", q.to_string())]);
            for c in &QUEUE_COUNTERS {
                if let Some(n) = num(o, &c.telemetry_key("UC", q)) {
                    m.counter(
                        &format!("queue_{}", c.key),
                        "Egress queue counter, as in /pfcswitch/queue_counters",
                        l(),
                        n,
                    );
                }
            }
            if let Some(n) = num(o, &format!("UC{q}_depth")) {
                m.gauge("queue_depth_packets", "Packets waiting in the egress queue", l(), n);
            }
            if let Some(n) = num(o, &format!("UC{q}_watermark")) {
                m.gauge("queue_watermark_bytes", "Egress queue high-water mark, bytes", l(), n);
            }
        }
    }
}

/// `/pfcswitch/pg_watermark`: per ingress PG watermarks, occupancy, OFF state, lossless drops.
pub fn add_pg(m: &mut Metrics, v: &Value) {
    for (port, o) in per_port(v) {
        for pg in 0..8 {
            let l = || labels(&[("port", port.clone()), ("pg", pg.to_string())]);
            let get = |k: &str| num(o, &format!("PG{pg}_{k}"));
            if let Some(n) = get("shared_watermark") {
                m.gauge("pg_shared_watermark_bytes", "High-water mark of the PG's shared buffer use", l(), n);
            }
            if let Some(n) = get("headroom_watermark") {
                m.gauge("pg_headroom_watermark_bytes", "High-water mark of the PG's headroom use", l(), n);
            }
            if let Some(n) = get("occupancy") {
                m.gauge("pg_occupancy_bytes", "Bytes the PG holds (private + shared + headroom)", l(), n);
            }
            if let Some(n) = get("off") {
                m.gauge("pg_paused", "1 while the PG is OFF (its PAUSE in force)", l(), n);
            }
            for c in &PG_COUNTERS {
                if let Some(n) = num(o, &c.telemetry_key("PG", pg)) {
                    m.counter(
                        &format!("pg_{}", c.telemetry),
                        "Lossless packets the switch dropped for this PG",
                        l(),
                        n,
                    );
                }
            }
        }
    }
}

/// `/pfcswitch/buffer_pool`: both pools' sizes, use, watermarks and current threshold.
pub fn add_buffer_pool(m: &mut Metrics, v: &Value) {
    for (pool, o) in per_port(v) {
        for (k, x) in o {
            let Some(n) = x.as_u64() else { continue };
            let name = match k.as_str() {
                "xoff" => "buffer_pool_headroom_pool_size_bytes".to_string(),
                k => format!("buffer_pool_{k}_bytes"),
            };
            m.gauge(&name, "Buffer pool gauge, as in /pfcswitch/buffer_pool", labels(&[("pool", pool.clone())]), n);
        }
    }
}

/// `/pfcswitch/pfcwd`: per watched (port, priority) status and SONiC's counters.
pub fn add_pfcwd(m: &mut Metrics, v: &Value) {
    for (port, o) in per_port(v) {
        for prio in 0..8 {
            let Some(status) = o.get(&format!("prio{prio}_status")).and_then(Value::as_str) else { continue };
            let l = || labels(&[("port", port.clone()), ("priority", prio.to_string())]);
            m.gauge(
                "pfcwd_stormed",
                "1 while the PFC watchdog holds the priority stormed",
                l(),
                u64::from(status == "stormed"),
            );
            for (k, name, help) in [
                ("storms_detected", "pfcwd_storms_detected", "PFC storms detected"),
                ("storms_restored", "pfcwd_storms_restored", "PFC storms restored"),
                ("tx_ok", "pfcwd_tx_ok_packets", "Packets sent while the priority's PAUSE was ignored"),
                ("tx_dropped", "pfcwd_tx_dropped_packets", "Packets of a stormed priority dropped at egress"),
                ("rx_ok", "pfcwd_rx_ok_packets", "Packets the storming peer sent, passed"),
                ("rx_dropped", "pfcwd_rx_dropped_packets", "Packets the storming peer sent, dropped"),
            ] {
                if let Some(n) = num(o, &format!("prio{prio}_{k}")) {
                    m.counter(name, help, l(), n);
                }
            }
        }
    }
}

/// `/pfcswitch/latency`: RX → `tx_burst` quantiles per egress port and TC, and the count.
pub fn add_latency(m: &mut Metrics, v: &Value) {
    for (port, o) in per_port(v) {
        for tc in 0..8 {
            let Some(count) = num(o, &format!("TC{tc}_count")) else { continue };
            m.counter(
                "latency_packets",
                "Packets whose RX to tx_burst latency was recorded",
                labels(&[("port", port.clone()), ("tc", tc.to_string())]),
                count,
            );
            for (k, q) in [("p50_ns", "0.5"), ("p99_ns", "0.99"), ("p999_ns", "0.999"), ("max_ns", "1")] {
                if let Some(ns) = num(o, &format!("TC{tc}_{k}")) {
                    m.add(
                        "latency_seconds",
                        "RX to tx_burst latency quantile (1 = the maximum)",
                        Kind::Gauge,
                        labels(&[("port", port.clone()), ("tc", tc.to_string()), ("quantile", q.to_string())]),
                        Num::Float(ns as f64 / 1e9),
                    );
                }
            }
        }
    }
}

/// `/pfcswitch/routing`: the routing control thread's health and the writer's counters
/// (nothing without a router: the reply is an error).
pub fn add_routing(m: &mut Metrics, v: &Value) {
    let Some(o) = v.as_object().filter(|o| !o.contains_key("error") || o.contains_key("synced")) else { return };
    // DPDK's telemetry sends booleans as 0/1.
    let flag = |k: &str| match o.get(k) {
        Some(Value::Bool(b)) => u64::from(*b),
        Some(v) => u64::from(v.as_u64().unwrap_or(0) != 0),
        None => 0,
    };
    m.gauge("routing_thread_alive", "1 while the routing control thread runs and beats", Vec::new(), flag("alive"));
    m.gauge(
        "routing_synced",
        "1 while the FIB mirrors a complete kernel dump and every event since",
        Vec::new(),
        flag("synced"),
    );
    m.gauge(
        "routing_fib_out_of_sync",
        "1 while the FIB may differ from the kernel (not synced, routes refused, or the thread dead)",
        Vec::new(),
        flag("fib_out_of_sync"),
    );
    if let Some(n) = num(o, "routes_refused") {
        m.gauge("routing_routes_refused", "Prefixes the FIB refused (full), waiting for room", Vec::new(), n);
    }
    if let Some(n) = num(o, "resyncs") {
        m.counter(
            "routing_resyncs",
            "rtnetlink socket reopenings and full re-dumps after lost or doubtful messages",
            Vec::new(),
            n,
        );
    }
    if let Some(n) = num(o, "batches") {
        m.counter("routing_batches", "Batches of kernel changes committed to the FIB", Vec::new(), n);
    }
    if let Some(ms) = num(o, "last_batch_age_ms") {
        m.add(
            "routing_last_batch_age_seconds",
            "Time since the last batch was committed to the FIB",
            Kind::Gauge,
            Vec::new(),
            Num::Float(ms as f64 / 1e3),
        );
    }
    if let Some(rib) = o.get("rib").and_then(Value::as_object) {
        if let Some(n) = num(rib, "events") {
            m.counter("routing_events", "Kernel events applied by the FIB writer", Vec::new(), n);
        }
        if let Some(n) = num(rib, "errors") {
            m.counter(
                "routing_refusals",
                "Prefixes the FIB refused (each counted once until installed)",
                Vec::new(),
                n,
            );
        }
    }
}

/// `/pfcswitch/fdb`: entries, capacity, MAC moves, flaps (MACs held for moving too often),
/// new MACs refused by a full table.
pub fn add_fdb(m: &mut Metrics, v: &Value) {
    let Some(o) = v.as_object() else { return };
    for (k, help) in [("entries", "Learned MACs in the FDB"), ("capacity", "FDB capacity")] {
        if let Some(n) = num(o, k) {
            m.gauge(&format!("fdb_{k}"), help, Vec::new(), n);
        }
    }
    for (k, help) in [
        ("mac_moves", "MACs learned on a port other than their entry's"),
        ("mac_flaps", "MACs held on their port for moving too often (fdb_move_limit)"),
        ("learn_full", "New MACs not learned: the FDB was full"),
    ] {
        if let Some(n) = num(o, k) {
            m.counter(&format!("fdb_{k}"), help, Vec::new(), n);
        }
    }
}

/// What turns one view's reply into metrics.
type AddFn = fn(&mut Metrics, &Value);

/// The views a scrape reads, and what turns each into metrics.
const SOURCES: [(View, AddFn); 7] = [
    (View::PortCounters, add_port_counters),
    (View::PfcCounters, add_pfc_counters),
    (View::QueueCounters, add_queue_counters),
    (View::PgWatermarkShared, add_pg),
    (View::BufferPool, add_buffer_pool),
    (View::PfcwdStats, add_pfcwd),
    (View::Latency, add_latency),
];

/// One scrape: every view read through `query`, as a Prometheus page with `pfcswitch_up 1`.
/// An error when the switch could not be read (the caller serves `pfcswitch_up 0`).
pub fn gather<E: std::fmt::Display>(query: &mut dyn FnMut(&str) -> Result<Value, E>) -> Result<String, ShowError> {
    let mut m = Metrics::default();
    for (view, add) in SOURCES {
        let r = fetch(view, query)?;
        add(&mut m, &r.value);
    }
    // Without a router the command answers an error: no routing metrics.
    if let Ok(v) = query(crate::show::commands::ROUTING.name) {
        add_routing(&mut m, &v);
    }
    if let Ok(v) = query(crate::show::commands::FDB.name) {
        add_fdb(&mut m, &v);
    }
    m.gauge("up", "1 when the switch's telemetry was read for this scrape", Vec::new(), 1);
    Ok(m.encode())
}

/// The page when the switch could not be read.
pub fn down() -> String {
    let mut m = Metrics::default();
    m.gauge("up", "1 when the switch's telemetry was read for this scrape", Vec::new(), 0);
    m.encode()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A fake two-port switch answering like the real telemetry commands.
    fn fake(cmd: &str) -> Result<Value, String> {
        let (c, port) = cmd.split_once(',').map_or((cmd, None), |(c, p)| (c, Some(p)));
        let one = |o: Value| Ok(json!({ port.unwrap(): o }));
        match c {
            "/pfcswitch/ports" => Ok(json!({"ports": ["Ethernet0", "Ethernet4"], "start_time_ns": 1})),
            "/pfcswitch/port_counters" => one(json!({"rx_packets": 10, "tx_bytes": 7, "drop_runt": 2, "imissed": 0})),
            "/pfcswitch/pfc_counters" => one(json!({"tx_pause3": 5, "tx_resume3": 4, "tx_pause_duration_us3": 1500,
                                                   "rx_pause3": 0, "rx_on2off3": 1, "tx_late_refresh3": 2})),
            "/pfcswitch/queue_counters" => one(json!({"UC3_packets": 9, "UC3_bytes": 9000, "UC3_depth": 2})),
            "/pfcswitch/pg_watermark" => {
                one(json!({"PG3_shared_watermark": 4000, "PG3_off": 1, "PG3_lossless_drops": 0}))
            }
            "/pfcswitch/buffer_pool" => Ok(json!({"ingress_lossless_pool": {"size": 100, "xoff": 20}})),
            "/pfcswitch/pfcwd" => one(json!({"watchdog": "on", "prio3_status": "stormed", "prio3_storms_detected": 1})),
            "/pfcswitch/latency" => one(json!({"TC3_count": 9, "TC3_p50_ns": 2000, "TC3_p99_ns": 5000})),
            "/pfcswitch/routing" => Ok(json!({"alive": 1, "synced": true, "fib_out_of_sync": 1,
                "routes_refused": 2, "resyncs": 1, "batches": 7, "last_batch_age_ms": 1500,
                "rib": {"events": 40, "errors": 3}, "error": null})),
            "/pfcswitch/fdb" => {
                Ok(json!({"entries": 3, "capacity": 65536, "mac_moves": 7, "mac_flaps": 1, "learn_full": 0}))
            }
            _ => Ok(json!({"error": "unknown"})),
        }
    }

    #[test]
    fn prometheus_names_and_labels() {
        let page = gather(&mut fake).unwrap();
        for line in [
            "pfcswitch_up 1",
            "pfcswitch_port_rx_packets_total{port=\"Ethernet0\"} 10",
            "pfcswitch_port_drops_total{port=\"Ethernet4\",reason=\"runt\"} 2",
            "pfcswitch_pfc_tx_pause_frames_total{port=\"Ethernet0\",priority=\"3\"} 5",
            "pfcswitch_pfc_tx_resume_frames_total{port=\"Ethernet0\",priority=\"3\"} 4",
            "pfcswitch_pfc_tx_pause_duration_seconds_total{port=\"Ethernet0\",priority=\"3\"} 0.0015",
            "pfcswitch_pfc_rx_on2off_transitions_total{port=\"Ethernet4\",priority=\"3\"} 1",
            "pfcswitch_pfc_tx_late_refreshes_total{port=\"Ethernet0\",priority=\"3\"} 2",
            "pfcswitch_queue_tx_packets_total{port=\"Ethernet0\",queue=\"3\"} 9",
            "pfcswitch_queue_tx_bytes_total{port=\"Ethernet0\",queue=\"3\"} 9000",
            "pfcswitch_queue_depth_packets{port=\"Ethernet0\",queue=\"3\"} 2",
            "pfcswitch_pg_shared_watermark_bytes{port=\"Ethernet0\",pg=\"3\"} 4000",
            "pfcswitch_pg_paused{port=\"Ethernet0\",pg=\"3\"} 1",
            "pfcswitch_pg_lossless_drops_total{port=\"Ethernet0\",pg=\"3\"} 0",
            "pfcswitch_buffer_pool_size_bytes{pool=\"ingress_lossless_pool\"} 100",
            "pfcswitch_buffer_pool_headroom_pool_size_bytes{pool=\"ingress_lossless_pool\"} 20",
            "pfcswitch_pfcwd_stormed{port=\"Ethernet0\",priority=\"3\"} 1",
            "pfcswitch_pfcwd_storms_detected_total{port=\"Ethernet0\",priority=\"3\"} 1",
            "pfcswitch_latency_packets_total{port=\"Ethernet0\",tc=\"3\"} 9",
            "pfcswitch_latency_seconds{port=\"Ethernet0\",tc=\"3\",quantile=\"0.99\"} 0.000005",
            "pfcswitch_routing_thread_alive 1",
            "pfcswitch_routing_synced 1",
            "pfcswitch_routing_fib_out_of_sync 1",
            "pfcswitch_routing_routes_refused 2",
            "pfcswitch_routing_resyncs_total 1",
            "pfcswitch_routing_last_batch_age_seconds 1.5",
            "pfcswitch_routing_refusals_total 3",
            "pfcswitch_fdb_entries 3",
            "pfcswitch_fdb_mac_moves_total 7",
            "pfcswitch_fdb_mac_flaps_total 1",
            "pfcswitch_fdb_learn_full_total 0",
            "# TYPE pfcswitch_pfc_tx_pause_frames_total counter",
            "# TYPE pfcswitch_queue_depth_packets gauge",
        ] {
            assert!(page.lines().any(|l| l == line), "missing `{line}` in\n{page}");
        }
        // Every sample line is `name{labels} value` with a name Prometheus accepts.
        for l in page.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
            let name: String = l.chars().take_while(|c| *c != '{' && *c != ' ').collect();
            assert!(
                name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && name.starts_with("pfcswitch_"),
                "{l}"
            );
            assert!(l.rsplit(' ').next().unwrap().parse::<f64>().is_ok(), "{l}");
        }
    }

    #[test]
    fn unreachable_switch_is_up_zero() {
        assert!(down().lines().any(|l| l == "pfcswitch_up 0"));
        let mut broken = |_: &str| -> Result<Value, String> { Err("no socket".into()) };
        assert!(gather(&mut broken).is_err());
    }
}
