//! LLDP with DCBX on the control lcore (`[lldp] enabled = true`): every `hello_time` it puts
//! each port's LLDPDU on the port's control queue (the path of the PFC frames, ahead of
//! data, sent by the port's TX owner), and it takes the LLDP frames the workers received
//! (a worker only moves the mbuf into [`super::lldp_shared::LldpShared::inbox`]: one push, no parsing),
//! parses them ([`crate::lldp::Agent`]), keeps the peer per port, ages it out after its
//! TTL, and logs a new peer and, once, a peer whose PFC enable set differs from ours.
//! The telemetry thread reads the last published view (`/pfcswitch/lldp`).

use std::sync::atomic::Ordering;

use crate::counters::{DropReason, DropSite, LcoreCounters};
use crate::dpdk::Mbuf;
use crate::lldp::{Agent, Event};

use super::io::IoMsg;
use super::lldp_shared::INBOX_LEN;
use super::shared::Shared;
use super::spec::SwitchSpec;

impl Shared {
    /// A worker received an LLDP frame on `port`: hand it to the control lcore (consumed,
    /// `lldp_rx`), or drop it as `link_local` if the inbox is full.
    #[cold]
    pub fn hand_lldp(&self, port: usize, m: Mbuf, c: &LcoreCounters) {
        match self.lldp.inbox.push((port, m)) {
            Ok(()) => c.ports[port].lldp_rx.inc(),
            Err(_) => {
                self.lldp.overflow.fetch_add(1, Ordering::Relaxed);
                c.count_drop(DropSite::arrival(port), DropReason::LinkLocal, 1);
            }
        }
    }
}

/// The agent, owned by the control lcore.
pub struct LldpDriver {
    agent: Agent,
    /// Per port, the frame it sends (built again when a live change alters its PFC).
    frames: Vec<Vec<u8>>,
    names: Vec<String>,
    dirty: bool,
    /// Per port, the generation of its PFC set the frame carries.
    pfc_gen: Vec<u64>,
}

/// The host name (System Name default).
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|s| s.trim().to_string()).unwrap_or_default()
}

impl LldpDriver {
    /// None when `[lldp]` is off. The chassis id is the first port's MAC.
    pub fn new(spec: &SwitchSpec, shared: &Shared, hz: u64, now: u64) -> Option<LldpDriver> {
        let cfg = &spec.config;
        if !cfg.lldp.enabled {
            return None;
        }
        let chassis = shared.ports.first()?.mac;
        let name = cfg.lldp.system_name.clone().filter(|n| !n.is_empty()).unwrap_or_else(hostname);
        let name = if name.is_empty() { "pfcswitch".to_string() } else { name };
        // The `[[port]]`s only: a representor is the kernel's side of a port, not a link.
        let local: Vec<_> =
            (0..cfg.switch_ports().len()).map(|p| crate::lldp::local_du(cfg, p, chassis, &name)).collect();
        let frames = local.iter().zip(&shared.ports).map(|(d, rt)| d.to_bytes(rt.mac)).collect();
        log::info!(
            "lldp: on, every {} s (TTL {} s), system name '{name}', chassis {chassis}",
            cfg.lldp.hello_time_s,
            cfg.lldp.ttl()
        );
        Some(LldpDriver {
            agent: Agent::new(local, cfg.lldp.hello_time_s, hz, now),
            frames,
            names: shared.ports.iter().map(|p| p.name.clone()).collect(),
            dirty: true,
            pfc_gen: shared.ports.iter().map(|p| p.pfc.generation()).collect(),
        })
    }

    fn log(&self, shared: &Shared, ev: Event) {
        let name = |p: usize| self.names.get(p).map_or("?", |n| n.as_str());
        let (level, text) = match ev {
            Event::NewNeighbor { port, text } => (log::Level::Info, format!("lldp: {}: neighbor {text}", name(port))),
            Event::PfcMismatch { port, text } => {
                (log::Level::Warn, format!("dcbx: {}: PFC mismatch: {text} (show dcbx)", name(port)))
            }
            Event::PfcMatch { port } => (log::Level::Info, format!("dcbx: {}: PFC now matches the peer", name(port))),
            Event::Gone { port } => (log::Level::Info, format!("lldp: {}: neighbor gone", name(port))),
        };
        shared.io.send(IoMsg::Log(level, text));
    }

    /// One pass (the main loop calls it every millisecond, later after a nap): received frames, age-outs,
    /// frames due, and the view for telemetry when something changed.
    pub fn poll(&mut self, shared: &Shared, now: u64) {
        for _ in 0..INBOX_LEN {
            let Some((port, m)) = shared.lldp.inbox.pop() else { break };
            for ev in self.agent.receive(port, m.data(), now) {
                self.log(shared, ev);
            }
            self.dirty = true;
        }
        for ev in self.agent.expire(now) {
            self.log(shared, ev);
            self.dirty = true;
        }
        for port in 0..self.frames.len() {
            let live = &shared.ports[port].pfc;
            if live.generation() != self.pfc_gen[port] {
                self.pfc_gen[port] = live.generation();
                for ev in self.agent.set_pfc_enable(port, live.pfc_mask(), now) {
                    self.log(shared, ev);
                }
                self.frames[port] = self.agent.local[port].to_bytes(shared.ports[port].mac);
                self.dirty = true;
            }
            if self.agent.due(port, now) {
                if shared.queue_frame(port, &self.frames[port]) {
                    self.dirty = true;
                } else {
                    // No mbuf or no room: next pass (a millisecond later).
                    self.agent.retry(port, now);
                }
            }
        }
        if self.dirty {
            // Never wait for the telemetry thread: publish at a later pass instead.
            if let Ok(mut v) = shared.lldp.view.try_lock() {
                *v = (0..self.frames.len()).map(|p| self.agent.port_json(p, now)).collect();
                self.dirty = false;
            }
        }
    }
}
