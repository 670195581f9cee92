//! The egress settings a live change may alter on a running port: its queues' WRED/ECN
//! profiles and the PFC watchdog's action and times (`pfcswitch config wred`, `config
//! pfcwd`). The control lcore publishes a new set ([`TxLive::publish`]); the port's TX
//! owner compares one generation number per serve call and, when it moved, copies the set
//! into its own state between two dequeues: a packet is judged by the old profile or the
//! new, never a mix, and the packet path reads nothing more than that number.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;

use crate::pfcwd::PfcwdConfig;
use crate::wred::WredProfile;

/// One port's live egress settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxParams {
    /// Per egress queue (TC), the WRED/ECN profile bound to it.
    pub wred: [Option<WredProfile>; 8],
    /// The watchdog's settings (None: no watchdog on this switch).
    pub pfcwd: Option<PfcwdConfig>,
    /// The priorities the watchdog watches (the port's PFC priorities, or all where
    /// 802.3x PAUSE is obeyed).
    pub watch: u8,
}

/// Published by the control lcore, read by the port's TX owner.
pub struct TxLive {
    generation: AtomicU64,
    params: ArcSwap<TxParams>,
}

impl TxLive {
    pub fn new(p: TxParams) -> TxLive {
        TxLive { generation: AtomicU64::new(0), params: ArcSwap::from_pointee(p) }
    }

    /// Installs `p`; false (nothing published) when it equals what is in force.
    pub fn publish(&self, p: TxParams) -> bool {
        if *self.params.load_full() == p {
            return false;
        }
        self.params.store(Arc::new(p));
        // Release: a reader that sees the new number sees the new set.
        self.generation.fetch_add(1, Ordering::Release);
        true
    }

    /// The number of sets published so far (one load: what a serve call pays).
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The set in force.
    pub fn params(&self) -> TxParams {
        **self.params.load()
    }
}
