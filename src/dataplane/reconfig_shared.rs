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

/// A change the control lcore took but had not answered when the telemetry thread stopped
/// waiting: it may be in force. Settled by the next change or read of the running text.
pub(super) struct Late {
    pub id: u64,
    pub what: String,
    /// The running text with the change in it.
    pub text: String,
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
    /// The change whose answer came too late, if any (locked only under `running`).
    pub(super) late: Mutex<Option<Late>>,
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
            late: Mutex::new(None),
        }
    }

    /// Settle a change whose answer came late, with `running` (text, change id) held: its
    /// answer arrived and said applied → the text gets it; said refused → it stays; still
    /// none → an error (the change may or may not be in force yet: nothing may be made
    /// on, or read from, a text that might miss it).
    pub(super) fn settle_late(&self, text: &mut String, n: &mut u64) -> Result<(), String> {
        let mut late = self.late.lock().map_err(|_| "live configuration unavailable (poisoned)".to_string())?;
        let Some(l) = late.as_ref() else { return Ok(()) };
        while let Some((rid, answer)) = self.replies.pop() {
            if rid == l.id {
                if answer.is_ok() {
                    text.clone_from(&l.text);
                }
                *n = l.id;
                *late = None;
                return Ok(());
            }
        }
        Err(format!("change {} ({}) is still being applied: its answer is late; try again", l.id, l.what))
    }

    /// The running configuration as TOML (`pfcswitch config save`): `Ok(None)` when the
    /// file could not be read at start; an error while a change's answer is late.
    pub fn running_text(&self) -> Result<Option<String>, String> {
        let mut running = self.running.lock().map_err(|_| "live configuration unavailable (poisoned)".to_string())?;
        let Some((text, n)) = running.as_mut() else { return Ok(None) };
        self.settle_late(text, n)?;
        Ok(Some(text.clone()))
    }
}
