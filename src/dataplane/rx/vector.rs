//! What the stages know of the packets of one received burst, beside them: the packets
//! stay in the RX burst ([`crate::dpdk::MbufBurst`], slot i), and per slot these arrays
//! say what each stage found and where the packet goes next. Fixed arrays of the burst's
//! capacity, allocated once at start.

use crate::classify::Class;
use crate::dpdk::BURST_CAP;
use crate::wire::Parsed;

/// What happens next to the packet in slot i.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
#[repr(u8)]
pub enum Step {
    /// Gone: dropped (counted), or handed on (MAC control, LLDP, held for nothing).
    #[default]
    Done,
    /// To the router's pass on router interface `rif[i]`.
    L3,
    /// To the bridge: learn, look up, unicast or flood.
    L2,
    /// Admitted to `out[i]` in `class[i]`, in a run with its neighbours.
    Out,
    /// Flooded in its VLAN (`vid[i]`, 0: the whole L2 domain), copies admitted one by one.
    Flood,
    /// Untagged into VLAN `vid[i]` (routed into it, or from its VLAN interface): bridged
    /// there from the VLAN's FDB, flooded to its members if unknown.
    Vlan,
}

/// Per-packet metadata of one burst (the packet's own fields are in its mbuf).
pub struct Vector {
    pub step: [Step; BURST_CAP],
    /// Parsed once, at arrival.
    pub parsed: [Parsed; BURST_CAP],
    /// The packet's VLAN (0: the VLAN-unaware domain).
    pub vid: [u16; BURST_CAP],
    /// The router interface it arrived on (`Step::L3`).
    pub rif: [u16; BURST_CAP],
    pub class: [Class; BURST_CAP],
    pub lossless: [bool; BURST_CAP],
    /// Egress port (`Step::Out`).
    pub out: [u16; BURST_CAP],
}

impl Vector {
    pub fn new() -> Box<Vector> {
        Box::new(Vector {
            step: [Step::Done; BURST_CAP],
            parsed: [Parsed::EMPTY; BURST_CAP],
            vid: [0; BURST_CAP],
            rif: [0; BURST_CAP],
            class: [Class::default(); BURST_CAP],
            lossless: [false; BURST_CAP],
            out: [0; BURST_CAP],
        })
    }
}
