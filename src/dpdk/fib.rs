//! The switch's routing tables: IPv4 in `rte_fib` (DIR-24-8), IPv6 in `rte_fib6` (trie),
//! each twice, used double-buffered; shared by the workers ([`RouteLookup`], lock-free) and
//! written by the control thread alone ([`RouteWriter`], not `Clone`).
//!
//! Why double-buffered (docs/routing.md has the figures): a change in any of DPDK's tables
//! may free a tbl8 group, and a freed group reused at once could be read by a worker halfway
//! through a lookup. Only `rte_lpm` defers that reuse past a QSBR grace period itself in
//! DPDK 22.11 (`rte_lpm_rcu_qsbr_add`), and its rule array makes loading 100k routes 15×
//! slower than `rte_fib` (measured: 4.4 s vs 0.29 s) for the same bulk lookup cost. So
//! changes go to the copy no worker reads; at the end of a batch the copies swap, and after
//! a QSBR grace period the same changes are replayed on the other copy: no worker ever reads
//! a table being changed, whatever DPDK does inside it. A /0 (default route) is kept beside
//! the tables in an atomic.
//!
//! `rte_fib6` (DPDK 22.11's trie) does not give back every tbl8 group a delete frees, so
//! add/withdraw churn (an ND flood's /128s) fills its pool for good. The writer keeps the
//! IPv6 routes it installed; when an add is refused for want of tbl8 groups (ENOSPC) and
//! something was deleted from that copy since it was last built, the copy (the standby: no
//! reader on it) is rebuilt empty from those routes and the add tried again
//! ([`RouteWriter::fib6_rebuilds`] counts them).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;

use super::lpm::{Fib4, Fib6};
use super::{heap_allocated_bytes, DpdkError, Qsbr};
use crate::route::{LpmWriter, Prefix4, Prefix6, NO_ROUTE};
use crate::wire::{IpPair, L3Header};

/// Table sizes. Memory, each family twice: 32 MiB (the 2^24-entry first level, 2 bytes an
/// entry) + 512 B per tbl8 group, plus DPDK's RIB nodes per route (an IPv6 table of more
/// than 32 767 groups: 64 MiB + 1 KiB per group).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableSizes {
    pub v4_routes: u32,
    /// /24s that hold longer prefixes (neighbour host routes, /31 links).
    pub v4_tbl8: u32,
    pub v6_routes: u32,
    pub v6_tbl8: u32,
}

impl Default for TableSizes {
    /// 128 Ki IPv4 prefixes (fits `-m 512`; a ToR's 128 Ki routes beside 16 Ki neighbours'
    /// host routes need 256 Ki: `[control_plane] max_ipv4_routes`, docs/benchmarks.md
    /// "Tables at scale"), 8192 tbl8 groups; 64 Ki IPv6 routes, 32767 tbl8 groups (the most
    /// 2-byte entries can index).
    fn default() -> TableSizes {
        use crate::route::memory::{DEFAULT_V4_ROUTES, V4_TBL8, V6_ROUTES, V6_TBL8};
        TableSizes { v4_routes: DEFAULT_V4_ROUTES, v4_tbl8: V4_TBL8, v6_routes: V6_ROUTES, v6_tbl8: V6_TBL8 }
    }
}

pub use crate::route::memory::V6_TBL8_PER_ROUTE;

impl TableSizes {
    /// These sizes with an IPv6 table for `routes` prefixes, each a /48 at worst
    /// ([`V6_TBL8_PER_ROUTE`] tbl8 groups, and one more: DPDK refuses an add that would
    /// fill the pool exactly; 4-byte entries past 32 767 groups).
    pub fn with_ipv6_routes(self, routes: u32) -> TableSizes {
        TableSizes { v6_routes: routes, v6_tbl8: crate::route::memory::v6_tbl8_for(routes), ..self }
    }
}

/// What the tables took from DPDK's heap at creation, both copies of each family.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct FibMemory {
    pub v4_bytes: u64,
    pub v6_bytes: u64,
}

struct Inner {
    v4: [Fib4; 2],
    v6: [Fib6; 2],
    memory: FibMemory,
    /// Which copy of each family the workers read (0 or 1).
    active: AtomicUsize,
    default4: AtomicU32,
    default6: AtomicU32,
}

/// The readers' handle: `Clone`, `Send`, `Sync`; every lookup is lock-free. A worker must
/// report a QSBR quiescent state ([`super::QsbrReader::quiescent`]) between packets, never
/// in the middle of a lookup.
#[derive(Clone)]
pub struct RouteLookup {
    inner: Arc<Inner>,
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Set4(Prefix4, u32),
    Del4(Prefix4),
    Set6(Prefix6, u32),
    Del6(Prefix6),
}

/// The one writer's handle (not `Clone`): changes go to the standby copies until
/// [`LpmWriter::commit`].
pub struct RouteWriter {
    inner: Arc<Inner>,
    qsbr: Arc<Qsbr>,
    log: Vec<Op>,
    /// The IPv6 routes (not /0) of the standby copy, with this batch's changes: what a
    /// rebuilt copy is filled from.
    routes6: HashMap<Prefix6, u32>,
    /// IPv6 deletes applied to each copy since it was built: a refused add rebuilds only if
    /// some (a rebuild cannot make room otherwise).
    dels6: [u64; 2],
    rebuilds6: u64,
}

/// Create the tables; grace periods are `qsbr`'s (the workers are its readers).
pub fn route_tables(sizes: TableSizes, qsbr: Arc<Qsbr>) -> Result<(RouteLookup, RouteWriter), DpdkError> {
    // DPDK allocates a table whole at creation (first level, tbl8 pool, RIB node pool):
    // the heap's growth across it is the table's memory.
    let h0 = heap_allocated_bytes();
    let v4 = [Fib4::new(sizes.v4_routes, sizes.v4_tbl8)?, Fib4::new(sizes.v4_routes, sizes.v4_tbl8)?];
    let h1 = heap_allocated_bytes();
    let v6 = [Fib6::new(sizes.v6_routes, sizes.v6_tbl8)?, Fib6::new(sizes.v6_routes, sizes.v6_tbl8)?];
    let h2 = heap_allocated_bytes();
    let inner = Arc::new(Inner {
        v4,
        v6,
        memory: FibMemory { v4_bytes: h1.saturating_sub(h0), v6_bytes: h2.saturating_sub(h1) },
        active: AtomicUsize::new(0),
        default4: AtomicU32::new(NO_ROUTE),
        default6: AtomicU32::new(NO_ROUTE),
    });
    Ok((
        RouteLookup { inner: inner.clone() },
        RouteWriter { inner, qsbr, log: Vec::new(), routes6: HashMap::new(), dels6: [0; 2], rebuilds6: 0 },
    ))
}

impl RouteLookup {
    /// The tables' memory (fixed from creation on).
    pub fn memory(&self) -> FibMemory {
        self.inner.memory
    }

    /// The LPM value for an IPv4 destination (host order), or [`NO_ROUTE`].
    #[inline]
    pub fn lookup4(&self, dst: u32) -> u32 {
        let t = &self.inner.v4[self.inner.active.load(Ordering::Acquire) & 1];
        match t.lookup(dst) {
            Some(v) => v,
            None => self.inner.default4.load(Ordering::Acquire),
        }
    }

    /// The LPM value for an IPv6 destination, or [`NO_ROUTE`].
    #[inline]
    pub fn lookup6(&self, dst: &[u8; 16]) -> u32 {
        let t = &self.inner.v6[self.inner.active.load(Ordering::Acquire) & 1];
        match t.lookup(dst) {
            Some(v) => v,
            None => self.inner.default6.load(Ordering::Acquire),
        }
    }

    /// The LPM value for a packet's destination.
    #[inline]
    pub fn lookup(&self, l3: &L3Header) -> u32 {
        match &l3.addrs {
            IpPair::V4 { dst, .. } => self.lookup4(u32::from_be_bytes(*dst)),
            IpPair::V6 { dst, .. } => self.lookup6(dst),
        }
    }

    /// A burst of IPv4 destinations at once (`out[i]` for `dsts[i]`).
    #[inline]
    pub fn lookup4_bulk(&self, dsts: &[u32], out: &mut [u32]) {
        self.inner.v4[self.inner.active.load(Ordering::Acquire) & 1].lookup_bulk(dsts, out);
        let d = self.inner.default4.load(Ordering::Acquire);
        if d != NO_ROUTE {
            out.iter_mut().take(dsts.len()).filter(|o| **o == NO_ROUTE).for_each(|o| *o = d);
        }
    }

    /// A burst of IPv6 destinations at once.
    #[inline]
    pub fn lookup6_bulk(&self, dsts: &[[u8; 16]], out: &mut [u32]) {
        self.inner.v6[self.inner.active.load(Ordering::Acquire) & 1].lookup_bulk(dsts, out);
        let d = self.inner.default6.load(Ordering::Acquire);
        if d != NO_ROUTE {
            out.iter_mut().take(dsts.len()).filter(|o| **o == NO_ROUTE).for_each(|o| *o = d);
        }
    }
}

impl RouteWriter {
    fn standby(&self) -> usize {
        (self.inner.active.load(Ordering::Relaxed) & 1) ^ 1
    }

    fn apply(&self, copy: usize, op: Op) -> Result<(), DpdkError> {
        let (v4, v6) = (&self.inner.v4[copy], &self.inner.v6[copy]);
        match op {
            Op::Set4(p, v) => v4.add_shared(p.bits(), p.prefix_len(), v),
            Op::Del4(p) => v4.delete_shared(p.bits(), p.prefix_len()).map(|_| ()),
            Op::Set6(p, v) => v6.add_shared(&p.octets(), p.prefix_len(), v),
            Op::Del6(p) => v6.delete_shared(&p.octets(), p.prefix_len()).map(|_| ()),
        }
    }

    /// Apply to the standby copy and log for the replay; a refused change (table full) is
    /// not logged, so both copies stay equal. An IPv6 add refused for want of tbl8 groups
    /// rebuilds the standby copy first.
    fn change(&mut self, op: Op) -> Result<(), String> {
        let copy = self.standby();
        match self.apply(copy, op) {
            Ok(()) => {}
            Err(e) if matches!(op, Op::Set6(..)) && e.code == libc::ENOSPC && self.dels6[copy] > 0 => {
                self.rebuild6(copy).map_err(|e| e.to_string())?;
                self.apply(copy, op).map_err(|e| e.to_string())?;
            }
            Err(e) => return Err(e.to_string()),
        }
        match op {
            Op::Set6(p, v) => {
                self.routes6.insert(p, v);
            }
            Op::Del6(p) => {
                self.routes6.remove(&p);
                self.dels6[copy] += 1;
            }
            _ => {}
        }
        self.log.push(op);
        Ok(())
    }

    /// Replace IPv6 copy `copy` (the standby, no reader on it) by a fresh table holding
    /// `routes6`: every tbl8 group the old one lost is back.
    fn rebuild6(&mut self, copy: usize) -> Result<(), DpdkError> {
        let t = &self.inner.v6[copy];
        // SAFETY: `copy` is the standby copy: readers use the other one, and every reader of
        // this one passed a quiescent state before the last commit returned (or it was never
        // active); this writer is the only one.
        unsafe { t.rebuild()? };
        for (p, v) in &self.routes6 {
            // Cannot fail in practice: a fresh table holds what the old one held, in fewer
            // groups. If it does, this copy lacks routes until the next rebuild: say so.
            if let Err(e) = t.add_shared(&p.octets(), p.prefix_len(), *v) {
                log::error!("routing: rte_fib6 copy {copy} rebuilt without {p}: {e}");
                return Err(e);
            }
        }
        self.dels6[copy] = 0;
        self.rebuilds6 += 1;
        log::info!("routing: rte_fib6 copy {copy} rebuilt with {} routes (tbl8 groups exhausted)", self.routes6.len());
        Ok(())
    }

    /// How many times an IPv6 table copy was rebuilt to get its tbl8 groups back.
    pub fn fib6_rebuilds(&self) -> u64 {
        self.rebuilds6
    }

    /// Changes made since the last commit (not yet visible).
    pub fn pending(&self) -> usize {
        self.log.len()
    }
}

impl LpmWriter for RouteWriter {
    fn set4(&mut self, p: Prefix4, value: u32) -> Result<(), String> {
        if p.prefix_len() == 0 {
            self.inner.default4.store(value, Ordering::Release);
            return Ok(());
        }
        self.change(Op::Set4(p, value))
    }

    fn del4(&mut self, p: Prefix4) -> Result<(), String> {
        if p.prefix_len() == 0 {
            self.inner.default4.store(NO_ROUTE, Ordering::Release);
            return Ok(());
        }
        self.change(Op::Del4(p))
    }

    fn set6(&mut self, p: Prefix6, value: u32) -> Result<(), String> {
        if p.prefix_len() == 0 {
            self.inner.default6.store(value, Ordering::Release);
            return Ok(());
        }
        self.change(Op::Set6(p, value))
    }

    fn del6(&mut self, p: Prefix6) -> Result<(), String> {
        if p.prefix_len() == 0 {
            self.inner.default6.store(NO_ROUTE, Ordering::Release);
            return Ok(());
        }
        self.change(Op::Del6(p))
    }

    fn rebuilds(&self) -> u64 {
        self.rebuilds6
    }

    /// Swap the copies, wait until no worker can still be reading the old one (a QSBR grace
    /// period), and replay the batch on it.
    fn commit(&mut self) -> Result<(), String> {
        if self.log.is_empty() {
            return Ok(());
        }
        self.inner.active.fetch_xor(1, Ordering::AcqRel);
        self.qsbr.synchronize();
        let copy = self.standby();
        let mut first_err = None;
        let mut v6_rebuilt = false;
        for op in std::mem::take(&mut self.log) {
            let v6 = matches!(op, Op::Set6(..) | Op::Del6(..));
            if v6 && v6_rebuilt {
                continue; // the rebuilt copy already holds the batch's end state
            }
            match self.apply(copy, op) {
                Ok(()) => {
                    if matches!(op, Op::Del6(..)) {
                        self.dels6[copy] += 1;
                    }
                }
                // The copy lost tbl8 groups the other did not (DPDK frees them unevenly):
                // rebuild it from the batch's end state.
                Err(e) if matches!(op, Op::Set6(..)) && e.code == libc::ENOSPC => match self.rebuild6(copy) {
                    Ok(()) => v6_rebuilt = true,
                    Err(e) => {
                        first_err.get_or_insert(e.to_string());
                    }
                },
                Err(e) => {
                    first_err.get_or_insert(e.to_string());
                }
            }
        }
        match first_err {
            // Both copies have the same capacity and got the same changes: a failure here
            // means they diverged, which later batches cannot repair.
            Some(e) => Err(format!("table replay: {e}")),
            None => Ok(()),
        }
    }
}
