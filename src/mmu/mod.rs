//! The shared-buffer MMU: lossless ingress admission per (port, PG) with private,
//! Dynamic-Threshold shared and headroom segments and PFC Xoff/Xon edges; lossy egress
//! admission per (port, queue) on a separate pool. Shared by all lcores: atomics only,
//! no locks, no allocation per packet.
//!
//! # Lossless admission (docs/design.md §2)
//! For a packet of `b` bytes (after cell rounding) to (port, PG) with private φ,
//! headroom η, shared occupancy `s`, headroom occupancy `h`, and
//! `T = α·(Bs − Σω)` (Σω: shared bytes in use in the whole lossless pool):
//! 1. `p + b ≤ φ` → private (φ is a hard reservation);
//! 2. else `s < T` and the pool has room (`Σω + b ≤ Bs`) → shared. As on ASICs the
//!    check is made *before* the packet, so the packet that crosses T is still taken into
//!    shared; if `s + b ≥ T` the PG has reached its Xoff point → PAUSE edge if it was ON;
//! 3. else `h + b ≤ η` → headroom; PAUSE edge if the PG was ON (headroom is only ever
//!    charged to an OFF PG);
//! 4. else drop (`lossless_headroom_full`).
//!
//! Because the crossing packet lands in shared, η only has to absorb what arrives
//! *after* the edge: exactly what [`crate::headroom`] computes. `s` may exceed T by less
//! than one packet; Σω never exceeds Bs, `p` never exceeds φ, `h` never exceeds η.
//!
//! # Xon (SAI `XON_TH` / `XON_OFFSET_TH` semantics)
//! An OFF PG resumes (RESUME edge) when, after a release (or an admission into private
//! or shared), its usage above the private minimum satisfies
//! `s + h ≤ max(xon, T(t) − xon_offset)` (saturating), with T(t) the PG's current
//! dynamic threshold: SAI's "total buffer usage ≤ max(XON_TH, limit − XON_OFFSET_TH)",
//! usage counted like Broadcom's PG shared counter (private excluded). `xon_offset = 0`
//! gives no hysteresis; set it (or `xon`) to avoid PAUSE/RESUME flapping. The threshold
//! never exceeds the Xoff point itself (T, or T − η with DSH): when `xon` is above a small
//! T, a PG resumes at T, not at once after pausing.
//!
//! # Dynamic and Shared Headroom (`HeadroomPolicy::Dsh`, docs/design.md "Headroom modes")
//! No per-PG headroom: Bs = pool − Σφ − Σ insurance, one insurance η_p per port. With
//! `S` the port's summed shared occupancy over its Nq lossless PGs:
//! 1. private as above;
//! 2. while the port is ON and `S < Nq·T` (checked before the packet) and the pool has
//!    room → shared, whether or not the PG is OFF: an OFF PG's in-flight bytes land here.
//!    Queue-level PAUSE (this PG) when `s + b ≥ T − η`; port-level PAUSE (every lossless
//!    PG of the port) when `S + b ≥ Nq·T`;
//! 3. else (port OFF, or shared refused: a port-level PAUSE if not yet) → the port's
//!    insurance headroom while `I + b ≤ η_p`;
//! 4. else drop.
//!
//! A PG resumes at queue level when `s + h ≤ max(xon, T − η − xon_offset)`; the port
//! resumes when `S + I ≤ max(Σxon, Nq·T − Σxon_offset)` (the port-level T is its lowest
//! lossless PG's, one T in admission, bulk admission and Xon). A PG is OFF (its priorities
//! paused) while it or its port is OFF; edges report changes of that state.
//!
//! # Concurrency
//! Segment limits are enforced with compare-exchange loops, T is read with relaxed
//! loads (it may be slightly stale, as on hardware), and a port's ON/OFF states (one bit
//! per PG, one for the port) live in one word that flips only through a CAS, so exactly
//! one thread emits each edge and each PG's edges alternate.

mod atomic;
mod bulk;
mod config;
mod edge;
mod limits;
mod release;
mod state;
mod stats;
mod types;

pub use config::{
    HeadroomPolicy, MmuConfig, MmuError, PgProfile, PortMmuConfig, QueueProfile, ReleaseOrder, Threshold,
};
pub use types::{
    Charge, Edge, EdgeKind, LosslessPoolStats, LossyPoolStats, PgOccupancy, PgWatermarks, PoolStats, QueueOccupancy,
    Refusal, Segment, Verdict,
};

use arc_swap::ArcSwap;
use atomic::{raise, try_add_upto};
use crossbeam_utils::CachePadded;
use edge::{edge_between, flip};
use limits::{Limits, PgLimits, PortLimits};
use state::{PgState, PoolState, PortState, QueueState, PORT_OFF};
use std::sync::atomic::Ordering::*;
use std::sync::Arc;

/// The MMU. `Sync`: share it by reference (or `Arc`) between lcores.
pub struct Mmu {
    cell: u64,
    /// `cell - 1` when the cell is a power of two (rounding by mask, no division).
    cell_mask: Option<u64>,
    /// `HeadroomPolicy::Dsh`.
    dsh: bool,
    num_ports: u16,
    /// The limits: loaded once per operation (lock-free, no allocation), swapped whole.
    limits: ArcSwap<Limits>,
    ports: Box<[CachePadded<PortState>]>,
    pgs: Box<[CachePadded<PgState>]>,
    queues: Box<[CachePadded<QueueState>]>,
    lossless: CachePadded<PoolState>,
    lossy: CachePadded<PoolState>,
}

impl Mmu {
    /// Validates `cfg` and builds the counters (all zero, every PG ON).
    pub fn new(cfg: MmuConfig) -> Result<Mmu, MmuError> {
        let n = cfg.ports.len();
        let cell = u64::from(cfg.cell_size);
        let dsh = cfg.headroom_policy == HeadroomPolicy::Dsh;
        let limits = Limits::new(cfg)?;
        Ok(Mmu {
            cell,
            cell_mask: cell.is_power_of_two().then(|| cell - 1),
            dsh,
            num_ports: n as u16,
            limits: ArcSwap::from_pointee(limits),
            ports: (0..n).map(|_| CachePadded::new(PortState::default())).collect(),
            pgs: (0..n * 8).map(|_| CachePadded::new(PgState::default())).collect(),
            queues: (0..n * 8).map(|_| CachePadded::new(QueueState::default())).collect(),
            lossless: CachePadded::new(PoolState::default()),
            lossy: CachePadded::new(PoolState::default()),
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> MmuConfig {
        self.limits.load().cfg.clone()
    }

    /// Replaces the limits while traffic runs: thresholds (`dynamic_th`), headroom
    /// (`xoff`), private sizes, Xon. One atomic swap: each admission, release or Xon check
    /// reads either the old limits or the new, never some of each. The counters stay:
    /// bytes charged under the old limits leave through releases as always (a PG holding
    /// more than its new `xoff` in headroom takes no more there until it is below; see
    /// [`Mmu::headroom_shrink_safe`] for shrinking it without loss). Refused, nothing
    /// changed, when `cfg` does not validate or changes the MMU's shape (ports, cell size,
    /// pool sizes, headroom policy kind, release order; with DSH also the lossless PGs,
    /// whose shared bytes the port's sum holds). Outside DSH a PG may change between lossy
    /// and lossless (`config pfc`): one that becomes lossy is ON from now on (its OFF bit
    /// cleared; its bytes in headroom leave through releases as always), one that becomes
    /// lossless is judged at its next admission.
    pub fn set_limits(&self, cfg: MmuConfig) -> Result<(), MmuError> {
        let cur = self.limits.load();
        let c = &cur.cfg;
        let same_pgs = c.ports.iter().zip(&cfg.ports).all(|(a, b)| a.lossless_pgs == b.lossless_pgs);
        let same_shape = c.ports.len() == cfg.ports.len()
            && (same_pgs || !self.dsh)
            && (c.total_size, c.cell_size, c.lossless_pool_size, c.lossy_pool_size, c.release_order)
                == (cfg.total_size, cfg.cell_size, cfg.lossless_pool_size, cfg.lossy_pool_size, cfg.release_order)
            && std::mem::discriminant(&c.headroom_policy) == std::mem::discriminant(&cfg.headroom_policy);
        if !same_shape {
            return Err(MmuError::ShapeChanged);
        }
        let lossy_now: Vec<u8> =
            c.ports.iter().zip(&cfg.ports).map(|(a, b)| a.lossless_pgs & !b.lossless_pgs).collect();
        let new = Limits::new(cfg)?;
        self.limits.store(Arc::new(new));
        for (ps, bits) in self.ports.iter().zip(lossy_now) {
            if bits != 0 {
                ps.off.fetch_and(!u32::from(bits), AcqRel);
            }
        }
        Ok(())
    }

    /// True when `cfg`'s headroom and private sizes may replace the ones in force without
    /// stranding bytes: every lossless PG whose `xoff` would shrink is ON and holds no
    /// more headroom than its new `xoff` (a PG already paused may still receive what was
    /// in flight when it paused, sized by the old `xoff`), and every PG whose private
    /// `size` would shrink holds no more than the new size there (the shared segment,
    /// which grows by what private gives up, must not be over-committed by bytes still
    /// charged to private).
    pub fn headroom_shrink_safe(&self, cfg: &MmuConfig) -> bool {
        let cur = self.limits.load();
        cur.cfg.ports.iter().zip(&cfg.ports).enumerate().all(|(pi, (a, b))| {
            (0..8u8).all(|pg| {
                let (old, new) = (&a.pgs[usize::from(pg)], &b.pgs[usize::from(pg)]);
                let occ = self.pg_occupancy(pi as u16, pg);
                let headroom_ok = a.lossless_pgs & (1 << pg) == 0
                    || new.xoff >= old.xoff
                    || (!self.is_off(pi as u16, pg) && occ.headroom <= new.xoff);
                headroom_ok && (new.size >= old.size || occ.private <= new.size)
            })
        })
    }

    /// Number of ports.
    pub fn num_ports(&self) -> u16 {
        self.num_ports
    }

    #[inline]
    fn idx(&self, port: u16, i: u8) -> Option<usize> {
        (port < self.num_ports && i < 8).then(|| usize::from(port) * 8 + usize::from(i))
    }

    /// Bytes a packet of `len` bytes is charged: ceil(len / cell) · cell.
    #[inline]
    pub fn charge_bytes(&self, len: u32) -> u64 {
        match self.cell_mask {
            Some(m) => (u64::from(len) + m) & !m,
            None => u64::from(len).div_ceil(self.cell) * self.cell,
        }
    }

    /// True if (port, PG) is configured lossless.
    pub fn is_lossless(&self, port: u16, pg: u8) -> bool {
        self.idx(port, pg).and_then(|i| self.limits.load().pg_limits.get(i).map(|l| l.lossless)).unwrap_or(false)
    }

    /// Admits `len` bytes from (in_port, pg) to (out_port, queue). The packet is lossless
    /// iff `lossless` is true *and* the PG is configured lossless on `in_port`; otherwise
    /// it is lossy and only egress (lossy pool) admission applies.
    #[inline]
    pub fn admit(&self, in_port: u16, pg: u8, out_port: u16, queue: u8, len: u32, lossless: bool) -> Verdict {
        let (Some(pi), Some(qi)) = (self.idx(in_port, pg), self.idx(out_port, queue)) else {
            return Verdict::drop(Refusal::InvalidIndex);
        };
        let l = self.limits.load();
        let (Some(lim), Some(q)) = (l.pg_limits.get(pi), self.queues.get(qi)) else {
            return Verdict::drop(Refusal::InvalidIndex);
        };
        let b = self.charge_bytes(len);
        let Ok(bytes) = u32::try_from(b) else {
            return Verdict::drop(Refusal::Oversize);
        };
        let mut charge = Charge { bytes, in_port, out_port, pg, queue, segment: Segment::Private };
        if lossless && lim.lossless {
            let (Some(st), Some(ps), Some(pl)) =
                (self.pgs.get(pi), self.ports.get(usize::from(in_port)), l.port_limits.get(usize::from(in_port)))
            else {
                return Verdict::drop(Refusal::InvalidIndex);
            };
            match self.admit_lossless(&l, st, lim, ps, pl, pg, b) {
                Ok((segment, pause)) => {
                    charge.segment = segment;
                    let tot = q.lossless.fetch_add(b, Relaxed) + b;
                    raise(&q.wm, tot + q.private.load(Relaxed) + q.shared.load(Relaxed));
                    let edge = if pause != 0 {
                        flip(in_port, ps, pl, |w| w | pause)
                    } else {
                        self.try_resume(&l, in_port, pg, st, lim, ps, pl)
                    };
                    Verdict::Admit { charge, edge }
                }
                // Dropped at or over the Xoff point: the PG (or port) goes OFF all the
                // same, so the peer is paused instead of losing everything at line rate.
                Err((reason, pause)) => {
                    Verdict::Drop { reason, edge: (pause != 0).then(|| flip(in_port, ps, pl, |w| w | pause)).flatten() }
                }
            }
        } else {
            let Some(ql) = l.q_limits.get(qi) else {
                return Verdict::drop(Refusal::InvalidIndex);
            };
            match self.admit_lossy(&l, q, ql, b) {
                Ok(segment) => {
                    charge.segment = segment;
                    Verdict::Admit { charge, edge: None }
                }
                Err(reason) => Verdict::drop(reason),
            }
        }
    }

    /// Cases 1–4; returns the segment and the OFF bits its Xoff points ask to set (0:
    /// none reached). A drop names the OFF bits too: a packet refused at or over the Xoff
    /// point (headroom, its pool or DSH's insurance full) still pauses the PG.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn admit_lossless(
        &self,
        l: &Limits,
        st: &PgState,
        lim: &PgLimits,
        ps: &PortState,
        pl: &PortLimits,
        pg: u8,
        b: u64,
    ) -> Result<(Segment, u32), (Refusal, u32)> {
        let pool = &*self.lossless;
        if try_add_upto(&st.private, b, lim.private) {
            pool.private.fetch_add(b, Relaxed);
            return Ok((Segment::Private, 0));
        }
        let bit = 1u32 << (pg & 7);
        let free = l.bs_lossless.saturating_sub(pool.shared.load(Relaxed));
        if self.dsh {
            return self.admit_dsh(l, st, lim, ps, pl, bit, free, b);
        }
        let t = self.pg_point(lim, free);
        if st.shared.load(Relaxed) < t && try_add_upto(&pool.shared, b, l.bs_lossless) {
            let s = st.shared.fetch_add(b, Relaxed) + b;
            raise(&st.shared_wm, s);
            raise(&pool.shared_wm, pool.shared.load(Relaxed));
            return Ok((Segment::Shared, if s >= t { bit } else { 0 }));
        }
        // The pool is taken first, in every mode: a release may take from the PG's counter
        // at any time and gives those bytes back to the pool, which must already hold
        // them; only the pool's charge (which releases follow, never lead) may be undone.
        // A shared headroom pool is a second cap: the pool's size and the PG's `xoff`.
        match l.hp_cap {
            Some(cap) if !try_add_upto(&pool.headroom, b, cap) => return Err((Refusal::LosslessHeadroomFull, bit)),
            Some(_) => {}
            None => {
                pool.headroom.fetch_add(b, Relaxed);
            }
        }
        if try_add_upto(&st.headroom, b, lim.headroom) {
            raise(&st.headroom_wm, st.headroom.load(Relaxed));
            raise(&pool.headroom_wm, pool.headroom.load(Relaxed));
            return Ok((Segment::Headroom, bit));
        }
        pool.headroom.fetch_sub(b, Relaxed);
        Err((Refusal::LosslessHeadroomFull, bit))
    }

    /// DSH cases 2–4 (module docs); `free` is the pool's free shared bytes before the packet.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn admit_dsh(
        &self,
        l: &Limits,
        st: &PgState,
        lim: &PgLimits,
        ps: &PortState,
        pl: &PortLimits,
        bit: u32,
        free: u64,
        b: u64,
    ) -> Result<(Segment, u32), (Refusal, u32)> {
        let pool = &*self.lossless;
        let pg_t = self.pg_point(lim, free);
        let port_t = self.port_point(pl, free);
        if ps.off.load(Relaxed) & PORT_OFF == 0
            && ps.shared.load(Relaxed) < port_t
            && try_add_upto(&pool.shared, b, l.bs_lossless)
        {
            let sp = ps.shared.fetch_add(b, Relaxed) + b;
            let s = st.shared.fetch_add(b, Relaxed) + b;
            raise(&st.shared_wm, s);
            raise(&pool.shared_wm, pool.shared.load(Relaxed));
            let q = if s >= pg_t { bit } else { 0 };
            let p = if sp >= port_t { PORT_OFF } else { 0 };
            return Ok((Segment::Shared, q | p));
        }
        // The port is OFF, or shared refused the packet: that is its port-level Xoff.
        if try_add_upto(&ps.insurance, b, pl.insurance) {
            // The pool before the PG: a concurrent release takes what the PG counter
            // shows and gives it back to the pool, which must already hold it.
            let ph = pool.headroom.fetch_add(b, Relaxed) + b;
            let h = st.headroom.fetch_add(b, Relaxed) + b;
            raise(&st.headroom_wm, h);
            raise(&pool.headroom_wm, ph);
            return Ok((Segment::Headroom, PORT_OFF));
        }
        Err((Refusal::LosslessHeadroomFull, PORT_OFF))
    }

    /// Egress DT on the lossy pool.
    #[inline]
    fn admit_lossy(&self, l: &Limits, q: &QueueState, ql: &QueueProfile, b: u64) -> Result<Segment, Refusal> {
        let pool = &*self.lossy;
        let seg = if try_add_upto(&q.private, b, ql.size) {
            pool.private.fetch_add(b, Relaxed);
            Segment::LossyPrivate
        } else {
            let t = ql.threshold.limit(l.bs_lossy.saturating_sub(pool.shared.load(Relaxed)));
            if q.shared.load(Relaxed) >= t {
                return Err(Refusal::LossyDt);
            }
            if !try_add_upto(&pool.shared, b, l.bs_lossy) {
                return Err(Refusal::LossyPoolFull);
            }
            q.shared.fetch_add(b, Relaxed);
            raise(&pool.shared_wm, pool.shared.load(Relaxed));
            Segment::LossyShared
        };
        let tot = q.lossless.load(Relaxed) + q.private.load(Relaxed) + q.shared.load(Relaxed);
        raise(&q.wm, tot);
        Ok(seg)
    }

    /// The Xon threshold of a PG now: max(xon, T − xon_offset), with DSH's queue-level
    /// Xoff point T − η in place of T, and never above that Xoff point: with `xon` above
    /// it (a small T) a PG would otherwise be resumable the moment it paused, and a
    /// periodic check (`check_resume`) between two arrivals would RESUME it at once.
    #[inline]
    fn xon_threshold(&self, l: &Limits, lim: &PgLimits) -> u64 {
        let xoff = self.pg_point(lim, l.bs_lossless.saturating_sub(self.lossless.shared.load(Relaxed)));
        lim.xon.max(xoff.saturating_sub(lim.xon_offset)).min(xoff)
    }

    /// A PG's Xoff point in shared for `free` shared bytes in the pool: T, or with DSH
    /// the queue-level point T − η.
    #[inline]
    fn pg_point(&self, lim: &PgLimits, free: u64) -> u64 {
        let t = lim.th.limit(free);
        if self.dsh {
            t.saturating_sub(lim.headroom)
        } else {
            t
        }
    }

    /// DSH: the port-level Xoff point `Nq·T` for `free` shared bytes in the pool.
    #[inline]
    fn port_point(&self, pl: &PortLimits, free: u64) -> u64 {
        pl.th.limit(free).saturating_mul(pl.nq)
    }

    /// DSH: the port's Xon threshold now, max(Σxon, Nq·T − Σxon_offset), never above the
    /// port's Xoff point Nq·T (as for a PG).
    #[inline]
    fn port_xon_threshold(&self, l: &Limits, pl: &PortLimits) -> u64 {
        let free = l.bs_lossless.saturating_sub(self.lossless.shared.load(Relaxed));
        let point = self.port_point(pl, free);
        pl.xon.max(point.saturating_sub(pl.xon_offset)).min(point)
    }

    /// Clears the OFF bits of (port, PG) whose Xon condition holds; the edge names the
    /// PGs that became ON.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn try_resume(
        &self,
        l: &Limits,
        port: u16,
        pg: u8,
        st: &PgState,
        lim: &PgLimits,
        ps: &PortState,
        pl: &PortLimits,
    ) -> Option<Edge> {
        let w = ps.off.load(Relaxed);
        let bit = 1u32 << (pg & 7);
        if w & (bit | PORT_OFF) == 0 {
            return None;
        }
        let mut clear = 0;
        if w & bit != 0 && st.shared.load(Relaxed) + st.headroom.load(Relaxed) <= self.xon_threshold(l, lim) {
            clear |= bit;
        }
        if w & PORT_OFF != 0 && ps.shared.load(Relaxed) + ps.insurance.load(Relaxed) <= self.port_xon_threshold(l, pl) {
            clear |= PORT_OFF;
        }
        if clear == 0 {
            return None;
        }
        #[cfg(test)]
        tests::hook::between_read_and_cas();
        let mut cur = ps.off.load(Relaxed);
        let new = loop {
            let new = cur & !clear;
            if new == cur {
                return None;
            }
            match ps.off.compare_exchange_weak(cur, new, AcqRel, Relaxed) {
                Ok(_) => break new,
                Err(v) => cur = v,
            }
        };
        // The counters were read before the CAS: an admission may have pushed the PG past
        // its Xon point meanwhile (with xon_offset = 0, across its Xoff point) while it was
        // still OFF, making no edge. Read again; if the PG no longer qualifies and nothing
        // else changed the word since, set its bit back: the RESUME never happened for it.
        let mut fin = new;
        if clear & bit != 0
            && st.shared.load(Acquire) + st.headroom.load(Acquire) > self.xon_threshold(l, lim)
            && ps.off.compare_exchange(new, new | bit, AcqRel, Relaxed).is_ok()
        {
            fin = new | bit;
        }
        edge_between(port, pl, cur, fin)
    }
}

#[cfg(test)]
mod tests;
