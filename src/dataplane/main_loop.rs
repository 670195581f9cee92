//! The control lcore's loop (DPDK main lcore), until a signal or `--duration` says stop:
//! it drives the PFC transmitter ([`Control`]), samples the timeline, and every
//! millisecond polls links, ages the FDB, checks the stop conditions and SIGUSR1, and
//! prints the live counters line. It busy-polls while any PG is paused and naps when PFC
//! is quiet (`lcores.control_idle`).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::config::ControlIdle;
use crate::counters::Totals;
use crate::dpdk::{self, rdtsc};

use super::control::Control;
use super::io::IoMsg;
use super::report;
use super::spec::SwitchSpec;
use super::timeline::Timeline;
use super::RunOptions;

/// FDB slots aged per millisecond: under a µs of the control lcore; the largest table
/// (2 Mi slots) is swept in about 4 s. Sweeping only reclaims slots: a lookup already
/// treats an expired entry as absent, so aging is exact whatever the sweep's pace.
const FDB_AGE_SLICE: usize = 512;

/// The control lcore's nap once PFC has been quiet for a millisecond
/// (`lcores.control_idle = "sleep"`): `lcores.control_nap` (default 10 ms: a wake-up costs
/// some 10 µs of CPU in a VM), at most the timeline's sampling interval. The first PAUSE
/// after a quiet spell is sent, and refreshed while needed, by the worker that saw the
/// crossing; the control lcore takes it over when it wakes. An edge a worker hands it (a
/// RESUME) rings its doorbell and ends the nap, so a nap delays no RESUME.
fn nap_length(spec: &SwitchSpec, timeline_every: Option<Duration>) -> Duration {
    let nap = Duration::from_nanos(spec.control_nap_ns);
    timeline_every.map_or(nap, |t| nap.min(t))
}

/// The main lcore's loop, until a signal or `--duration` says stop: PFC frames
/// (busy-polled while any PG is paused, so refreshes and RESUMEs are on time), the
/// timeline, and every millisecond the stop conditions, SIGUSR1 and live counters. What
/// it prints or writes goes to the I/O thread ([`super::io`]): it never blocks on output.
/// Returns how long the switch forwarded.
pub fn run(control: &mut Control, spec: &SwitchSpec, opts: &RunOptions, mut timeline: Option<Timeline>) -> Duration {
    let shared = control.shared().clone();
    let hz = dpdk::tsc_hz();
    let nports = shared.ports.len();
    let start = Instant::now();
    let mut next_stats = opts.stats_interval.map(|i| start + i);
    let mut last = Totals::collect(shared.counters.iter().map(|c| &**c), nports);
    let mut last_t = start;
    let mut next_check = rdtsc();
    let check_every = hz / 1000;
    let pfc_tx_counters = control.tx_counters();
    let nap = spec.control_idle == ControlIdle::Sleep;
    let nap_for = nap_length(spec, opts.timeline.as_ref().map(|(_, every)| *every));
    if nap {
        dpdk::set_timer_slack_ns(1_000);
        shared.control_bell.register();
    }
    let mut last_age = rdtsc();
    // TSC of the last pass with PFC activity: naps start only after a quiet millisecond,
    // so a PG that pauses again and again keeps the control lcore polling.
    let mut last_busy = rdtsc();
    // LLDP/DCBX (`[lldp] enabled`): driven from the housekeeping pass (every millisecond, or
    // after a nap), never by a worker.
    let mut lldp = super::lldp::LldpDriver::new(spec, &shared, hz, rdtsc());
    // Live changes (`pfcswitch config ...`): installed from here only.
    let mut reconfig = super::reconfig::Reconfigurer::default();
    // Start of the last pass (0 after a nap, which is not time away).
    let mut pass_start = rdtsc();
    loop {
        let top = rdtsc();
        if pass_start != 0 {
            control.max_loop_cycles = control.max_loop_cycles.max(top.wrapping_sub(pass_start));
        }
        pass_start = top;
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
                // An edge a worker queues rings the bell and ends the nap.
                shared.control_bell.nap(nap_for, || control.idle() && shared.edges.iter().all(|q| q.is_empty()));
                pass_start = 0;
            } else {
                std::hint::spin_loop();
            }
            continue;
        }
        next_check = t + check_every;
        control.poll_links(t);
        control.warn_failures(Instant::now());
        if let Some(l) = lldp.as_mut() {
            l.poll(&shared, t);
        }
        reconfig.poll(&shared, control);
        // FDB aging in bounded slices: FDB_AGE_SLICE slots a millisecond, whatever the size
        // (a pass after a nap ages the milliseconds it slept).
        let ms = (t.wrapping_sub(last_age) / check_every.max(1)).clamp(1, 16) as usize;
        last_age = t;
        shared.fdb.age_slice(FDB_AGE_SLICE * ms, t);
        if opts.stop.load(Ordering::Relaxed) {
            break;
        }
        if opts.tx_enable_all.swap(false, Ordering::Relaxed) {
            shared.io.send(IoMsg::Log(log::Level::Info, "SIGUSR1: TX enabled on every port".into()));
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
                let line = report::live_line(&spec.ports, &last, &cur, now.duration_since(last_t), start.elapsed());
                shared.io.send(IoMsg::Stdout(line));
                last = cur;
                last_t = now;
                next_stats = Some(t + iv);
            }
        }
    }
    let elapsed = start.elapsed();
    if let Some(tl) = timeline {
        tl.finish(&shared.io);
    }
    elapsed
}
