//! 48-bit MAC addresses: the classification bits a bridge needs (group, broadcast,
//! IEEE 802.1D reserved link-local range) and the usual text form.

use std::fmt;
use std::str::FromStr;

/// An Ethernet MAC address, network byte order.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, PartialOrd, Ord)]
pub struct MacAddr(pub [u8; 6]);

/// Why a MAC address string did not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("invalid MAC address (expected six hex octets separated by ':' or '-')")]
pub struct MacParseError;

impl MacAddr {
    /// ff:ff:ff:ff:ff:ff.
    pub const BROADCAST: MacAddr = MacAddr([0xff; 6]);
    /// 01-80-C2-00-00-01: the MAC Control (PAUSE/PFC) destination (IEEE 802.3 Annex 31B).
    pub const PFC_DST: MacAddr = MacAddr([0x01, 0x80, 0xc2, 0x00, 0x00, 0x01]);
    /// 00:00:00:00:00:00.
    pub const ZERO: MacAddr = MacAddr([0; 6]);

    /// Reads an address from the first 6 bytes of `b`; `None` if shorter.
    #[inline]
    pub fn from_bytes(b: &[u8]) -> Option<MacAddr> {
        let a: [u8; 6] = b.get(..6)?.try_into().ok()?;
        Some(MacAddr(a))
    }

    /// The raw octets.
    #[inline]
    pub const fn octets(&self) -> [u8; 6] {
        self.0
    }

    /// Group (I/G) bit set: multicast, including broadcast. Bridges flood these.
    #[inline]
    pub const fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }

    /// All ones.
    #[inline]
    pub const fn is_broadcast(&self) -> bool {
        let a = self.0;
        a[0] & a[1] & a[2] & a[3] & a[4] & a[5] == 0xff
    }

    /// Individual (unicast) address: group bit clear.
    #[inline]
    pub const fn is_unicast(&self) -> bool {
        !self.is_multicast()
    }

    /// 01-80-C2-00-00-00..0F: IEEE 802.1Q reserved addresses (STP, PAUSE/PFC, LACP,
    /// LLDP, ...). A bridge must never forward frames sent to them.
    #[inline]
    pub const fn is_link_local_reserved(&self) -> bool {
        let a = self.0;
        a[0] == 0x01 && a[1] == 0x80 && a[2] == 0xc2 && a[3] == 0 && a[4] == 0 && a[5] <= 0x0f
    }
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = self.0;
        write!(f, "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", a[0], a[1], a[2], a[3], a[4], a[5])
    }
}

impl FromStr for MacAddr {
    type Err = MacParseError;

    /// Accepts `aa:bb:cc:dd:ee:ff` and `aa-bb-cc-dd-ee-ff` (either case, one separator
    /// style per address).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let sep = if s.contains(':') { ':' } else { '-' };
        let mut out = [0u8; 6];
        let mut n = 0;
        for part in s.split(sep) {
            if n >= 6 || part.is_empty() || part.len() > 2 {
                return Err(MacParseError);
            }
            out[n] = u8::from_str_radix(part, 16).map_err(|_| MacParseError)?;
            n += 1;
        }
        if n != 6 {
            return Err(MacParseError);
        }
        Ok(MacAddr(out))
    }
}

impl From<[u8; 6]> for MacAddr {
    fn from(a: [u8; 6]) -> Self {
        MacAddr(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trip() {
        let m: MacAddr = "00:1B:21:aa:0f:01".parse().unwrap();
        assert_eq!(m.0, [0x00, 0x1b, 0x21, 0xaa, 0x0f, 0x01]);
        assert_eq!(m.to_string(), "00:1b:21:aa:0f:01");
        assert_eq!("00-1b-21-aa-0f-01".parse::<MacAddr>().unwrap(), m);
        for bad in [
            "",
            "00:11:22:33:44",
            "00:11:22:33:44:55:66",
            "0g:11:22:33:44:55",
            "001:1:22:33:44:55",
            "00:11-22:33:44:55",
        ] {
            assert!(bad.parse::<MacAddr>().is_err(), "{bad}");
        }
    }

    #[test]
    fn classes() {
        assert!(MacAddr::BROADCAST.is_broadcast() && MacAddr::BROADCAST.is_multicast());
        assert!(MacAddr::PFC_DST.is_multicast() && !MacAddr::PFC_DST.is_broadcast());
        assert!(MacAddr::PFC_DST.is_link_local_reserved());
        assert!(MacAddr([0x01, 0x80, 0xc2, 0, 0, 0x0f]).is_link_local_reserved());
        assert!(!MacAddr([0x01, 0x80, 0xc2, 0, 0, 0x10]).is_link_local_reserved());
        assert!(!MacAddr([0x02, 0, 0, 0, 0, 1]).is_multicast());
        assert!(MacAddr([0x01, 0, 0x5e, 0, 0, 1]).is_multicast());
    }
}
