//! The lcore side: starts EAL, the mempools and the ports, launches the worker loops on
//! their lcores, runs the control loop on the main lcore, and stops everything cleanly.

mod control;
mod egress;
mod timeline;
pub mod latency;
mod telemetry;
mod report;
pub mod spec;
mod tx;
mod worker;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_queue::ArrayQueue;
use crossbeam_utils::CachePadded;

use crate::counters::{DropReason, LcoreCounters, Totals};
use crate::dpdk::{self, launch_on, rdtsc, tsc_hz, Eal, MbufBurst, Mempool, Port};
use crate::fdb::Fdb;
use crate::mmu::{Edge, Mmu};
use crate::pfc::{PauseDeadlines, PfcRx, PfcRxCounters};
use crate::plan::PortPlan;

pub use egress::{EgressPort, NUM_TC};
pub use report::{PortReport, RunReport};
pub use spec::{PortSpec, SwitchSpec, WorkerSpec};

/// An MMU edge on its way to the control lcore, with the TSC of the admission or
/// release that caused it.
#[derive(Debug, Clone, Copy)]
pub struct EdgeMsg {
    pub edge: Edge,
    pub tsc: u64,
}

/// Per port, what every lcore may read.
pub struct PortRt {
    pub plan: PortPlan,
    pub speed_bps: u64,
    pub mtu: u32,
    /// Pause deadlines set by received PFC frames (written by the RX lcore).
    pub rx_pause: Arc<PauseDeadlines>,
    pub pfc_rx_counters: Arc<PfcRxCounters>,
    /// Data transmission allowed (test knob `tx_enable`; SIGUSR1 turns it on).
    pub tx_enable: AtomicBool,
    pub latency: latency::PortLatency,
    pub name: String,
    /// PFC watchdog state of this port's priorities (None = watchdog off).
    pub pfcwd: Option<Arc<crate::pfcwd::PfcwdPortState>>,
    /// The port's MAC (source of its PFC frames).
    pub mac: [u8; 6],
    /// Per PG: a PAUSE a worker queued itself on an Xoff crossing, for the control lcore
    /// to take into account: 0 = none, [`PAUSE_CLAIMED`] = being queued, else its TSC.
    pub worker_pause: [std::sync::atomic::AtomicU64; 8],
    /// Per PG: refreshes of that PAUSE the worker sent before the control lcore took the
    /// note (it adds them to the PFC counters when it does).
    pub worker_refreshes: [std::sync::atomic::AtomicU64; 8],
    /// Refresh interval of a PAUSE on this port, TSC ticks (as the control lcore's).
    pub refresh_ticks: u64,
}

/// [`PortRt::worker_pause`]: a worker saw the Xoff crossing and is queueing the PAUSE.
pub const PAUSE_CLAIMED: u64 = u64::MAX;

/// State every lcore sees.
pub struct Shared {
    pub running: AtomicBool,
    /// Workers that have left their loop (none enqueues any more once all have).
    pub workers_stopped: std::sync::atomic::AtomicUsize,
    pub egress: Vec<EgressPort>,
    pub counters: Vec<CachePadded<LcoreCounters>>,
    pub pool: Arc<Mempool>,
    pub mmu: Mmu,
    pub ports: Vec<PortRt>,
    /// One single-producer ring per worker lcore to the control lcore.
    pub edges: Vec<ArrayQueue<EdgeMsg>>,
    /// Mbufs for PFC frames (workers send the PAUSE of an Xoff crossing themselves).
    pub ctl_pool: Arc<Mempool>,
    /// Time carried by PAUSE frames.
    pub pause_quanta: u16,
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
    #[error("MMU: {0}")]
    Mmu(String),
}

/// How to run and when to stop.
pub struct RunOptions {
    pub duration: Option<Duration>,
    /// Print a live counters line this often.
    pub stats_interval: Option<Duration>,
    /// Set by the signal handler (SIGINT/SIGTERM).
    pub stop: Arc<AtomicBool>,
    /// Set by SIGUSR1: enable TX on every port (ends a `tx_enable = false` test phase).
    pub tx_enable_all: Arc<AtomicBool>,
    /// Sample per-PG occupancy, state, T, queue depth and PFC frames into this CSV.
    pub timeline: Option<(std::path::PathBuf, Duration)>,
}

pub(crate) fn mac_str(m: [u8; 6]) -> String {
    format!("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4], m[5])
}

const MEMPOOL_CACHE: u32 = 256;

/// Tells the workers to stop when dropped.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// The control lcore's nap once PFC has been quiet for a millisecond
/// (`lcores.control_idle = "sleep"`): `lcores.control_nap` (default 1 ms: a wake-up costs
/// some 10 µs of CPU in a VM, so ~1 %), at most the timeline's sampling interval. The first
/// PAUSE after a quiet spell is sent, and refreshed while needed, by the worker that saw the
/// crossing; the control lcore takes it over when it wakes. What a nap delays is a RESUME
/// after such a first PAUSE (the peer stays paused up to one nap longer, never shorter).
fn control_nap(spec: &SwitchSpec, timeline_every: Option<Duration>) -> Duration {
    let nap = Duration::from_nanos(spec.control_nap_ns);
    timeline_every.map_or(nap, |t| nap.min(t))
}

/// Start the switch described by `spec`, run until `opts` says stop, stop cleanly.
pub fn run(spec: &SwitchSpec, opts: &RunOptions) -> Result<RunReport, DataplaneError> {
    let eal = Eal::init(&spec.eal_args).map_err(DataplaneError::Eal)?;
    log::info!("{} up: {} lcores, {} ports probed, TSC {} Hz", Eal::version(), eal.lcore_count(), eal.port_count(), tsc_hz());
    if spec.eal_args.iter().any(|a| a == "--no-huge") {
        log::info!("capture: running without hugepages, dpdk-dumpcap cannot attach (see README)");
    } else {
        match dpdk::pdump_init() {
            Ok(()) => log::info!("capture: rte_pdump_init done; dpdk-dumpcap --file-prefix=<prefix> can capture"),
            Err(e) => log::warn!("capture: {e}"),
        }
    }
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
    let mmu = Mmu::new(spec.plan.mmu.clone()).map_err(|e| DataplaneError::Mmu(e.to_string()))?;
    let max_mtu = spec.ports.iter().map(|p| p.mtu).max().unwrap_or(1500);
    // Single-segment mbufs large enough for the biggest frame (+ VLAN tag and FCS slack).
    let data_room = (max_mtu + 14 + 4 + 4 + 128).clamp(2048 + 128, u16::MAX as u32) as u16;
    let n_mbufs = if spec.mbuf_count > 0 { spec.mbuf_count } else { spec.mbufs_needed(MEMPOOL_CACHE) };
    let pool = Arc::new(Mempool::new("pfcsw_pool", n_mbufs, MEMPOOL_CACHE, data_room, -1).map_err(|e| {
        let mib = (n_mbufs as u64 * (data_room as u64 + 192)) >> 20;
        DataplaneError::Mempool(dpdk::DpdkError {
            msg: format!("{} (needs about {mib} MiB: raise EAL -m/--socket-mem, lower the ports' mtu or the buffer size)", e.msg),
            ..e
        })
    })?);
    // PFC frames come from their own small pool, so data can never starve them.
    let ctl_pool = Arc::new(Mempool::new("pfcsw_ctl", 2047, 32, 256 + 128, -1).map_err(DataplaneError::Mempool)?);
    log::info!("mempool: {n_mbufs} mbufs of {data_room} bytes");

    let mut ports = Vec::new();
    let mut macs = Vec::new();
    let mut rxqs: Vec<Vec<Option<dpdk::RxQueue>>> = Vec::new();
    let mut txqs: Vec<Option<dpdk::TxQueue>> = Vec::new();
    for (ps, &id) in spec.ports.iter().zip(&ids) {
        let perr = |err| DataplaneError::Port { name: ps.name.clone(), devargs: ps.devargs.clone(), err };
        let mtu = u16::try_from(ps.mtu).ok();
        let (mut port, rq, mut tq) =
            Port::configure(id, ps.nb_rx, 1, spec.rx_ring_size, spec.tx_ring_size, pool.clone(), mtu).map_err(perr)?;
        match port.flow_ctrl_off() {
            dpdk::FlowCtrlOutcome::Disabled => log::info!("port {}: NIC flow control off, MAC control frames to host", ps.name),
            dpdk::FlowCtrlOutcome::DisabledNoForward => log::warn!("port {}: NIC flow control off without MAC-control forwarding (see above)", ps.name),
            dpdk::FlowCtrlOutcome::NotSupported => log::debug!("port {}: PMD {} has no flow control to turn off", ps.name, port.driver()),
            dpdk::FlowCtrlOutcome::Failed(e) => {
                log::warn!("port {}: PMD {} refused to turn NIC flow control off ({e}); PFC frames may be consumed or answered by the NIC", ps.name, port.driver())
            }
        }
        port.start().map_err(perr)?;
        log::info!("port {} = DPDK port {id} ({}), mac {}, {} rx queue(s)", ps.name, port.driver(), mac_str(port.mac()), ps.nb_rx);
        macs.push(port.mac());
        rxqs.push(rq.into_iter().map(Some).collect());
        txqs.push(tq.pop());
        ports.push(port.with_name(&ps.name));
    }

    let nports = spec.ports.len();
    let hz = tsc_hz();
    let mut wds: Vec<Option<crate::pfcwd::Pfcwd>> =
        spec.plan.ports.iter().map(|pp| spec.pfcwd.map(|c| crate::pfcwd::Pfcwd::new(&c, hz, pp.pfc_mask))).collect();
    let mut wd_stamps: Vec<Option<Arc<crate::pfcwd::PfcwdRxStamps>>> = wds.iter().map(|w| w.as_ref().map(|w| w.rx_stamps())).collect();
    let mut pfc_rx: Vec<Option<PfcRx>> = spec.ports.iter().zip(&spec.plan.ports).map(|(ps, pp)| Some(PfcRx::new(pp.pfc_mask, ps.speed_bps))).collect();
    let shared = Arc::new(Shared {
        running: AtomicBool::new(true),
        workers_stopped: std::sync::atomic::AtomicUsize::new(0),
        egress: (0..nports).map(|_| EgressPort::new()).collect(),
        counters: (0..spec.workers.len()).map(|_| LcoreCounters::new(nports)).collect(),
        pool: pool.clone(),
        mmu,
        ports: spec
            .ports
            .iter()
            .zip(&spec.plan.ports)
            .zip(&pfc_rx)
            .zip(&wds)
            .enumerate()
            .map(|(i, (((ps, pp), rx), wd))| {
                let rx = rx.as_ref().expect("pfc rx");
                PortRt {
                    plan: pp.clone(),
                    speed_bps: ps.speed_bps,
                    mtu: ps.mtu,
                    rx_pause: rx.deadlines(),
                    pfc_rx_counters: rx.counters(),
                    tx_enable: AtomicBool::new(ps.tx_enable),
                    latency: latency::PortLatency::new(hz),
                    name: ps.name.clone(),
                    pfcwd: wd.as_ref().map(|w| w.state()),
                    mac: macs[i],
                    worker_pause: Default::default(),
                    worker_refreshes: Default::default(),
                    refresh_ticks: crate::pfc::refresh_ticks(&crate::pfc::PfcTxConfig::default(), ps.speed_bps, hz),
                }
            })
            .collect(),
        edges: (0..spec.workers.len()).map(|_| ArrayQueue::new(4096)).collect(),
        ctl_pool: ctl_pool.clone(),
        pause_quanta: crate::pfc::PfcTxConfig::default().pause_quanta,
    });
    let mut control = control::Control::new(shared.clone(), ctl_pool.clone(), macs.clone(), hz);
    telemetry::register(telemetry::Views { shared: shared.clone(), pfc_tx: control.tx_counters(), port_ids: ids.clone(), tsc_hz: hz });

    let mut handles = Vec::new();
    // Declared after `handles`, so dropped before them: if this thread unwinds, the
    // workers are told to stop before their handles wait for them.
    let _stop_on_unwind = StopOnDrop(&shared.running);
    let mut launch_err = None;
    for (wi, ws) in spec.workers.iter().enumerate() {
        let now = rdtsc();
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
            pfc_rx: (0..nports).map(|_| None).collect(),
            wd_stamps: (0..nports).map(|_| None).collect(),
            tsc_hz: hz,
            local_tx: vec![None; nports],
            run: worker::Run::default(),
            run_mbufs: MbufBurst::new(),
            run_lens: Box::new([0; dpdk::BURST_CAP]),
            notes: Vec::with_capacity(nports * 8),
        };
        for &(p, q) in &ws.rx {
            if let Some(rq) = rxqs[p].get_mut(q as usize).and_then(Option::take) {
                w.rxqs.push((p, rq));
            }
            // MAC-control frames of a port are acted on by the lcore polling its queue 0
            // (NICs steer non-IP frames there).
            if q == 0 {
                w.pfc_rx[p] = pfc_rx[p].take();
                w.wd_stamps[p] = wd_stamps[p].take();
            }
        }
        for &p in &ws.tx {
            if let Some(tq) = txqs[p].take() {
                w.local_tx[p] = Some(w.txs.len());
                w.txs.push(tx::TxPort::new(p, tq, &shared, hz, now, spec.burst_size, spec.egress_queue_len, wds[p].take()));
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

    // Control loop on the main lcore: PFC frames (busy-polled, so the reaction is fast),
    // stop conditions and live counters (checked every millisecond).
    let start = Instant::now();
    let mut next_stats = opts.stats_interval.map(|i| start + i);
    let mut last = Totals::collect(shared.counters.iter().map(|c| &**c), nports);
    let mut last_t = start;
    let mut next_check = rdtsc();
    let check_every = hz / 1000;
    let mut timeline = match &opts.timeline {
        Some((path, every)) => Some(timeline::Timeline::create(path, *every, hz, rdtsc()).map_err(|e| DataplaneError::Lcore { lcore: dpdk::main_lcore(), msg: format!("timeline {}: {e}", path.display()) })?),
        None => None,
    };
    let pfc_tx_counters = control.tx_counters();
    let nap = spec.control_idle == crate::config::ControlIdle::Sleep;
    let nap_for = control_nap(spec, opts.timeline.as_ref().map(|(_, every)| *every));
    if nap {
        dpdk::set_timer_slack_ns(1_000);
    }
    // TSC of the last pass with PFC activity: naps start only after a quiet millisecond,
    // so a PG that pauses again and again keeps the control lcore polling.
    let mut last_busy = rdtsc();
    loop {
        let did = control.poll();
        if did || !control.idle() {
            last_busy = rdtsc();
        }
        if let Some(tl) = timeline.as_mut() {
            tl.maybe_sample(&shared, &pfc_tx_counters, rdtsc());
        }
        let t = rdtsc();
        if t < next_check {
            // Nothing paused, nothing pending: give the CPU back for one nap (workers
            // send and refresh PAUSE themselves, so this does not delay the reaction).
            if nap && t.wrapping_sub(last_busy) > check_every {
                std::thread::sleep(nap_for);
            } else {
                std::hint::spin_loop();
            }
            continue;
        }
        next_check = t + check_every;
        if launch_err.is_some() || opts.stop.load(Ordering::Relaxed) {
            break;
        }
        if opts.tx_enable_all.swap(false, Ordering::Relaxed) {
            log::info!("SIGUSR1: TX enabled on every port");
            for p in &shared.ports {
                p.tx_enable.store(true, Ordering::Relaxed);
            }
        }
        let now = Instant::now();
        if opts.duration.is_some_and(|d| now.duration_since(start) >= d) {
            break;
        }
        if let (Some(t), Some(iv)) = (next_stats, opts.stats_interval) {
            if now >= t {
                let cur = Totals::collect(shared.counters.iter().map(|c| &**c), nports);
                report::print_live(&spec.ports, &last, &cur, now.duration_since(last_t), start.elapsed());
                last = cur;
                last_t = now;
                next_stats = Some(t + iv);
            }
        }
    }
    let elapsed = start.elapsed();
    if let Some(tl) = timeline.take() {
        if let Err(e) = tl.finish() {
            log::warn!("timeline: {e}");
        }
    }

    // Stop: workers first, then free what is still queued (releasing MMU charges), then
    // the ports.
    shared.running.store(false, Ordering::SeqCst);
    let mut worker_panicked = None;
    for h in handles {
        let l = h.lcore();
        if let Err(e) = h.wait() {
            worker_panicked = Some(DataplaneError::Lcore { lcore: l, msg: e.to_string() });
        }
    }
    let mut flushed_per_port = vec![0u64; nports];
    let mut flushed_per_tc = vec![[0u64; 8]; nports];
    // Workers flushed the ports they own; what is left went to a port no worker serves.
    for (p, eg) in shared.egress.iter().enumerate() {
        for q in std::iter::from_fn(|| eg.inbound.pop()) {
            let _ = shared.mmu.release(q.charge);
            flushed_per_port[p] += 1;
            flushed_per_tc[q.in_port as usize][q.tc as usize & 7] += 1;
        }
    }
    control.drain();
    drop(rxqs);
    drop(txqs);
    let mut totals = Totals::collect(shared.counters.iter().map(|c| &**c), nports);
    for (p, n) in flushed_per_port.iter().enumerate() {
        totals.ports[p].drops[DropReason::FlushedAtStop as usize] += n;
        for tc in 0..8 {
            totals.ports[p].tc_dropped[tc] += flushed_per_tc[p][tc];
        }
    }
    let mut pmd = Vec::new();
    for port in ports.iter_mut() {
        pmd.push(port.stats());
        let _ = port.stop();
    }
    drop(ports);
    let report = report::build(spec, &shared, &control, totals, pmd, &macs, &ids, elapsed, hz, &pool, &ctl_pool);
    if let Some(e) = launch_err.or(worker_panicked) {
        return Err(e);
    }
    Ok(report)
}
