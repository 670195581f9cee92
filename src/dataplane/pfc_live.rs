//! A port's PFC settings in force, which `pfcswitch config pfc PORT --enable …` may
//! replace while traffic runs: the PFC priorities, the PGs the MMU accounts as lossless,
//! and the priorities each PG's PAUSE names. The control lcore alone writes them
//! (`dataplane::reconfig`); workers read the priorities once per packet (one relaxed load
//! of a byte that changes only on a live change), the control lcore and the owners of
//! the port's PFC receive side and watchdog compare a generation number per pass.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::*};

use crate::plan::PortPlan;

/// What a port's PFC is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PfcSet {
    /// PFC-enabled priorities (bit n = priority n).
    pub pfc_mask: u8,
    /// PGs accounted as lossless.
    pub lossless_pgs: u8,
    /// Per PG, the priorities its PAUSE/RESUME names.
    pub pg_priorities: [u8; 8],
}

impl PfcSet {
    pub fn of(plan: &PortPlan) -> PfcSet {
        PfcSet { pfc_mask: plan.pfc_mask, lossless_pgs: plan.lossless_pgs, pg_priorities: plan.pg_priorities }
    }

    /// What both sets have: in force while a change moves from one to the other, so that
    /// no priority is lossless under limits that do not make it so.
    pub fn meet(&self, o: &PfcSet) -> PfcSet {
        PfcSet {
            pfc_mask: self.pfc_mask & o.pfc_mask,
            lossless_pgs: self.lossless_pgs & o.lossless_pgs,
            pg_priorities: std::array::from_fn(|i| self.pg_priorities[i] & o.pg_priorities[i]),
        }
    }
}

/// One port's [`PfcSet`], shared.
#[derive(Debug)]
pub struct PfcLive {
    pfc_mask: AtomicU8,
    lossless_pgs: AtomicU8,
    pg_priorities: [AtomicU8; 8],
    generation: AtomicU64,
}

impl PfcLive {
    pub fn new(s: PfcSet) -> PfcLive {
        PfcLive {
            pfc_mask: AtomicU8::new(s.pfc_mask),
            lossless_pgs: AtomicU8::new(s.lossless_pgs),
            pg_priorities: s.pg_priorities.map(AtomicU8::new),
            generation: AtomicU64::new(0),
        }
    }

    /// PFC-enabled priorities (what a packet's priority is checked against).
    #[inline]
    pub fn pfc_mask(&self) -> u8 {
        self.pfc_mask.load(Relaxed)
    }

    /// PGs accounted as lossless.
    #[inline]
    pub fn lossless_pgs(&self) -> u8 {
        self.lossless_pgs.load(Relaxed)
    }

    /// The priorities a PAUSE/RESUME of `pg` names.
    #[inline]
    pub fn pg_priorities(&self, pg: u8) -> u8 {
        self.pg_priorities[usize::from(pg & 7)].load(Relaxed)
    }

    /// All of it.
    pub fn get(&self) -> PfcSet {
        PfcSet {
            pfc_mask: self.pfc_mask(),
            lossless_pgs: self.lossless_pgs(),
            pg_priorities: std::array::from_fn(|pg| self.pg_priorities(pg as u8)),
        }
    }

    /// Installs `s` (the control lcore only); false when nothing changed.
    pub fn set(&self, s: PfcSet) -> bool {
        if self.get() == s {
            return false;
        }
        for (a, v) in self.pg_priorities.iter().zip(s.pg_priorities) {
            a.store(v, Relaxed);
        }
        self.lossless_pgs.store(s.lossless_pgs, Relaxed);
        self.pfc_mask.store(s.pfc_mask, Relaxed);
        // Release: who sees the new number sees the new set.
        self.generation.fetch_add(1, Release);
        true
    }

    /// Sets installed so far.
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation.load(Acquire)
    }
}
