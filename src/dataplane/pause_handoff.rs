//! The PAUSE hand-off between the worker that sees an Xoff crossing and the control
//! lcore that owns PFC transmission.
//!
//! The control lcore owns each port's PFC sender (refresh before expiry, one RESUME at
//! Xon). For the shortest reaction, the worker whose admission crosses Xoff does not wait
//! for it: it queues the PAUSE itself and leaves a *note* in the PG's [`PauseSlot`]; the
//! control lcore *takes* the note and commits that PAUSE to the PG's PFC state as if it
//! had sent it. While the control lcore naps, the worker *refreshes* its PAUSE itself.
//!
//! Protocol (one [`PauseSlot`] per (port, PG), one word of state):
//! * `0` — no note. A worker may **claim** it (CAS `0 → CLAIMED`), queue the frame, then
//!   **publish** the note (its TSC `t0`) or, if the frame could not be queued, give the
//!   slot back (`0`); the edge then goes to the control lcore the ordinary way.
//! * `t0` — a published note. Only the control lcore **takes** it (CAS `t0 → 0`), adding
//!   the frames the worker sent (`1 +` refreshes) to the PFC counters. The worker that
//!   wrote it may **refresh** it: claim (CAS `t0 → CLAIMED`), queue, count the refresh,
//!   put `t0` back. A failed CAS means the control lcore took the note: the worker forgets it.
//! * `CLAIMED` — a worker is queueing a frame; the control lcore leaves the slot alone
//!   and treats the PG as settled by the note to come.
//!
//! Invariants: a note is published only for a frame that was queued; the control lcore
//! counts every worker-sent frame exactly once (refreshes are added while the slot is
//! claimed, so a take sees all of them or the worker sees the take); at most one note per
//! (port, PG) is in flight; a worker keeps at most one [`Note`] per (port, PG).
//!
//! Pure code: no DPDK types; queueing a frame and reading the MMU are the caller's
//! closures, so the protocol is tested here with plain threads.

use std::sync::atomic::{AtomicU64, Ordering};

/// Slot value while a worker queues a frame for the PG.
const CLAIMED: u64 = u64::MAX;

/// One (port, PG)'s hand-off state.
#[derive(Debug, Default)]
pub struct PauseSlot {
    state: AtomicU64,
    /// Refreshes the worker sent before the control lcore took the note.
    refreshes: AtomicU64,
}

/// What the control lcore takes from a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Taken {
    /// TSC of the Xoff crossing whose PAUSE the worker sent.
    pub t0: u64,
    /// PAUSE frames the worker sent: the first and its refreshes.
    pub frames: u64,
}

/// A worker's exclusive hold on a slot while it queues a frame; gives the slot back as
/// it found it when dropped without [`Claim::publish`].
struct Claim<'a> {
    slot: &'a PauseSlot,
    restore: u64,
}

impl Claim<'_> {
    fn publish(self, t0: u64) {
        self.slot.state.store(t0, Ordering::Release);
        std::mem::forget(self);
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.slot.state.store(self.restore, Ordering::Release);
    }
}

impl PauseSlot {
    fn claim(&self, from: u64) -> Option<Claim<'_>> {
        self.state
            .compare_exchange(from, CLAIMED, Ordering::AcqRel, Ordering::Relaxed)
            .ok()
            .map(|_| Claim { slot: self, restore: from })
    }

    /// Control lcore: take a published note (None if there is none, or a worker is
    /// writing one: then take it on a later pass).
    pub fn take(&self) -> Option<Taken> {
        let t0 = self.state.load(Ordering::Acquire);
        if t0 == 0 || t0 == CLAIMED {
            return None;
        }
        self.state.compare_exchange(t0, 0, Ordering::AcqRel, Ordering::Relaxed).ok()?;
        let refreshes = self.refreshes.swap(0, Ordering::AcqRel);
        Some(Taken { t0, frames: 1 + refreshes })
    }

    /// A worker holds a note or is writing one: the PG's PFC state will be settled by it.
    pub fn is_held(&self) -> bool {
        self.state.load(Ordering::Acquire) != 0
    }
}

/// A PAUSE this worker sent for (port, PG) and published as `t0`.
#[derive(Clone, Copy, Debug)]
struct Note {
    port: u16,
    pg: u8,
    t0: u64,
    /// When this worker last queued a PAUSE for it.
    last: u64,
}

/// The notes one worker keeps until the control lcore takes them. Capacity fixed at start
/// (ports × 8 covers every PG): never allocates afterwards.
#[derive(Debug)]
pub struct WorkerNotes {
    notes: Vec<Note>,
}

impl WorkerNotes {
    pub fn new(nports: usize) -> WorkerNotes {
        WorkerNotes { notes: Vec::with_capacity(nports * 8) }
    }

    /// True when there is nothing to refresh (checked once per loop iteration).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.notes.is_empty()
    }

    /// An Xoff crossing of (port, PG) just happened on this worker: claim the slot, queue
    /// the PAUSE with `send` and publish the note. False when the slot holds another note
    /// or `send` failed: the caller hands the edge to the control lcore instead.
    pub fn pause(&mut self, slot: &PauseSlot, port: u16, pg: u8, now: u64, send: impl FnOnce() -> bool) -> bool {
        let Some(claim) = slot.claim(0) else { return false };
        if !send() {
            return false; // the claim gives the slot back
        }
        // The note's TSC must be neither 0 (no note) nor the claim marker.
        let t0 = now.clamp(1, CLAIMED - 1);
        claim.publish(t0);
        let note = Note { port, pg, t0, last: now };
        match self.notes.iter().position(|n| n.port == port && n.pg == pg) {
            Some(k) => self.notes[k] = note,
            None if self.notes.len() < self.notes.capacity() => self.notes.push(note),
            None => {}
        }
        true
    }

    /// Refresh the PAUSEs whose notes the control lcore has not taken (it naps longer than
    /// a refresh interval at high speeds): for each note, `due(port, pg, last)` says
    /// whether it needs a refresh now (the PG is still OFF and the last PAUSE is a refresh
    /// interval old); `send(port, pg)` queues one. Forgets the notes the control lcore
    /// took. Returns the refreshes queued.
    pub fn refresh<'s>(
        &mut self,
        slot: impl Fn(u16, u8) -> &'s PauseSlot,
        due: impl Fn(u16, u8, u64) -> bool,
        mut send: impl FnMut(u16, u8) -> bool,
        now: u64,
    ) -> u64 {
        let mut sent = 0;
        let mut i = 0;
        while i < self.notes.len() {
            let n = self.notes[i];
            let s = slot(n.port, n.pg);
            if s.state.load(Ordering::Acquire) != n.t0 {
                self.notes.swap_remove(i);
                continue;
            }
            if due(n.port, n.pg, n.last) {
                // Claimed while the frame is queued, so the control lcore takes the note
                // with this refresh counted, or before it (then this worker lets go).
                let Some(claim) = s.claim(n.t0) else {
                    self.notes.swap_remove(i);
                    continue;
                };
                if send(n.port, n.pg) {
                    s.refreshes.fetch_add(1, Ordering::AcqRel);
                    self.notes[i].last = now;
                    sent += 1;
                }
                drop(claim);
            }
            i += 1;
        }
        sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    #[test]
    fn pause_publish_take() {
        let slot = PauseSlot::default();
        let mut w = WorkerNotes::new(1);
        assert!(w.pause(&slot, 0, 3, 100, || true));
        assert!(slot.is_held());
        // A second crossing while the note is there goes the ordinary way.
        assert!(!w.pause(&slot, 0, 3, 200, || true));
        assert_eq!(slot.take(), Some(Taken { t0: 100, frames: 1 }));
        assert!(!slot.is_held());
        assert_eq!(slot.take(), None);
    }

    #[test]
    fn unsent_frame_publishes_nothing() {
        let slot = PauseSlot::default();
        let mut w = WorkerNotes::new(1);
        assert!(!w.pause(&slot, 0, 3, 100, || false));
        assert!(!slot.is_held());
        assert!(w.is_empty());
        assert_eq!(slot.take(), None);
    }

    #[test]
    fn zero_tsc_still_a_note() {
        let slot = PauseSlot::default();
        let mut w = WorkerNotes::new(1);
        assert!(w.pause(&slot, 0, 3, 0, || true));
        assert_eq!(slot.take().map(|t| t.t0), Some(1));
    }

    #[test]
    fn refreshes_counted_then_note_forgotten_after_take() {
        let slot = PauseSlot::default();
        let mut w = WorkerNotes::new(1);
        assert!(w.pause(&slot, 0, 3, 100, || true));
        let due = |_: u16, _: u8, last: u64| last + 50 <= 160;
        assert_eq!(w.refresh(|_, _| &slot, due, |_, _| true, 160), 1);
        // last is now 160: not due again.
        assert_eq!(w.refresh(|_, _| &slot, due, |_, _| true, 170), 0);
        assert_eq!(slot.take(), Some(Taken { t0: 100, frames: 2 }));
        assert_eq!(w.refresh(|_, _| &slot, |_, _, _| true, |_, _| true, 300), 0);
        assert!(w.is_empty(), "the worker lets go once the control lcore took the note");
    }

    #[test]
    fn failed_refresh_is_not_counted() {
        let slot = PauseSlot::default();
        let mut w = WorkerNotes::new(1);
        assert!(w.pause(&slot, 0, 3, 100, || true));
        assert_eq!(w.refresh(|_, _| &slot, |_, _, _| true, |_, _| false, 200), 0);
        assert_eq!(slot.take(), Some(Taken { t0: 100, frames: 1 }));
    }

    /// A worker refreshing as fast as it can against a control lcore taking notes: every
    /// frame the worker queued is counted exactly once.
    #[test]
    fn concurrent_take_counts_every_frame_once() {
        let slots: Arc<Vec<PauseSlot>> = Arc::new((0..4).map(|_| PauseSlot::default()).collect());
        let stop = Arc::new(AtomicBool::new(false));
        let worker = {
            let (slots, stop) = (slots.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut w = WorkerNotes::new(1);
                let mut queued = 0u64;
                let mut now = 1u64;
                while !stop.load(Ordering::Relaxed) {
                    now += 1;
                    let pg = (now % 4) as u8;
                    if w.pause(&slots[pg as usize], 0, pg, now, || true) {
                        queued += 1;
                    }
                    queued += w.refresh(|_, pg| &slots[pg as usize], |_, _, _| true, |_, _| true, now);
                }
                queued
            })
        };
        let mut taken = 0u64;
        // At least 200 000 rounds, and until the worker thread has run (on a loaded
        // 2-core machine it may not be scheduled before the rounds are over).
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut rounds = 0u64;
        while (rounds < 200_000 || taken == 0) && std::time::Instant::now() < until {
            for s in slots.iter() {
                taken += s.take().map_or(0, |t| t.frames);
            }
            rounds += 1;
        }
        stop.store(true, Ordering::Relaxed);
        let queued = worker.join().unwrap();
        for s in slots.iter() {
            taken += s.take().map_or(0, |t| t.frames);
        }
        assert!(queued > 0);
        assert_eq!(taken, queued);
    }

    /// The hand-off under stress, counting wire order against the MMU: a worker thread
    /// drives one lossless PG across Xoff and Xon (queueing its own PAUSEs, handing other
    /// edges over), while a control thread does what the control lcore does (take notes,
    /// mark edges pending, reconcile, settle, queue frames). Both put frames on one FIFO
    /// wire. Right after each PAUSE it queues, the worker waits while the control thread
    /// finishes what it was doing and settles once more: the last frame on the wire must
    /// then say what the MMU says (a RESUME that overtook the worker's PAUSE would not).
    #[test]
    fn wire_order_follows_the_mmu_under_stress() {
        use crate::mmu::{EdgeKind, Mmu, MmuConfig, PgProfile, QueueProfile, Threshold};
        use crate::pfc::{PendingPgs, PfcPortTx, PfcTxConfig};
        use crate::wire::MacControl;
        use crossbeam_queue::ArrayQueue;

        const PG: u8 = 3;
        const PRIO: u8 = 1 << 3;
        const OPS: u64 = 100_000;
        // Xoff after 20 packets of 100 B in shared, Xon right below it (xon_offset 0):
        // every admission at the point can cross, every release can resume.
        let pg = PgProfile { size: 0, xoff: 100_000, xon: 0, xon_offset: 0, threshold: Threshold::Static(2000) };
        let mmu = Arc::new(Mmu::new(MmuConfig::uniform(2, 1 << PG, pg, QueueProfile::default(), 400_000, 0)).unwrap());
        let wire: Arc<ArrayQueue<MacControl>> = Arc::new(ArrayQueue::new(1 << 22));
        let edges: Arc<ArrayQueue<crate::mmu::Edge>> = Arc::new(ArrayQueue::new(1 << 16));
        let slot = Arc::new(PauseSlot::default());
        // 1: the worker waits for a check; 2: the worker is done.
        let freeze = Arc::new(AtomicU64::new(0));
        let worker = {
            let (mmu, wire, edges, slot, freeze) =
                (mmu.clone(), wire.clone(), edges.clone(), slot.clone(), freeze.clone());
            std::thread::spawn(move || {
                let mut notes = WorkerNotes::new(1);
                let mut held = Vec::new();
                for now in 1..OPS {
                    // Around the Xoff point: a walk of mostly small steps up and down.
                    let up = held.len() < 19 || (now * 2_654_435_761) % 7 < 3;
                    let e = if up {
                        let v = mmu.admit(0, PG, 1, PG, 100, true);
                        held.extend(v.charge());
                        v.edge()
                    } else {
                        held.pop().and_then(|c| mmu.release(c))
                    };
                    let Some(e) = e else { continue };
                    if e.kind == EdgeKind::Pause
                        && notes.pause(&slot, 0, PG, now, || wire.push(MacControl::pfc_pause(PRIO, 0xffff)).is_ok())
                    {
                        freeze.store(1, Ordering::Release);
                        while freeze.load(Ordering::Acquire) == 1 {
                            std::hint::spin_loop();
                        }
                    } else {
                        edges.push(e).unwrap();
                    }
                }
                for c in held {
                    if let Some(e) = mmu.release(c) {
                        edges.push(e).unwrap();
                    }
                }
                freeze.store(2, Ordering::Release);
            })
        };
        let mut tx = PfcPortTx::new(PfcTxConfig::default(), 100_000_000_000, 1_000_000_000);
        let mut pending = PendingPgs::default();
        let pass = |tx: &mut PfcPortTx, pending: &mut PendingPgs| {
            if let Some(t) = slot.take() {
                tx.note_sent_pause(PRIO, t.t0, t.frames);
            }
            while let Some(e) = edges.pop() {
                pending.mark(PG, Some(e.kind), 0);
            }
            // Reconcile as the control lcore does when no worker holds the slot.
            if !slot.is_held() && mmu.is_off(0, PG) != (tx.off_mask() & PRIO != 0) {
                pending.mark(PG, None, 0);
            }
            let send = |f: &MacControl, _| {
                // Queueing a frame takes an mbuf and writes 60 bytes: a window in which a
                // worker may cross Xoff (widened here so the race happens in a test run).
                if matches!(f, MacControl::Pfc { quanta, .. } if quanta[3] == 0) {
                    (0..200).for_each(|_| std::hint::spin_loop());
                }
                wire.push(*f).is_ok()
            };
            pending.settle(tx, &[0, 0, 0, PRIO, 0, 0, 0, 0], |g| mmu.is_off(0, g), 0, send).unwrap();
        };
        let mut last: Option<bool> = None;
        let mut last_word = || {
            while let Some(f) = wire.pop() {
                if let MacControl::Pfc { class_enable, quanta } = f {
                    if class_enable & PRIO != 0 {
                        last = Some(quanta[3] != 0);
                    }
                }
            }
            last
        };
        let (mut checks, mut mismatches) = (0u64, 0u64);
        loop {
            pass(&mut tx, &mut pending);
            match freeze.load(Ordering::Acquire) {
                1 => {
                    pass(&mut tx, &mut pending);
                    checks += 1;
                    if last_word() != Some(mmu.is_off(0, PG)) {
                        mismatches += 1;
                    }
                    freeze.store(0, Ordering::Release);
                }
                2 => break,
                _ => {}
            }
        }
        worker.join().unwrap();
        pass(&mut tx, &mut pending);
        assert!(checks > 1000, "only {checks} crossings");
        assert_eq!(mismatches, 0, "of {checks} PAUSEs, wire ended against the MMU's state after");
        assert_eq!(last_word(), Some(false), "the last word once everything drained is RESUME");
    }
}
