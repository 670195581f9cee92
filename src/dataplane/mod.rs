//! The lcore side: starts EAL, the mempool and the ports, launches the worker loops on
//! their lcores, runs the control loop on the main lcore, and stops everything cleanly.

mod egress;
pub mod spec;
mod worker;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use crate::counters::{DropReason, LcoreCounters, Totals};
use crate::dpdk::{self, launch_on, tsc_hz, Eal, MbufBurst, Mempool, Port, PortStats};
use crate::fdb::Fdb;

pub use egress::{EgressPort, NUM_TC};
pub use spec::{PortSpec, SwitchSpec, WorkerSpec};

/// State every lcore sees.
pub struct Shared {
    pub running: AtomicBool,
    pub egress: Vec<EgressPort>,
    pub counters: Vec<CachePadded<LcoreCounters>>,
    pub pool: Arc<Mempool>,
}

#[derive(Debug, thiserror::Error)]
pub enum DataplaneError {
    #[error("EAL: {0}")]
    Eal(dpdk::DpdkError),
    #[error("port {name} ({devargs}): {err}")]
    Port { name: String, devargs: String, err: dpdk::DpdkError },
    #[error("mempool: {0}")]
    Mempool(dpdk::DpdkError),
    #[error("lcore {lcore}: {msg}")]
    Lcore { lcore: u32, msg: String },
}

/// How to run and when to stop.
pub struct RunOptions {
    pub duration: Option<Duration>,
    /// Print a live counters line this often.
    pub stats_interval: Option<Duration>,
    /// Set by the signal handler (SIGINT/SIGTERM).
    pub stop: Arc<AtomicBool>,
}

/// Per port at stop.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PortReport {
    pub name: String,
    pub port_id: u16,
    pub mac: String,
    #[serde(flatten)]
    pub totals: crate::counters::PortTotals,
    pub pmd: PortStats,
}

#[derive(Debug, Clone)]
pub struct RunReport {
    pub ports: Vec<PortReport>,
    pub elapsed: Duration,
    pub tsc_hz: u64,
    pub worker_busy_cycles: Vec<(u32, u64)>,
    pub mbufs_total: u32,
    /// Mbufs not back in the pool after everything stopped (a leak if nonzero).
    pub mbufs_in_use_after_stop: u32,
    /// Still queued when the switch stopped (freed, counted as flushed_at_stop).
    pub flushed_at_stop: u64,
}

impl RunReport {
    pub fn totals(&self) -> Totals {
        Totals { ports: self.ports.iter().map(|p| p.totals.clone()).collect() }
    }

    /// The counters JSON of `run --stats-json`.
    pub fn to_json(&self) -> serde_json::Value {
        let ports: Vec<_> = self
            .ports
            .iter()
            .map(|p| {
                let drops: serde_json::Map<String, serde_json::Value> = DropReason::ALL
                    .iter()
                    .map(|r| (r.as_str().to_string(), p.totals.drops[*r as usize].into()))
                    .collect();
                serde_json::json!({
                    "name": p.name,
                    "port_id": p.port_id,
                    "mac": p.mac,
                    "rx_packets": p.totals.rx_packets,
                    "tx_packets": p.totals.tx_packets,
                    "rx_bytes": p.totals.rx_bytes,
                    "tx_bytes": p.totals.tx_bytes,
                    "flood_copies": p.totals.flood_copies,
                    "mac_control_rx": p.totals.mac_control_rx,
                    "control_tx": p.totals.control_tx,
                    "drops": drops,
                    "drops_total": p.totals.drops_total(),
                    "pmd": p.pmd,
                })
            })
            .collect();
        let t = self.totals();
        serde_json::json!({
            "ports": ports,
            "elapsed_s": self.elapsed.as_secs_f64(),
            "tsc_hz": self.tsc_hz,
            "workers": self.worker_busy_cycles.iter().map(|(l, c)| serde_json::json!({"lcore": l, "busy_cycles": c})).collect::<Vec<_>>(),
            "conservation": {
                "entered": t.entered(),
                "left": t.left(),
                "ok": t.entered() == t.left(),
            },
            "mbufs": {"total": self.mbufs_total, "in_use_after_stop": self.mbufs_in_use_after_stop},
        })
    }
}

fn mac_str(m: [u8; 6]) -> String {
    format!("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4], m[5])
}

const MEMPOOL_CACHE: u32 = 256;

/// Start the switch described by `spec`, run until `opts` says stop, stop cleanly.
pub fn run(spec: &SwitchSpec, opts: &RunOptions) -> Result<RunReport, DataplaneError> {
    let eal = Eal::init(&spec.eal_args).map_err(DataplaneError::Eal)?;
    log::info!("{} up: {} lcores, {} ports probed, TSC {} Hz", Eal::version(), eal.lcore_count(), eal.port_count(), tsc_hz());
    let result = run_with_eal(&eal, spec, opts);
    drop(eal);
    result
}

fn run_with_eal(eal: &Eal, spec: &SwitchSpec, opts: &RunOptions) -> Result<RunReport, DataplaneError> {
    for w in &spec.workers {
        if !eal.lcore_enabled(w.lcore) || w.lcore == dpdk::main_lcore() {
            return Err(DataplaneError::Lcore {
                lcore: w.lcore,
                msg: format!("worker lcore is not an enabled non-main lcore of this EAL (main lcore is {}); check eal.args --lcores", dpdk::main_lcore()),
            });
        }
    }
    // Every port must have been probed by EAL (a bad devargs or a missing pcap file fails
    // there); say which one before anything is allocated.
    let mut ids = Vec::new();
    for ps in &spec.ports {
        let id = Port::id_by_name(ps.dev_name()).map_err(|err| DataplaneError::Port {
            name: ps.name.clone(),
            devargs: ps.devargs.clone(),
            err: dpdk::DpdkError { msg: format!("device not probed by EAL (see the EAL messages above): {}", err.msg), ..err },
        })?;
        ids.push(id);
    }
    let max_mtu = spec.ports.iter().map(|p| p.mtu).max().unwrap_or(1500);
    // Single-segment mbufs large enough for the biggest frame (+ VLAN tag and FCS slack).
    let data_room = (max_mtu + 14 + 4 + 4 + 128).clamp(2048 + 128, u16::MAX as u32) as u16;
    let n_mbufs = if spec.mbuf_count > 0 { spec.mbuf_count } else { spec.mbufs_needed(MEMPOOL_CACHE) };
    let pool = Arc::new(Mempool::new("pfcsw_pool", n_mbufs, MEMPOOL_CACHE, data_room, -1).map_err(|e| {
        let mib = n_mbufs as u64 * (data_room as u64 + 192) >> 20;
        DataplaneError::Mempool(dpdk::DpdkError {
            msg: format!("{} (needs about {mib} MiB: raise EAL -m/--socket-mem, lower the ports' mtu or the buffer size)", e.msg),
            ..e
        })
    })?);
    log::info!("mempool: {n_mbufs} mbufs of {data_room} bytes");

    // Ports: id by device name; TX queue 0 per port, owned by one worker.
    let mut ports = Vec::new();
    let mut rxqs: Vec<Vec<Option<dpdk::RxQueue>>> = Vec::new();
    let mut txqs: Vec<Option<dpdk::TxQueue>> = Vec::new();
    for (ps, &id) in spec.ports.iter().zip(&ids) {
        let perr = |err| DataplaneError::Port { name: ps.name.clone(), devargs: ps.devargs.clone(), err };
        let mtu = u16::try_from(ps.mtu).ok();
        let (mut port, rq, mut tq) =
            Port::configure(id, ps.nb_rx, 1, spec.rx_ring_size, spec.tx_ring_size, pool.clone(), mtu).map_err(perr)?;
        match port.flow_ctrl_off() {
            dpdk::FlowCtrlOutcome::Disabled => log::info!("port {}: NIC flow control off, MAC control frames to host", ps.name),
            dpdk::FlowCtrlOutcome::NotSupported => log::debug!("port {}: PMD {} has no flow control to turn off", ps.name, port.driver()),
            dpdk::FlowCtrlOutcome::Failed(e) => log::warn!("port {}: could not turn NIC flow control off ({e}); PFC frames may be consumed by the NIC", ps.name),
        }
        port.start().map_err(perr)?;
        log::info!("port {} = DPDK port {id} ({}), mac {}, {} rx queue(s)", ps.name, port.driver(), mac_str(port.mac()), ps.nb_rx);
        rxqs.push(rq.into_iter().map(Some).collect());
        txqs.push(tq.pop());
        ports.push(port.with_name(&ps.name));
    }

    let nports = spec.ports.len();
    let shared = Arc::new(Shared {
        running: AtomicBool::new(true),
        egress: (0..nports).map(|_| EgressPort::new(spec.egress_queue_len)).collect(),
        counters: (0..spec.workers.len()).map(|_| LcoreCounters::new(nports)).collect(),
        pool: pool.clone(),
    });

    let hz = tsc_hz();
    let mut handles = Vec::new();
    let mut launch_err = None;
    for (wi, ws) in spec.workers.iter().enumerate() {
        let mut w = worker::Worker {
            index: wi,
            rxqs: Vec::new(),
            txs: Vec::new(),
            fdb: Fdb::new(spec.fdb_size, spec.fdb_aging_time.min(u32::MAX as u64) as u32, hz),
            shared: shared.clone(),
            burst: MbufBurst::new(),
            burst_size: spec.burst_size.clamp(1, dpdk::BURST_CAP),
            fdb_age_every: if spec.fdb_aging_time == 0 { 0 } else { hz },
            pad_short: spec.ports.iter().map(|p| p.pad_short_frames).collect(),
        };
        for &(p, q) in &ws.rx {
            if let Some(rq) = rxqs[p].get_mut(q as usize).and_then(Option::take) {
                w.rxqs.push((p, rq));
            }
        }
        for &p in &ws.tx {
            if let Some(tq) = txqs[p].take() {
                w.txs.push(worker::TxPort { port: p, txq: tq, pending: MbufBurst::new(), tx_enable: spec.ports[p].tx_enable });
            }
        }
        match launch_on(ws.lcore, move || w.run()) {
            Ok(h) => handles.push(h),
            Err(e) => {
                launch_err = Some(DataplaneError::Lcore { lcore: ws.lcore, msg: e.to_string() });
                break;
            }
        }
    }

    if launch_err.is_none() {
        log::info!("forwarding: {} ports, {} worker lcore(s)", nports, spec.workers.len());
    }
    // Control loop on the main lcore: stop conditions and live counters.
    let start = Instant::now();
    let mut next_stats = opts.stats_interval.map(|i| start + i);
    let mut last = Totals::collect(shared.counters.iter().map(|c| &**c), nports);
    let mut last_t = start;
    while launch_err.is_none() && !opts.stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if let Some(d) = opts.duration {
            if now.duration_since(start) >= d {
                break;
            }
        }
        if let (Some(t), Some(iv)) = (next_stats, opts.stats_interval) {
            if now >= t {
                let cur = Totals::collect(shared.counters.iter().map(|c| &**c), nports);
                print_live(&spec.ports, &last, &cur, now.duration_since(last_t), start.elapsed());
                last = cur;
                last_t = now;
                next_stats = Some(t + iv);
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let elapsed = start.elapsed();

    // Stop: workers first, then free what is still queued, then the ports.
    shared.running.store(false, Ordering::SeqCst);
    let mut worker_panicked = None;
    for h in handles {
        let l = h.lcore();
        if let Err(e) = h.wait() {
            worker_panicked = Some(DataplaneError::Lcore { lcore: l, msg: e.to_string() });
        }
    }
    let mut flushed = 0u64;
    let mut flushed_per_port = vec![0u64; nports];
    for (p, eg) in shared.egress.iter().enumerate() {
        let n = eg.flush() as u64;
        flushed += n;
        flushed_per_port[p] += n;
    }
    drop(rxqs);
    drop(txqs);
    let mut reports = Vec::new();
    let mut totals = Totals::collect(shared.counters.iter().map(|c| &**c), nports);
    for (p, n) in flushed_per_port.iter().enumerate() {
        totals.ports[p].drops[DropReason::FlushedAtStop as usize] += n;
    }
    for (i, port) in ports.iter_mut().enumerate() {
        let pmd = port.stats();
        let _ = port.stop();
        reports.push(PortReport {
            name: spec.ports[i].name.clone(),
            port_id: port.id(),
            mac: mac_str(port.mac()),
            totals: totals.ports[i].clone(),
            pmd,
        });
    }
    drop(ports);
    let busy = spec.workers.iter().enumerate().map(|(i, w)| (w.lcore, shared.counters[i].busy_cycles.get())).collect();
    let in_use = pool.in_use_count();
    let mbufs_total = pool.size();
    if let Some(e) = launch_err.or(worker_panicked) {
        return Err(e);
    }
    Ok(RunReport {
        ports: reports,
        elapsed,
        tsc_hz: hz,
        worker_busy_cycles: busy,
        mbufs_total,
        mbufs_in_use_after_stop: in_use,
        flushed_at_stop: flushed,
    })
}

fn print_live(ports: &[PortSpec], last: &Totals, cur: &Totals, dt: Duration, since: Duration) {
    let secs = dt.as_secs_f64().max(1e-9);
    let mut line = format!("[{:>6.1}s]", since.as_secs_f64());
    for (i, p) in ports.iter().enumerate() {
        let (a, b) = (&last.ports[i], &cur.ports[i]);
        let rx = (b.rx_packets - a.rx_packets) as f64 / secs;
        let tx = (b.tx_packets - a.tx_packets) as f64 / secs;
        let dr = b.drops_total() - a.drops_total();
        line.push_str(&format!("  {}: rx {} tx {} drop {}", p.name, fmt_rate(rx), fmt_rate(tx), dr));
    }
    println!("{line}");
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
