//! Stage 5, admit: the packets go to their egress TC queues in burst order. Consecutive
//! packets with the same egress port and class form a run, admitted by the MMU in prefixes
//! ([`crate::mmu::Mmu::admit_prefix`]: as many as land in one segment without a threshold
//! crossing; a packet that may cross one goes on its own) and moved from their RX burst
//! slots straight onto the TC queue; counters are bumped once per run. A flood, or a frame
//! into a VLAN, ends the run before it and is admitted on its own.

use std::sync::atomic::Ordering;

use crate::classify::Class;
use crate::counters::{DropReason, DropSite};
use crate::dpdk::{MbufBurst, BURST_CAP};
use crate::tcq::Slot;
use crate::wire::MacAddr;

use super::super::egress::RunKey;
use super::drops::count_forwarding_drop;
use super::edit::vlan_edit;
use super::l2::Bridge;
use super::out::Out;
use super::vector::{Step, Vector};
use super::Ctx;

/// No run is formed.
const NO_KEY: u64 = u64::MAX;

/// The run being formed and its packets' slots, lengths and MMU charges.
pub struct Admit {
    out: u16,
    class: Class,
    lossless: bool,
    /// (port, class, lossless) in one word, so that a packet joins the run after one compare.
    key: u64,
    k: usize,
    slot: Box<[u8; BURST_CAP]>,
    lens: Box<[u32; BURST_CAP]>,
    /// Per packet of the run, its MMU charge (`Mmu::charged`): computed once, when it
    /// joins the run, for both the admission and the queue's slot.
    charges: Box<[u32; BURST_CAP]>,
}

#[inline(always)]
fn key(out: u16, class: Class, lossless: bool) -> u64 {
    let c = u32::from_le_bytes([class.tc, class.pg, class.queue, class.priority]);
    u64::from(out) | u64::from(c) << 16 | u64::from(lossless) << 48
}

impl Admit {
    pub fn new() -> Admit {
        Admit {
            out: 0,
            class: Class::default(),
            lossless: false,
            key: NO_KEY,
            k: 0,
            slot: Box::new([0; BURST_CAP]),
            lens: Box::new([0; BURST_CAP]),
            charges: Box::new([0; BURST_CAP]),
        }
    }

    /// Every packet with an egress, in burst order.
    #[inline]
    pub fn run(&mut self, x: Ctx, burst: &mut MbufBurst, v: &Vector, out: &mut Out, bridge: &Bridge) {
        for i in 0..burst.len().min(BURST_CAP) {
            match v.step[i] {
                Step::Out => self.push(x, burst, out, i, v.len[i], (v.out[i], v.class[i], v.lossless[i])),
                Step::Flood => {
                    self.flush(x, burst, out);
                    let Some(m) = burst.take(i) else { continue };
                    let tagged = v.parsed[i].vlan.is_some();
                    bridge.flood(x, out, m, bridge.domain(x, v.vid[i]), (v.vid[i], tagged), v.class[i], v.lossless[i]);
                }
                Step::Vlan => self.bridge_in_vlan(x, burst, out, bridge, v, i),
                Step::Done | Step::L2 | Step::L3 => {}
            }
        }
        self.flush(x, burst, out);
    }

    /// Add the packet in slot `i` to the run (same egress port and class), flushing the
    /// run before if it differs.
    #[inline(always)]
    fn push(
        &mut self,
        x: Ctx,
        burst: &mut MbufBurst,
        out: &mut Out,
        i: usize,
        len: u32,
        (to, class, lossless): (u16, Class, bool),
    ) {
        let key = key(to, class, lossless);
        if self.key != key {
            self.flush(x, burst, out);
            (self.out, self.class, self.lossless, self.key) = (to, class, lossless, key);
        }
        let k = self.k;
        self.slot[k] = i as u8;
        self.lens[k] = len;
        self.charges[k] = x.shared.mmu.charged(len);
        self.k = k + 1;
    }

    /// An untagged frame (routed into VLAN `vid`, or from its VLAN interface) to its
    /// destination's member port from the VLAN's FDB, tagged as that member wants; an
    /// unknown or multicast destination is flooded to every member (as SONiC's ASIC does:
    /// the kernel's ARP entry outlives the FDB entry).
    fn bridge_in_vlan(&mut self, x: Ctx, burst: &mut MbufBurst, out: &mut Out, bridge: &Bridge, v: &Vector, i: usize) {
        let (vid, class, lossless) = (v.vid[i], v.class[i], v.lossless[i]);
        let Some(m) = burst.get_mut(i) else { return };
        let dst = MacAddr(m.data()[..6].try_into().unwrap_or([0; 6]));
        let vlans = &x.shared.vlans;
        let found = if dst.is_multicast() { None } else { x.shared.fdb.lookup(vid, dst.0, x.now) };
        if let Some(p) = found {
            if !vlan_edit(m, vlans.egress(vid, usize::from(p), false, class.tc), false) {
                return count_forwarding_drop(x.c, x.in_port, class.tc, DropReason::Malformed);
            }
            let len = m.len() as u32;
            return self.push(x, burst, out, i, len, (p, class, lossless));
        }
        if lossless && !bridge.flood_lossless() && !dst.is_multicast() {
            return count_forwarding_drop(x.c, x.in_port, class.tc, DropReason::LosslessUnknownUnicast);
        }
        self.flush(x, burst, out);
        let Some(m) = burst.take(i) else { return };
        bridge.flood(x, out, m, (bridge.vlan_domain(x, vid), false), (vid, false), class, lossless);
    }

    /// Admit and enqueue the run formed so far (all of it at once when the MMU allows).
    fn flush(&mut self, x: Ctx, burst: &mut MbufBurst, out: &mut Out) {
        let k = self.k;
        if k == 0 {
            return;
        }
        let (shared, c, in_port) = (x.shared, x.c, x.in_port as u16);
        let (to, class, lossless) = (self.out, self.class, self.lossless);
        // Whatever happens below, the run is empty after it.
        (self.key, self.k) = (NO_KEY, 0);
        let (tc, queue) = (class.tc & 7, class.queue & 7);
        c.ports[x.in_port].tc_rx[tc as usize].add(k as u64);
        let to_u = usize::from(to);
        if !shared.ports[to_u].link_up.load(Ordering::Relaxed) {
            // A dead egress admits nothing: its buffer must not hold an ingress PG OFF.
            let site = DropSite::forwarded(x.in_port, tc, to_u, queue, lossless.then_some(class.pg));
            return c.count_drop(site, DropReason::LinkDown, k as u64);
        }
        let wd_drop = shared.ports[to_u].pfcwd.as_ref().is_some_and(|wd| wd.drop_mask() & (1 << class.priority) != 0);
        let mut j = 0;
        while j < k {
            let prefix = if wd_drop {
                None
            } else {
                shared.mmu.admit_prefix(in_port, class.pg, to, queue, &self.charges[j..k], lossless)
            };
            let Some((seg, cnt)) = prefix else {
                if let Some(m) = burst.take(usize::from(self.slot[j])) {
                    out.admit_one(shared, in_port, to_u, class, lossless, m, x.now, c);
                }
                j += 1;
                continue;
            };
            // One key for the run; per packet its mbuf, length and charge.
            let key =
                RunKey { charge: shared.mmu.bulk_charge(in_port, class.pg, to, queue, 0, seg), rx_tsc: x.now, tc };
            let (slot, lens, charges) = (&self.slot, &self.lens, &self.charges);
            let mut packets = (j..j + cnt).filter_map(|q| {
                burst.take(usize::from(slot[q])).map(|p| Slot { p, len: lens[q], charged: charges[q] })
            });
            match out.local_tx[to_u] {
                // Our own port with room for all: straight onto its TC queue.
                Some(ix) if out.txs[ix].room(queue) >= cnt => out.txs[ix].enqueue_run(key, packets),
                _ => {
                    for s in &mut packets {
                        let q = key.queued(s.p, s.charged);
                        out.enqueue(shared, q, x.now, c);
                    }
                }
            }
            j += cnt;
        }
    }
}
