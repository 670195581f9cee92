//! The next-hop and ECMP-group tables the workers read while the control thread writes
//! them: plain atomics, no locks, no entry ever seen half-built.
//!
//! * A next hop is one `AtomicU64`: present bit, resolved bit, egress port (12 bits) and
//!   neighbour MAC (48 bits), written with one store. Resolving or losing a neighbour
//!   rewrites it in place; a reader sees the old or the new next hop, never a mix.
//! * An ECMP group is immutable once published: its members are written first, then its
//!   length (Release), and only then does an LPM entry point at it. A changed member set is
//!   a different group; the old one is freed when no prefix uses it and reused only after a
//!   grace period (every reader passed a quiescent point), like a freed next-hop id.

use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, Ordering};

use super::hash::pick;
use super::target::{Target, MAX_GROUPS, MAX_NEXTHOPS, MAX_PATHS};
use crate::wire::MacAddr;

const PRESENT: u64 = 1 << 63;
const RESOLVED: u64 = 1 << 62;
const PORT_SHIFT: u32 = 48;
/// Highest egress port a next hop encodes (DPDK builds allow 32 ports; 12 bits leave room).
pub const MAX_PORT: u16 = 0x0fff;

/// A next hop: the egress port and, once the kernel resolved it, the neighbour's MAC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NextHop {
    pub port: u16,
    pub mac: Option<MacAddr>,
}

impl NextHop {
    /// The one-word form (port ≤ [`MAX_PORT`]).
    pub const fn pack(self) -> u64 {
        let port = ((self.port & MAX_PORT) as u64) << PORT_SHIFT;
        match self.mac {
            Some(m) => {
                let a = m.0;
                let mac = ((a[0] as u64) << 40)
                    | ((a[1] as u64) << 32)
                    | ((a[2] as u64) << 24)
                    | ((a[3] as u64) << 16)
                    | ((a[4] as u64) << 8)
                    | a[5] as u64;
                PRESENT | RESOLVED | port | mac
            }
            None => PRESENT | port,
        }
    }

    /// Back from [`NextHop::pack`]; `None` for an empty slot.
    #[inline]
    pub const fn unpack(w: u64) -> Option<NextHop> {
        if w & PRESENT == 0 {
            return None;
        }
        let port = ((w >> PORT_SHIFT) as u16) & MAX_PORT;
        let mac = if w & RESOLVED != 0 {
            Some(MacAddr([(w >> 40) as u8, (w >> 32) as u8, (w >> 24) as u8, (w >> 16) as u8, (w >> 8) as u8, w as u8]))
        } else {
            None
        };
        Some(NextHop { port, mac })
    }
}

/// What a target resolves to for one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolved {
    /// Forward: egress port and neighbour MAC.
    Forward { port: u16, mac: MacAddr },
    /// The next hop's neighbour is not resolved (yet).
    Unresolved { port: u16 },
    /// A special target (local, glean, blackhole, kernel).
    Special(Target),
    /// A next hop or group id with nothing in it (only if a reader raced a bug: counted as
    /// no route).
    Empty,
}

/// Next hops and ECMP groups: shared by the workers (read) and the one writer
/// ([`super::Rib`]).
pub struct NextHopTables {
    nh: Box<[AtomicU64]>,
    group_len: Box<[AtomicU32]>,
    members: Box<[AtomicU16]>,
}

impl Default for NextHopTables {
    fn default() -> Self {
        NextHopTables::new()
    }
}

impl NextHopTables {
    /// Empty tables of [`MAX_NEXTHOPS`] next hops and [`MAX_GROUPS`] groups of up to
    /// [`MAX_PATHS`] members (≈ 0.6 MiB).
    pub fn new() -> NextHopTables {
        NextHopTables {
            nh: (0..MAX_NEXTHOPS).map(|_| AtomicU64::new(0)).collect(),
            group_len: (0..MAX_GROUPS).map(|_| AtomicU32::new(0)).collect(),
            members: (0..MAX_GROUPS * MAX_PATHS).map(|_| AtomicU16::new(0)).collect(),
        }
    }

    /// Bytes of the next-hop table (a neighbour or gateway each: port and MAC) and of the
    /// ECMP group tables (lengths and members), allocated whole at creation.
    pub fn bytes(&self) -> (usize, usize) {
        (
            std::mem::size_of_val(&*self.nh),
            std::mem::size_of_val(&*self.group_len) + std::mem::size_of_val(&*self.members),
        )
    }

    /// Next hop `id` as a reader sees it now.
    #[inline]
    pub fn next_hop(&self, id: u16) -> Option<NextHop> {
        NextHop::unpack(self.nh.get(usize::from(id))?.load(Ordering::Acquire))
    }

    /// The members of group `id` (empty if unpublished).
    pub fn group(&self, id: u16) -> Vec<u16> {
        let g = usize::from(id);
        let Some(len) = self.group_len.get(g) else { return Vec::new() };
        let n = len.load(Ordering::Acquire) as usize;
        (0..n.min(MAX_PATHS)).map(|i| self.members[g * MAX_PATHS + i].load(Ordering::Relaxed)).collect()
    }

    /// Resolve `target` for a packet whose flow hash is `hash`. Allocates nothing; two or
    /// three loads.
    #[inline]
    pub fn resolve(&self, target: Target, hash: u32) -> Resolved {
        self.resolve_live(target, hash, 0)
    }

    /// [`NextHopTables::resolve`], skipping ECMP members whose port is in `down` (bit p:
    /// port p's link is down): a flow on a dead member moves to a live one at once, before
    /// the kernel withdraws the path; flows on live members keep theirs only when no
    /// member is down (then the pick is among the live ones). A group with no live member
    /// resolves as if none were down (its packets are dropped as `link_down`).
    #[inline]
    pub fn resolve_live(&self, target: Target, hash: u32, down: u64) -> Resolved {
        let id = match target {
            Target::NextHop(id) => id,
            Target::Group(g) => {
                let g = usize::from(g);
                let Some(len) = self.group_len.get(g) else { return Resolved::Empty };
                let n = len.load(Ordering::Acquire).min(MAX_PATHS as u32);
                if n == 0 {
                    return Resolved::Empty;
                }
                let i = g * MAX_PATHS + pick(hash, n) as usize;
                let Some(m) = self.members.get(i).map(|m| m.load(Ordering::Relaxed)) else { return Resolved::Empty };
                if down != 0 && self.port_down(m, down) {
                    self.live_member(g, n, hash, down).unwrap_or(m)
                } else {
                    m
                }
            }
            special => return Resolved::Special(special),
        };
        match self.next_hop(id) {
            Some(NextHop { port, mac: Some(mac) }) => Resolved::Forward { port, mac },
            Some(NextHop { port, mac: None }) => Resolved::Unresolved { port },
            None => Resolved::Empty,
        }
    }

    /// Is next hop `id` on a port `down` names?
    #[inline]
    fn port_down(&self, id: u16, down: u64) -> bool {
        self.next_hop(id).is_some_and(|nh| nh.port < 64 && down & (1u64 << nh.port) != 0)
    }

    /// The live member of group `g` (`n` members) flow `hash` moves to: the same pick
    /// among the live members only. None when every member is down.
    #[cold]
    fn live_member(&self, g: usize, n: u32, hash: u32, down: u64) -> Option<u16> {
        let member = |i: u32| self.members[g * MAX_PATHS + i as usize].load(Ordering::Relaxed);
        let live = (0..n).filter(|&i| !self.port_down(member(i), down)).count() as u32;
        if live == 0 {
            return None;
        }
        let k = pick(hash, live);
        (0..n).map(member).filter(|&m| !self.port_down(m, down)).nth(k as usize)
    }

    /// Writer: store next hop `id` (one store; readers see old or new).
    pub(super) fn set_next_hop(&self, id: u16, nh: Option<NextHop>) {
        if let Some(slot) = self.nh.get(usize::from(id)) {
            slot.store(nh.map_or(0, NextHop::pack), Ordering::Release);
        }
    }

    /// Writer: publish group `id` with `members` (≤ [`MAX_PATHS`]). The group must not be
    /// reachable by readers yet (fresh, or freed and past its grace period).
    pub(super) fn set_group(&self, id: u16, members: &[u16]) {
        let g = usize::from(id);
        if g >= MAX_GROUPS {
            return;
        }
        let n = members.len().min(MAX_PATHS);
        for (i, m) in members.iter().take(n).enumerate() {
            self.members[g * MAX_PATHS + i].store(*m, Ordering::Relaxed);
        }
        self.group_len[g].store(n as u32, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn pack_round_trips(port in 0u16..=MAX_PORT, mac: Option<[u8; 6]>) {
            let nh = NextHop { port, mac: mac.map(MacAddr) };
            prop_assert_eq!(NextHop::unpack(nh.pack()), Some(nh));
        }
    }

    #[test]
    fn resolve_next_hops_and_groups() {
        let t = NextHopTables::new();
        let mac = MacAddr([2, 0, 0, 0, 0, 9]);
        t.set_next_hop(1, Some(NextHop { port: 3, mac: Some(mac) }));
        t.set_next_hop(2, Some(NextHop { port: 4, mac: None }));
        assert_eq!(t.resolve(Target::NextHop(1), 0), Resolved::Forward { port: 3, mac });
        assert_eq!(t.resolve(Target::NextHop(2), 0), Resolved::Unresolved { port: 4 });
        assert_eq!(t.resolve(Target::NextHop(5), 0), Resolved::Empty);
        assert_eq!(t.resolve(Target::Glean, 0), Resolved::Special(Target::Glean));
        assert_eq!(t.resolve(Target::Group(7), 0), Resolved::Empty);
        t.set_group(7, &[1, 2]);
        assert_eq!(t.group(7), vec![1, 2]);
        assert_eq!(t.resolve(Target::Group(7), 0), Resolved::Forward { port: 3, mac });
        assert_eq!(t.resolve(Target::Group(7), u32::MAX), Resolved::Unresolved { port: 4 });
    }
}
