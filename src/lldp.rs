//! LLDP with DCBX, the pure part: what a port announces (built from the configuration:
//! the scheduler → ETS, `pfc_enable` → PFC, the DSCP trust map and the RoCE port →
//! Application priority), and the agent that decides when a port sends and keeps what its
//! peer sent, with the PFC mismatch warning. Time is TSC ticks given by the caller; the
//! control lcore drives it (`dataplane::lldp`), never a worker. Codec: [`crate::wire::Lldpdu`].

use serde_json::{json, Value};

use crate::classify::Trust;
use crate::config::{Config, Scheduler};
use crate::wire::{selector, AppEntry, Ets, Lldpdu, MacAddr, PfcTlv, Tsa, CHASSIS_MAC, PORT_IFNAME};

/// The UDP port of RoCEv2 (the Application TLV's RoCE entry).
pub const ROCE_UDP_PORT: u16 = 4791;

/// ETS from the scheduler: a strict TC is TSA strict with 0 %, DWRR TCs are ETS with their
/// weights as percentages summing to 100 (largest remainder), priority n → TC by the
/// 802.1p map (what a PCP-marked frame of priority n is scheduled as).
pub fn ets_from(sched: &[Scheduler; 8], dot1p_to_tc: &[u8; 8]) -> Ets {
    let weights: [u64; 8] = std::array::from_fn(|tc| match sched[tc] {
        Scheduler::Dwrr(w) => u64::from(w).max(1),
        Scheduler::Strict => 0,
    });
    let total: u64 = weights.iter().sum();
    let mut bw = [0u8; 8];
    if let Some(total) = std::num::NonZeroU64::new(total) {
        let mut rems: Vec<(u64, usize)> = Vec::new();
        let mut given = 0u64;
        for tc in 0..8 {
            let exact = weights[tc] * 100;
            bw[tc] = (exact / total) as u8;
            given += u64::from(bw[tc]);
            if weights[tc] > 0 {
                rems.push((exact % total, tc));
            }
        }
        // Hand out what rounding down left, largest remainder first (lowest TC on ties).
        rems.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        for &(_, tc) in rems.iter().take((100 - given) as usize) {
            bw[tc] += 1;
        }
    }
    Ets {
        willing: false,
        cbs: false,
        max_tcs: 8,
        prio_tc: dot1p_to_tc.map(|t| t & 7),
        tc_bw: bw,
        tsa: std::array::from_fn(|tc| if weights[tc] > 0 { Tsa::Ets } else { Tsa::Strict }),
    }
}

/// The priority a TC's traffic is tagged with: the lowest priority the 802.1p map sends
/// to that TC (the identity map gives the TC itself), else the TC.
fn tc_priority(dot1p_to_tc: &[u8; 8], tc: u8) -> u8 {
    (0..8u8).find(|&p| dot1p_to_tc[p as usize] == tc).unwrap_or(tc & 7)
}

/// Application priority entries of port `pi`: on a port trusting DSCP, each DSCP whose TC
/// is not the map's catch-all (the TC most DSCPs go to) → that TC's priority; then UDP 4791
/// → `roce_priority` when configured.
pub fn app_entries(cfg: &Config, pi: usize) -> Vec<AppEntry> {
    let q = &cfg.qos;
    let mut out = Vec::new();
    if cfg.ports[pi].trust == Trust::Dscp {
        let mut count = [0usize; 8];
        for &tc in &q.dscp_to_tc {
            count[usize::from(tc & 7)] += 1;
        }
        let catch_all = (0..8).max_by_key(|&t| (count[t], std::cmp::Reverse(t))).unwrap_or(0) as u8;
        for (dscp, &tc) in q.dscp_to_tc.iter().enumerate() {
            if tc & 7 != catch_all {
                out.push(AppEntry {
                    priority: tc_priority(&q.dot1p_to_tc, tc & 7),
                    selector: selector::DSCP,
                    protocol: dscp as u16,
                });
            }
        }
    }
    if let Some(p) = cfg.lldp.roce_priority {
        out.push(AppEntry { priority: p, selector: selector::UDP, protocol: ROCE_UDP_PORT });
    }
    out
}

/// What port `pi` announces: the switch's chassis id `chassis` (one MAC for every port),
/// the port's name as port id, the TTL of `[lldp]`, and the DCBX TLVs: ETS configuration
/// (and the same as recommendation), PFC with willing 0, Application priority.
pub fn local_du(cfg: &Config, pi: usize, chassis: MacAddr, system_name: &str) -> Lldpdu {
    let p = &cfg.ports[pi];
    let ets = ets_from(&cfg.qos.scheduler, &cfg.qos.dot1p_to_tc);
    Lldpdu {
        chassis_subtype: CHASSIS_MAC,
        chassis_id: chassis.0.to_vec(),
        port_subtype: PORT_IFNAME,
        port_id: p.name.as_bytes().to_vec(),
        ttl: cfg.lldp.ttl(),
        port_description: None,
        system_name: Some(system_name.to_string()),
        system_description: Some(format!("pfcswitch {} (DPDK software switch)", env!("CARGO_PKG_VERSION"))),
        ets_config: Some(ets),
        ets_recommendation: Some(ets),
        pfc: Some(PfcTlv { willing: false, mbc: false, cap: 8, enable: p.pfc_mask }),
        app: Some(app_entries(cfg, pi)),
        skipped: 0,
    }
}

/// A peer as last heard on a port.
#[derive(Debug, Clone, PartialEq)]
pub struct Neighbor {
    pub du: Lldpdu,
    /// Source MAC of its frames.
    pub mac: MacAddr,
    /// TSC of the last frame, and when the information expires (last + TTL).
    pub last: u64,
    pub expires: u64,
}

/// One port's LLDP state.
#[derive(Debug, Clone, Default)]
pub struct PortAgent {
    pub neighbor: Option<Neighbor>,
    /// The peer's PFC enable set differs from ours (warned once when it became so).
    pub pfc_mismatch: bool,
    pub tx_frames: u64,
    pub rx_frames: u64,
    /// Frames that were not a valid LLDPDU.
    pub rx_errors: u64,
    /// Neighbours aged out (TTL passed without a new frame).
    pub ageouts: u64,
    next_tx: u64,
}

/// What the agent has to say (the caller logs it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    NewNeighbor {
        port: usize,
        text: String,
    },
    /// The peer's PFC configuration differs from ours: said once per occurrence.
    PfcMismatch {
        port: usize,
        text: String,
    },
    PfcMatch {
        port: usize,
    },
    Gone {
        port: usize,
    },
}

/// The LLDP agent of every port.
#[derive(Debug, Clone)]
pub struct Agent {
    pub ports: Vec<PortAgent>,
    pub local: Vec<Lldpdu>,
    hello: u64,
    hz: u64,
}

/// A priority set as `3,4` (`none` when empty).
pub fn prio_list(mask: u8) -> String {
    let v: Vec<String> = (0..8).filter(|p| mask & (1 << p) != 0).map(|p| p.to_string()).collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(",")
    }
}

impl Agent {
    /// `local`: per port, what it announces; `hello_s`: seconds between frames. Every port
    /// sends its first frame at `now`.
    pub fn new(local: Vec<Lldpdu>, hello_s: u32, hz: u64, now: u64) -> Agent {
        let ports = local.iter().map(|_| PortAgent { next_tx: now, ..Default::default() }).collect();
        Agent { ports, local, hello: u64::from(hello_s).max(1) * hz, hz }
    }

    /// True when `port` is due to send now (its next time is then set one hello later).
    pub fn due(&mut self, port: usize, now: u64) -> bool {
        let Some(p) = self.ports.get_mut(port) else { return false };
        if now < p.next_tx {
            return false;
        }
        p.next_tx = now + self.hello;
        p.tx_frames += 1;
        true
    }

    /// `port` now announces PFC on `enable` (a live `config pfc`): its next frame goes at
    /// `now` (a change is announced at once), and the peer's last PFC TLV is judged again.
    pub fn set_pfc_enable(&mut self, port: usize, enable: u8, now: u64) -> Vec<Event> {
        let mut ev = Vec::new();
        let (Some(p), Some(local)) = (self.ports.get_mut(port), self.local.get_mut(port)) else { return ev };
        if let Some(t) = local.pfc.as_mut() {
            t.enable = enable;
        }
        p.next_tx = now;
        let theirs = p.neighbor.as_ref().and_then(|n| n.du.pfc).map(|t| t.enable);
        let mismatch = theirs.is_some_and(|t| t != enable);
        if mismatch && !p.pfc_mismatch {
            ev.push(Event::PfcMismatch {
                port,
                text: format!(
                    "peer sends PFC enable {}; ours is now {}",
                    prio_list(theirs.unwrap_or(0)),
                    prio_list(enable)
                ),
            });
        } else if !mismatch && p.pfc_mismatch {
            ev.push(Event::PfcMatch { port });
        }
        p.pfc_mismatch = mismatch;
        ev
    }

    /// A frame that could not be queued: try again at the next pass.
    pub fn retry(&mut self, port: usize, now: u64) {
        if let Some(p) = self.ports.get_mut(port) {
            p.next_tx = now;
            p.tx_frames -= 1;
        }
    }

    /// An LLDP frame received on `port` at `now`.
    pub fn receive(&mut self, port: usize, frame: &[u8], now: u64) -> Vec<Event> {
        let mut ev = Vec::new();
        let (Some(p), Some(local)) = (self.ports.get_mut(port), self.local.get(port)) else { return ev };
        let du = match Lldpdu::parse(frame) {
            Ok(d) => d,
            Err(_) => {
                p.rx_errors += 1;
                return ev;
            }
        };
        p.rx_frames += 1;
        if du.ttl == 0 {
            // A shutdown LLDPDU: forget the peer now.
            if p.neighbor.take().is_some() {
                p.pfc_mismatch = false;
                ev.push(Event::Gone { port });
            }
            return ev;
        }
        let is_new = p.neighbor.as_ref().is_none_or(|n| n.du.chassis_id != du.chassis_id || n.du.port_id != du.port_id);
        if is_new {
            ev.push(Event::NewNeighbor {
                port,
                text: format!(
                    "{} port {}",
                    du.system_name.clone().unwrap_or_else(|| du.chassis_text()),
                    du.port_text()
                ),
            });
        }
        // A peer that sends no PFC TLV (plain LLDP, a NIC without DCBX) says nothing about
        // its PFC: not a mismatch.
        let ours = local.pfc.map_or(0, |t| t.enable);
        let mismatch = du.pfc.is_some_and(|t| t.enable != ours);
        if mismatch && !p.pfc_mismatch {
            let theirs = du.pfc.map_or(0, |t| t.enable);
            ev.push(Event::PfcMismatch {
                port,
                text: format!(
                    "peer {} sends PFC enable {}; ours is {}",
                    du.port_text(),
                    prio_list(theirs),
                    prio_list(ours)
                ),
            });
        } else if !mismatch && p.pfc_mismatch {
            ev.push(Event::PfcMatch { port });
        }
        p.pfc_mismatch = mismatch;
        let mac = MacAddr(frame[6..12].try_into().unwrap_or([0; 6]));
        let expires = now + u64::from(du.ttl) * self.hz;
        p.neighbor = Some(Neighbor { du, mac, last: now, expires });
        ev
    }

    /// Forget neighbours whose TTL passed.
    pub fn expire(&mut self, now: u64) -> Vec<Event> {
        let mut ev = Vec::new();
        for (port, p) in self.ports.iter_mut().enumerate() {
            if p.neighbor.as_ref().is_some_and(|n| now >= n.expires) {
                p.neighbor = None;
                p.pfc_mismatch = false;
                p.ageouts += 1;
                ev.push(Event::Gone { port });
            }
        }
        ev
    }

    /// Port `port` for telemetry: what we send, what the peer sent, the counters.
    pub fn port_json(&self, port: usize, now: u64) -> Value {
        let Some(p) = self.ports.get(port) else { return Value::Null };
        let neighbor = p.neighbor.as_ref().map(|n| {
            let mut v = du_json(&n.du);
            v["mac"] = n.mac.to_string().into();
            v["age_s"] = (now.saturating_sub(n.last) / self.hz.max(1)).into();
            v["expires_in_s"] = (n.expires.saturating_sub(now) / self.hz.max(1)).into();
            v
        });
        json!({
            "local": self.local.get(port).map(du_json),
            "neighbor": neighbor,
            "pfc_mismatch": p.pfc_mismatch,
            "tx_frames": p.tx_frames,
            "rx_frames": p.rx_frames,
            "rx_errors": p.rx_errors,
            "ageouts": p.ageouts,
        })
    }
}

fn ets_json(e: &Ets) -> Value {
    json!({
        "willing": e.willing,
        "cbs": e.cbs,
        "max_tcs": e.max_tcs,
        "prio_tc": e.prio_tc.to_vec(),
        "tc_bw": e.tc_bw.to_vec(),
        "tsa": e.tsa.iter().map(|t| t.name()).collect::<Vec<_>>(),
    })
}

/// An LLDPDU as JSON (the telemetry replies, `show lldp neighbors`, `show dcbx`).
pub fn du_json(d: &Lldpdu) -> Value {
    json!({
        "chassis_id": d.chassis_text(),
        "chassis_subtype": d.chassis_subtype,
        "port_id": d.port_text(),
        "port_subtype": d.port_subtype,
        "ttl": d.ttl,
        "port_description": d.port_description,
        "system_name": d.system_name,
        "system_description": d.system_description,
        "ets_config": d.ets_config.as_ref().map(ets_json),
        "ets_recommendation": d.ets_recommendation.as_ref().map(ets_json),
        "pfc": d.pfc.map(|p| json!({"willing": p.willing, "mbc": p.mbc, "cap": p.cap, "enable": prio_list(p.enable), "enable_mask": p.enable})),
        "app": d.app.as_ref().map(|a| a.iter().map(|e| json!({"priority": e.priority, "selector": e.selector, "protocol": e.protocol})).collect::<Vec<_>>()),
        "skipped_tlvs": d.skipped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(extra: &str) -> Config {
        let text = format!(
            "[[port]]\nname = \"Ethernet0\"\ndevargs = \"net_null0\"\nspeed = \"100G\"\npfc_enable = [3, 4]\ntrust = \"dscp\"\n{extra}"
        );
        crate::config::from_str(&text, "t.toml").unwrap()
    }

    #[test]
    fn bad_lldp_section_is_one_line_naming_the_field() {
        for (text, field) in [
            ("hello_time = 0", "lldp.hello_time"),
            ("multiplier = 101", "lldp.multiplier"),
            ("roce_priority = 8", "lldp.roce_priority"),
            ("system_name = \"\"", "lldp.system_name"),
            ("bogus = 1", "lldp"),
        ] {
            let toml = format!("[[port]]\nname = \"E0\"\ndevargs = \"net_null0\"\nspeed = \"10G\"\n[lldp]\n{text}\n");
            let e = crate::config::from_str(&toml, "t.toml").unwrap_err().to_string();
            assert!(e.contains(field) && !e.contains('\n'), "{text}: {e}");
        }
        let c = cfg("[lldp]\nenabled = true\nhello_time = 5\nmultiplier = 3\n");
        assert_eq!((c.lldp.enabled, c.lldp.ttl()), (true, 15));
        assert!(!cfg("").lldp.enabled, "off by default");
    }

    #[test]
    fn ets_from_sonic_default_scheduler() {
        // SONiC's default: DWRR 14 on 0-2, 5-6; 15 on 3-4; 7 strict.
        let c = cfg("");
        let e = ets_from(&c.qos.scheduler, &c.qos.dot1p_to_tc);
        assert_eq!(e.tsa[7], Tsa::Strict);
        assert_eq!(e.tc_bw[7], 0);
        assert_eq!(e.tc_bw.iter().map(|&b| u32::from(b)).sum::<u32>(), 100);
        assert_eq!(e.tc_bw, [14, 14, 14, 15, 15, 14, 14, 0]);
        assert_eq!(e.prio_tc, [0, 1, 2, 3, 4, 5, 6, 7]);
        let all_strict = ets_from(&[Scheduler::Strict; 8], &[0; 8]);
        assert_eq!(all_strict.tc_bw, [0; 8]);
    }

    #[test]
    fn app_from_dscp_map_and_roce() {
        let c = cfg("[lldp]\nroce_priority = 3\n");
        let a = app_entries(&c, 0);
        // SONiC's default DSCP map: 3→3, 4→4, 5→2, 8→0, 46→5, 48→6, the rest → 1 (catch-all).
        let dscp: Vec<(u16, u8)> =
            a.iter().filter(|e| e.selector == selector::DSCP).map(|e| (e.protocol, e.priority)).collect();
        assert_eq!(dscp, vec![(3, 3), (4, 4), (5, 2), (8, 0), (46, 5), (48, 6)]);
        assert_eq!(a.last(), Some(&AppEntry { priority: 3, selector: selector::UDP, protocol: 4791 }));
        let d = local_du(&c, 0, MacAddr([2, 0, 0, 0, 0, 1]), "tor1");
        assert_eq!(d.pfc.unwrap().enable, 0x18);
        assert!(!d.pfc.unwrap().willing);
        assert_eq!(Lldpdu::parse(&d.to_bytes(MacAddr([2, 0, 0, 0, 0, 1]))), Ok(d));
    }

    #[test]
    fn neighbor_mismatch_warned_once_and_aged_out() {
        let c = cfg("[lldp]\nenabled = true\n");
        let hz = 1000;
        let ours = local_du(&c, 0, MacAddr([2, 0, 0, 0, 0, 1]), "tor1");
        let mut a = Agent::new(vec![ours.clone()], 30, hz, 0);
        assert!(a.due(0, 0) && !a.due(0, 1) && a.due(0, 30_000));
        let mut peer = ours.clone();
        peer.pfc = None;
        let plain = peer.to_bytes(MacAddr([2, 0, 0, 0, 0, 9]));
        assert_eq!(a.receive(0, &plain, 5).len(), 1, "a peer without a PFC TLV is no mismatch");
        assert!(!a.ports[0].pfc_mismatch);
        peer.chassis_id = vec![2, 0, 0, 0, 0, 9];
        peer.pfc = Some(PfcTlv { willing: true, mbc: false, cap: 8, enable: 0x08 });
        let f = peer.to_bytes(MacAddr([2, 0, 0, 0, 0, 9]));
        let ev = a.receive(0, &f, 10);
        assert!(matches!(ev[0], Event::NewNeighbor { .. }));
        assert!(
            matches!(&ev[1], Event::PfcMismatch { text, .. } if text.contains("enable 3;") || text.contains("enable 3 ")),
            "{ev:?}"
        );
        assert!(a.receive(0, &f, 20).is_empty(), "warned once");
        assert!(a.ports[0].pfc_mismatch);
        let j = a.port_json(0, 20);
        assert_eq!(j["neighbor"]["pfc"]["enable"], "3");
        assert_eq!(j["pfc_mismatch"], true);
        peer.pfc = Some(PfcTlv { willing: true, mbc: false, cap: 8, enable: 0x18 });
        assert_eq!(a.receive(0, &peer.to_bytes(MacAddr([2, 0, 0, 0, 0, 9])), 30), vec![Event::PfcMatch { port: 0 }]);
        // Ours changes live (`config pfc`): announced at once, the peer judged again.
        assert!(matches!(&a.set_pfc_enable(0, 0x08, 31)[..], [Event::PfcMismatch { .. }]));
        assert_eq!(a.local[0].pfc.unwrap().enable, 0x08);
        assert!(a.due(0, 31), "announced at once");
        assert_eq!(a.set_pfc_enable(0, 0x18, 32), vec![Event::PfcMatch { port: 0 }]);
        assert!(a.expire(30 + 119 * hz).is_empty());
        assert_eq!(a.expire(30 + 120 * hz), vec![Event::Gone { port: 0 }]);
        assert!(a.ports[0].neighbor.is_none());
        let mut junk = f.clone();
        junk.truncate(20);
        a.receive(0, &junk, 40);
        assert_eq!(a.ports[0].rx_errors, 1);
    }
}
