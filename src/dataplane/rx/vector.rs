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
    /// The frame's length, kept up to date by every stage that edits it.
    pub len: [u32; BURST_CAP],
    /// Destination and source MAC as 48-bit words (little-endian loads of the frame's
    /// first bytes): the bridge's keys for "same as the previous packet".
    pub dst: [u64; BURST_CAP],
    pub src: [u64; BURST_CAP],
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
            len: [0; BURST_CAP],
            dst: [0; BURST_CAP],
            src: [0; BURST_CAP],
        })
    }
}

/// The 48-bit word of the MAC at `at` in `frame` (0 if the frame is shorter).
#[inline(always)]
pub fn mac_word(frame: &[u8], at: usize) -> u64 {
    match frame.get(at..at + 8) {
        Some(b) => u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) & 0xffff_ffff_ffff,
        None => 0,
    }
}
