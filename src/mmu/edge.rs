//! Flips of a port's OFF word and the PAUSE / RESUME edges they make.

use super::limits::PortLimits;
use super::state::PortState;
use super::{Edge, EdgeKind};
use std::sync::atomic::Ordering::*;

/// Applies `f` to the port's OFF word (CAS loop); the edge names the PGs whose state
/// (own bit or port bit) changed, all in one direction since `f` only sets or only clears.
#[inline]
pub(super) fn flip(port: u16, ps: &PortState, pl: &PortLimits, f: impl Fn(u32) -> u32) -> Option<Edge> {
    let mut cur = ps.off.load(Relaxed);
    let new = loop {
        let new = f(cur);
        if new == cur {
            return None;
        }
        match ps.off.compare_exchange_weak(cur, new, AcqRel, Relaxed) {
            Ok(_) => break new,
            Err(v) => cur = v,
        }
    };
    edge_between(port, pl, cur, new)
}

/// The edge from OFF word `cur` to `new` (bits only set, or only cleared, between them).
#[inline]
pub(super) fn edge_between(port: u16, pl: &PortLimits, cur: u32, new: u32) -> Option<Edge> {
    let (was, now) = (pl.off_pgs(cur), pl.off_pgs(new));
    if now & !was != 0 {
        Some(Edge { port, pgs: now & !was, kind: EdgeKind::Pause })
    } else if was & !now != 0 {
        Some(Edge { port, pgs: was & !now, kind: EdgeKind::Resume })
    } else {
        None
    }
}
