//! What the workers, the telemetry thread and the LLDP agent on the control lcore
//! ([`super::lldp`]) share: the received frames on their way to the agent, and the view
//! the agent last published.

use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use crossbeam_queue::ArrayQueue;
use serde_json::Value;

use crate::dpdk::Mbuf;

use super::spec::SwitchSpec;

/// LLDP frames on their way from the workers to the control lcore. A peer sends one every
/// few seconds; 256 covers a burst from every port at once.
pub const INBOX_LEN: usize = 256;

/// What the workers and the telemetry thread share with the LLDP agent.
pub struct LldpShared {
    /// `[lldp] enabled`: when false, LLDP frames are dropped as `link_local` as before.
    pub enabled: bool,
    /// Received LLDP frames (port, mbuf), for the control lcore.
    pub inbox: ArrayQueue<(usize, Mbuf)>,
    /// Frames that found the inbox full (dropped as `link_local`).
    pub overflow: AtomicU64,
    /// Per port, the agent's JSON as last published by the control lcore.
    pub(super) view: Mutex<Vec<Value>>,
}

impl LldpShared {
    pub fn new(spec: &SwitchSpec) -> LldpShared {
        LldpShared {
            enabled: spec.config.lldp.enabled,
            inbox: ArrayQueue::new(INBOX_LEN),
            overflow: AtomicU64::new(0),
            view: Mutex::new(vec![Value::Null; spec.ports.len()]),
        }
    }

    /// Port `port`'s view for telemetry (Null while LLDP is off or not yet published).
    pub fn view(&self, port: usize) -> Value {
        self.view.lock().map(|v| v.get(port).cloned().unwrap_or(Value::Null)).unwrap_or(Value::Null)
    }
}
