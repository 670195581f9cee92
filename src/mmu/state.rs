//! The MMU's counters, shared by every lcore: per PG, per port (its ON/OFF word), per
//! egress queue and per pool. Atomics only.

use std::sync::atomic::{AtomicU32, AtomicU64};

/// The port-level OFF bit of [`PortState::off`] (DSH); bits 0..8 are the PGs'.
pub(super) const PORT_OFF: u32 = 1 << 8;

#[derive(Default)]
pub(super) struct PgState {
    pub(super) private: AtomicU64,
    pub(super) shared: AtomicU64,
    pub(super) headroom: AtomicU64,
    pub(super) shared_wm: AtomicU64,
    pub(super) headroom_wm: AtomicU64,
}

#[derive(Default)]
pub(super) struct PortState {
    /// Bit n: PG n is OFF (queue level); [`PORT_OFF`]: the port is OFF (DSH).
    pub(super) off: AtomicU32,
    /// DSH only: Σ shared bytes of the port's lossless PGs, insurance headroom in use.
    pub(super) shared: AtomicU64,
    pub(super) insurance: AtomicU64,
}

#[derive(Default)]
pub(super) struct QueueState {
    pub(super) lossless: AtomicU64,
    pub(super) private: AtomicU64,
    pub(super) shared: AtomicU64,
    pub(super) wm: AtomicU64,
}

#[derive(Default)]
pub(super) struct PoolState {
    pub(super) private: AtomicU64,
    pub(super) shared: AtomicU64,
    pub(super) headroom: AtomicU64,
    pub(super) shared_wm: AtomicU64,
    pub(super) headroom_wm: AtomicU64,
}
