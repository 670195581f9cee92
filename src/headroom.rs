//! Per-PG headroom η: the bytes that can still arrive after this switch decides to
//! PAUSE a lossless priority, so that nothing is dropped.
//!
//! ```text
//! η = 2·(C·D_prop + L_MTU) + peer_response + sw_response        (all terms in bytes)
//!   2·C·D_prop    our PFC frame travels to the peer, its last data bits travel back;
//!                 D_prop = cable / v, v = 0.66 c
//!   L_MTU (ours)  the PFC frame waits behind a maximum frame already on our wire
//!   L_MTU (peer)  the peer finishes the frame it is sending when it obeys
//!   peer_response IEEE 802.3 Annex 31B.3.7 reaction time of the peer, in quanta of
//!                 512 bit-times (10G 67, 25G 80, 40G 118, 50G 147, 100G 394,
//!                 200G 453, 400G 905)
//!   sw_response   this switch's own reaction delay (MMU edge → control lcore → PFC
//!                 frame in the NIC TX ring), converted to bytes at C. Counted once: the
//!                 peer's reaction is the 31B term. If the peer is also a software
//!                 switch, add its receive-side reaction delay to `sw_response_ns`.
//!                 Configured by `[switch] sw_response` (see DEFAULT_SW_RESPONSE_NS).
//!   tx_inflight   data already in the device's TX ring ahead of our PFC frame: the
//!                 port's `tx_inflight_limit`, or 0 when PFC frames have a TX queue of
//!                 their own (`control_tx_queue`) or the device has no ring to wait in
//!                 (nominal vdevs). A NIC ring of 1024 × 9 KB at 100G is ~750 µs —
//!                 ~9 MB — which is why the limit exists (docs/design.md, "TX ring").
//! ```
//! Each term is rounded up to whole bytes separately; η is their sum. The MTU terms are
//! the largest frame on the wire: the port's IP MTU plus Ethernet, 802.1Q and FCS
//! ([`crate::wire::L2_OVERHEAD`], 22 B), derived once by [`HeadroomInputs::new`] so that
//! `pfcswitch headroom --mtu` and the switch's plan agree.

use serde_json::{json, Map, Value};

/// Signal velocity in fibre/copper used for D_prop: 0.66 c, in m/s (c = 299 792 458 m/s).
pub const PROPAGATION_V_MPS: u64 = 197_863_022;

/// This switch's reaction delay unless `[switch] sw_response` says otherwise.
///
/// Measured, not guessed: the switch reports `pfc_reaction` (Xoff crossing in a worker →
/// the PAUSE frame handed to `tx_burst`, TSC) as p50/p99 in its stats JSON; a
/// measurement on a quiet machine gave p50 2.8 µs, p99 3.4 µs (other runs recorded in
/// docs/benchmarks.md reach a p99 of 6.7 µs). 10 µs keeps a margin over that p99 for a
/// control lcore that shares its CPU or is briefly preempted; a busier or slower host
/// should measure its own p99 and set `sw_response` above it.
pub const DEFAULT_SW_RESPONSE_NS: u64 = 10_000;

/// Bits in one pause quantum.
pub const BITS_PER_QUANTUM: u64 = 512;

/// IEEE 802.3 Annex 31B.3.7 maximum PAUSE reaction time, (speed bps, quanta).
pub const PEER_RESPONSE_QUANTA: [(u64, u64); 7] = [
    (10_000_000_000, 67),
    (25_000_000_000, 80),
    (40_000_000_000, 118),
    (50_000_000_000, 147),
    (100_000_000_000, 394),
    (200_000_000_000, 453),
    (400_000_000_000, 905),
];

/// What η depends on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeadroomInputs {
    /// Link speed C, bits per second.
    pub speed_bps: u64,
    /// Cable length, metres.
    pub cable_m: f64,
    /// Largest frame on the wire, bytes (MTU + 22: see [`max_frame`]).
    pub frame: u32,
    /// This switch's reaction delay, nanoseconds.
    pub sw_response_ns: u64,
    /// Bytes that can be in the TX ring ahead of a PFC frame.
    pub tx_inflight_bytes: u64,
}

impl HeadroomInputs {
    /// Inputs for a port of IP MTU `mtu`, with [`DEFAULT_SW_RESPONSE_NS`].
    pub fn new(speed_bps: u64, cable_m: f64, mtu: u32) -> Self {
        HeadroomInputs {
            speed_bps,
            cable_m,
            frame: max_frame(mtu),
            sw_response_ns: DEFAULT_SW_RESPONSE_NS,
            tx_inflight_bytes: 0,
        }
    }
}

/// The largest frame a port of IP MTU `mtu` puts on the wire: the one place MTU becomes
/// a frame size for headroom.
pub const fn max_frame(mtu: u32) -> u32 {
    mtu + crate::wire::L2_OVERHEAD
}

/// η term by term.
#[derive(Debug, Clone, PartialEq)]
pub struct Breakdown {
    /// What it was computed from.
    pub inputs: HeadroomInputs,
    /// (name, bytes), in formula order.
    pub terms: Vec<(&'static str, u64)>,
    /// Sum of the terms.
    pub headroom_bytes: u64,
}

/// Annex 31B.3.7 quanta for a speed: the listed value of the next listed speed at or
/// above it (so 10G's for anything slower); above 400G, 400G's value scaled with speed
/// (the reaction *time* is assumed constant), rounded up.
pub fn peer_response_quanta(speed_bps: u64) -> u64 {
    for (s, q) in PEER_RESPONSE_QUANTA {
        if speed_bps <= s {
            return q;
        }
    }
    let (s, q) = PEER_RESPONSE_QUANTA[PEER_RESPONSE_QUANTA.len() - 1];
    let num = u128::from(q) * u128::from(speed_bps);
    u64::try_from(num.div_ceil(u128::from(s))).unwrap_or(u64::MAX)
}

/// Round-trip propagation in bytes: ceil(2·C·L / (8·v)).
fn propagation_bytes(speed_bps: u64, cable_m: f64) -> u64 {
    let cable = if cable_m.is_finite() && cable_m > 0.0 { cable_m } else { 0.0 };
    let b = 2.0 * speed_bps as f64 * cable / (8.0 * PROPAGATION_V_MPS as f64);
    b.ceil() as u64
}

/// Computes η and its terms.
pub fn compute(i: &HeadroomInputs) -> Breakdown {
    let mtu = u64::from(i.frame);
    let peer = peer_response_quanta(i.speed_bps).saturating_mul(BITS_PER_QUANTUM).div_ceil(8);
    let sw_bits = u128::from(i.speed_bps) * u128::from(i.sw_response_ns);
    let sw = u64::try_from(sw_bits.div_ceil(8 * 1_000_000_000)).unwrap_or(u64::MAX);
    let terms = vec![
        ("propagation", propagation_bytes(i.speed_bps, i.cable_m)),
        ("mtu_local", mtu),
        ("mtu_peer", mtu),
        ("peer_response", peer),
        ("sw_response", sw),
        ("tx_inflight", i.tx_inflight_bytes),
    ];
    let headroom_bytes = terms.iter().fold(0u64, |a, (_, b)| a.saturating_add(*b));
    Breakdown { inputs: *i, terms, headroom_bytes }
}

impl Breakdown {
    /// `{"speed_bps", "cable_m", "max_frame", "sw_response_ns", "v_mps", "peer_response_quanta",
    /// "terms": {name: bytes}, "headroom_bytes"}`.
    pub fn to_json(&self) -> Value {
        let mut terms = Map::new();
        for (n, b) in &self.terms {
            terms.insert((*n).to_string(), json!(b));
        }
        json!({
            "speed_bps": self.inputs.speed_bps,
            "cable_m": self.inputs.cable_m,
            "max_frame": self.inputs.frame,
            "sw_response_ns": self.inputs.sw_response_ns,
            "tx_inflight_bytes": self.inputs.tx_inflight_bytes,
            "v_mps": PROPAGATION_V_MPS,
            "peer_response_quanta": peer_response_quanta(self.inputs.speed_bps),
            "terms": terms,
            "headroom_bytes": self.headroom_bytes,
        })
    }

    /// One line per term with what it stands for, then the total.
    pub fn render_text(&self) -> String {
        let i = &self.inputs;
        let speed = crate::units::format_speed(i.speed_bps);
        let mut out = format!(
            "headroom for {speed}, {} m cable, largest frame {} B (v = {PROPAGATION_V_MPS} m/s):\n",
            i.cable_m, i.frame
        );
        for (name, bytes) in &self.terms {
            let why = match *name {
                "propagation" => format!("2 x {} m of cable at {speed} (PFC out, data back)", i.cable_m),
                "mtu_local" => "a max frame on our wire delays the PFC frame".to_string(),
                "mtu_peer" => "the peer finishes the frame it is sending".to_string(),
                "peer_response" => format!(
                    "peer reaction, 802.3 Annex 31B: {} quanta x 512 bit-times",
                    peer_response_quanta(i.speed_bps)
                ),
                "sw_response" => {
                    format!("our own reaction delay, {} ns at {speed}", i.sw_response_ns)
                }
                "tx_inflight" if *bytes == 0 => "no data ring ahead of our PFC frame".to_string(),
                "tx_inflight" => "data in the TX ring ahead of our PFC frame (tx_inflight_limit)".to_string(),
                _ => String::new(),
            };
            out.push_str(&format!("  {name:<14} {bytes:>10} B  {why}\n"));
        }
        out.push_str(&format!("  {:<14} {:>10} B\n", "total", self.headroom_bytes));
        out
    }
}

/// A warning naming both numbers when an explicitly configured headroom is below the
/// calculated one, `None` otherwise.
pub fn check_explicit(explicit: u64, calculated: u64) -> Option<String> {
    (explicit < calculated).then(|| {
        format!(
            "configured headroom {explicit} B is below the calculated {calculated} B: \
             lossless traffic may be dropped after PAUSE"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quanta_table() {
        assert_eq!(peer_response_quanta(1_000_000_000), 67);
        assert_eq!(peer_response_quanta(10_000_000_000), 67);
        assert_eq!(peer_response_quanta(10_000_000_001), 80);
        assert_eq!(peer_response_quanta(100_000_000_000), 394);
        assert_eq!(peer_response_quanta(800_000_000_000), 1810);
    }

    #[test]
    fn text_and_json_and_warning() {
        let b = compute(&HeadroomInputs::new(100_000_000_000, 300.0, 9216));
        let t = b.render_text();
        assert!(t.contains("peer_response") && t.contains("total"), "{t}");
        let j = b.to_json();
        assert_eq!(j["headroom_bytes"], b.headroom_bytes);
        assert_eq!(j["terms"]["peer_response"], 394 * 64);
        assert!(check_explicit(b.headroom_bytes, b.headroom_bytes).is_none());
        let w = check_explicit(1000, b.headroom_bytes).unwrap();
        assert!(w.contains("1000") && w.contains(&b.headroom_bytes.to_string()));
    }
}
