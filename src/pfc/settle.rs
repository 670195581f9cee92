//! Bringing one port's PFC transmit state in line with the MMU's PG states.
//!
//! Edges from the workers only say *that* a PG changed; what to send is decided from the
//! MMU's current PG state when the control lcore gets to it. A backlog of stale
//! PAUSE/RESUME/PAUSE edges for one PG therefore costs at most one frame, not one frame
//! per edge (the control queue is only 256 deep). A frame that cannot be queued is not
//! committed ([`super::PfcAttempt`]): the PG stays pending and is retried, so a lost PAUSE
//! is never counted as sent.

use super::tx::PfcPortTx;
use crate::mmu::EdgeKind;
use crate::wire::MacControl;

/// A frame could not be queued (no mbuf, control queue full); nothing was committed and
/// the work stays pending for a retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("PFC frame not queued (control mempool or queue full); kept pending for retry")]
pub struct Unsent;

/// PGs of one port whose PFC state may differ from the MMU's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PendingPgs {
    dirty: u8,
    /// Per PG: TSC of the latest PAUSE edge not yet answered (0 = none), for the
    /// reaction-time measurement.
    pause_tsc: [u64; 8],
}

impl PendingPgs {
    /// The PGs in `pgs` are no longer lossless (`config pfc`): nothing to settle.
    pub fn forget(&mut self, pgs: u8) {
        self.dirty &= !pgs;
        for (i, t) in self.pause_tsc.iter_mut().enumerate() {
            if pgs & (1 << i) != 0 {
                *t = 0;
            }
        }
    }

    /// `pg` changed (an MMU edge of `kind`, or a mismatch found by reconciliation when
    /// `kind` is None). `tsc` is the TSC of the edge (0 if unknown).
    pub fn mark(&mut self, pg: u8, kind: Option<EdgeKind>, tsc: u64) {
        let i = usize::from(pg & 7);
        self.dirty |= 1 << i;
        match kind {
            // The latest crossing is the one a PAUSE now answers; earlier ones were
            // undone by a RESUME edge in between.
            Some(EdgeKind::Pause) if tsc != 0 => self.pause_tsc[i] = tsc,
            Some(EdgeKind::Resume) => self.pause_tsc[i] = 0,
            _ => {}
        }
    }

    /// PGs waiting to be settled.
    pub fn dirty(&self) -> u8 {
        self.dirty
    }

    /// Settles every pending PG against the MMU: one PAUSE frame for the priorities of
    /// the pending PGs that `mmu_off`, then one RESUME frame for the others (PGs already
    /// in that state cost nothing). `pg_priorities[pg]` are a PG's PFC priorities;
    /// `send(frame, edge_tsc)` queues a frame and returns false if it could not.
    ///
    /// On `Err(Unsent)` the PGs of the frame that failed (and of any frame after it)
    /// stay pending and nothing about them was committed.
    pub fn settle(
        &mut self,
        tx: &mut PfcPortTx,
        pg_priorities: &[u8; 8],
        mmu_off: impl Fn(u8) -> bool,
        now: u64,
        mut send: impl FnMut(&MacControl, u64) -> bool,
    ) -> Result<(), Unsent> {
        if self.dirty == 0 {
            return Ok(());
        }
        let (mut off_pgs, mut on_pgs) = (0u8, 0u8);
        for pg in bits(self.dirty) {
            match (pg_priorities[usize::from(pg)], mmu_off(pg)) {
                (0, _) => self.clear(1 << pg), // no PFC priority: nothing to say
                (_, true) => off_pgs |= 1 << pg,
                (_, false) => on_pgs |= 1 << pg,
            }
        }
        // PAUSE first: it is the frame that protects the buffer.
        let tsc = self.earliest_pause_tsc(off_pgs);
        send_edge(tx, prios_of(off_pgs, pg_priorities), EdgeKind::Pause, now, tsc, &mut send)?;
        self.clear(off_pgs);
        if !send_edge(tx, prios_of(on_pgs, pg_priorities), EdgeKind::Resume, now, 0, &mut send)? {
            self.clear(on_pgs);
            return Ok(());
        }
        self.clear(on_pgs);
        // A worker may have crossed Xoff between our reading of the MMU and our RESUME
        // and queued its PAUSE first: the wire would then carry PAUSE, RESUME while the
        // PG is OFF. Read again after queueing (the fence orders our push before the
        // reads, against the worker's CAS and push) and follow with a PAUSE.
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        let again = bits(on_pgs).filter(|&pg| mmu_off(pg)).fold(0u8, |m, pg| m | 1 << pg);
        if again != 0 {
            self.dirty |= again;
            send_edge(tx, prios_of(again, pg_priorities), EdgeKind::Pause, now, 0, &mut send)?;
            self.clear(again);
        }
        Ok(())
    }

    fn clear(&mut self, pgs: u8) {
        self.dirty &= !pgs;
        for pg in bits(pgs) {
            self.pause_tsc[usize::from(pg)] = 0;
        }
    }

    /// The earliest unanswered crossing among `pgs`: the one frame answers them all.
    fn earliest_pause_tsc(&self, pgs: u8) -> u64 {
        bits(pgs).map(|pg| self.pause_tsc[usize::from(pg)]).filter(|&t| t != 0).min().unwrap_or(0)
    }
}

/// Sends the refresh due at `now`, if any; an unsent refresh stays due. Ok(true) if a
/// frame was queued.
pub fn send_refresh(
    tx: &mut PfcPortTx,
    now: u64,
    mut send: impl FnMut(&MacControl, u64) -> bool,
) -> Result<bool, Unsent> {
    let Some(a) = tx.prepare_poll(now) else {
        return Ok(false);
    };
    if !send(a.frame(), 0) {
        return Err(Unsent);
    }
    a.commit();
    Ok(true)
}

/// One edge for `priorities`, committed only if `send` queued the frame. Ok(true) if a
/// frame was queued.
fn send_edge(
    tx: &mut PfcPortTx,
    priorities: u8,
    kind: EdgeKind,
    now: u64,
    edge_tsc: u64,
    send: &mut impl FnMut(&MacControl, u64) -> bool,
) -> Result<bool, Unsent> {
    if priorities == 0 {
        return Ok(false);
    }
    let Some(a) = tx.prepare_edge(priorities, kind, now) else {
        return Ok(false); // already in that state
    };
    if !send(a.frame(), edge_tsc) {
        return Err(Unsent);
    }
    a.commit();
    Ok(true)
}

fn prios_of(pgs: u8, pg_priorities: &[u8; 8]) -> u8 {
    bits(pgs).fold(0, |m, pg| m | pg_priorities[usize::from(pg)])
}

/// Set bit positions of `m`, lowest first.
fn bits(mut m: u8) -> impl Iterator<Item = u8> {
    std::iter::from_fn(move || {
        (m != 0).then(|| {
            let b = m.trailing_zeros() as u8;
            m &= m - 1;
            b
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pfc::{quanta_to_ticks, PfcPrioStats, PfcRxCounters, PfcTxConfig};

    const HZ: u64 = 1_000_000_000;
    const SPEED: u64 = 100_000_000_000;
    /// PG 3 → priority 3, PG 4 → priority 4, PG 0 lossy (no PFC priority).
    const PG_PRIOS: [u8; 8] = [0, 0, 0, 1 << 3, 1 << 4, 0, 0, 0];

    fn port() -> PfcPortTx {
        PfcPortTx::new(PfcTxConfig::default(), SPEED, HZ)
    }

    fn stats(tx: &PfcPortTx) -> [PfcPrioStats; 8] {
        PfcPrioStats::snapshot(&tx.counters(), &PfcRxCounters::default(), HZ)
    }

    /// Records what was queued; refuses while `full`.
    #[derive(Default)]
    struct Queue {
        full: bool,
        sent: Vec<(MacControl, u64)>,
    }

    impl Queue {
        fn send(&mut self) -> impl FnMut(&MacControl, u64) -> bool + '_ {
            |f, tsc| {
                if self.full {
                    return false;
                }
                self.sent.push((*f, tsc));
                true
            }
        }
    }

    #[test]
    fn dropped_attempt_changes_nothing_and_comes_back() {
        let mut tx = port();
        let a = tx.prepare_edge(1 << 3, EdgeKind::Pause, 100).unwrap();
        assert_eq!(*a.frame(), MacControl::pfc_pause(1 << 3, 0xffff));
        drop(a); // could not be queued
        assert_eq!(tx.off_mask(), 0);
        assert_eq!(tx.next_deadline(), None);
        assert_eq!(stats(&tx)[3], PfcPrioStats::default(), "nothing counted");
        // The same decision again, committed this time.
        let f = tx.prepare_edge(1 << 3, EdgeKind::Pause, 200).unwrap().commit();
        assert_eq!(f, MacControl::pfc_pause(1 << 3, 0xffff));
        assert_eq!(tx.off_mask(), 1 << 3);
        let s = stats(&tx)[3];
        assert_eq!((s.tx_pause, s.tx_on2off, s.tx_resume), (1, 1, 0));
    }

    #[test]
    fn pause_sent_by_a_worker_is_taken_into_account() {
        let mut tx = port();
        let half = quanta_to_ticks(0xffff, SPEED, HZ) / 2;
        tx.note_sent_pause(1 << 3, 500, 1);
        assert_eq!(tx.off_mask(), 1 << 3);
        assert_eq!(tx.next_deadline(), Some(500 + half), "refresh from the worker's send time");
        let s = stats(&tx)[3];
        assert_eq!((s.tx_pause, s.tx_on2off, s.tx_resume), (1, 1, 0));
        // The MMU is OFF and so is the sender: settling sends nothing more.
        let mut p = PendingPgs::default();
        let mut q = Queue::default();
        p.mark(3, None, 0);
        assert_eq!(p.settle(&mut tx, &PG_PRIOS, |pg| pg == 3, 600, q.send()), Ok(()));
        assert!(q.sent.is_empty(), "{:?}", q.sent);
        // A second worker PAUSE while OFF was on the wire too: counted, no new ON→OFF.
        tx.note_sent_pause(1 << 3, 700, 1);
        let s = stats(&tx)[3];
        assert_eq!((s.tx_pause, s.tx_on2off), (2, 1));
        // Xon: one RESUME from the control lcore.
        p.mark(3, Some(EdgeKind::Resume), 0);
        assert_eq!(p.settle(&mut tx, &PG_PRIOS, |_| false, 800, q.send()), Ok(()));
        assert_eq!(q.sent, vec![(MacControl::pfc_resume(1 << 3), 0)]);
        assert_eq!(tx.off_mask(), 0);
    }

    #[test]
    fn pause_not_queued_is_retried_and_counted_once() {
        let mut tx = port();
        let mut p = PendingPgs::default();
        let mut q = Queue { full: true, ..Default::default() };
        p.mark(3, Some(EdgeKind::Pause), 42);
        let r = p.settle(&mut tx, &PG_PRIOS, |pg| pg == 3, 100, q.send());
        assert_eq!(r, Err(Unsent));
        assert_eq!(p.dirty(), 1 << 3, "still pending");
        assert_eq!(tx.off_mask(), 0, "not asserted: the MMU/tx mismatch stays visible");
        assert_eq!(stats(&tx)[3].tx_pause, 0);
        // Room again: the retry sends it, with the original edge's TSC.
        q.full = false;
        assert_eq!(p.settle(&mut tx, &PG_PRIOS, |pg| pg == 3, 300, q.send()), Ok(()));
        assert_eq!(q.sent, vec![(MacControl::pfc_pause(1 << 3, 0xffff), 42)]);
        assert_eq!(p.dirty(), 0);
        assert_eq!(tx.off_mask(), 1 << 3);
        // Refreshes are due from the send time, not from the lost attempt.
        assert_eq!(tx.next_deadline(), Some(300 + quanta_to_ticks(0xffff, SPEED, HZ) / 2));
        assert_eq!((stats(&tx)[3].tx_pause, stats(&tx)[3].tx_on2off), (1, 1));
    }

    #[test]
    fn resume_not_queued_keeps_refreshing_until_it_goes() {
        let mut tx = port();
        let half = quanta_to_ticks(0xffff, SPEED, HZ) / 2;
        tx.on_edge(1 << 4, EdgeKind::Pause, 0).unwrap();
        let mut p = PendingPgs::default();
        let mut q = Queue { full: true, ..Default::default() };
        p.mark(4, Some(EdgeKind::Resume), 0);
        assert_eq!(p.settle(&mut tx, &PG_PRIOS, |_| false, 10, q.send()), Err(Unsent));
        assert_eq!(tx.off_mask(), 1 << 4, "the peer was never told: still OFF");
        // A refresh that cannot be queued stays due.
        assert_eq!(send_refresh(&mut tx, half, q.send()), Err(Unsent));
        assert_eq!(tx.next_deadline(), Some(half));
        q.full = false;
        assert_eq!(send_refresh(&mut tx, half + 5, q.send()), Ok(true));
        assert_eq!(tx.next_deadline(), Some(2 * half + 5));
        assert_eq!(p.settle(&mut tx, &PG_PRIOS, |_| false, half + 9, q.send()), Ok(()));
        assert_eq!(q.sent, vec![(MacControl::pfc_pause(1 << 4, 0xffff), 0), (MacControl::pfc_resume(1 << 4), 0)]);
        let s = stats(&tx)[4];
        assert_eq!((s.tx_pause, s.tx_resume), (2, 1));
        assert_eq!(s.tx_pause_duration_us, (half + 9) / 1000, "OFF until the RESUME went");
    }

    #[test]
    fn stale_edge_backlog_costs_at_most_one_frame_per_direction() {
        let mut tx = port();
        let mut p = PendingPgs::default();
        let mut q = Queue::default();
        // 200 alternating edges for PG 3 queued up; the MMU says OFF now.
        for i in 0..100u64 {
            p.mark(3, Some(EdgeKind::Pause), 1000 + 2 * i);
            p.mark(3, Some(EdgeKind::Resume), 1001 + 2 * i);
        }
        p.mark(3, Some(EdgeKind::Pause), 5000);
        p.settle(&mut tx, &PG_PRIOS, |pg| pg == 3, 6000, q.send()).unwrap();
        assert_eq!(q.sent, vec![(MacControl::pfc_pause(1 << 3, 0xffff), 5000)]);
        // Another backlog that ends ON while we are OFF: one RESUME. PG 0 has no PFC.
        for _ in 0..50 {
            p.mark(3, Some(EdgeKind::Pause), 7000);
            p.mark(3, Some(EdgeKind::Resume), 7001);
            p.mark(0, Some(EdgeKind::Pause), 7002);
        }
        p.settle(&mut tx, &PG_PRIOS, |pg| pg == 0, 8000, q.send()).unwrap();
        assert_eq!(q.sent.len(), 2);
        assert_eq!(q.sent[1], (MacControl::pfc_resume(1 << 3), 0));
        assert_eq!(p.dirty(), 0);
        // A backlog that ends where we already are sends nothing.
        p.mark(3, Some(EdgeKind::Pause), 9000);
        p.mark(3, Some(EdgeKind::Resume), 9001);
        p.settle(&mut tx, &PG_PRIOS, |_| false, 9500, q.send()).unwrap();
        assert_eq!(q.sent.len(), 2);
    }

    #[test]
    fn pending_pgs_share_one_pause_frame() {
        let mut tx = port();
        let mut p = PendingPgs::default();
        let mut q = Queue::default();
        p.mark(4, Some(EdgeKind::Pause), 300);
        p.mark(3, Some(EdgeKind::Pause), 200);
        p.settle(&mut tx, &PG_PRIOS, |_| true, 400, q.send()).unwrap();
        assert_eq!(q.sent, vec![(MacControl::pfc_pause(0b1_1000, 0xffff), 200)]);
    }

    /// The control lcore reads a PG ON and queues RESUME; a worker crosses Xoff in between
    /// and queues its PAUSE first (the interleaving forced: the worker acts inside the
    /// control lcore's send of the RESUME). The wire must not end with that RESUME while
    /// the MMU says OFF: a PAUSE follows it.
    #[test]
    fn resume_overtaken_by_a_worker_pause_is_followed_by_pause() {
        use std::cell::{Cell, RefCell};
        let mut tx = port();
        tx.note_sent_pause(1 << 3, 100, 1);
        let mmu_off = Cell::new(false);
        let wire = RefCell::new(Vec::new());
        let mut p = PendingPgs::default();
        p.mark(3, Some(EdgeKind::Resume), 0);
        let send = |f: &MacControl, _: u64| {
            if *f == MacControl::pfc_resume(1 << 3) && !mmu_off.get() {
                // The worker: its admission flips the PG OFF and queues its PAUSE.
                mmu_off.set(true);
                wire.borrow_mut().push(MacControl::pfc_pause(1 << 3, 0xffff));
            }
            wire.borrow_mut().push(*f);
            true
        };
        p.settle(&mut tx, &PG_PRIOS, |_| mmu_off.get(), 200, send).unwrap();
        let wire = wire.into_inner();
        assert_eq!(wire.last(), Some(&MacControl::pfc_pause(1 << 3, 0xffff)), "wire ends {wire:?} with the PG OFF");
        assert_eq!(tx.off_mask(), 1 << 3, "the sender state follows the MMU");
        assert_eq!(p.dirty(), 0);
    }
}
