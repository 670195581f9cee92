//! The lcore side: starts EAL, the mempools and the ports, launches the worker loops on
//! their lcores, runs the control loop on the main lcore, and stops everything cleanly.
//!
//! A packet's way: `worker` (RX → parse → classify → FDB → MMU admit → enqueue) → `tx`
//! (scheduler → `tx_burst` → MMU release). A PAUSE's way: the worker that crosses Xoff
//! queues it itself (`pause_handoff`), `control` commits it, refreshes it and sends the
//! RESUME, driven by `main_loop` on the main lcore. `setup` builds what they share
//! (`shared`); `report` and `telemetry` read it. (Private modules: plain names, not links,
//! so the public documentation has no dead link.)

mod control;
mod egress;
mod io;
pub mod latency;
mod link;
mod lldp;
mod lldp_shared;
mod main_loop;
mod nic_check;
mod pause_handoff;
mod pfc_live;
mod reconfig;
mod reconfig_shared;
mod report;
mod router;
mod routing;
mod rx;
mod scalar;
mod setup;
mod shared;
pub mod spec;
mod telemetry;
mod timeline;
mod tx;
mod tx_live;
mod worker;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::counters::{DropReason, Totals};
use crate::dpdk::{self, launch_on, tsc_hz, Eal, LcoreHandle, PortStats};
use crate::mmu::Mmu;
use shared::Shared;

pub use egress::EgressPort;
pub use nic_check::{nic_check, Finding};
pub use report::{Audit, PortReport, RunReport};
pub use spec::{PortSpec, SwitchSpec, WorkerSpec};

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
    #[error("timeline {path}: {err}")]
    Timeline { path: String, err: std::io::Error },
    #[error("I/O thread: {0}")]
    Io(std::io::Error),
    #[error("{0}")]
    Speed(spec::SpeedMismatch),
    /// `[control_plane] netns` cannot be entered (before EAL: a configuration error).
    #[error("{0}")]
    Netns(crate::kernel::KernelError),
    #[error("routing: {0}")]
    Routing(String),
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

/// Fault injection for the failure-path tests (docs/lossless.md, "Test knobs"): the number
/// (an lcore, a pool size) the environment variable `var` gives, if any.
fn fault_lcore(var: &str) -> Option<u32> {
    std::env::var(var).ok()?.parse().ok()
}

/// Start the switch described by `spec`, run until `opts` says stop, stop cleanly.
pub fn run(spec: &SwitchSpec, opts: &RunOptions) -> Result<RunReport, DataplaneError> {
    // The kernel's neighbour tables are one per host and their thresholds visible only in
    // the initial namespace: sized before entering ours, restored when this returns.
    let mut host_sysctls = crate::kernel::Sysctls::default();
    if spec.config.routing.enabled() {
        let n = spec.config.routing.neighbours.total;
        match crate::kernel::neighbour_thresholds(&mut host_sysctls, n) {
            Ok(true) => {
                for (path, old) in host_sysctls.changed() {
                    log::info!("{path}: raised from {old} for {n} neighbours (restored at stop)");
                }
            }
            Ok(false) => log::info!(
                "kernel neighbour thresholds (net.ipv4/ipv6.neigh.default.gc_thresh1..3) are the host's, not visible in \
                 this namespace: for {n} neighbours set gc_thresh3 >= {n} on the host"
            ),
            Err(e) => log::warn!("kernel neighbour thresholds not raised for {n} neighbours: {e}"),
        }
    }
    // Before EAL: its lcores, the representors (net_tap creates its netdev in the prober's
    // namespace), af_packet ports and the control thread are then all born there.
    if let Some(ns) = &spec.config.routing.netns {
        crate::kernel::netns::enter(ns).map_err(DataplaneError::Netns)?;
        log::info!("network namespace {ns}: entered");
    }
    // The CPUs the process may use, before EAL pins this thread to the main lcore's.
    let allowed = dpdk::threads::current_affinity().unwrap_or_default();
    let eal = Eal::init(&spec.eal_args).map_err(DataplaneError::Eal)?;
    log::info!(
        "{} up: {} lcores, {} ports probed, TSC {} Hz",
        Eal::version(),
        eal.lcore_count(),
        eal.port_count(),
        tsc_hz()
    );
    if spec.eal_args.iter().any(|a| a == "--no-huge") {
        log::info!("capture: running without hugepages, dpdk-dumpcap cannot attach (see docs/operating.md, Capture)");
    } else {
        match dpdk::pdump_init() {
            Ok(()) => log::info!("capture: rte_pdump_init done; dpdk-dumpcap --file-prefix=<prefix> can capture"),
            Err(e) => log::warn!("capture: {e}"),
        }
    }
    let result = run_with_eal(&eal, spec, opts, &allowed);
    drop(eal);
    result
}

/// Setup, launch, forward, stop, in that order. Long (~155 lines) on purpose: the start-up
/// order (ports, tables, telemetry, threads placed, workers, launch) and the stop order
/// (RESUMEs, workers, routing, I/O, report) each read top to bottom in one place; each step
/// is a call into `setup`, `routing`, `main_loop` or `shutdown`.
fn run_with_eal(
    eal: &Eal,
    spec: &SwitchSpec,
    opts: &RunOptions,
    allowed: &[usize],
) -> Result<RunReport, DataplaneError> {
    // Setup: nothing runs yet.
    setup::check_lcores(eal, spec)?;
    let ids = setup::port_ids(spec)?;
    let pools = setup::mempools(spec)?;
    let (pool, ctl_pool) = (pools.0.clone(), pools.1.clone());
    let mut ports = setup::start_ports(spec, ids, &pool)?;
    let sources: Vec<link::LinkSource> =
        spec.config.ports.iter().zip(&ports.ids).map(|(p, &id)| link::LinkSource::for_port(&p.devargs, id)).collect();
    let links = setup::link_states(spec, &sources);
    nic_check::log_verdicts(spec, &ports, &links);
    // The links' speeds: what PFC timers, refresh, headroom and shaper use from here on.
    let speeds: Vec<Option<u64>> = links.iter().map(|l| l.speed_bps).collect();
    let (adjusted, warnings) = spec.with_link_speeds(&speeds).map_err(DataplaneError::Speed)?;
    for w in warnings {
        log::warn!("{w}");
    }
    let spec = match &adjusted {
        Some(s) => {
            for (p, q) in spec.ports.iter().zip(&s.ports).filter(|(p, q)| p.speed_bps != q.speed_bps) {
                log::info!("port {}: speed {} from the link", p.name, crate::units::format_speed(q.speed_bps));
            }
            s
        }
        None => spec,
    };
    setup::check_queue_capacity(spec, pool.size())?;
    let mmu = Mmu::new(spec.plan.mmu.clone()).map_err(|e| DataplaneError::Mmu(e.to_string()))?;
    let hz = tsc_hz();
    // The kernel's tables are loaded before any worker runs.
    let mut routing = routing::Routing::start(spec, &ports.macs)?;
    let mut pfc = setup::PfcSides::new(spec, hz);
    let shared = setup::shared_state(spec, mmu, &ports, &pfc, pools, &links, hz);
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    match routing.as_ref().map(|r| r.memory()) {
        Some(m) => log::info!(
            "tables: FDB {:.1} MiB, IPv4 FIB {:.1} MiB, IPv6 FIB {:.1} MiB (two copies each), next hops {:.2} MiB, \
             ECMP groups {:.2} MiB",
            mib(shared.fdb.bytes() as u64),
            mib(m.fib4_bytes),
            mib(m.fib6_bytes),
            mib(m.nexthops_bytes),
            mib(m.groups_bytes)
        ),
        None => log::info!("tables: FDB {:.1} MiB", mib(shared.fdb.bytes() as u64)),
    }
    let mut control = control::Control::new(shared.clone(), hz, sources);
    telemetry::register(telemetry::Views {
        shared: shared.clone(),
        pfc_tx: control.tx_counters(),
        port_ids: ports.ids.clone(),
        tsc_hz: hz,
        routing: routing.as_ref().map(|r| telemetry::RoutingView {
            status: r.status.clone(),
            names: r.names.clone(),
            memory: r.memory(),
        }),
    });
    let (timeline, timeline_file) = match &opts.timeline {
        Some((path, every)) => {
            let (t, f) = timeline::Timeline::create(path, *every, hz, dpdk::rdtsc())
                .map_err(|err| DataplaneError::Timeline { path: path.display().to_string(), err })?;
            (Some(t), Some(f))
        }
        None => (None, None),
    };
    let port_names = spec.ports.iter().map(|p| p.name.clone()).collect();
    let io_thread = io::IoThread::spawn(shared.io.clone(), timeline_file, port_names).map_err(DataplaneError::Io)?;
    // Every thread exists now (EAL's, telemetry's, routing, I/O): the ones that are not
    // lcores leave the lcores' CPUs, or go to nice 19 where no CPU is free.
    let lcore_tids: Vec<i32> =
        spec.workers.iter().filter_map(|w| dpdk::threads::lcore_thread_id(w.lcore).ok()).collect();
    match dpdk::threads::place_non_lcore_threads(allowed, &lcore_tids) {
        Ok((p, moved)) => log::info!(
            "threads: {} ({}) on CPUs {:?}{}",
            moved.len(),
            moved.join(", "),
            p.cpus,
            if p.idle { " at nice 19 (no CPU free of lcores)" } else { " (free of lcores)" }
        ),
        Err(e) => log::warn!("threads: cannot move the non-lcore threads off the lcores' CPUs: {e}"),
    }
    let mut workers = setup::workers(spec, &shared, &mut ports, &mut pfc, hz);
    if let Some(r) = &routing {
        let now = dpdk::rdtsc();
        for (i, w) in workers.iter_mut().enumerate() {
            w.route_with(r.worker(i, hz, now)?);
        }
    }

    // Launch. If one worker cannot be launched, the ones already running stop at once:
    // they wait at stop only for the workers that were launched.
    let mut handles = Vec::new();
    let mut launch_err = None;
    let (fail_launch, panic_on) = (fault_lcore("PFCSW_FAULT_LAUNCH"), fault_lcore("PFCSW_FAULT_PANIC"));
    for (w, ws) in workers.into_iter().zip(&spec.workers) {
        let injected = fail_launch == Some(ws.lcore);
        let panics = panic_on == Some(ws.lcore);
        let launched = if injected {
            Err("launch refused (PFCSW_FAULT_LAUNCH)".to_string())
        } else {
            launch_on(ws.lcore, move || {
                if panics {
                    panic!("injected fault (PFCSW_FAULT_PANIC)");
                }
                w.run()
            })
            .map_err(|e| e.to_string())
        };
        match launched {
            Ok(h) => handles.push(h),
            Err(msg) => {
                launch_err = Some(DataplaneError::Lcore { lcore: ws.lcore, msg });
                break;
            }
        }
    }
    shared.workers_launched.store(handles.len(), Ordering::SeqCst);

    // Forward until told to stop (at once if a worker could not be launched).
    let elapsed = match launch_err {
        None => {
            log::info!("forwarding: {} ports, {} worker lcore(s)", spec.ports.len(), spec.workers.len());
            let elapsed = main_loop::run(&mut control, spec, opts, timeline);
            // A bound, not a delay: it ends once the workers stopped receiving and took the
            // control frames. On a loaded host a worker is off its CPU for tens of ms, and a
            // frame still queued when the ports stop was counted as sent but never left.
            let resumed = control.resume_all_at_stop(STOP_CONTROL_WAIT);
            if resumed > 0 {
                log::info!("stop: {resumed} RESUME frame(s) sent for PGs still paused");
            }
            elapsed
        }
        Some(_) => Duration::ZERO,
    };

    let ids = ports.ids.clone();
    let (totals, pmd) = shutdown(&shared, handles, &control, ports);
    let routing_json = routing.as_mut().map(|r| {
        r.stop();
        report::routing_json(&r.status)
    });
    io_thread.finish();
    let fin = report::Final { totals, pmd, ids, elapsed, routing: routing_json };
    let report = report::build(spec, &shared, &control, fin, &pool, &ctl_pool);
    match launch_err {
        Some(e) => Err(e),
        None => Ok(report),
    }
}

/// How long the stop waits for the workers to stop receiving and to send the control
/// frames still queued (the final RESUMEs): a bound on a condition, generous for a loaded host.
const STOP_CONTROL_WAIT: Duration = Duration::from_secs(2);

/// Stop: workers first (each frees what it holds, releasing MMU charges), then what is
/// left on its way to a port no worker serves, the control frames, and the ports.
/// Returns the final counters and the PMD's own counters per port.
fn shutdown(
    shared: &Shared,
    handles: Vec<LcoreHandle>,
    control: &control::Control,
    ports: setup::Ports,
) -> (Totals, Vec<PortStats>) {
    shared.running.store(false, Ordering::SeqCst);
    for h in handles {
        h.wait();
    }
    let nports = shared.ports.len();
    // What is left on its way to a port no worker serves; counted as a worker's (they all
    // stopped: this thread is the only writer now).
    if let Some(c) = shared.counters.first() {
        for eg in &shared.egress {
            for q in std::iter::from_fn(|| eg.inbound.pop()) {
                let _ = shared.mmu.release(q.charge);
                c.count_drop(q.drop_site(), DropReason::FlushedAtStop, 1);
            }
        }
    }
    let totals = Totals::collect(shared.counters.iter().map(|c| &**c), nports);
    let unsent = control.drain();
    if unsent > 0 {
        log::warn!(
            "stop: {unsent} PFC/LLDP frame(s) still queued after {STOP_CONTROL_WAIT:?} were not sent (counted as sent)"
        );
    }
    let setup::Ports { mut ports, rxqs, txqs, .. } = ports;
    drop(rxqs);
    drop(txqs);
    let pmd = ports
        .iter_mut()
        .map(|port| {
            let stats = port.stats();
            let _ = port.stop();
            stats
        })
        .collect();
    (totals, pmd)
}
