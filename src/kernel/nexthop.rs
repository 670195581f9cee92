//! Kernel nexthop objects over rtnetlink (`linux/nexthop.h`: RTM_NEWNEXTHOP,
//! RTM_DELNEXTHOP, RTM_GETNEXTHOP), which netlink-packet-route 0.34 does not decode: read
//! here from the bytes, in safe code. A message's payload is a `struct nhmsg` (8 bytes:
//! family, scope, protocol, reserved, flags) and attributes (`NHA_*`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::route::{KernelEvent, NextHopKind};

pub const RTM_NEWNEXTHOP: u16 = 104;
pub const RTM_DELNEXTHOP: u16 = 105;
pub const RTM_GETNEXTHOP: u16 = 106;
/// RTNLGRP_NEXTHOP (32) as a bit of the groups bound to (group n is bit n − 1).
pub const GROUP_BIT: u32 = 1 << 31;

const NHMSG_LEN: usize = 8;
const NHA_ID: u16 = 1;
const NHA_GROUP: u16 = 2;
const NHA_BLACKHOLE: u16 = 4;
const NHA_OIF: u16 = 5;
const NHA_GATEWAY: u16 = 6;
const NHA_ENCAP_TYPE: u16 = 7;
const NHA_ENCAP: u16 = 8;
const NHA_FDB: u16 = 11;
/// An attribute type's flag bits (NLA_F_NESTED, NLA_F_NET_BYTEORDER).
const NLA_TYPE_MASK: u16 = 0x3fff;

/// The event a nexthop message (`new`: RTM_NEWNEXTHOP, else RTM_DELNEXTHOP) carries;
/// Err: why it cannot be read (the message is then counted undecodable).
pub fn decode(new: bool, payload: &[u8]) -> Result<KernelEvent, String> {
    if payload.len() < NHMSG_LEN {
        return Err(format!("nexthop message of {} bytes", payload.len()));
    }
    let mut id = None;
    let (mut oif, mut gateway, mut group) = (None, None, None);
    let (mut blackhole, mut other) = (false, false);
    let mut rest = &payload[NHMSG_LEN..];
    while rest.len() >= 4 {
        let len = usize::from(u16::from_ne_bytes([rest[0], rest[1]]));
        let kind = u16::from_ne_bytes([rest[2], rest[3]]) & NLA_TYPE_MASK;
        if len < 4 || len > rest.len() {
            return Err(format!("nexthop attribute {kind}: length {len} of {}", rest.len()));
        }
        let v = &rest[4..len];
        match kind {
            NHA_ID => id = Some(u32_of(v).ok_or("NHA_ID is not 4 bytes")?),
            NHA_OIF => oif = Some(u32_of(v).ok_or("NHA_OIF is not 4 bytes")?),
            NHA_GATEWAY => {
                gateway = Some(match v.len() {
                    4 => IpAddr::V4(Ipv4Addr::new(v[0], v[1], v[2], v[3])),
                    16 => IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(v).unwrap_or_default())),
                    n => return Err(format!("NHA_GATEWAY of {n} bytes")),
                })
            }
            NHA_BLACKHOLE => blackhole = true,
            NHA_GROUP => {
                if !v.len().is_multiple_of(8) {
                    return Err(format!("NHA_GROUP of {} bytes", v.len()));
                }
                // struct nexthop_grp: id, weight − 1 (low byte), its high byte (Linux
                // 6.12+, reserved before: 0), reserved.
                group = Some(
                    v.chunks_exact(8)
                        .map(|e| {
                            let w = (u32::from(e[5]) << 8 | u32::from(e[4])) + 1;
                            (u32_of(&e[..4]).unwrap_or(0), w.min(u32::from(u16::MAX)) as u16)
                        })
                        .collect::<Vec<(u32, u16)>>(),
                );
            }
            NHA_ENCAP_TYPE | NHA_ENCAP | NHA_FDB => other = true,
            _ => {}
        }
        rest = &rest[((len + 3) & !3).min(rest.len())..];
    }
    let id = id.ok_or("nexthop message without NHA_ID")?;
    if !new {
        return Ok(KernelEvent::NextHopGone { id });
    }
    let kind = match (other, blackhole, group, oif) {
        (true, ..) => NextHopKind::Other,
        (false, true, ..) => NextHopKind::Blackhole,
        (false, false, Some(members), _) => NextHopKind::Group(members),
        (false, false, None, Some(ifindex)) => NextHopKind::Via { ifindex, gateway },
        (false, false, None, None) => NextHopKind::Other,
    };
    Ok(KernelEvent::NextHop { id, kind })
}

fn u32_of(v: &[u8]) -> Option<u32> {
    Some(u32::from_ne_bytes(v.try_into().ok()?))
}

/// The payload of a dump request for every nexthop object (a zeroed `struct nhmsg`:
/// any family, no filter).
pub fn dump_payload() -> [u8; NHMSG_LEN] {
    [0; NHMSG_LEN]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message as the kernel sent it (captured on Linux 6.18 with a raw rtnetlink socket
    /// bound to RTNLGRP_NEXTHOP while `ip nexthop` ran, then a dump): its type and payload.
    fn captured(hex: &str) -> (u16, Vec<u8>) {
        let b: Vec<u8> = (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
        let len = u32::from_ne_bytes(b[..4].try_into().unwrap()) as usize;
        assert_eq!(len, b.len());
        (u16::from_ne_bytes([b[4], b[5]]), b[16..].to_vec())
    }

    fn event(hex: &str) -> KernelEvent {
        let (kind, payload) = captured(hex);
        assert!(kind == RTM_NEWNEXTHOP || kind == RTM_DELNEXTHOP);
        decode(kind == RTM_NEWNEXTHOP, &payload).unwrap()
    }

    fn via(id: u32, ifindex: u32, gw: Option<&str>) -> KernelEvent {
        KernelEvent::NextHop { id, kind: NextHopKind::Via { ifindex, gateway: gw.map(|g| g.parse().unwrap()) } }
    }

    #[test]
    fn messages_captured_from_the_kernel() {
        // ip nexthop add id 1 via 10.0.0.1 dev Ethernet0 (ifindex 3)
        let m = "3000000068000506cba1156bdb43000002fd00000000000008000100010000000800050003000000080006000a000001";
        assert_eq!(event(m), via(1, 3, Some("10.0.0.1")));
        // ip nexthop add id 3 via fc00::1 dev Ethernet0
        let m = "3c00000068000506cca1156b134400000afd0000000000000800010003000000080005000300000014000600fc000000000000000000000000000001";
        assert_eq!(event(m), via(3, 3, Some("fc00::1")));
        // ip nexthop add id 4 blackhole
        let m = "2400000068000506cda1156b424400000200000000000000080001000400000004000400";
        assert_eq!(event(m), KernelEvent::NextHop { id: 4, kind: NextHopKind::Blackhole });
        // ip nexthop add id 5 dev Ethernet4 (ifindex 5): on the link, no gateway
        let m = "2800000068000506cda1156b5744000002fe00000000000008000100050000000800050005000000";
        assert_eq!(event(m), via(5, 5, None));
        // ip nexthop add id 10 group 1/2,3 (weights 1 and 3)
        let m = "4400000068000506cea1156b6b440000000000000000000008000100\
                 0a0000000600030000000000140002000100000000000000020000000200000008000e0000000080";
        assert_eq!(event(m), KernelEvent::NextHop { id: 10, kind: NextHopKind::Group(vec![(1, 1), (2, 3)]) });
        // ip nexthop add id 12 group 1/2 type resilient buckets 8 (nested NHA_RES_GROUP)
        let m = "6c00000068000506dda1156baf4600000000000000000000080001000c0000000600030001000000\
                 140002000100000000000000020000000000000028000c80060001000800000008000200e02e0000\
                 08000300000000000c000400000000000000000008000e0000000080";
        assert_eq!(event(m), KernelEvent::NextHop { id: 12, kind: NextHopKind::Group(vec![(1, 1), (2, 1)]) });
        // ip nexthop replace id 10 group 1
        let m = "3c00000068000505cfa1156bc64400000000000000000000080001000a00000006000300000000000c000200010000000000000008000e0000000080";
        assert_eq!(event(m), KernelEvent::NextHop { id: 10, kind: NextHopKind::Group(vec![(1, 1)]) });
        // ip nexthop del id 1, then the group it left empty
        let m = "3000000069000500d0a1156bf444000002fd00000000000008000100010000000800050003000000080006000a000001";
        assert_eq!(event(m), KernelEvent::NextHopGone { id: 1 });
        let m = "3c00000069000500d0a1156bf44400000000000000000000080001000a00000006000300000000000c000200010000000000000008000e0000000080";
        assert_eq!(event(m), KernelEvent::NextHopGone { id: 10 });
        // A dump answer (RTM_NEWNEXTHOP, NLM_F_MULTI)
        let m = "3000000068000200070000008743000002fd00000000000008000100020000000800050005000000080006000a000003";
        assert_eq!(event(m), via(2, 5, Some("10.0.0.3")));
    }

    #[test]
    fn what_cannot_be_read_is_an_error_and_encap_is_the_kernels() {
        assert!(decode(true, &[0; 4]).is_err());
        // No NHA_ID.
        assert!(decode(true, &[2, 0, 0, 0, 0, 0, 0, 0, 8, 0, 5, 0, 3, 0, 0, 0]).is_err());
        // An attribute longer than the message.
        assert!(decode(true, &[2, 0, 0, 0, 0, 0, 0, 0, 8, 0, 1, 0, 1, 0, 0, 0, 12, 0, 5, 0, 3, 0, 0, 0]).is_err());
        // A gateway of 5 bytes.
        let bad_gw = [2, 0, 0, 0, 0, 0, 0, 0, 8, 0, 1, 0, 1, 0, 0, 0, 9, 0, 6, 0, 1, 2, 3, 4, 5, 0, 0, 0];
        assert!(decode(true, &bad_gw).is_err());
        // An encapsulation (NHA_ENCAP_TYPE): forwarded by the kernel.
        let encap = [2, 0, 0, 0, 0, 0, 0, 0, 8, 0, 1, 0, 7, 0, 0, 0, 8, 0, 5, 0, 3, 0, 0, 0, 6, 0, 7, 0, 1, 0, 0, 0];
        assert_eq!(decode(true, &encap), Ok(KernelEvent::NextHop { id: 7, kind: NextHopKind::Other }));
        // A 16-bit weight (Linux 6.12+: the high byte in the reserved one): 0x0102 + 1.
        let w16 = [0, 0, 0, 0, 0, 0, 0, 0, 8, 0, 1, 0, 9, 0, 0, 0, 12, 0, 2, 0, 1, 0, 0, 0, 2, 1, 0, 0];
        assert_eq!(decode(true, &w16), Ok(KernelEvent::NextHop { id: 9, kind: NextHopKind::Group(vec![(1, 259)]) }));
    }
}
