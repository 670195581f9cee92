//! The receive side of PFC on the ports whose MAC-control frames this lcore acts on: a
//! PFC/PAUSE frame updates the port's pause deadlines (and the watchdog's record of when
//! PAUSE frames arrived); one received on a port another lcore owns goes to that lcore's
//! inbox. Rare per packet, and cold.

use std::sync::Arc;

use crate::counters::LcoreCounters;
use crate::pfc::PfcRx;
use crate::pfcwd::PfcwdRxStamps;
use crate::wire::MacControl;

use super::super::shared::Shared;

pub struct MacControlRx {
    tsc_hz: u64,
    /// Receive-side PFC state of the ports whose MAC-control frames this lcore acts on.
    rx: Vec<Option<PfcRx>>,
    /// Per port: the generation of its PFC set last given to its `PfcRx`.
    generation: Vec<u64>,
    wd_stamps: Vec<Option<Arc<PfcwdRxStamps>>>,
    /// Per port: several RX queues (a PFC frame may arrive on a queue another lcore polls).
    multi_rx: Vec<bool>,
    /// Owned ports whose PFC inbox this lcore drains every loop.
    inbox_ports: Vec<usize>,
}

impl MacControlRx {
    pub fn new(multi_rx: Vec<bool>, tsc_hz: u64) -> MacControlRx {
        let n = multi_rx.len();
        MacControlRx {
            tsc_hz,
            rx: (0..n).map(|_| None).collect(),
            generation: vec![0; n],
            wd_stamps: (0..n).map(|_| None).collect(),
            multi_rx,
            inbox_ports: Vec::new(),
        }
    }

    /// Act on the MAC-control frames `port` receives.
    pub fn own(&mut self, port: usize, rx: PfcRx, wd_stamps: Option<Arc<PfcwdRxStamps>>) {
        self.rx[port] = Some(rx);
        self.wd_stamps[port] = wd_stamps;
        if self.multi_rx[port] {
            self.inbox_ports.push(port);
        }
    }

    /// A MAC-control frame received on `port`: applied here if this lcore owns the port's
    /// receive-side PFC state, else handed to the lcore that does.
    #[cold]
    pub fn on_frame(&mut self, shared: &Shared, port: usize, f: &MacControl, now: u64, c: &LcoreCounters) {
        match self.rx[port].as_mut() {
            Some(rx) => {
                let out = rx.on_frame(f, now, self.tsc_hz);
                if let Some(st) = &self.wd_stamps[port] {
                    st.note_rx(&out, now);
                }
            }
            None => {
                if shared.ports[port].pfc_inbox.push((*f, now)).is_err() {
                    c.worker.pfc_inbox_overflow.inc();
                }
            }
        }
    }

    /// Ports whose inbox this lcore drains.
    #[inline(always)]
    pub fn has_inbox(&self) -> bool {
        !self.inbox_ports.is_empty()
    }

    /// Apply the MAC-control frames other lcores received on ports whose receive-side
    /// PFC state this lcore owns (ports with several RX queues).
    pub fn take_inbox(&mut self, shared: &Shared) {
        for &p in &self.inbox_ports {
            while let Some((f, t)) = shared.ports[p].pfc_inbox.pop() {
                if let Some(rx) = self.rx[p].as_mut() {
                    let out = rx.on_frame(&f, t, self.tsc_hz);
                    if let Some(st) = &self.wd_stamps[p] {
                        st.note_rx(&out, t);
                    }
                }
            }
        }
    }

    /// A live change of a port's PFC priorities (`config pfc`) taken, pauses that expired
    /// closed (RxWait counters).
    pub fn settle(&mut self, shared: &Shared, now: u64) {
        for (port, rx) in self.rx.iter_mut().enumerate() {
            let Some(rx) = rx.as_mut() else { continue };
            let live = &shared.ports[port].pfc;
            if live.generation() != self.generation[port] {
                self.generation[port] = live.generation();
                rx.set_enable(live.pfc_mask(), now);
            }
            rx.poll(now);
        }
    }

    /// At stop: account the pauses that ended.
    pub fn poll_all(&mut self, now: u64) {
        for rx in self.rx.iter_mut().flatten() {
            rx.poll(now);
        }
    }
}
