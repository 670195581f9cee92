//! MAC Control frames: 802.1Qbb Priority Flow Control and 802.3x PAUSE (IEEE 802.3
//! Annex 31B/31D). Layout after the 14-byte Ethernet header (EtherType 0x8808):
//!
//! ```text
//! PFC:   opcode 0x0101 | class-enable vector (2) | time[0..8] (8 x 2) | zero pad
//! PAUSE: opcode 0x0001 | pause_time (2)                               | zero pad
//! ```
//! Frames are 60 bytes without FCS (the NIC appends it). Times are in quanta of
//! 512 bit-times at the link speed.

use super::ethernet::{be16, put_be16, ETHERTYPE_MAC_CONTROL, HEADER_LEN};
use super::{MacAddr, MIN_FRAME_LEN};

/// 802.3x PAUSE opcode.
pub const OPCODE_PAUSE: u16 = 0x0001;
/// 802.1Qbb PFC opcode.
pub const OPCODE_PFC: u16 = 0x0101;

const OFF_OPCODE: usize = HEADER_LEN; // 14
const OFF_VECTOR: usize = HEADER_LEN + 2; // 16 (PFC) / pause_time (PAUSE)
const OFF_TIMES: usize = HEADER_LEN + 4; // 18

/// A decoded MAC Control frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MacControl {
    /// 802.1Qbb: bit n of `class_enable` makes `quanta[n]` valid for priority n.
    /// `quanta[n]` of a disabled class is carried as received (receivers ignore it).
    Pfc { class_enable: u8, quanta: [u16; 8] },
    /// 802.3x: pause all transmission for `quanta` (0 = resume).
    Pause { quanta: u16 },
}

/// Why a frame is not an acceptable MAC Control frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum MacControlError {
    /// Shorter than the 60-byte minimum Ethernet frame (without FCS).
    #[error("MAC control frame too short: {len} bytes, minimum 60")]
    TooShort { len: usize },
    /// EtherType at offset 12 is not 0x8808 (tagged MAC control frames are invalid).
    #[error("not a MAC control frame: EtherType {ethertype:#06x}")]
    NotMacControl { ethertype: u16 },
    /// Neither PFC (0x0101) nor PAUSE (0x0001).
    #[error("unknown MAC control opcode {0:#06x}")]
    UnknownOpcode(u16),
}

impl MacControl {
    /// Decodes a whole Ethernet frame (header included, FCS optional/ignored).
    ///
    /// Accepts any destination address (802.3 Annex 31B allows PAUSE to the station's
    /// own unicast address too) and ignores the source. Requires >= 60 bytes: the MAC
    /// discards runts, so a shorter MAC Control frame is malformed.
    #[inline]
    pub fn parse(frame: &[u8]) -> Result<MacControl, MacControlError> {
        if frame.len() < MIN_FRAME_LEN {
            return Err(MacControlError::TooShort { len: frame.len() });
        }
        let et = be16(frame, 12).unwrap_or(0);
        if et != ETHERTYPE_MAC_CONTROL {
            return Err(MacControlError::NotMacControl { ethertype: et });
        }
        let view = PfcFrame::new_unchecked(frame);
        match view.opcode() {
            OPCODE_PFC => {
                // IEEE 802.3 Annex 31D (the PFC frame 802.1Qbb clause 36 uses): the upper
                // octet of priority_enable_vector is reserved, transmitted as zero and
                // ignored on receipt; the valid bits e[0..7] are obeyed.
                let v = view.class_enable_vector() & 0x00ff;
                let mut quanta = [0u16; 8];
                for (i, q) in quanta.iter_mut().enumerate() {
                    *q = view.time(i);
                }
                Ok(MacControl::Pfc { class_enable: v as u8, quanta })
            }
            OPCODE_PAUSE => Ok(MacControl::Pause { quanta: view.pause_time() }),
            op => Err(MacControlError::UnknownOpcode(op)),
        }
    }

    /// Encodes a complete minimum-size frame (60 bytes, no FCS): dst 01-80-C2-00-00-01,
    /// the given source, EtherType 0x8808, opcode, fields, zero padding.
    #[inline]
    pub fn emit(&self, src: MacAddr, out: &mut [u8; MIN_FRAME_LEN]) {
        out.fill(0);
        let mut f = PfcFrame::new_unchecked(&mut out[..]);
        f.set_header(src);
        match *self {
            MacControl::Pfc { class_enable, quanta } => {
                f.set_opcode(OPCODE_PFC);
                f.set_class_enable_vector(u16::from(class_enable));
                for (i, q) in quanta.iter().enumerate() {
                    f.set_time(i, *q);
                }
            }
            MacControl::Pause { quanta } => {
                f.set_opcode(OPCODE_PAUSE);
                f.set_pause_time(quanta);
            }
        }
    }

    /// Convenience: the encoded frame as an array.
    pub fn to_bytes(&self, src: MacAddr) -> [u8; MIN_FRAME_LEN] {
        let mut out = [0u8; MIN_FRAME_LEN];
        self.emit(src, &mut out);
        out
    }

    /// A PFC frame pausing every priority in `class_enable` for `quanta` (other times 0).
    pub fn pfc_pause(class_enable: u8, quanta: u16) -> Self {
        let mut q = [0u16; 8];
        for (i, slot) in q.iter_mut().enumerate() {
            if class_enable & (1 << i) != 0 {
                *slot = quanta;
            }
        }
        MacControl::Pfc { class_enable, quanta: q }
    }

    /// A PFC frame resuming (time 0) every priority in `class_enable`.
    pub fn pfc_resume(class_enable: u8) -> Self {
        MacControl::Pfc { class_enable, quanta: [0; 8] }
    }

    /// True for an 802.1Qbb frame.
    pub fn is_pfc(&self) -> bool {
        matches!(self, MacControl::Pfc { .. })
    }
}

/// A zero-copy view of a MAC Control frame (header included). Works for both opcodes:
/// for PAUSE, `pause_time` is the 2 bytes where PFC has its vector.
#[derive(Debug, Clone)]
pub struct PfcFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> PfcFrame<T> {
    /// Wraps without checks; accessors return 0 for missing bytes.
    pub const fn new_unchecked(buffer: T) -> Self {
        PfcFrame { buffer }
    }

    /// Wraps after checking the 60-byte minimum and EtherType 0x8808.
    pub fn new_checked(buffer: T) -> Result<Self, MacControlError> {
        let b = buffer.as_ref();
        if b.len() < MIN_FRAME_LEN {
            return Err(MacControlError::TooShort { len: b.len() });
        }
        let et = be16(b, 12).unwrap_or(0);
        if et != ETHERTYPE_MAC_CONTROL {
            return Err(MacControlError::NotMacControl { ethertype: et });
        }
        Ok(PfcFrame { buffer })
    }

    /// Gives back the buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// MAC Control opcode.
    pub fn opcode(&self) -> u16 {
        be16(self.buffer.as_ref(), OFF_OPCODE).unwrap_or(0)
    }

    /// PFC class-enable vector (all 16 bits, reserved high byte included).
    pub fn class_enable_vector(&self) -> u16 {
        be16(self.buffer.as_ref(), OFF_VECTOR).unwrap_or(0)
    }

    /// PFC time for priority `prio` (0 if `prio >= 8`).
    pub fn time(&self, prio: usize) -> u16 {
        if prio >= 8 {
            return 0;
        }
        be16(self.buffer.as_ref(), OFF_TIMES + 2 * prio).unwrap_or(0)
    }

    /// 802.3x pause_time.
    pub fn pause_time(&self) -> u16 {
        be16(self.buffer.as_ref(), OFF_VECTOR).unwrap_or(0)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> PfcFrame<T> {
    /// Writes dst 01-80-C2-00-00-01, `src` and EtherType 0x8808.
    pub fn set_header(&mut self, src: MacAddr) {
        let b = self.buffer.as_mut();
        if let Some(d) = b.get_mut(0..6) {
            d.copy_from_slice(&MacAddr::PFC_DST.0);
        }
        if let Some(d) = b.get_mut(6..12) {
            d.copy_from_slice(&src.0);
        }
        put_be16(b, 12, ETHERTYPE_MAC_CONTROL);
    }

    /// Sets the opcode.
    pub fn set_opcode(&mut self, op: u16) {
        put_be16(self.buffer.as_mut(), OFF_OPCODE, op);
    }

    /// Sets the class-enable vector.
    pub fn set_class_enable_vector(&mut self, v: u16) {
        put_be16(self.buffer.as_mut(), OFF_VECTOR, v);
    }

    /// Sets the time of priority `prio` (ignored if `prio >= 8`).
    pub fn set_time(&mut self, prio: usize, quanta: u16) {
        if prio < 8 {
            put_be16(self.buffer.as_mut(), OFF_TIMES + 2 * prio, quanta);
        }
    }

    /// Sets the 802.3x pause_time.
    pub fn set_pause_time(&mut self, quanta: u16) {
        put_be16(self.buffer.as_mut(), OFF_VECTOR, quanta);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pfc_round_trip_and_helpers() {
        let src = MacAddr([2, 0, 0, 0, 0, 9]);
        let m = MacControl::pfc_pause(0b0001_1000, 0xffff);
        assert_eq!(m, MacControl::Pfc { class_enable: 0x18, quanta: [0, 0, 0, 0xffff, 0xffff, 0, 0, 0] });
        let b = m.to_bytes(src);
        assert_eq!(MacControl::parse(&b), Ok(m));
        let r = MacControl::pfc_resume(0x18);
        assert_eq!(MacControl::parse(&r.to_bytes(src)), Ok(r));
        let p = MacControl::Pause { quanta: 7 };
        assert_eq!(MacControl::parse(&p.to_bytes(src)), Ok(p));
    }

    #[test]
    fn view_is_total() {
        let v = PfcFrame::new_unchecked(&[0u8; 3][..]);
        assert_eq!((v.opcode(), v.class_enable_vector(), v.time(7), v.time(99)), (0, 0, 0, 0));
    }
}
