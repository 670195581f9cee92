//! Frames of a stream, and what the receive side makes of a frame. Pure.
//!
//! A frame is a function of (stream, sequence number, TX TSC) alone: Ethernet (the
//! stream's MACs), an optional 802.1Q tag, IPv4 (DSCP/ECN, DF, TTL 64, a valid header
//! checksum), UDP (checksum 0, allowed for IPv4 and what RoCEv2 senders use), the
//! [`payload`] header, zero padding. Every ranged field and a size drawn
//! from a range or an IMIX depend on the sequence number only, so a frame the device
//! refused is undone by stepping the sequence number back (see the engine).

use super::payload;
use super::spec::{Range, SizeSpec, StreamSpec};
use crate::wire::{self, MacAddr, MacControl, ETHERTYPE_IPV4, ETHERTYPE_MAC_CONTROL, ETHERTYPE_VLAN};

/// A well-mixed 64-bit hash of `x` (splitmix64's finaliser).
#[inline]
pub fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Sizes as the builder draws them.
#[derive(Debug, Clone)]
enum Sizes {
    Fixed(u16),
    Range(u16, u64),
    /// (size, cumulative weight), and the total weight.
    Imix(Vec<(u16, u64)>, u64),
}

/// Everything needed to build a stream's frames, precomputed.
#[derive(Debug, Clone)]
pub struct FrameBuilder {
    stream: u16,
    salt: u64,
    sizes: Sizes,
    src_mac: Range,
    dst_mac: Range,
    src_ip: Range,
    dst_ip: Range,
    src_port: Range,
    dst_port: Range,
    tos: u8,
    tci: Option<u16>,
}

impl FrameBuilder {
    /// The builder of stream `s` sent from a port whose MAC is `port_mac`.
    pub fn new(s: &StreamSpec, port_mac: MacAddr) -> FrameBuilder {
        let sizes = match &s.size {
            SizeSpec::Fixed(x) => Sizes::Fixed(*x),
            SizeSpec::Range(lo, hi) => Sizes::Range(*lo, u64::from(hi - lo) + 1),
            SizeSpec::Imix(v) => {
                let mut acc = 0u64;
                let c = v
                    .iter()
                    .map(|&(sz, w)| {
                        acc += u64::from(w);
                        (sz, acc)
                    })
                    .collect();
                Sizes::Imix(c, acc.max(1))
            }
        };
        let mac = u64::from_be_bytes([
            0,
            0,
            port_mac.0[0],
            port_mac.0[1],
            port_mac.0[2],
            port_mac.0[3],
            port_mac.0[4],
            port_mac.0[5],
        ]);
        FrameBuilder {
            stream: s.id,
            salt: mix(u64::from(s.id) << 32 | 0x5eed),
            sizes,
            src_mac: s.src_mac.unwrap_or(Range::one(mac)),
            dst_mac: s.dst_mac,
            src_ip: s.src_ip,
            dst_ip: s.dst_ip,
            src_port: s.src_port,
            dst_port: s.dst_port,
            tos: (s.dscp << 2) | (s.ecn & 3),
            tci: s.vlan.map(|(pcp, vid)| wire::VlanTag { pcp, dei: false, vid }.tci()),
        }
    }

    /// Size of frame `seq`, FCS included (the buffer holds 4 bytes less).
    #[inline]
    pub fn size(&self, seq: u64) -> u16 {
        match &self.sizes {
            Sizes::Fixed(s) => *s,
            Sizes::Range(lo, n) => lo + (mix(seq ^ self.salt) % n) as u16,
            Sizes::Imix(c, total) => {
                let r = mix(seq ^ self.salt) % total;
                c.iter().find(|x| r < x.1).map_or(c.last().map_or(64, |x| x.0), |x| x.0)
            }
        }
    }

    /// Writes frame `seq` stamped with `tsc` into `out`, which is the frame without FCS
    /// (`size(seq) − 4` bytes). Returns the bytes written (0 if `out` is too short for
    /// the headers).
    #[inline]
    pub fn build(&self, seq: u64, tsc: u64, out: &mut [u8]) -> usize {
        let len = out.len();
        let l2 = if self.tci.is_some() { 18 } else { 14 };
        let hdr = l2 + 20 + 8;
        if len < hdr + payload::LEN || len - l2 > usize::from(u16::MAX) {
            return 0;
        }
        let (eth, rest) = out.split_at_mut(l2);
        eth[0..6].copy_from_slice(&self.dst_mac.at(seq).to_be_bytes()[2..]);
        eth[6..12].copy_from_slice(&self.src_mac.at(seq).to_be_bytes()[2..]);
        match self.tci {
            Some(tci) => {
                eth[12..14].copy_from_slice(&ETHERTYPE_VLAN.to_be_bytes());
                eth[14..16].copy_from_slice(&tci.to_be_bytes());
                eth[16..18].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
            }
            None => eth[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes()),
        }
        let ip_len = (len - l2) as u16;
        let (ip, rest) = rest.split_at_mut(20);
        ip[0] = 0x45;
        ip[1] = self.tos;
        ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
        ip[4..6].copy_from_slice(&(seq as u16).to_be_bytes());
        ip[6..8].copy_from_slice(&0x4000u16.to_be_bytes()); // DF
        ip[8] = 64;
        ip[9] = 17;
        ip[10..12].fill(0);
        ip[12..16].copy_from_slice(&(self.src_ip.at(seq) as u32).to_be_bytes());
        ip[16..20].copy_from_slice(&(self.dst_ip.at(seq) as u32).to_be_bytes());
        let c = wire::ipv4_checksum(ip);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        let (udp, data) = rest.split_at_mut(8);
        udp[0..2].copy_from_slice(&(self.src_port.at(seq) as u16).to_be_bytes());
        udp[2..4].copy_from_slice(&(self.dst_port.at(seq) as u16).to_be_bytes());
        udp[4..6].copy_from_slice(&(ip_len - 20).to_be_bytes());
        udp[6..8].fill(0);
        payload::write(data, self.stream, seq, tsc);
        data[payload::LEN..].fill(0);
        len
    }
}

/// What a received frame is, to the generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received {
    /// A MAC Control frame (PFC, PAUSE), decoded; or `Err` if malformed.
    MacControl(Result<MacControl, wire::MacControlError>),
    /// One of ours: the payload header and the ECN codepoint it arrived with.
    Ours { payload: payload::Payload, ecn: u8 },
    /// Anything else (not IPv4/UDP, not our magic, a runt).
    Other,
}

/// Classify a received frame (no FCS).
#[inline]
pub fn receive(frame: &[u8]) -> Received {
    if frame.get(12..14) == Some(&ETHERTYPE_MAC_CONTROL.to_be_bytes()) {
        return Received::MacControl(MacControl::parse(frame));
    }
    let Ok(p) = wire::parse(frame) else { return Received::Other };
    if p.ethertype != ETHERTYPE_IPV4 {
        return Received::Other;
    }
    let l3 = p.l3_offset;
    let ihl = usize::from(frame.get(l3).copied().unwrap_or(0) & 0x0f) * 4;
    if frame.get(l3 + 9) != Some(&17) {
        return Received::Other;
    }
    match frame.get(l3 + ihl + 8..).and_then(payload::read) {
        Some(payload) => Received::Ours { payload, ecn: p.ecn.unwrap_or(0) },
        None => Received::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pfcgen::spec::{resolve, CliSpec};
    use crate::wire::Ipv4Packet;
    use proptest::prelude::*;

    fn stream(kv: &str) -> StreamSpec {
        let cli = CliSpec { ports: vec!["net_null0".into()], streams: vec![kv.into()], ..Default::default() };
        resolve(None, &cli).unwrap().streams.remove(0)
    }

    #[test]
    fn tagged_roce_frame_of_64_bytes() {
        let s = stream(
            "size=64,pcp=3,vlan=100,dscp=26,ecn=ect0,dst_port=4791,src_port=49152-49153,dst_mac=02:00:00:00:00:02,id=9",
        );
        let b = FrameBuilder::new(&s, MacAddr([2, 0, 0, 0, 0, 1]));
        let mut f = [0xaau8; 60];
        assert_eq!(b.build(1, 0x1234, &mut f), 60);
        assert_eq!(&f[0..12], &[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1]);
        let p = wire::parse(&f).unwrap();
        assert_eq!(p.vlan, Some(wire::VlanTag { pcp: 3, dei: false, vid: 100 }));
        assert_eq!((p.dscp, p.ecn, p.l3_offset), (Some(26), Some(2), 18));
        let ip = Ipv4Packet::new_checked(&f[18..]).unwrap();
        assert!(ip.verify_checksum());
        assert_eq!(u16::from_be_bytes([f[20], f[21]]), 42, "IPv4 total length");
        assert_eq!(u16::from_be_bytes([f[38], f[39]]), 49153, "source port of seq 1");
        assert_eq!(u16::from_be_bytes([f[40], f[41]]), 4791);
        assert_eq!(u16::from_be_bytes([f[42], f[43]]), 22, "UDP length");
        match receive(&f) {
            Received::Ours { payload, ecn } => {
                assert_eq!((payload.stream, payload.seq32, payload.tsc48, ecn), (9, 1, 0x1234, 2));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(b.build(0, 0, &mut [0u8; 55]), 0, "too short for the headers");
    }

    #[test]
    fn receive_classifies() {
        let pfc = MacControl::pfc_pause(1 << 3, 100).to_bytes(MacAddr([2, 0, 0, 0, 0, 9]));
        assert!(matches!(receive(&pfc), Received::MacControl(Ok(MacControl::Pfc { class_enable: 8, .. }))));
        assert!(matches!(receive(&pfc[..40]), Received::MacControl(Err(_))));
        assert_eq!(receive(&[0u8; 60]), Received::Other);
        assert_eq!(receive(&[0u8; 3]), Received::Other);
        let s = stream("size=100");
        let mut f = [0u8; 96];
        FrameBuilder::new(&s, MacAddr::ZERO).build(5, 5, &mut f);
        f[14 + 9] = 6; // TCP: not ours
        assert_eq!(receive(&f), Received::Other);
    }

    #[test]
    fn imix_proportions() {
        let s = stream("size=imix");
        let b = FrameBuilder::new(&s, MacAddr::ZERO);
        let mut n = [0u32; 3];
        for seq in 0..120_000 {
            match b.size(seq) {
                64 => n[0] += 1,
                594 => n[1] += 1,
                1518 => n[2] += 1,
                x => panic!("size {x}"),
            }
        }
        for (got, w) in n.iter().zip([7.0, 4.0, 1.0]) {
            let want = 120_000.0 * w / 12.0;
            assert!((f64::from(*got) - want).abs() / want < 0.03, "{n:?}");
        }
    }

    proptest! {
        #[test]
        fn every_frame_parses_back(seq in any::<u64>(), tsc in any::<u64>(), tagged in any::<bool>(), lo in 64u16..200, span in 0u16..1400) {
            let kv = format!("size={lo}-{},src_ip=10.0.0.1-10.0.0.77,dst_mac=02:00:00:00:00:01-02:00:00:00:01:00,ecn=ce{}", lo + span, if tagged { ",pcp=5" } else { "" });
            let s = stream(&kv);
            let b = FrameBuilder::new(&s, MacAddr::ZERO);
            let size = b.size(seq);
            prop_assert!(size >= lo && size <= lo + span);
            let mut buf = vec![0u8; usize::from(size) - 4];
            prop_assert_eq!(b.build(seq, tsc, &mut buf), buf.len());
            let l3 = if tagged { 18 } else { 14 };
            prop_assert!(Ipv4Packet::new_checked(&buf[l3..]).unwrap().verify_checksum());
            match receive(&buf) {
                Received::Ours { payload, ecn } => {
                    prop_assert_eq!(payload.seq32, seq as u32);
                    prop_assert_eq!(payload.tsc48, tsc & ((1 << 48) - 1));
                    prop_assert_eq!(ecn, 3);
                }
                other => prop_assert!(false, "{:?}", other),
            }
        }
    }
}
