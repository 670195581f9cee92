//! IPv4 and IPv6 prefixes, kept masked (host bits zero) so equal prefixes compare equal.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// An IPv4 prefix `addr/len`, host bits cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Prefix4 {
    addr: u32,
    len: u8,
}

/// An IPv6 prefix `addr/len`, host bits cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Prefix6 {
    addr: u128,
    len: u8,
}

/// Either family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Prefix {
    V4(Prefix4),
    V6(Prefix6),
}

impl Prefix4 {
    /// `addr/len` with the host bits cleared; `len` is clamped to 32.
    pub fn new(addr: Ipv4Addr, len: u8) -> Prefix4 {
        let len = len.min(32);
        let mask = if len == 0 { 0 } else { u32::MAX << (32 - u32::from(len)) };
        Prefix4 { addr: u32::from(addr) & mask, len }
    }
    /// The network address as a host-order integer (what `rte_lpm` takes).
    pub fn bits(&self) -> u32 {
        self.addr
    }
    pub fn addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.addr)
    }
    pub fn prefix_len(&self) -> u8 {
        self.len
    }
    /// Does the prefix cover `a`?
    pub fn contains(&self, a: Ipv4Addr) -> bool {
        Prefix4::new(a, self.len).addr == self.addr
    }
}

impl Prefix6 {
    /// `addr/len` with the host bits cleared; `len` is clamped to 128.
    pub fn new(addr: Ipv6Addr, len: u8) -> Prefix6 {
        let len = len.min(128);
        let mask = if len == 0 { 0 } else { u128::MAX << (128 - u32::from(len)) };
        Prefix6 { addr: u128::from(addr) & mask, len }
    }
    /// The network address in network byte order (what `rte_fib6` takes).
    pub fn octets(&self) -> [u8; 16] {
        self.addr.to_be_bytes()
    }
    pub fn addr(&self) -> Ipv6Addr {
        Ipv6Addr::from(self.addr)
    }
    pub fn prefix_len(&self) -> u8 {
        self.len
    }
    /// Does the prefix cover `a`?
    pub fn contains(&self, a: Ipv6Addr) -> bool {
        Prefix6::new(a, self.len).addr == self.addr
    }
}

impl Prefix {
    /// `addr/len` of either family.
    pub fn new(addr: IpAddr, len: u8) -> Prefix {
        match addr {
            IpAddr::V4(a) => Prefix::V4(Prefix4::new(a, len)),
            IpAddr::V6(a) => Prefix::V6(Prefix6::new(a, len)),
        }
    }
    /// The host prefix of `addr` (/32 or /128).
    pub fn host(addr: IpAddr) -> Prefix {
        match addr {
            IpAddr::V4(a) => Prefix::V4(Prefix4::new(a, 32)),
            IpAddr::V6(a) => Prefix::V6(Prefix6::new(a, 128)),
        }
    }
    pub fn prefix_len(&self) -> u8 {
        match self {
            Prefix::V4(p) => p.len,
            Prefix::V6(p) => p.len,
        }
    }
    pub fn addr(&self) -> IpAddr {
        match self {
            Prefix::V4(p) => IpAddr::V4(p.addr()),
            Prefix::V6(p) => IpAddr::V6(p.addr()),
        }
    }
}

impl fmt::Display for Prefix4 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr(), self.len)
    }
}
impl fmt::Display for Prefix6 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr(), self.len)
    }
}
impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Prefix::V4(p) => p.fmt(f),
            Prefix::V6(p) => p.fmt(f),
        }
    }
}

/// An interface address as written in `[interface]` (`10.0.0.0/31`, `fc00::/127`): the
/// address itself (host bits kept) and the prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct IfAddr {
    pub addr: IpAddr,
    pub len: u8,
}

impl IfAddr {
    /// The connected subnet.
    pub fn subnet(&self) -> Prefix {
        Prefix::new(self.addr, self.len)
    }
}

impl fmt::Display for IfAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

impl FromStr for IfAddr {
    type Err = String;
    /// `addr/len`, either family; the length within the family's width.
    fn from_str(s: &str) -> Result<IfAddr, String> {
        let (a, l) = s.split_once('/').ok_or_else(|| format!("'{s}' is not <address>/<prefix length>"))?;
        let addr: IpAddr = a.trim().parse().map_err(|_| format!("'{a}' is not an IPv4 or IPv6 address"))?;
        let len: u8 = l.trim().parse().map_err(|_| format!("'{l}' is not a prefix length"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        if len > max {
            return Err(format!("prefix length {len} is longer than {max}"));
        }
        Ok(IfAddr { addr, len })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_and_contains() {
        let p = Prefix4::new(Ipv4Addr::new(10, 1, 2, 3), 16);
        assert_eq!(p.to_string(), "10.1.0.0/16");
        assert!(p.contains(Ipv4Addr::new(10, 1, 255, 1)));
        assert!(!p.contains(Ipv4Addr::new(10, 2, 0, 1)));
        assert_eq!(Prefix4::new(Ipv4Addr::new(1, 2, 3, 4), 0).bits(), 0);
        let q = Prefix6::new("fc00::1:2".parse().unwrap(), 112);
        assert_eq!(q.to_string(), "fc00::1:0/112");
        assert!(q.contains("fc00::1:ffff".parse().unwrap()));
    }

    #[test]
    fn if_addr_parses() {
        let a: IfAddr = "10.0.0.1/31".parse().unwrap();
        assert_eq!(a.subnet().to_string(), "10.0.0.0/31");
        assert!("10.0.0.1/33".parse::<IfAddr>().is_err());
        assert!("fc00::/129".parse::<IfAddr>().is_err());
        assert!("fc00::".parse::<IfAddr>().is_err());
        assert_eq!("fc00::/127".parse::<IfAddr>().unwrap().len, 127);
    }
}
