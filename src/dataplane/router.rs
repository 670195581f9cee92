//! A worker's router: what it reads to route (the DPDK tables through `RouteLookup`, the
//! next hops, the ECMP seed, its QSBR reader), its punt limiter, and the per-burst scratch
//! of the two passes docs/routing.md describes: pass 1 (the worker's loop) holds the
//! packets sent to a router MAC here; once per burst their destinations are looked up in
//! bulk (one `rte_fib_lookup_bulk` per family: a lookup of one costs several times more);
//! pass 2 decides each one with `route::forward`. Nothing here allocates after start.

use std::sync::Arc;

use crate::classify::Class;
use crate::dpdk::fib::RouteLookup;
use crate::dpdk::{Mbuf, MbufBurst, QsbrReader, BURST_CAP};
use crate::route::{self, Decision, Ingress, NextHopTables, PuntLimiter, RouterPort};
use crate::wire::{IpPair, L3Header, MacAddr, Parsed};

// The held packets' slots are bytes.
const _: () = assert!(BURST_CAP.is_power_of_two() && BURST_CAP <= 256);

/// No VLAN interface on this VID.
pub const NO_RIF: u16 = u16::MAX;

/// What a held packet was classified as in pass 1.
#[derive(Debug, Clone, Copy, Default)]
pub struct Held {
    pub l3_offset: u16,
    pub class: Class,
    pub lossless: bool,
    pub len: u32,
    /// The router interface it arrived on (the port, or its VLAN interface's representor).
    pub rif: u16,
}

/// Per worker (built at start, moved to the lcore).
pub struct Router {
    pub lookup: RouteLookup,
    pub tables: Arc<NextHopTables>,
    pub seed: u32,
    /// Reports a quiescent state once per loop; offline while the worker naps.
    pub reader: QsbrReader,
    /// Per port: a router interface, and its MAC (the router MAC there).
    pub ports: Vec<RouterPort>,
    /// Per port: the IP MTU a routed packet must fit.
    pub ip_mtu: Vec<u16>,
    /// Per switch port: the port index of its kernel representor (a VLAN interface's
    /// representor is its own).
    pub rep_of: Vec<Option<u16>>,
    /// Per VID: the port index of its VLAN interface's representor ([`NO_RIF`]: none).
    pub vlan_rif: Box<[u16]>,
    /// Per port: the VID whose VLAN interface's representor it is (0: none).
    pub vlan_of: Vec<u16>,
    pub limiter: PuntLimiter,
    // Pass 1's scratch, fixed arrays indexed by the held count: a header is parsed once
    // into its slot (no copy between the passes), and nothing checks a capacity.
    held: MbufBurst,
    /// The vector path's held packets stay in the RX burst: their slots there.
    at: Box<[u8; BURST_CAP]>,
    nat: usize,
    l3: Box<[L3Header; BURST_CAP]>,
    meta: Box<[Held; BURST_CAP]>,
    dst4: Box<[u32; BURST_CAP]>,
    at4: Box<[u16; BURST_CAP]>,
    dst6: Box<[[u8; 16]; BURST_CAP]>,
    at6: Box<[u16; BURST_CAP]>,
    out: Box<[u32; BURST_CAP]>,
    vals: Box<[u32; BURST_CAP]>,
}

impl Router {
    /// `ports`, `ip_mtu`, `rep_of`: per port of the switch (representors included).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        lookup: RouteLookup,
        tables: Arc<NextHopTables>,
        seed: u32,
        reader: QsbrReader,
        ports: Vec<RouterPort>,
        ip_mtu: Vec<u16>,
        rep_of: Vec<Option<u16>>,
        vlan_of: &[u16],
        limiter: PuntLimiter,
    ) -> Router {
        let mut vlan_rif = vec![NO_RIF; 4096].into_boxed_slice();
        for (p, &vid) in vlan_of.iter().enumerate() {
            if vid != 0 {
                vlan_rif[usize::from(vid & 0xfff)] = p as u16;
            }
        }
        Router {
            lookup,
            tables,
            seed,
            reader,
            ports,
            ip_mtu,
            rep_of,
            vlan_rif,
            vlan_of: vlan_of.to_vec(),
            limiter,
            held: MbufBurst::new(),
            at: Box::new([0; BURST_CAP]),
            nat: 0,
            l3: Box::new([L3Header::EMPTY; BURST_CAP]),
            meta: Box::new([Held::default(); BURST_CAP]),
            dst4: Box::new([0; BURST_CAP]),
            at4: Box::new([0; BURST_CAP]),
            dst6: Box::new([[0; 16]; BURST_CAP]),
            at6: Box::new([0; BURST_CAP]),
            out: Box::new([0; BURST_CAP]),
            vals: Box::new([0; BURST_CAP]),
        }
    }

    /// Is `port` a router interface?
    #[inline(always)]
    pub fn routes_on(&self, port: usize) -> bool {
        self.ports.get(port).is_some_and(|p| p.routed)
    }

    /// The router interface a frame received in VLAN `vid` routes on: its VLAN
    /// interface's representor port.
    #[inline(always)]
    pub fn vlan_rif(&self, vid: u16) -> Option<usize> {
        match self.vlan_rif.get(usize::from(vid)) {
            Some(&p) if p != NO_RIF => Some(usize::from(p)),
            _ => None,
        }
    }

    /// The VID of the VLAN interface whose representor is `port` (None: a port).
    #[inline(always)]
    pub fn vlan_of(&self, port: u16) -> Option<u16> {
        self.vlan_of.get(usize::from(port)).copied().filter(|&v| v != 0)
    }

    /// The MAC a routed packet leaving `port` carries as source.
    #[inline(always)]
    pub fn mac(&self, port: u16) -> MacAddr {
        self.ports.get(usize::from(port)).map_or(MacAddr([0; 6]), |p| p.mac)
    }

    /// Pass 1, step 1 ([`route::ingress`]) of a frame that parsed as `p` on router
    /// interface `rif`: its L3 header is parsed into the next held packet's slot, kept
    /// only if the packet is then [`Router::hold`]-ed.
    #[inline(always)]
    pub fn ingress(&mut self, rif: usize, p: &Parsed, frame: &[u8]) -> Ingress {
        let slot = &mut self.l3[self.held().min(BURST_CAP - 1)];
        route::ingress(p, frame, &self.ports[rif], slot)
    }

    /// The L3 header [`Router::ingress`] parsed last (meaningful for IP frames).
    #[inline(always)]
    pub fn ingress_l3(&self) -> &L3Header {
        &self.l3[self.held().min(BURST_CAP - 1)]
    }

    /// The L3 header of the `k`-th held packet.
    #[inline(always)]
    pub fn held_l3(&self, k: usize) -> &L3Header {
        &self.l3[k.min(BURST_CAP - 1)]
    }

    /// Pass 1: keep a packet, whose header [`Router::ingress`] parsed, for the lookup. A
    /// burst holds at most `BURST_CAP`, as many as one receive burst brings.
    #[inline]
    pub fn hold(&mut self, m: Mbuf, h: Held) {
        let k = self.held.len();
        if self.held.push(m).is_ok() {
            self.meta[k] = h;
        }
    }

    /// The vector path's [`Router::hold`]: the packet in slot `i` of the RX burst.
    #[inline]
    pub fn hold_at(&mut self, i: usize, h: Held) {
        let k = self.held();
        if k < BURST_CAP {
            self.at[k] = i as u8;
            self.meta[k] = h;
            self.nat += 1;
        }
    }

    /// Packets held in this burst.
    #[inline(always)]
    pub fn held(&self) -> usize {
        self.held.len() + self.nat
    }

    /// Look every held destination up, a family at a time, in bulk (straight into the
    /// per-packet values when the burst is of one family, as it mostly is).
    #[inline]
    pub fn lookup_held(&mut self) {
        let n = self.held();
        let (mut n4, mut n6) = (0, 0);
        for (i, l3) in self.l3[..n].iter().enumerate() {
            match &l3.addrs {
                IpPair::V4 { dst, .. } => {
                    self.dst4[n4] = u32::from_be_bytes(*dst);
                    self.at4[n4] = i as u16;
                    n4 += 1;
                }
                IpPair::V6 { dst, .. } => {
                    self.dst6[n6] = *dst;
                    self.at6[n6] = i as u16;
                    n6 += 1;
                }
            }
        }
        if n4 == n {
            self.lookup.lookup4_bulk(&self.dst4[..n], &mut self.vals[..n]);
            return;
        }
        if n6 == n {
            self.lookup.lookup6_bulk(&self.dst6[..n], &mut self.vals[..n]);
            return;
        }
        self.lookup.lookup4_bulk(&self.dst4[..n4], &mut self.out[..n4]);
        for (k, &i) in self.at4[..n4].iter().enumerate() {
            self.vals[usize::from(i)] = self.out[k];
        }
        self.lookup.lookup6_bulk(&self.dst6[..n6], &mut self.out[..n6]);
        for (k, &i) in self.at6[..n6].iter().enumerate() {
            self.vals[usize::from(i)] = self.out[k];
        }
    }

    /// Pass 2: the `k`-th held packet, what pass 1 knew of it, and its decision (`down`:
    /// the ports whose link is down, bit p).
    #[inline]
    pub fn decide_held(&mut self, k: usize, down: u64) -> Option<(Mbuf, Held, Decision)> {
        let m = self.held.take(k)?;
        let h = self.meta[k];
        let v4_sources = !self.ports.get(usize::from(h.rif)).is_some_and(|p| p.accept_martian_v4);
        let d = route::forward(&self.l3[k], self.vals[k], &self.tables, self.seed, &self.ip_mtu, v4_sources, down);
        Some((m, h, d))
    }

    /// The vector path's [`Router::decide_held`]: the RX burst slot of the `k`-th held
    /// packet, what pass 1 knew of it, and its decision.
    #[inline]
    pub fn decide_at(&self, k: usize, down: u64) -> (usize, Held, Decision) {
        let h = self.meta[k];
        let v4_sources = !self.ports.get(usize::from(h.rif)).is_some_and(|p| p.accept_martian_v4);
        let d = route::forward(&self.l3[k], self.vals[k], &self.tables, self.seed, &self.ip_mtu, v4_sources, down);
        // A slot of a burst (the mask tells the compiler so: no bounds check downstream).
        (usize::from(self.at[k]) & (BURST_CAP - 1), h, d)
    }

    /// End of pass 2.
    #[inline]
    pub fn clear_held(&mut self) {
        self.held.clear();
        self.nat = 0;
    }
}
