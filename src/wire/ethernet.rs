//! Ethernet II header and the 802.1Q tag, as zero-copy views over a byte buffer
//! (smoltcp style: `new_checked` validates the length once, accessors never panic).

use super::{MacAddr, WireError};

/// EtherType of an 802.1Q C-tag.
pub const ETHERTYPE_VLAN: u16 = 0x8100;
/// EtherType of an 802.1ad S-tag (QinQ outer tag).
pub const ETHERTYPE_QINQ: u16 = 0x88a8;
/// IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// IPv6.
pub const ETHERTYPE_IPV6: u16 = 0x86DD;
/// MAC Control (802.3x PAUSE, 802.1Qbb PFC).
pub const ETHERTYPE_MAC_CONTROL: u16 = 0x8808;

/// Ethernet II header length (dst, src, EtherType).
pub const HEADER_LEN: usize = 14;
/// One 802.1Q tag (TPID + TCI).
pub const VLAN_TAG_LEN: usize = 4;

/// Big-endian u16 at `off`, `None` if out of range. Every decoder reads through this so
/// attacker-controlled lengths cannot cause a panic.
#[inline(always)]
pub(crate) fn be16(b: &[u8], off: usize) -> Option<u16> {
    match b.get(off..off.checked_add(2)?) {
        Some(&[hi, lo]) => Some(u16::from_be_bytes([hi, lo])),
        _ => None,
    }
}

/// Writes a big-endian u16 at `off`; silently ignores out-of-range writes (views are
/// length-checked on construction, so this only matters for `new_unchecked`).
#[inline(always)]
pub(crate) fn put_be16(b: &mut [u8], off: usize, v: u16) {
    if let Some(dst) = off.checked_add(2).and_then(|end| b.get_mut(off..end)) {
        dst.copy_from_slice(&v.to_be_bytes());
    }
}

/// The 802.1Q Tag Control Information.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct VlanTag {
    /// Priority Code Point (802.1p priority), 0..=7.
    pub pcp: u8,
    /// Drop Eligible Indicator.
    pub dei: bool,
    /// VLAN identifier, 0..=4095 (0 = priority-tagged frame).
    pub vid: u16,
}

impl VlanTag {
    /// Decodes a TCI.
    #[inline]
    pub const fn from_tci(tci: u16) -> VlanTag {
        VlanTag { pcp: (tci >> 13) as u8, dei: tci & 0x1000 != 0, vid: tci & 0x0fff }
    }

    /// Encodes the TCI (out-of-range fields are masked).
    #[inline]
    pub const fn tci(&self) -> u16 {
        ((self.pcp as u16 & 7) << 13) | ((self.dei as u16) << 12) | (self.vid & 0x0fff)
    }
}

/// A read (and, for `AsMut` buffers, write) view of an Ethernet II frame.
#[derive(Debug, Clone)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Wraps without checking; accessors return zero/empty for missing bytes.
    pub const fn new_unchecked(buffer: T) -> Self {
        EthernetFrame { buffer }
    }

    /// Wraps after checking that the 14-byte header is present.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let len = buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(WireError::TooShort { need: HEADER_LEN, have: len });
        }
        Ok(EthernetFrame { buffer })
    }

    /// Gives back the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Destination address.
    pub fn dst_addr(&self) -> MacAddr {
        MacAddr::from_bytes(self.buffer.as_ref()).unwrap_or_default()
    }

    /// Source address.
    pub fn src_addr(&self) -> MacAddr {
        self.buffer.as_ref().get(6..).and_then(MacAddr::from_bytes).unwrap_or_default()
    }

    /// The EtherType (or TPID of the first tag) at offset 12.
    pub fn ethertype(&self) -> u16 {
        be16(self.buffer.as_ref(), 12).unwrap_or(0)
    }

    /// The first tag, if the frame carries one (0x8100 or 0x88a8) and it is complete.
    pub fn vlan_tag(&self) -> Option<VlanTag> {
        match self.ethertype() {
            ETHERTYPE_VLAN | ETHERTYPE_QINQ => be16(self.buffer.as_ref(), 14).map(VlanTag::from_tci),
            _ => None,
        }
    }

    /// Everything after the 14-byte header (tags included).
    pub fn payload(&self) -> &[u8] {
        self.buffer.as_ref().get(HEADER_LEN..).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, a: MacAddr) {
        if let Some(d) = self.buffer.as_mut().get_mut(0..6) {
            d.copy_from_slice(&a.0);
        }
    }

    /// Sets the source address.
    pub fn set_src_addr(&mut self, a: MacAddr) {
        if let Some(d) = self.buffer.as_mut().get_mut(6..12) {
            d.copy_from_slice(&a.0);
        }
    }

    /// Sets the EtherType at offset 12.
    pub fn set_ethertype(&mut self, t: u16) {
        put_be16(self.buffer.as_mut(), 12, t);
    }

    /// Mutable payload after the 14-byte header.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut().get_mut(HEADER_LEN..).unwrap_or(&mut [])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tci_round_trip() {
        for tci in [0u16, 0x6064, 0xffff, 0x1001, 0xe00a] {
            assert_eq!(VlanTag::from_tci(tci).tci(), tci);
        }
        assert_eq!(VlanTag::from_tci(0x6064), VlanTag { pcp: 3, dei: false, vid: 100 });
    }

    #[test]
    fn view_accessors_and_setters() {
        let mut buf = [0u8; 20];
        let mut f = EthernetFrame::new_checked(&mut buf[..]).unwrap();
        f.set_dst_addr(MacAddr::BROADCAST);
        f.set_src_addr(MacAddr([2, 0, 0, 0, 0, 1]));
        f.set_ethertype(ETHERTYPE_VLAN);
        f.payload_mut()[0] = 0x60;
        f.payload_mut()[1] = 0x64;
        assert_eq!(f.dst_addr(), MacAddr::BROADCAST);
        assert_eq!(f.src_addr(), MacAddr([2, 0, 0, 0, 0, 1]));
        assert_eq!(f.vlan_tag(), Some(VlanTag { pcp: 3, dei: false, vid: 100 }));
        assert_eq!(f.payload().len(), 6);
        assert!(EthernetFrame::new_checked(&[0u8; 13][..]).is_err());
        // Unchecked views over short buffers never panic.
        let short = EthernetFrame::new_unchecked(&[1u8, 2, 3][..]);
        assert_eq!(short.ethertype(), 0);
        assert_eq!(short.src_addr(), MacAddr::ZERO);
        assert!(short.payload().is_empty());
    }
}
