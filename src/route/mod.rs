//! Routing: IPv4/IPv6 forwarding with ECMP, the Linux kernel as control plane (see
//! docs/routing.md). Everything here is pure and safe; DPDK's LPM tables and RCU sit behind
//! safe types in `dpdk` (`dpdk::fib`), the kernel's rtnetlink in [`crate::kernel`].
//!
//! * [`mod@decide`]: the per-packet decision (bridge / route / punt / drop), pure, no
//!   allocation;
//! * [`hash`]: the seeded 5-tuple ECMP hash;
//! * [`copp`]: control-plane policing, a token bucket per (port, trap group) per worker;
//! * [`tables`]: next hops (one `AtomicU64` each) and immutable ECMP groups, read by the
//!   workers, written by the one writer;
//! * [`nexthop_objects`]: the kernel's nexthop objects (`RTA_NH_ID`), resolved for routes;
//! * [`rib`]: the one writer: kernel events → LPM entries, next hops, groups, with freed ids
//!   reused only after a grace period;
//! * [`target`]: what an LPM value means; [`prefix`]: prefixes;
//! * [`memory`]: what the DPDK tables take from EAL's memory, from their sizes.

pub mod copp;
pub mod decide;
pub mod hash;
pub mod memory;
pub mod nexthop_objects;
pub mod prefix;
pub mod rib;
pub mod tables;
pub mod target;

pub use copp::{PuntLimiter, TrapGroup};
pub use decide::{decide, forward, ingress, Decision, Ingress, PuntReason, RouteDrop, RouteTo, RouterPort};
pub use hash::{flow_hash, pick, seed_from_mac};
pub use nexthop_objects::{NextHopKind, NextHopObjects, NhPath, NhTarget};
pub use prefix::{IfAddr, Prefix, Prefix4, Prefix6};
pub use rib::{
    Grace, KernelEvent, KernelRoute, LpmWriter, NeighRow, NeighbourLimits, NoReaders, Path, Rib, RibStats, RibView,
    RouteKind, RouteOrigin, RouteRow, SoftLpm,
};
pub use tables::{NextHop, NextHopTables, Resolved};
pub use target::{Target, MAX_GROUPS, MAX_NEXTHOPS, MAX_PATHS, NO_ROUTE};

#[cfg(test)]
mod tests;
