//! The worker lcore loop: receive a burst per RX queue and run it through the RX stages
//! ([`super::rx`]: arrival → ingress → router → bridge → admit, into the egress TC
//! queues), serve the TX of the ports this lcore owns, refresh its own PAUSEs, nap when
//! idle (adaptive). Allocation-free, lock-free, no syscalls.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::counters::LcoreCounters;
use crate::dpdk::{rdtsc, RxQueue, BURST_CAP};
use crate::pfc::PfcRx;
use crate::pfcwd::PfcwdRxStamps;

use super::router::Router;
use super::rx::out::Out;
use super::rx::{Ctx, Rx};
use super::scalar::Scalar;
use super::shared::Shared;
use super::spec::SwitchSpec;
use super::tx::TxPort;

/// One worker lcore's state (DPDK l2fwd's `lcore_queue_conf`, and what the loop keeps
/// between bursts). Built by [`Worker::new`], given its queues, then moved to its lcore.
pub struct Worker {
    /// Index among the workers (its counters, its edge ring), not its lcore id.
    index: usize,
    shared: Arc<Shared>,
    rxqs: Vec<(usize, RxQueue)>,
    /// The RX stages, with the burst and the receive side of PFC.
    rx: Rx,
    /// The egress side: the TX ports this lcore owns, the PAUSEs it sent.
    out: Out,
    /// The old one-loop receive side, the stages' oracle (`PFCSW_RX_ORACLE=scalar`).
    scalar: Option<Box<Scalar>>,
    burst_size: usize,
    tsc_hz: u64,
    /// `worker_idle = "adaptive"`: nap when idle.
    adaptive: bool,
    /// Routing (None: no router interface, the L2 switch as it always was).
    router: Option<Box<Router>>,
}

/// Empty loop iterations before an adaptive worker naps, and its nap lengths (µs).
const IDLE_SPINS: u32 = 1024;
const NAP_MIN_US: u64 = 20;
const NAP_MAX_US: u64 = 1000;

impl Worker {
    /// Worker number `index` of the switch `spec` describes, with no queues yet.
    pub fn new(index: usize, shared: Arc<Shared>, spec: &SwitchSpec, tsc_hz: u64) -> Worker {
        // Read once, at start: which receive side runs (never per packet).
        let scalar = std::env::var("PFCSW_RX_ORACLE").is_ok_and(|v| v == "scalar");
        Worker {
            index,
            shared,
            rxqs: Vec::new(),
            rx: Rx::new(spec, tsc_hz),
            out: Out::new(index, spec.ports.len()),
            scalar: scalar.then(|| Box::new(Scalar::new(spec))),
            burst_size: spec.burst_size.clamp(1, BURST_CAP),
            tsc_hz,
            adaptive: spec.worker_idle == crate::config::WorkerIdle::Adaptive,
            router: None,
        }
    }

    /// Route on the router interfaces with `r`.
    pub fn route_with(&mut self, r: Router) {
        self.router = Some(Box::new(r));
    }

    /// Poll RX queue `q` of `port` from this lcore.
    pub fn add_rx_queue(&mut self, port: usize, q: RxQueue) {
        self.rxqs.push((port, q));
    }

    /// Act on the MAC-control (PFC) frames `port` receives: its receive-side pause state
    /// and, with the watchdog on, the record of when PAUSE frames arrived.
    pub fn receive_pfc(&mut self, port: usize, rx: PfcRx, wd_stamps: Option<Arc<PfcwdRxStamps>>) {
        self.rx.mac.own(port, rx, wd_stamps);
    }

    /// An adaptive worker may nap only when nothing waits for it: no PAUSE of its own to
    /// refresh, nothing queued on the ports it transmits (data or control frames), and no
    /// PG paused anywhere (the control lcore's refreshes leave through the TX owners).
    #[cold]
    fn may_nap(&self, shared: &Shared) -> bool {
        self.out.notes.is_empty()
            && self.out.txs.iter().all(|t| t.is_idle(shared))
            && shared.ports.iter().enumerate().all(|(p, rt)| {
                let mut pgs = rt.pfc.lossless_pgs();
                let mut off = false;
                while pgs != 0 {
                    off |= shared.mmu.is_off(p as u16, pgs.trailing_zeros() as u8);
                    pgs &= pgs - 1;
                }
                !off
            })
    }

    /// Own the transmit side of `tx.port`.
    pub fn own_tx(&mut self, tx: TxPort) {
        self.out.own(tx);
    }

    /// The loop: until the switch stops, receive and process a burst per RX queue
    /// (sending waiting PFC frames right after each), serve the ports this lcore
    /// transmits, refresh its own PAUSEs; then give back everything it holds.
    ///
    /// Long (~130 lines) on purpose for now: the per-iteration order (RX, control frames,
    /// TX, settle, QSBR quiescent point, nap with its doorbell) reads top to bottom in one
    /// place; splitting it belongs with a vector rework of the RX side (docs/benchmarks.md,
    /// "The L2 and routed paths: what was tried": measured, not yet done).
    pub fn run(mut self) {
        // A second handle, so the loop can lend `&Shared` while `self` is borrowed mutably.
        let shared = self.shared.clone();
        let counters: &LcoreCounters = &shared.counters[self.index];
        let mut max_loop = 0u64;
        let (mut empty, mut nap_us) = (0u32, NAP_MIN_US);
        if self.adaptive {
            crate::dpdk::set_timer_slack_ns(1_000);
            shared.doorbells[self.index].register();
        }
        // Pauses that expire on their own are accounted (RxWait) by a periodic settle.
        let settle_every = (self.tsc_hz / 1000).max(1);
        let mut next_settle = rdtsc().wrapping_add(settle_every);
        // Until the switch stops receiving (see `Shared::rx_stopped`).
        let mut rx_on = true;
        // Offline until now (start-up grace periods must not wait for a worker not yet
        // running); from here on a quiescent state every iteration, between bursts.
        if let Some(r) = &self.router {
            r.reader.online();
        }
        while shared.running.load(Ordering::Relaxed) {
            let t0 = rdtsc();
            let mut moved = 0usize;
            if rx_on && shared.rx_stopped.load(Ordering::Relaxed) {
                rx_on = false;
                shared.workers_rx_stopped.fetch_add(1, Ordering::SeqCst);
            }
            if rx_on && self.rx.mac.has_inbox() {
                self.rx.mac.take_inbox(&shared);
            }
            for r in 0..if rx_on { self.rxqs.len() } else { 0 } {
                let in_port = self.rxqs[r].0;
                let n = self.rxqs[r].1.rx_burst(&mut self.rx.burst, self.burst_size);
                if n > 0 {
                    moved += n;
                    let now = rdtsc();
                    let x = Ctx { shared: &shared, c: counters, in_port, now };
                    let router = self.router.as_deref_mut();
                    match self.scalar.as_deref_mut() {
                        None => self.rx.process_burst(x, &mut self.out, router),
                        Some(s) => {
                            let (o, b, mac) = (&mut self.out, &mut self.rx.burst, &mut self.rx.mac);
                            s.process_burst(o, b, mac, router, &shared, in_port, now, counters)
                        }
                    }
                    for t in self.out.txs.iter_mut() {
                        t.serve_control(&shared, self.index, now, counters);
                    }
                }
            }
            let now = rdtsc();
            for t in self.out.txs.iter_mut() {
                moved += t.serve(&shared, self.index, now, counters);
            }
            if rx_on && !self.out.notes.is_empty() {
                self.refresh_pauses(&shared, now, counters);
            }
            if !rx_on {
                // Stopping: only the last RESUMEs and what is queued still leave; no need to
                // spin (a spinning lcore would also starve the control lcore on a shared CPU).
                std::thread::sleep(std::time::Duration::from_micros(20));
            }
            if let Some(r) = &self.router {
                r.reader.quiescent();
            }
            let t1 = rdtsc();
            counters.worker.loops.inc();
            if moved > 0 {
                counters.worker.busy_cycles.add(t1.wrapping_sub(t0));
            }
            if t1 >= next_settle {
                next_settle = t1.wrapping_add(settle_every);
                self.rx.mac.settle(&shared, t1);
            }
            // The longest iteration: what an RX ring must absorb while this lcore is away.
            let took = t1.wrapping_sub(t0);
            if took > max_loop {
                max_loop = took;
                counters.worker.max_loop_cycles.set(took);
            }
            if self.adaptive {
                if moved > 0 {
                    (empty, nap_us) = (0, NAP_MIN_US);
                } else if empty < IDLE_SPINS {
                    empty += 1;
                } else if self.may_nap(&shared) {
                    // Idle path only: a syscall here costs no packet anything but latency.
                    // A PFC frame queued for one of this lcore's ports rings the doorbell
                    // and ends the nap (another worker's PAUSE must not wait for it).
                    let bell = &shared.doorbells[self.index];
                    let nap = std::time::Duration::from_micros(nap_us);
                    // Offline while napping: the routing writer's grace periods do not
                    // wait for a sleeping worker.
                    if let Some(r) = &self.router {
                        r.reader.offline();
                    }
                    let napped = bell.nap(nap, || self.out.txs.iter().all(|t| t.is_idle(&shared)));
                    if let Some(r) = &self.router {
                        r.reader.online();
                    }
                    if napped {
                        counters.worker.idle_sleeps.inc();
                        nap_us = (nap_us * 2).min(NAP_MAX_US);
                    }
                }
            }
        }
        self.stop(&shared, counters);
    }
}

impl Worker {
    /// Stop: account pauses that ended. Wait until no worker enqueues any more, then free
    /// what this lcore holds or what is on its way to it, releasing the charges.
    fn stop(&mut self, shared: &Shared, counters: &LcoreCounters) {
        if let Some(r) = &self.router {
            r.reader.offline();
        }
        let now = rdtsc();
        self.rx.mac.poll_all(now);
        // What the kernel kept this lcore waiting over the run (at stop: a file read).
        let schedstat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
        counters.worker.runqueue_wait_ns.set(run_delay_ns(&schedstat).unwrap_or(0));
        shared.workers_stopped.fetch_add(1, Ordering::SeqCst);
        let deadline = rdtsc().wrapping_add(self.tsc_hz.saturating_mul(5));
        while shared.workers_stopped.load(Ordering::SeqCst) < shared.workers_launched.load(Ordering::SeqCst)
            && rdtsc() < deadline
        {
            std::hint::spin_loop();
        }
        for t in &mut self.out.txs {
            t.flush(shared, counters);
        }
        // Empty the RX rings (bounded: a peer may still be sending).
        for (_, rxq) in self.rxqs.iter_mut() {
            for _ in 0..1024 {
                let n = rxq.rx_burst(&mut self.rx.burst, self.burst_size);
                if n == 0 {
                    break;
                }
                counters.worker.rx_flushed_at_stop.add(n as u64);
                self.rx.burst.clear();
            }
        }
    }

    /// Refresh the PAUSEs this lcore sent while the control lcore has not taken them over
    /// (it naps up to `lcores.control_nap`, longer than a refresh interval at 100G):
    /// whenever the PG is OFF and the last PAUSE is a refresh interval old.
    fn refresh_pauses(&mut self, shared: &Shared, now: u64, c: &LcoreCounters) {
        let n = self.out.notes.refresh(
            |port, pg| &shared.ports[port as usize].pause[pg as usize],
            |port, pg, last| {
                now.wrapping_sub(last) >= shared.ports[port as usize].refresh_ticks && shared.mmu.is_off(port, pg)
            },
            |port, pg| {
                let prios = shared.ports[port as usize].pfc.pg_priorities(pg);
                shared.queue_pause(port as usize, prios, 0)
            },
            now,
        );
        c.worker.pause_refreshes.add(n);
    }
}

/// `run_delay` (ns runnable but not running) from a `/proc/.../schedstat` line:
/// `<on-CPU ns> <run_delay ns> <timeslices>`.
fn run_delay_ns(schedstat: &str) -> Option<u64> {
    schedstat.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn run_delay_from_schedstat() {
        assert_eq!(super::run_delay_ns("1000 70312 1\n"), Some(70_312));
        assert_eq!(super::run_delay_ns(""), None);
    }
}
