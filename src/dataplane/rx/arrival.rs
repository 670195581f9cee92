//! Stage 1, arrival: the checks every received frame passes (one segment, no longer than
//! the port's largest frame, at least a minimum frame, padded on kernel-backed ports), and
//! its parse, once. MAC control (PFC/PAUSE), LLDP and the other link-local frames end
//! here: they are the port's, never forwarded. A dropped packet stays in its slot, marked
//! `Done`, and is freed with the burst.

use crate::counters::{DropReason, DropSite};
use crate::dpdk::{Mbuf, MbufBurst, BURST_CAP};
use crate::route::copp::Bucket;
use crate::wire::{self, MacAddr, MacControl, MIN_FRAME_LEN};

use super::mac_control::MacControlRx;
use super::vector::{mac_word, Step, Vector};
use super::Ctx;

/// LLDP frames a port may hand to the control lcore per second, and at once: a peer sends
/// one every `hello_time` (802.1AB's fast start: one a second, four at most), so a flood is
/// held to this at the worker and never takes the control lcore's time from PAUSE refreshes.
const LLDP_PER_S: u64 = 10;
const LLDP_BURST: u64 = 10;

/// Per port, what arrival checks.
pub struct Arrival {
    /// Pad short frames (kernel-backed ports) rather than drop them.
    pad_short: Vec<bool>,
    /// The largest frame accepted: MTU + Ethernet/802.1Q header.
    max_frame: Vec<u32>,
    /// Per port, the LLDP policer.
    lldp: Vec<Bucket>,
    tsc_hz: u64,
}

impl Arrival {
    pub fn new(pad_short: Vec<bool>, max_frame: Vec<u32>, tsc_hz: u64) -> Arrival {
        let lldp = vec![Bucket::new(LLDP_PER_S, LLDP_BURST, tsc_hz, 0); pad_short.len()];
        Arrival { pad_short, max_frame, lldp, tsc_hz }
    }

    /// Check and parse every packet of the burst into `v`; a good one goes on to the
    /// ingress stage (`Step::L2` for now). `kernel`: the burst comes from a kernel
    /// representor (padded, and no MAC control is looked for). Returns the burst's bytes.
    #[inline]
    pub fn run(&mut self, x: Ctx, kernel: bool, burst: &mut MbufBurst, v: &mut Vector, mac: &mut MacControlRx) -> u64 {
        let (max, pad_short) = (self.max_frame[x.in_port], kernel || self.pad_short[x.in_port]);
        let mut bytes = 0u64;
        for i in 0..burst.len().min(BURST_CAP) {
            if let Some(next) = burst.get(i + 2) {
                next.prefetch_data();
            }
            v.step[i] = Step::Done;
            let Some(m) = burst.get_mut(i) else { continue };
            bytes += u64::from(m.pkt_len());
            if let Some(why) = check(m, max, pad_short) {
                x.c.count_drop(DropSite::arrival(x.in_port), why, 1);
                continue;
            }
            let d = m.data();
            (v.len[i], v.dst[i], v.src[i]) = (d.len() as u32, mac_word(d, 0), mac_word(d, 6));
            match wire::parse(d) {
                Ok(p) => v.parsed[i] = p,
                Err(_) => {
                    x.c.count_drop(DropSite::arrival(x.in_port), DropReason::Malformed, 1);
                    continue;
                }
            }
            let p = &v.parsed[i];
            if !kernel && (p.is_mac_control() || p.dst.is_link_local_reserved()) {
                self.port_frame(x, burst, i, v, mac);
                continue;
            }
            v.step[i] = Step::L2;
        }
        bytes
    }

    /// A frame for the port itself. PFC / 802.3x PAUSE updates the port's pause deadlines
    /// (ports are promiscuous: only frames to the MAC-control address or to the port's own MAC
    /// are for us; others are dropped, never obeyed); LLDP goes to the agent; any other
    /// link-local destination is dropped.
    #[cold]
    fn port_frame(&mut self, x: Ctx, burst: &mut MbufBurst, i: usize, v: &Vector, mac: &mut MacControlRx) {
        let (p, site) = (&v.parsed[i], DropSite::arrival(x.in_port));
        let shared = x.shared;
        if p.is_mac_control() {
            let to_us = p.dst == MacAddr::PFC_DST || p.dst == shared.ports[x.in_port].mac;
            match burst.get(i).map(|m| MacControl::parse(m.data())) {
                Some(Ok(f)) if to_us => {
                    x.c.ports[x.in_port].mac_control_rx.inc();
                    mac.on_frame(shared, x.in_port, &f, x.now, x.c);
                }
                _ => x.c.count_drop(site, DropReason::BadMacControl, 1),
            }
            return;
        }
        if p.ethertype == wire::ETHERTYPE_LLDP && p.dst == wire::LLDP_DST && shared.lldp.enabled {
            if !self.lldp[x.in_port].admit(x.now, self.tsc_hz) {
                return x.c.count_drop(site, DropReason::LldpPoliced, 1);
            }
            if let Some(m) = burst.take(i) {
                shared.hand_lldp(x.in_port, m, x.c);
            }
            return;
        }
        x.c.count_drop(site, DropReason::LinkLocal, 1);
    }
}

/// The drop reason of a frame arrival refuses (None: it passes; a short one on a
/// `pad_short` port is padded).
#[inline(always)]
fn check(m: &mut Mbuf, max: u32, pad_short: bool) -> Option<DropReason> {
    // A chained mbuf is dropped: everything after this sees the first segment only,
    // and the MMU charges its length.
    if m.segments() != 1 {
        return Some(DropReason::MultiSegment);
    }
    if m.pkt_len() > max {
        return Some(DropReason::Oversize);
    }
    if m.len() < MIN_FRAME_LEN && (!pad_short || !pad(m)) {
        return Some(DropReason::Runt);
    }
    None
}

/// Zero-pad a short frame to the Ethernet minimum, as a NIC MAC does on the wire.
pub fn pad(m: &mut Mbuf) -> bool {
    let short = MIN_FRAME_LEN - m.len();
    match m.append(short as u16) {
        Some(tail) => {
            tail.fill(0);
            true
        }
        None => false,
    }
}
