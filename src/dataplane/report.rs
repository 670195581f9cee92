//! What the switch reports: the live counters line, and at stop the summary, the counters
//! JSON (`--stats-json`), PFC counters, MMU watermarks, the PFC reaction time, and the
//! conservation and leak checks.

use std::time::Duration;

use serde_json::{json, Value};

use crate::counters::{
    percentile, ArrayCounter, DropReason, PortTotals, Totals, WorkerTotals, PG_COUNTERS, QUEUE_COUNTERS, TC_COUNTERS,
};
use crate::dpdk::{Mempool, PortStats};
use crate::pfc::PfcPrioStats;

use super::control::Control;
use super::shared::Shared;
use super::spec::{PortSpec, SwitchSpec};

/// Per port at stop.
#[derive(Debug, Clone)]
pub struct PortReport {
    pub name: String,
    pub port_id: u16,
    pub mac: String,
    pub totals: PortTotals,
    pub pmd: PortStats,
    pub pfc: [PfcPrioStats; 8],
    pub pfc_enable: u8,
    /// 802.3x PAUSE frames received, and PFC frames naming only priorities without PFC.
    pub rx_link_pause: u64,
    /// 802.3x PAUSE frames ignored (a port with PFC, `pause_8023x = "ignore"`).
    pub rx_link_pause_ignored: u64,
    pub rx_ignored: u64,
    /// PFC watchdog per priority (empty when off).
    pub pfcwd: Value,
    /// Per lossless PG: (pg, shared watermark, headroom watermark, headroom size).
    pub pg_watermarks: Vec<(u8, u64, u64, u64)>,
    /// The TX ring ahead of a PFC frame: `tx_inflight_limit`, `control_tx_queue`, and the
    /// headroom's `tx_inflight` term.
    pub tx_ring: Value,
    /// RX → tx_burst latency of the packets this port sent, per TC with samples.
    pub latency: Vec<TcLatency>,
}

/// Latency of one (egress port, TC), in ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcLatency {
    pub tc: u8,
    pub count: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

impl TcLatency {
    fn to_json(self) -> Value {
        json!({"count": self.count, "p50_ns": self.p50_ns, "p99_ns": self.p99_ns, "p999_ns": self.p999_ns, "max_ns": self.max_ns})
    }
}

/// Packets of a lossless class lost, by where.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LosslessLoss {
    /// Dropped by the switch: the MMU's headroom was full, or a lossless egress queue.
    pub switch: u64,
    /// Lost by the NIC before the switch saw them (`imissed` + `rx_nombuf`) on ports that
    /// carry a lossless class.
    pub nic: u64,
}

impl LosslessLoss {
    pub fn total(&self) -> u64 {
        self.switch + self.nic
    }
}

impl PortReport {
    /// RX ring overflow and an empty mempool on a port with PFC enabled lose the
    /// lossless class before the MMU sees it.
    pub fn lossless_nic_loss(&self) -> u64 {
        if self.pfc_enable != 0 {
            self.pmd.imissed + self.pmd.rx_nombuf
        } else {
            0
        }
    }

    pub fn lossless_loss(&self) -> LosslessLoss {
        LosslessLoss { switch: self.totals.lossless_drops(), nic: self.lossless_nic_loss() }
    }
}

/// Per worker lcore: its own counters (busy TSC cycles, PAUSE refreshes it sent...).
#[derive(Debug, Clone, serde::Serialize)]
pub struct WorkerReport {
    pub lcore: u32,
    #[serde(flatten)]
    pub counters: WorkerTotals,
}

/// What [`RunReport::audit`] found at stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Audit {
    /// Every packet and mbuf accounted for (the run's exit status).
    pub ok: bool,
    /// One line per finding (conservation, per (port, TC), lossless loss, leak).
    pub lines: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct RunReport {
    pub ports: Vec<PortReport>,
    pub elapsed: Duration,
    pub tsc_hz: u64,
    pub workers: Vec<WorkerReport>,
    pub mbufs_total: u32,
    /// Mbufs not back in the pools after everything stopped (a leak if nonzero).
    pub mbufs_in_use_after_stop: u32,
    /// Bytes the MMU still accounts after every packet was released (must be 0).
    pub mmu_bytes_after_stop: u64,
    /// PFC reaction samples in TSC ticks (Xoff crossing → PAUSE handed to tx_burst).
    pub pfc_reaction_ticks: Vec<u64>,
    pub edge_overflow: u64,
    pub rx_flushed_at_stop: u64,
    pub ctl_failures: u64,
    /// The control lcore's longest pass, TSC cycles, naps left out (`control.max_loop_cycles`).
    pub control_max_loop_cycles: u64,
    pub pool: Value,
    /// Output the I/O thread could not keep up with (dropped, never waited for).
    pub io_dropped: super::io::IoDropped,
    /// The router's control thread at stop (None without a router interface).
    pub routing: Option<Value>,
    /// The FDB at stop: entries, MAC moves, flaps (holds), learning refused (table full).
    pub fdb: Value,
    /// Per port: the port it is the kernel representor of.
    pub representor_of: Vec<Option<usize>>,
}

impl RunReport {
    pub fn totals(&self) -> Totals {
        Totals { ports: self.ports.iter().map(|p| p.totals.clone()).collect() }
    }

    pub fn conservation_ok(&self) -> bool {
        let t = self.totals();
        t.entered() == t.left() && self.mmu_bytes_after_stop == 0 && self.tc_mismatches().is_empty()
    }

    /// The checks at stop, a line for each that fails: conservation (every packet that
    /// entered left: sent, consumed or dropped, in all and per (port, TC); no MMU byte still
    /// charged), no mbuf leaked, and lossless-class loss. `ok` is false on a conservation
    /// mismatch or a leak; lossless loss is reported, not a failure (a run may be sized to
    /// drop).
    pub fn audit(&self) -> Audit {
        let t = self.totals();
        let mut lines = Vec::new();
        let mut ok = true;
        if !self.conservation_ok() {
            lines.push(format!(
                "CONSERVATION MISMATCH: entered {} (rx + flood copies + generated) vs left {} (tx + consumed + drops); MMU bytes still charged {}",
                t.entered(),
                t.left(),
                self.mmu_bytes_after_stop
            ));
            ok = false;
        }
        for (port, tc, i, o) in self.tc_mismatches() {
            lines.push(format!(
                "CONSERVATION MISMATCH on {port} TC{tc}: {i} in (rx + copies) vs {o} out (tx + dropped)"
            ));
        }
        let ll = self.lossless_loss();
        if ll.total() > 0 {
            lines.push(format!(
                "LOSSLESS DROPS: {} packets of a lossless class were lost: {} dropped by the switch (headroom or lossless queue too small?), {} by the NIC (imissed + rx_nombuf: RX ring or mempool too small?)",
                ll.total(),
                ll.switch,
                ll.nic
            ));
        }
        for p in &self.ports {
            let n = p.totals.drop_count(DropReason::PuntUndelivered);
            if n > 0 {
                lines.push(format!(
                    "PUNT UNDELIVERED on {}: {n} packets for the kernel were refused by its representor (over the representor's MTU?)",
                    p.name
                ));
            }
        }
        if self.mbufs_in_use_after_stop != 0 {
            lines.push(format!(
                "MBUF LEAK: {} of {} mbufs not returned to the pool",
                self.mbufs_in_use_after_stop, self.mbufs_total
            ));
            ok = false;
        }
        Audit { ok, lines }
    }

    /// Per (ingress port, TC): received + flood copies = transmitted + dropped (including
    /// flushed at stop). Returns the (port, tc, in, out) that do not balance.
    pub fn tc_mismatches(&self) -> Vec<(String, usize, u64, u64)> {
        let mut v = Vec::new();
        for p in &self.ports {
            let t = &p.totals;
            for tc in 0..8 {
                let (i, o) = (t.tc_rx[tc] + t.tc_copies[tc], t.tc_tx[tc] + t.tc_dropped[tc]);
                if i != o {
                    v.push((p.name.clone(), tc, i, o));
                }
            }
        }
        v
    }

    /// Reaction-time percentiles in ns: (count, p50, p99, max).
    pub fn pfc_reaction_ns(&self) -> Option<(usize, u64, u64, u64)> {
        let mut v = self.pfc_reaction_ticks.clone();
        let to_ns = |t: u64| (t as u128 * 1_000_000_000 / self.tsc_hz.max(1) as u128) as u64;
        let p50 = percentile(&mut v, 50.0)?;
        let p99 = percentile(&mut v, 99.0)?;
        let max = *v.iter().max()?;
        Some((v.len(), to_ns(p50), to_ns(p99), to_ns(max)))
    }

    pub fn lossless_loss(&self) -> LosslessLoss {
        self.ports
            .iter()
            .map(|p| p.lossless_loss())
            .fold(LosslessLoss::default(), |a, b| LosslessLoss { switch: a.switch + b.switch, nic: a.nic + b.nic })
    }

    /// Packets of a lossless class lost anywhere (switch drops and NIC loss).
    pub fn lossless_drops(&self) -> u64 {
        self.lossless_loss().total()
    }

    /// `{"<port>": {"<tc>": {"count", "p50_ns", "p99_ns", "p999_ns", "max_ns"}}}`.
    pub fn latency_json(&self) -> Value {
        let per_port =
            |p: &PortReport| Value::Object(p.latency.iter().map(|l| (l.tc.to_string(), l.to_json())).collect());
        Value::Object(self.ports.iter().map(|p| (p.name.clone(), per_port(p))).collect())
    }

    /// The latency table of the stop summary (empty when nothing was sent).
    pub fn latency_table(&self) -> String {
        let us = |ns: u64| format!("{:.2}", ns as f64 / 1000.0);
        let mut s = String::new();
        for p in &self.ports {
            for l in &p.latency {
                if s.is_empty() {
                    s.push_str(&format!(
                        "{:<12} {:>3} {:>12} {:>10} {:>10} {:>10} {:>10}\n",
                        "Port", "TC", "Packets", "p50(us)", "p99(us)", "p99.9(us)", "max(us)"
                    ));
                }
                s.push_str(&format!(
                    "{:<12} {:>3} {:>12} {:>10} {:>10} {:>10} {:>10}\n",
                    p.name,
                    l.tc,
                    l.count,
                    us(l.p50_ns),
                    us(l.p99_ns),
                    us(l.p999_ns),
                    us(l.max_ns)
                ));
            }
        }
        s
    }

    /// The counters JSON of `run --stats-json`.
    pub fn to_json(&self) -> Value {
        let ports: Vec<_> = self
            .ports
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let drops: serde_json::Map<String, Value> =
                    DropReason::ALL.iter().map(|r| (r.as_str().to_string(), p.totals.drops[*r as usize].into())).collect();
                let arr = |f: &dyn Fn(&PfcPrioStats) -> u64| p.pfc.iter().map(f).collect::<Vec<u64>>();
                let mut o = json!({
                    "name": p.name,
                    "port_id": p.port_id,
                    "mac": p.mac,
                    "drops": drops,
                    "drops_total": p.totals.drops_total(),
                    // Lossless-class packets lost: dropped by the switch (headroom full, lossless
                    // egress queue full; per PG in pg_lossless_drops) or by the NIC on a port
                    // that carries a lossless class (lossless_nic_loss: imissed + rx_nombuf).
                    "lossless_drops": p.lossless_loss().total(),
                    "pg_lossless_drops": (PG_COUNTERS[0].get)(&p.totals),
                    // Lossless-class packets dropped by a decision (link down, punt rate
                    // limit), beside lossless_drops: docs/failure-behaviour.md.
                    "lossless_discards": p.totals.lossless_discards(),
                    "pg_lossless_discards": (PG_COUNTERS[1].get)(&p.totals),
                    "pmd": p.pmd,
                    "lossless_nic_loss": p.lossless_nic_loss(),
                    "pfc_enable": (0..8).filter(|i| p.pfc_enable & (1 << i) != 0).collect::<Vec<u8>>(),
                    "pfc": {
                        "tx_pause": arr(&|s| s.tx_pause),
                        "tx_resume": arr(&|s| s.tx_resume),
                        "rx_pause": arr(&|s| s.rx_pause),
                        "rx_resume": arr(&|s| s.rx_resume),
                        "tx_pause_duration_us": arr(&|s| s.tx_pause_duration_us),
                        "rx_pause_duration_us": arr(&|s| s.rx_pause_duration_us),
                        "tx_on2off": arr(&|s| s.tx_on2off),
                        "tx_late_refresh": arr(&|s| s.tx_late_refresh),
                        "rx_on2off": arr(&|s| s.rx_on2off),
                        "rx_8023x_pause": p.rx_link_pause,
                        "rx_8023x_ignored": p.rx_link_pause_ignored,
                        "rx_ignored": p.rx_ignored,
                    },
                    "tc": per_index(&p.totals, "tc", &TC_COUNTERS),
                    "queues": per_index(&p.totals, "queue", &QUEUE_COUNTERS),
                    "pfcwd": p.pfcwd,
                    "pg_watermark": p.pg_watermarks.iter().map(|(pg, s, h, size)| json!({"pg": pg, "shared": s, "headroom": h, "headroom_size": size})).collect::<Vec<_>>(),
                    "tx_ring": p.tx_ring,
                });
                // rx_packets, tx_packets, ... flood_copies, mac_control_rx, control_tx.
                for (name, v) in p.totals.scalars() {
                    o[name] = v.into();
                }
                let by_reason = |a: &[u64]| -> Value {
                    crate::route::PuntReason::ALL.iter().map(|r| (r.name().to_string(), Value::from(a[r.index()]))).collect()
                };
                o["punted"] = by_reason(&p.totals.punted);
                o["punt_dropped"] = by_reason(&p.totals.punt_dropped);
                // Control-plane policing per trap group: {"arp_nd": {"passed": n, "dropped": n}, ...}.
                o["copp"] = crate::route::TrapGroup::ALL
                    .iter()
                    .map(|g| {
                        let (i, t) = (g.index(), &p.totals);
                        (g.name().to_string(), json!({"passed": t.copp_passed[i], "dropped": t.copp_dropped[i]}))
                    })
                    .collect();
                if let Some(Some(of)) = self.representor_of.get(i) {
                    o["representor_of"] = self.ports[*of].name.clone().into();
                }
                o
            })
            .collect();
        let t = self.totals();
        let reaction = match self.pfc_reaction_ns() {
            Some((n, p50, p99, max)) => json!({"count": n, "p50_ns": p50, "p99_ns": p99, "max_ns": max}),
            None => json!({"count": 0}),
        };
        json!({
            "ports": ports,
            "elapsed_s": self.elapsed.as_secs_f64(),
            "tsc_hz": self.tsc_hz,
            "workers": self.workers,
            "conservation": {
                "entered": t.entered(),
                "left": t.left(),
                "mmu_bytes_after_stop": self.mmu_bytes_after_stop,
                "tc_mismatches": self.tc_mismatches().iter().map(|(p, tc, i, o)| json!({"port": p, "tc": tc, "in": i, "out": o})).collect::<Vec<_>>(),
                "ok": self.conservation_ok(),
            },
            "mbufs": {"total": self.mbufs_total, "in_use_after_stop": self.mbufs_in_use_after_stop},
            "pfc_reaction": reaction,
            "latency": self.latency_json(),
            "buffer_pool": self.pool,
            "edge_overflow": self.edge_overflow,
            "rx_flushed_at_stop": self.rx_flushed_at_stop,
            "control_frame_failures": self.ctl_failures,
            "control": {"max_loop_cycles": self.control_max_loop_cycles},
            "io_dropped": self.io_dropped,
            "routing": self.routing,
            "fdb": self.fdb,
        })
    }
}

/// The router's control thread (at stop, and `/pfcswitch/routing`): its health (alive,
/// synced, resyncs, batches, last batch age, routes refused, FIB out of sync, ...), the
/// writer's counters and the error that ended it, if any.
pub(super) fn routing_json(st: &crate::kernel::sync::SyncStatus) -> Value {
    let stats = st.stats.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let mut v = serde_json::to_value(st.health()).unwrap_or_else(|_| json!({}));
    if let Value::Object(o) = &mut v {
        o.insert("rib".into(), json!(stats));
        o.insert("error".into(), json!(st.error.lock().unwrap_or_else(|p| p.into_inner()).clone()));
    }
    v
}

/// What is known only once everything stopped.
pub(super) struct Final {
    pub totals: Totals,
    /// The PMD's own counters, per port.
    pub pmd: Vec<PortStats>,
    /// DPDK port ids, per port.
    pub ids: Vec<u16>,
    pub elapsed: Duration,
    /// [`routing_json`] at stop, with a router.
    pub routing: Option<Value>,
}

pub(super) fn build(
    spec: &SwitchSpec,
    shared: &Shared,
    control: &Control,
    fin: Final,
    pool: &Mempool,
    ctl_pool: &Mempool,
) -> RunReport {
    let Final { totals, pmd, ids, elapsed, routing } = fin;
    let hz = crate::dpdk::tsc_hz();
    let txc = control.tx_counters();
    let mut ports = Vec::new();
    for (i, ps) in spec.ports.iter().enumerate() {
        let rt = &shared.ports[i];
        let pfc = PfcPrioStats::snapshot(&txc[i], &rt.pfc_rx_counters, hz);
        let mut pg_watermarks = Vec::new();
        for pg in 0..8u8 {
            if rt.pfc.lossless_pgs() & (1 << pg) != 0 {
                let w = shared.mmu.pg_watermarks(i as u16, pg);
                pg_watermarks.push((pg, w.shared, w.headroom, rt.plan.headroom[pg as usize]));
            }
        }
        ports.push(PortReport {
            name: ps.name.clone(),
            port_id: ids[i],
            mac: rt.mac.to_string(),
            totals: totals.ports[i].clone(),
            pmd: pmd[i],
            pfc,
            pfc_enable: rt.pfc.pfc_mask(),
            rx_link_pause: rt.pfc_rx_counters.link_pause_frames.get(),
            rx_link_pause_ignored: rt.pfc_rx_counters.link_pause_ignored.get(),
            rx_ignored: rt.pfc_rx_counters.ignored_frames.get(),
            pfcwd: {
                let mut o = serde_json::Map::new();
                if let Some(st) = &rt.pfcwd {
                    st.write_telemetry(&mut o);
                }
                Value::Object(o)
            },
            pg_watermarks,
            tx_ring: json!({
                "tx_inflight_limit": rt.plan.tx_inflight,
                "control_tx_queue": rt.control_txq,
                "control_no_mbuf": shared.egress[i].ctl_no_mbuf.load(std::sync::atomic::Ordering::Relaxed),
                "headroom_tx_inflight": rt.plan.headroom_calc.terms.iter().find(|t| t.0 == "tx_inflight").map_or(0, |t| t.1),
            }),
            latency: rt
                .latency
                .summary()
                .into_iter()
                .map(|(tc, count, p50_ns, p99_ns, p999_ns, max_ns)| TcLatency {
                    tc,
                    count,
                    p50_ns,
                    p99_ns,
                    p999_ns,
                    max_ns,
                })
                .collect(),
        });
    }
    let ps = shared.mmu.pool_stats();
    let mmu_bytes = ps.lossless.private_used
        + ps.lossless.shared_used
        + ps.lossless.headroom_used
        + ps.lossy.private_used
        + ps.lossy.shared_used;
    let reaction: Vec<u64> = shared.counters.iter().flat_map(|c| c.pfc_reaction.values()).collect();
    RunReport {
        ports,
        elapsed,
        tsc_hz: hz,
        workers: spec
            .workers
            .iter()
            .zip(&shared.counters)
            .map(|(w, c)| {
                let mut counters = WorkerTotals::default();
                c.worker.add_to(&mut counters);
                WorkerReport { lcore: w.lcore, counters }
            })
            .collect(),
        mbufs_total: pool.size() + ctl_pool.size(),
        mbufs_in_use_after_stop: pool.in_use_count() + ctl_pool.in_use_count(),
        mmu_bytes_after_stop: mmu_bytes,
        pfc_reaction_ticks: reaction,
        edge_overflow: shared.counters.iter().map(|c| c.worker.edge_overflow.get()).sum(),
        rx_flushed_at_stop: shared.counters.iter().map(|c| c.worker.rx_flushed_at_stop.get()).sum(),
        ctl_failures: control.ctl_failures,
        control_max_loop_cycles: control.max_loop_cycles,
        io_dropped: shared.io.dropped(),
        routing,
        fdb: {
            let mut f = serde_json::to_value(shared.fdb.counters()).unwrap_or_else(|_| json!({}));
            f["entries"] = shared.fdb.len().into();
            f
        },
        representor_of: spec.ports.iter().map(|p| p.representor_of).collect(),
        pool: json!({
            "ingress_lossless_pool": {
                "size": ps.lossless.size, "shared_size": ps.lossless.shared_size,
                "shared_watermark": ps.lossless.shared_watermark, "headroom_watermark": ps.lossless.headroom_watermark,
                "xoff": ps.lossless.headroom_pool_size,
            },
            "egress_lossy_pool": {
                "size": ps.lossy.size, "shared_size": ps.lossy.shared_size, "shared_watermark": ps.lossy.shared_watermark,
            },
        }),
    }
}

/// The live counters line (`--stats-interval`).
pub(super) fn live_line(ports: &[PortSpec], last: &Totals, cur: &Totals, dt: Duration, since: Duration) -> String {
    let secs = dt.as_secs_f64().max(1e-9);
    let mut line = format!("[{:>6.1}s]", since.as_secs_f64());
    for (i, p) in ports.iter().enumerate() {
        let (a, b) = (&last.ports[i], &cur.ports[i]);
        let rx = (b.rx_packets - a.rx_packets) as f64 / secs;
        let tx = (b.tx_packets - a.tx_packets) as f64 / secs;
        let dr = b.drops_total() - a.drops_total();
        line.push_str(&format!("  {}: rx {} tx {} drop {}", p.name, fmt_rate(rx), fmt_rate(tx), dr));
    }
    line
}

fn fmt_rate(pps: f64) -> String {
    if pps >= 1e6 {
        format!("{:.2}Mpps", pps / 1e6)
    } else if pps >= 1e3 {
        format!("{:.1}kpps", pps / 1e3)
    } else {
        format!("{:.0}pps", pps)
    }
}

/// One JSON object per index 0..8 of `counters` (`{"<index>": i, <key>: value, …}`).
fn per_index(t: &PortTotals, index: &str, counters: &[ArrayCounter]) -> Vec<Value> {
    (0..8)
        .map(|i| {
            let mut o = serde_json::Map::new();
            o.insert(index.into(), i.into());
            for c in counters {
                o.insert(c.key.into(), (c.get)(t)[i].into());
            }
            Value::Object(o)
        })
        .collect()
}
