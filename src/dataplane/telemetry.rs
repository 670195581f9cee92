//! The `/pfcswitch/...` DPDK telemetry commands: read-only views of the live counters,
//! watermarks and histograms, safe to run on DPDK's telemetry thread (they read atomics
//! and the latency histograms' mutexes, never the fast path's own state); and one test
//! knob, `/pfcswitch/tx_release,<port>,<n>`, which lets n more packets leave a port with
//! `tx_enable = false` (an atomic the port's TX lcore reads).
//!
//! DPDK 22.11 sends at most 16 KB per reply and silently leaves out what does not fit,
//! which a dozen ports of PFC counters already exceed. So every per-port command takes an
//! optional port name (`/pfcswitch/pfc_counters,Ethernet0`) and answers for that port
//! only; `/pfcswitch/ports` lists the names; and a reply that would not fit whole is
//! replaced by an error object saying how to ask, never sent truncated.

use std::sync::{Arc, OnceLock};

use serde_json::{json, Map, Value};

use crate::counters::{DropReason, Totals, PG_COUNTERS, QUEUE_COUNTERS, TC_COUNTERS};
use crate::dpdk::{stats_of, telemetry};
use crate::pfc::{PfcPrioStats, PfcTxCounters};
use crate::show::commands::{self, Command};

use super::shared::Shared;

/// Everything the commands read.
#[derive(Clone)]
pub struct Views {
    pub shared: Arc<Shared>,
    pub pfc_tx: Vec<Arc<PfcTxCounters>>,
    pub port_ids: Vec<u16>,
    pub tsc_hz: u64,
    /// The router, if any port is a router interface.
    pub routing: Option<RoutingView>,
}

/// What `/pfcswitch/routes` and `/pfcswitch/neighbours` read: views the control thread
/// takes of its writer on request (never the fast path's tables).
#[derive(Clone)]
pub struct RoutingView {
    pub status: Arc<crate::kernel::sync::SyncStatus>,
    /// Switch port names by index.
    pub names: Vec<String>,
    /// The router's tables' memory (fixed at start).
    pub memory: super::routing::TableMemory,
}

/// Rows of one page: DPDK sends 16 KB at most, a string of 127 bytes at most.
const PAGE_BYTES: usize = 12 * 1024;
const PAGE_ROWS: usize = 200;

/// `v4|v6[,<offset>]`.
fn family_offset(params: &str) -> Result<(bool, usize), String> {
    let usage = "parameters: v4|v6[,<offset>]";
    let mut it = params.split(',').map(str::trim);
    let v6 = match it.next() {
        Some("v4") | Some("") | None => false,
        Some("v6") => true,
        _ => return Err(usage.into()),
    };
    let off = match it.next() {
        Some(o) => o.parse().map_err(|_| usage.to_string())?,
        None => 0,
    };
    Ok((v6, off))
}

/// One reply's page of a table: the rows from `offset` that fit, built one at a time so
/// that rows before `offset` or after the page are never formatted (a listing of 100k
/// routes is then O(n) per page in counting, not in formatting).
struct Page {
    offset: usize,
    bytes: usize,
    rows: Vec<String>,
}

impl Page {
    fn new(offset: usize) -> Page {
        Page { offset, bytes: 0, rows: Vec::new() }
    }

    /// Room for another row?
    fn open(&self) -> bool {
        self.rows.len() < PAGE_ROWS && self.bytes <= PAGE_BYTES
    }

    /// Add `row` if it fits; false once the page is full.
    fn push(&mut self, row: String) -> bool {
        if self.rows.len() >= PAGE_ROWS || self.bytes + row.len() + 3 > PAGE_BYTES {
            self.bytes = PAGE_BYTES + 1;
            return false;
        }
        self.bytes += row.len() + 3;
        self.rows.push(row);
        true
    }

    /// `{"total", "offset", "rows": [...]}`.
    fn done(self, total: usize) -> Value {
        json!({ "total": total, "offset": self.offset, "rows": self.rows })
    }
}

impl RoutingView {
    /// The routing thread's view of what is installed: a fresh one for a listing's first
    /// page (`fresh`: what the dataplane uses now, not up to a second before), the same one
    /// for the pages after it (one listing, one view), unless it is older than 10 s.
    fn view(&self, fresh: bool) -> Result<Arc<crate::route::RibView>, String> {
        let max_age = if fresh { std::time::Duration::ZERO } else { std::time::Duration::from_secs(10) };
        self.status
            .view(max_age, std::time::Duration::from_secs(3))
            .ok_or_else(|| "the routing control thread did not answer".to_string())
    }

    fn name(&self, port: u16) -> &str {
        self.names.get(usize::from(port)).map_or("?", |s| s.as_str())
    }

    /// One row per next hop: `prefix|code|metric|via|iface|mac|weight` (via: a gateway,
    /// or `direct`, `local`, `blackhole`, `kernel`; mac empty while unresolved).
    fn route_rows(&self, v6: bool, offset: usize) -> Result<Value, String> {
        use crate::route::{Prefix, RouteRow, Target};
        let view = self.view(offset == 0)?;
        let routes = || view.routes.iter().filter(|r| matches!(r.prefix, Prefix::V6(_)) == v6);
        let rows_of = |r: &RouteRow| r.nexthops.len().max(1);
        let mut page = Page::new(offset);
        let mut skip = offset;
        for r in routes() {
            if skip >= rows_of(r) {
                skip -= rows_of(r);
                continue;
            }
            if !page.open() {
                break;
            }
            let metric = r.metric.map(|m| m.to_string()).unwrap_or_default();
            let code = r.origin.code();
            if r.nexthops.is_empty() {
                let via = match r.target {
                    Target::Glean => "direct",
                    Target::Local => "local",
                    Target::Blackhole => "blackhole",
                    Target::NonPort => "non-port",
                    _ => "kernel",
                };
                let iface = r.port.map(|p| self.name(p)).unwrap_or("");
                page.push(format!("{}|{code}|{metric}|{via}|{iface}||", r.prefix));
            }
            for (port, gw, mac, weight) in r.nexthops.iter().skip(skip) {
                let mac = mac.map(|m| m.to_string()).unwrap_or_default();
                if !page.push(format!("{}|{code}|{metric}|{gw}|{}|{mac}|{weight}", r.prefix, self.name(*port))) {
                    break;
                }
            }
            skip = 0;
        }
        Ok(page.done(routes().map(rows_of).sum()))
    }

    /// `address|mac|iface` (mac empty while unresolved).
    fn neighbour_rows(&self, v6: bool, offset: usize) -> Result<Value, String> {
        let view = self.view(offset == 0)?;
        let neighbours = || view.neighbours.iter().filter(|n| n.addr.is_ipv6() == v6);
        let mut page = Page::new(offset);
        for n in neighbours().skip(offset) {
            let mac = n.mac.map(|m| m.to_string()).unwrap_or_default();
            if !page.push(format!("{}|{mac}|{}", n.addr, self.name(n.port))) {
                break;
            }
        }
        Ok(page.done(neighbours().count()))
    }
}

/// One port's object in a per-port reply.
type PortView = fn(&Views, &Totals, usize) -> Map<String, Value>;

/// When this instance registered its commands (ns since the Unix epoch): with the pid, it
/// tells `show` a restarted switch from the one a `clear` snapshot was taken of.
fn start_time_ns() -> u64 {
    static START: OnceLock<u64> = OnceLock::new();
    *START.get_or_init(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
    })
}

fn error(msg: String) -> Value {
    json!({ "error": msg })
}

/// Short: DPDK cuts string values at 127 bytes (`RTE_TEL_MAX_STRING_LEN`).
fn too_large(cmd: &str, e: &telemetry::ReplyTooLarge) -> String {
    let what = match e {
        telemetry::ReplyTooLarge::Bytes { len } => format!("{len} B > {} B", telemetry::MAX_REPLY_LEN),
        telemetry::ReplyTooLarge::Entries { entries } => format!("{entries} > {} entries", telemetry::MAX_DICT_ENTRIES),
    };
    format!("reply too large ({what}): ask {cmd},<port> (names: /pfcswitch/ports)")
}

impl Views {
    fn totals(&self) -> Totals {
        Totals::collect(self.shared.counters.iter().map(|c| &**c), self.shared.ports.len())
    }

    /// The ports a parameter selects: every port when empty, else the one it names.
    fn select(&self, params: &str) -> Result<Vec<usize>, String> {
        let name = params.trim();
        if name.is_empty() {
            return Ok((0..self.shared.ports.len()).collect());
        }
        match self.shared.ports.iter().position(|p| p.name == name) {
            Some(i) => Ok(vec![i]),
            None => {
                Err(format!("unknown port '{}' (names: /pfcswitch/ports)", name.chars().take(64).collect::<String>()))
            }
        }
    }

    /// `{"<port>": {...}}` for the selected ports.
    fn per_port(&self, ports: &[usize], f: PortView) -> Value {
        let t = self.totals();
        Value::Object(
            ports.iter().map(|&i| (self.shared.ports[i].name.clone(), Value::Object(f(self, &t, i)))).collect(),
        )
    }

    /// `/pfcswitch/tx_release,<port>,<n>`: `n` (1..=1000000) more data packets may leave
    /// `port`, which must have `tx_enable = false`.
    pub fn tx_release(&self, params: &str) -> Result<Value, String> {
        let usage = "parameters: <port>,<packets 1..=1000000>";
        let (name, n) = params.split_once(',').ok_or(usage)?;
        let n: u64 = n.trim().parse().ok().filter(|n| (1..=1_000_000).contains(n)).ok_or(usage)?;
        let &[i] = self.select(name)?.as_slice() else { return Err(usage.to_string()) };
        let p = &self.shared.ports[i];
        if p.tx_enable.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(format!("{} transmits already (tx_enable): nothing to release", p.name));
        }
        let credit = p.tx_credit.fetch_add(n, std::sync::atomic::Ordering::Relaxed) + n;
        Ok(json!({ "port": p.name, "released": n, "credit": credit }))
    }

    fn routing(&self) -> Result<&RoutingView, String> {
        self.routing.as_ref().ok_or_else(|| "no router interface ([interface] is empty)".to_string())
    }

    /// `/pfcswitch/routes,v4|v6,<offset>`: a page of the installed routes.
    pub fn routes(&self, params: &str) -> Result<Value, String> {
        let (v6, off) = family_offset(params)?;
        self.routing()?.route_rows(v6, off)
    }

    /// `/pfcswitch/neighbours,v4|v6,<offset>`: a page of the neighbours.
    pub fn neighbours(&self, params: &str) -> Result<Value, String> {
        let (v6, off) = family_offset(params)?;
        self.routing()?.neighbour_rows(v6, off)
    }

    /// `/pfcswitch/routing`: the control thread's state and the writer's counters.
    pub fn routing_status(&self, _params: &str) -> Result<Value, String> {
        let r = self.routing()?;
        let mut v = super::report::routing_json(&r.status);
        if let (Value::Object(o), Ok(Value::Object(mut m))) = (&mut v, serde_json::to_value(r.memory)) {
            m.insert("fdb_bytes".into(), self.shared.fdb.bytes().into());
            o.insert("memory".into(), Value::Object(m));
        }
        Ok(v)
    }

    /// `/pfcswitch/config,<change>` ([`super::reconfig::handle`]).
    /// An error comes whole in `error_pieces` too: DPDK cuts a string at 127 bytes, and a
    /// validation error names a file and a field path.
    pub fn config(&self, params: &str) -> Result<Value, String> {
        Ok(super::reconfig::handle(&self.shared, params).unwrap_or_else(|e| {
            json!({ "error": e.chars().take(120).collect::<String>(), "error_pieces": crate::reconfig::pieces(&e) })
        }))
    }

    /// `/pfcswitch/running_config`: `{"pieces": [...]}`, the text split into strings DPDK
    /// sends whole ([`crate::reconfig::pieces`]).
    pub fn running_config(&self) -> Value {
        match self.shared.reconfig.running_text() {
            Ok(Some(t)) => json!({ "pieces": crate::reconfig::pieces(&t) }),
            Ok(None) => error("the configuration file could not be read at start".into()),
            Err(e) => error(e),
        }
    }

    pub fn ports(&self) -> Value {
        json!({
            "ports": self.shared.ports.iter().map(|p| p.name.clone()).collect::<Vec<_>>(),
            "pid": std::process::id(),
            "start_time_ns": start_time_ns(),
        })
    }

    pub fn pfc_counters(&self, _t: &Totals, i: usize) -> Map<String, Value> {
        let p = &self.shared.ports[i];
        let s = PfcPrioStats::snapshot(&self.pfc_tx[i], &p.pfc_rx_counters, self.tsc_hz);
        let mut o = Map::new();
        for (n, x) in s.iter().enumerate() {
            o.insert(format!("rx_pfc{n}"), x.rx_pkts().into());
        }
        for (n, x) in s.iter().enumerate() {
            o.insert(format!("tx_pfc{n}"), x.tx_pkts().into());
        }
        for (n, x) in s.iter().enumerate() {
            o.insert(format!("rx_pause{n}"), x.rx_pause.into());
            o.insert(format!("rx_resume{n}"), x.rx_resume.into());
            o.insert(format!("tx_pause{n}"), x.tx_pause.into());
            o.insert(format!("tx_resume{n}"), x.tx_resume.into());
            o.insert(format!("rx_pause_duration_us{n}"), x.rx_pause_duration_us.into());
            o.insert(format!("tx_pause_duration_us{n}"), x.tx_pause_duration_us.into());
            o.insert(format!("rx_on2off{n}"), x.rx_on2off.into());
            o.insert(format!("tx_on2off{n}"), x.tx_on2off.into());
            o.insert(format!("tx_late_refresh{n}"), x.tx_late_refresh.into());
        }
        o
    }

    pub fn queue_counters(&self, t: &Totals, i: usize) -> Map<String, Value> {
        let pt = &t.ports[i];
        let mut o = Map::new();
        for q in 0..8 {
            for c in &QUEUE_COUNTERS {
                o.insert(c.telemetry_key("UC", q), (c.get)(pt)[q].into());
            }
            o.insert(format!("UC{q}_depth"), (self.shared.egress[i].depth(q) as u64).into());
            // Bytes, the MMU's high-water mark since start or the last `clear watermarks`.
            o.insert(format!("UC{q}_watermark"), self.shared.mmu.queue_occupancy(i as u16, q as u8).watermark.into());
        }
        o
    }

    pub fn pg_watermark(&self, t: &Totals, i: usize) -> Map<String, Value> {
        let mut o = Map::new();
        let port = i as u16;
        for pg in 0..8u8 {
            let w = self.shared.mmu.pg_watermarks(port, pg);
            let occ = self.shared.mmu.pg_occupancy(port, pg);
            o.insert(format!("PG{pg}_shared_watermark"), w.shared.into());
            o.insert(format!("PG{pg}_headroom_watermark"), w.headroom.into());
            o.insert(format!("PG{pg}_xoff"), self.shared.mmu.pg_xoff(port, pg).into());
            o.insert(format!("PG{pg}_occupancy"), occ.total.into());
            o.insert(format!("PG{pg}_off"), (self.shared.mmu.is_off(port, pg) as u64).into());
            for c in &PG_COUNTERS {
                o.insert(c.telemetry_key("PG", pg as usize), (c.get)(&t.ports[i])[pg as usize].into());
            }
        }
        o
    }

    pub fn buffer_pool(&self) -> Value {
        let s = self.shared.mmu.pool_stats();
        json!({
            "ingress_lossless_pool": {
                "size": s.lossless.size,
                "shared_size": s.lossless.shared_size,
                "occupancy": s.lossless.private_used + s.lossless.shared_used + s.lossless.headroom_used,
                "shared_used": s.lossless.shared_used,
                "headroom_used": s.lossless.headroom_used,
                "shared_watermark": s.lossless.shared_watermark,
                "headroom_watermark": s.lossless.headroom_watermark,
                "xoff": s.lossless.headroom_pool_size,
                "threshold": self.shared.mmu.threshold(),
            },
            "egress_lossy_pool": {
                "size": s.lossy.size,
                "shared_size": s.lossy.shared_size,
                "occupancy": s.lossy.private_used + s.lossy.shared_used,
                "shared_watermark": s.lossy.shared_watermark,
                "threshold": self.shared.mmu.lossy_threshold(),
            },
        })
    }

    pub fn latency(&self, _t: &Totals, i: usize) -> Map<String, Value> {
        let mut o = Map::new();
        for (tc, n, p50, p99, p999, max) in self.shared.ports[i].latency.summary() {
            o.insert(format!("TC{tc}_count"), n.into());
            o.insert(format!("TC{tc}_p50_ns"), p50.into());
            o.insert(format!("TC{tc}_p99_ns"), p99.into());
            o.insert(format!("TC{tc}_p999_ns"), p999.into());
            o.insert(format!("TC{tc}_max_ns"), max.into());
        }
        o
    }

    pub fn port_counters(&self, t: &Totals, i: usize) -> Map<String, Value> {
        let pt = &t.ports[i];
        let pmd = stats_of(self.port_ids[i]);
        // RX ring overflow and an empty mempool on a port that carries a lossless class
        // lose that class before the MMU sees it.
        let nic_loss = if self.shared.ports[i].pfc.pfc_mask() != 0 { pmd.imissed + pmd.rx_nombuf } else { 0 };
        let mut o = Map::new();
        for (name, v) in pt.scalars() {
            o.insert(name.into(), v.into());
        }
        o.insert("imissed".into(), pmd.imissed.into());
        o.insert("rx_nombuf".into(), pmd.rx_nombuf.into());
        o.insert("lossless_drops".into(), (pt.lossless_drops() + nic_loss).into());
        o.insert("lossless_nic_loss".into(), nic_loss.into());
        o.insert("lossless_discards".into(), pt.lossless_discards().into());
        for r in DropReason::ALL {
            o.insert(format!("drop_{}", r.as_str()), pt.drop_count(r).into());
        }
        for r in crate::route::PuntReason::ALL {
            o.insert(format!("punted_{}", r.name()), pt.punted[r.index()].into());
            o.insert(format!("punt_dropped_{}", r.name()), pt.punt_dropped[r.index()].into());
        }
        for g in crate::route::TrapGroup::ALL {
            o.insert(format!("copp_{}_passed", g.name()), pt.copp_passed[g.index()].into());
            o.insert(format!("copp_{}_dropped", g.name()), pt.copp_dropped[g.index()].into());
        }
        o
    }

    /// Per ingress (port, TC): received + flood copies = transmitted + dropped + still in
    /// flight, from the live counters; and the port's drops by reason.
    pub fn conservation(&self, t: &Totals, i: usize) -> Map<String, Value> {
        let pt = &t.ports[i];
        let mut o = Map::new();
        for tc in 0..8 {
            for c in &TC_COUNTERS {
                o.insert(c.telemetry_key("TC", tc), (c.get)(pt)[tc].into());
            }
            let (rx, copies, tx, dropped) = (pt.tc_rx[tc], pt.tc_copies[tc], pt.tc_tx[tc], pt.tc_dropped[tc]);
            // The counters are read one after another while packets move: one sent
            // between the reads of rx and tx could make the rest negative for a moment.
            o.insert(format!("TC{tc}_in_flight"), (rx + copies).saturating_sub(tx + dropped).into());
        }
        o.insert("mac_control_rx".into(), pt.mac_control_rx.into());
        o.insert("lldp_rx".into(), pt.lldp_rx.into());
        for r in DropReason::ALL {
            o.insert(format!("drop_{}", r.as_str()), pt.drop_count(r).into());
        }
        o
    }

    pub fn pfcwd(&self, _t: &Totals, i: usize) -> Map<String, Value> {
        let mut o = Map::new();
        match &self.shared.ports[i].pfcwd {
            Some(st) => {
                o.insert("watchdog".into(), "on".into());
                // The settings in force (a live change may have replaced the file's).
                if let Some(c) = self.shared.ports[i].tx_live.params().pfcwd {
                    o.insert("action".into(), c.action.as_str().into());
                    o.insert("detection_time_ms".into(), c.detection_time_ms.into());
                    o.insert("restoration_time_ms".into(), c.restoration_time_ms.into());
                }
                st.write_telemetry(&mut o);
            }
            None => {
                o.insert("watchdog".into(), "off".into());
            }
        }
        o
    }

    /// LLDP/DCBX of a port: what it sends, its peer, the PFC mismatch flag, counters.
    pub fn lldp(&self, _t: &Totals, i: usize) -> Map<String, Value> {
        let mut o = Map::new();
        if !self.shared.lldp.enabled {
            o.insert("lldp".into(), "off".into());
            return o;
        }
        o.insert("lldp".into(), "on".into());
        if let Value::Object(m) = self.shared.lldp.view(i) {
            o.extend(m);
        }
        o
    }

    pub fn fdb(&self) -> Value {
        let mut m = Map::new();
        m.insert("entries".into(), self.shared.fdb.len().into());
        m.insert("capacity".into(), (self.shared.fdb.slots() / 2).into());
        m.insert("bytes".into(), self.shared.fdb.bytes().into());
        if let Value::Object(c) = serde_json::to_value(self.shared.fdb.counters()).unwrap_or_default() {
            m.extend(c);
        }
        m.insert("move_damping".into(), serde_json::to_value(self.shared.fdb.damping()).unwrap_or_default());
        Value::Object(m)
    }

    /// SONiC's `show mac`: the live FDB entries as `"<vid>|<mac>|<port>"` (`|flapping`
    /// after an entry held on its port for moving too often), the first by
    /// VLAN then MAC, optionally of one VLAN (param: VID). At most [`MAC_REPLY_MAX`] entries
    /// (DPDK's reply limit); `total` counts them all.
    pub fn mac(&self, params: &str) -> Result<Value, String> {
        let vid = parse_vid(params, true)?;
        let now = crate::dpdk::rdtsc();
        let mut e: Vec<(u16, [u8; 6], u16, bool)> =
            self.shared.fdb.entries_with_state(now).filter(|&(v, _, _, _)| vid.is_none_or(|w| w == v)).collect();
        e.sort_unstable();
        let total = e.len();
        let names = |p: u16| self.shared.ports.get(usize::from(p)).map_or_else(|| p.to_string(), |x| x.name.clone());
        // One string `"<vid>|<mac>|<port>"` each: DPDK telemetry keeps an array of strings,
        // but stringifies an array nested in it and refuses '|' and ':' in a dict key.
        let rows: Vec<Value> = e
            .iter()
            .take(MAC_REPLY_MAX)
            .map(|&(v, m, p, flap)| {
                format!("{v}|{}|{}{}", crate::wire::MacAddr(m), names(p), if flap { "|flapping" } else { "" }).into()
            })
            .collect();
        Ok(json!({ "entries": rows, "total": total }))
    }

    /// `sonic-clear fdb all` / `sonic-clear fdb vlan VlanN`: remove the learned entries
    /// (param: `all` or a VID). They are learned again from the next frames.
    pub fn fdb_clear(&self, params: &str) -> Result<Value, String> {
        let vid = parse_vid(params, false)?;
        Ok(json!({ "removed": self.shared.fdb.flush(vid) }))
    }

    /// `clear watermarks`: every MMU watermark starts again from the current occupancy
    /// (a run's peak, not the switch's since start).
    pub fn watermark_clear(&self, params: &str) -> Result<Value, String> {
        if !params.trim().is_empty() {
            return Err("takes no parameter".to_string());
        }
        self.shared.mmu.reset_watermarks();
        Ok(json!({ "reset": true }))
    }

    /// The reply to `cmd` with `params`; an error object when the parameter is wrong or
    /// the whole reply would not fit DPDK's limit.
    fn reply(&self, cmd: &'static str, handler: Handler, params: &str) -> Value {
        let v = match handler {
            Handler::PerPort(f) => match self.select(params) {
                Ok(ports) => self.per_port(&ports, f),
                Err(e) => return error(e),
            },
            Handler::Switch(f) => {
                if !params.trim().is_empty() {
                    return error(format!("{cmd} is switch-wide and takes no parameter"));
                }
                f(self)
            }
            Handler::Action(f) => match f(self, params) {
                Ok(v) => v,
                Err(e) => return error(e),
            },
        };
        match telemetry::check_reply(cmd, &v) {
            Ok(()) => v,
            Err(e) => error(too_large(cmd, &e)),
        }
    }
}

/// The most entries `/pfcswitch/mac` returns (about 50 bytes each in a 16 KB reply).
pub const MAC_REPLY_MAX: usize = 256;

/// A VID parameter (0..=4095, or `Vlan<N>`); `all` (or empty, when `empty_ok`) = None.
fn parse_vid(params: &str, empty_ok: bool) -> Result<Option<u16>, String> {
    let p = params.trim();
    if p == "all" || empty_ok && p.is_empty() {
        return Ok(None);
    }
    p.strip_prefix("Vlan")
        .unwrap_or(p)
        .parse::<u16>()
        .ok()
        .filter(|&v| v <= 4095)
        .map(Some)
        .ok_or_else(|| format!("parameter: 'all', a VID 0..=4095 or VlanN, not '{p}'"))
}

/// A command's handler, of its [`commands::Scope`].
#[derive(Clone, Copy)]
enum Handler {
    /// One object per port; the optional parameter names one port.
    PerPort(PortView),
    /// The whole switch.
    Switch(fn(&Views) -> Value),
    /// A command with parameters of its own (a test knob, a page of a table).
    Action(fn(&Views, &str) -> Result<Value, String>),
}

impl Handler {
    fn scope(self) -> commands::Scope {
        match self {
            Handler::PerPort(_) => commands::Scope::PerPort,
            Handler::Switch(_) => commands::Scope::Switch,
            Handler::Action(_) => commands::Scope::Action,
        }
    }
}

/// The commands ([`crate::show::commands`]) and their handlers, registered in this order:
/// `/pfcswitch/ports` last, so that a client that finds it answering (`pfcswitch probe`
/// waits on it) finds every other command there too; the main thread registering them may
/// be off its CPU between two on a loaded host, and an unregistered command answers null.
const COMMANDS: [(&Command, Handler); 20] = [
    (&commands::PFCWD, Handler::PerPort(Views::pfcwd)),
    (&commands::PFC_COUNTERS, Handler::PerPort(Views::pfc_counters)),
    (&commands::QUEUE_COUNTERS, Handler::PerPort(Views::queue_counters)),
    (&commands::PG_WATERMARK, Handler::PerPort(Views::pg_watermark)),
    (&commands::BUFFER_POOL, Handler::Switch(Views::buffer_pool)),
    (&commands::LATENCY, Handler::PerPort(Views::latency)),
    (&commands::PORT_COUNTERS, Handler::PerPort(Views::port_counters)),
    (&commands::CONSERVATION, Handler::PerPort(Views::conservation)),
    (&commands::LLDP, Handler::PerPort(Views::lldp)),
    (&commands::FDB, Handler::Switch(Views::fdb)),
    (&commands::ROUTES, Handler::Action(Views::routes)),
    (&commands::NEIGHBOURS, Handler::Action(Views::neighbours)),
    (&commands::ROUTING, Handler::Action(Views::routing_status)),
    (&commands::MAC, Handler::Action(Views::mac)),
    (&commands::FDB_CLEAR, Handler::Action(Views::fdb_clear)),
    (&commands::WATERMARK_CLEAR, Handler::Action(Views::watermark_clear)),
    (&commands::TX_RELEASE, Handler::Action(Views::tx_release)),
    (&commands::CONFIG, Handler::Action(Views::config)),
    (&commands::RUNNING_CONFIG, Handler::Switch(Views::running_config)),
    (&commands::PORTS, Handler::Switch(Views::ports)),
];

/// Register every command. Failures are logged, not fatal (telemetry may be disabled
/// with `--no-telemetry`).
pub fn register(v: Views) {
    start_time_ns();
    for (c, handler) in COMMANDS {
        debug_assert_eq!(c.scope, handler.scope(), "{}", c.name);
        let v = v.clone();
        if let Err(e) = telemetry::register(c.name, c.help, move |params| v.reply(c.name, handler, params)) {
            log::warn!("telemetry: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{commands, COMMANDS};

    /// DPDK 22.11 refuses to register a command whose name reaches 56 bytes or whose help
    /// reaches 128 (`rte_telemetry_register_cmd`: -EINVAL), and the command then answers null.
    #[test]
    fn names_and_help_fit_dpdk() {
        for (c, _) in COMMANDS {
            assert!(c.name.len() < 56 && c.help.len() < 128, "{}: {} bytes of help", c.name, c.help.len());
        }
    }

    /// Each command's handler answers as its declaration says, once, and every `show`
    /// view asks a command that is registered.
    #[test]
    fn handlers_match_their_declarations() {
        for (i, (c, h)) in COMMANDS.iter().enumerate() {
            assert_eq!(c.scope, h.scope(), "{}", c.name);
            assert!(COMMANDS[..i].iter().all(|(d, _)| d.name != c.name), "{} twice", c.name);
        }
        for d in crate::show::VIEWS {
            assert!(COMMANDS.iter().any(|(c, _)| *c == d.command), "{:?}: {}", d.view, d.command.name);
        }
        assert!(*COMMANDS[COMMANDS.len() - 1].0 == commands::PORTS, "/pfcswitch/ports is registered last");
    }
}
