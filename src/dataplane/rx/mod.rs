//! The receive side of a worker: a received burst goes through named stages, each a loop
//! over the whole burst (VPP's nodes over a vector, l3fwd's lookups in bulk). The packets
//! stay in the RX burst; beside them a [`Vector`] of per-packet metadata says what each
//! stage found and where each packet goes next ([`vector::Step`]). A packet's way:
//!
//! 1. [`arrival`]: checks (segments, size, runt) and the parse, once; MAC control (PFC
//!    pause deadlines), LLDP and link-local frames end here.
//! 2. [`ingress`]: VLAN membership, the class (TC, PG, queue, losslessness), and the way:
//!    router interface → 3, else → 4; a kernel representor's frame → 5.
//! 3. [`l3`]: pass 1 (punt, hold, drop, or back to the bridge), one bulk FIB lookup per
//!    family, pass 2 (ECMP, MTU, rewrite in place; egress port or VLAN).
//! 4. [`l2`]: learn, FDB lookup, unicast (egress VLAN tag) or flood.
//! 5. [`admit`]: in burst order, runs to the same egress port and class through the MMU
//!    straight onto the TC queues ([`out`]); floods and frames into a VLAN one by one.
//!
//! The common case (unicast, known destination, one VLAN or none, a cached route) never
//! leaves its stage's loop; the rare ones (MAC control, floods, punts, ICMP errors) are
//! `#[cold]` functions beside their stage.

mod admit;
mod arrival;
pub mod drops;
pub mod edit;
mod ingress;
mod l2;
mod l3;
pub mod mac_control;
pub mod out;
mod vector;

use crate::counters::LcoreCounters;
use crate::dpdk::MbufBurst;

pub use arrival::pad;
pub use ingress::Source;
use vector::Vector;

use super::router::Router;
use super::shared::Shared;
use super::spec::SwitchSpec;
use mac_control::MacControlRx;
use out::Out;

/// What every stage of one burst knows: the switch, this lcore's counters, the port the
/// burst came from and the time it was received.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    pub shared: &'a Shared,
    pub c: &'a LcoreCounters,
    pub in_port: usize,
    pub now: u64,
}

/// The stages and their state.
pub struct Rx {
    /// The received burst; its packets stay in it until admitted or freed.
    pub burst: MbufBurst,
    v: Box<Vector>,
    /// Per port, where its frames come from.
    source: Vec<Source>,
    arrival: arrival::Arrival,
    pub mac: MacControlRx,
    bridge: l2::Bridge,
    admit: admit::Admit,
}

impl Rx {
    pub fn new(spec: &SwitchSpec, tsc_hz: u64) -> Rx {
        let source = spec
            .ports
            .iter()
            .map(|p| match (p.representor_of, p.vlan_interface_of) {
                (Some(out), _) => Source::Kernel(out as u16),
                (None, Some(vid)) if vid != 0 => Source::VlanKernel(vid),
                _ => Source::Port,
            })
            .collect();
        Rx {
            burst: MbufBurst::new(),
            v: Vector::new(),
            source,
            arrival: arrival::Arrival::new(
                spec.ports.iter().map(|p| p.pad_short_frames).collect(),
                spec.ports.iter().map(|p| p.mtu + crate::wire::MAX_L2_HEADER).collect(),
                tsc_hz,
            ),
            mac: MacControlRx::new(spec.ports.iter().map(|p| p.nb_rx > 1).collect(), tsc_hz),
            bridge: l2::Bridge::new(spec),
            admit: admit::Admit::new(),
        }
    }

    /// The burst received on `x.in_port`, stage by stage; then its counters, and every
    /// slot not admitted freed. Never inlined: one call per burst, and callgrind (the
    /// bench's `scripts/route_ir.py`, `scripts/ir_profile.py`) counts the RX side by it.
    #[inline(never)]
    pub fn process_burst(&mut self, x: Ctx, out: &mut Out, router: Option<&mut Router>) {
        let (burst, v) = (&mut self.burst, &mut *self.v);
        let source = self.source[x.in_port];
        let n = burst.len();
        let bytes = self.arrival.run(x, source != Source::Port, burst, v, &mut self.mac);
        let to_router = ingress::run(x, source, burst, v, router.as_deref());
        if let (true, Some(r)) = (to_router, router) {
            l3::run(x, burst, v, r, out);
        }
        self.bridge.run(x, burst, v);
        self.admit.run(x, burst, v, out, &self.bridge);
        let pc = &x.c.ports[x.in_port];
        pc.rx_packets.add(n as u64);
        pc.rx_bytes.add(bytes);
        burst.clear();
    }
}
