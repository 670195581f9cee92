//! What the telemetry thread and the control lcore share for live changes
//! ([`super::reconfig`]): the running configuration's text, and the change on its way.

use std::sync::Mutex;

use crossbeam_queue::ArrayQueue;

use crate::mmu::MmuConfig;

/// A validated change on its way to the control lcore.
pub struct Request {
    pub id: u64,
    pub what: String,
    pub mmu: MmuConfig,
    /// Per port, its WRED profiles and watchdog settings.
    pub tx: Vec<super::tx_live::TxParams>,
    /// Per port, its PFC priorities and lossless PGs.
    pub pfc: Vec<super::pfc_live::PfcSet>,
}

/// What the telemetry thread and the control lcore share.
pub struct ReconfigShared {
    /// The running configuration's text (None: the file could not be read at start) and
    /// the number of changes made; held by the telemetry thread for a whole change.
    pub(super) running: Mutex<Option<(String, u64)>>,
    /// The file's name, for errors.
    pub(super) origin: String,
    pub(super) sw_response_ns: u64,
    pub(super) requests: ArrayQueue<Request>,
    /// (request id, the control lcore's answer).
    pub(super) replies: ArrayQueue<(u64, Result<String, String>)>,
}

impl ReconfigShared {
    /// Reads the configuration file again (the text the changes are made to).
    pub fn new(cfg: &crate::config::Config) -> ReconfigShared {
        let text = std::fs::read_to_string(&cfg.origin).ok();
        ReconfigShared {
            running: Mutex::new(text.map(|t| (t, 0))),
            origin: cfg.origin.clone(),
            sw_response_ns: cfg.switch.sw_response_ns,
            requests: ArrayQueue::new(1),
            replies: ArrayQueue::new(4),
        }
    }

    /// The running configuration as TOML (`pfcswitch config save`).
    pub fn running_text(&self) -> Option<String> {
        self.running.lock().ok().and_then(|r| r.as_ref().map(|(t, _)| t.clone()))
    }
}
