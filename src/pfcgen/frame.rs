//! Frames of a stream, and what the receive side makes of a frame. Pure.
//!
//! A frame is a function of (stream, sequence number, TX TSC) alone: Ethernet (the
//! stream's MACs), an optional 802.1Q tag, IPv4 (DSCP/ECN, DF, TTL 64, a valid header
//! checksum), UDP (checksum 0, allowed for IPv4 and what RoCEv2 senders use), for a
//! RoCEv2 stream a BTH ([`roce`]), the [`payload`] header, zero padding, and for RoCEv2
//! the ICRC. Every ranged field and a size drawn
//! from a range or an IMIX depend on the sequence number only, so a frame the device
//! refused is undone by stepping the sequence number back (see the engine).

use super::payload;
use super::roce::{self, Bth};
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
    roce: bool,
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
            roce: s.roce,
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
    ///
    /// A RoCEv2 frame's BTH payload ends on a 4-byte boundary (pad count 0): the IPv4
    /// packet is up to 3 bytes shorter than the frame, which ends in an Ethernet trailer
    /// of zeros (as a minimum-size frame does), so the frame keeps the stream's size.
    #[inline]
    pub fn build(&self, seq: u64, tsc: u64, out: &mut [u8]) -> usize {
        let len = out.len();
        let l2 = if self.tci.is_some() { 18 } else { 14 };
        let hdr = l2 + 20 + 8 + if self.roce { roce::OVERHEAD } else { 0 };
        if len < hdr + payload::LEN || len - l2 > usize::from(u16::MAX) {
            return 0;
        }
        let trailer = if self.roce { (len - hdr) % 4 } else { 0 };
        let (out, tail) = out.split_at_mut(len - trailer);
        tail.fill(0);
        let len = out.len();
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
        let data = if self.roce {
            let (bth, data) = data.split_at_mut(roce::BTH_LEN);
            Bth {
                opcode: roce::OPCODE_RC_SEND_ONLY,
                pad: 0,
                pkey: roce::PKEY_DEFAULT,
                becn: false,
                dqp: roce::QP_BASE + u32::from(self.stream),
                ack_req: false,
                psn: seq as u32 & 0x00ff_ffff,
            }
            .write(bth);
            let n = data.len() - roce::ICRC_LEN;
            &mut data[..n]
        } else {
            data
        };
        payload::write(data, self.stream, seq, tsc);
        data[payload::LEN..].fill(0);
        if self.roce {
            roce::seal(&mut out[l2..]);
        }
        len + trailer
    }
}

/// What a received frame is, to the generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received {
    /// A MAC Control frame (PFC, PAUSE), decoded; or `Err` if malformed.
    MacControl(Result<MacControl, wire::MacControlError>),
    /// One of ours: the payload header, the ECN codepoint it arrived with, whether it is
    /// RoCEv2 (a notification point answers CE with a CNP).
    Ours { payload: payload::Payload, ecn: u8, roce: bool },
    /// A RoCEv2 CNP for the destination QP `qp`.
    Cnp { qp: u32 },
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
    let udp = l3 + ihl;
    let roce = frame.get(udp + 2..udp + 4) == Some(&roce::UDP_PORT.to_be_bytes());
    let ecn = p.ecn.unwrap_or(0);
    // Port 4791 without a BTH: a plain pfcgen stream sent to the RoCEv2 port (the magic
    // is no BTH opcode pfcgen sends).
    if let Some(payload) = frame.get(udp + 8..).and_then(payload::read) {
        return Received::Ours { payload, ecn, roce: false };
    }
    if !roce {
        return Received::Other;
    }
    match frame.get(udp + 8..).and_then(Bth::read) {
        Some(b) if b.opcode == roce::OPCODE_CNP => Received::Cnp { qp: b.dqp },
        Some(_) => match frame.get(udp + 8 + roce::BTH_LEN..).and_then(payload::read) {
            Some(payload) => Received::Ours { payload, ecn, roce: true },
            None => Received::Other,
        },
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
            Received::Ours { payload, ecn, roce } => {
                assert_eq!((payload.stream, payload.seq32, payload.tsc48, ecn, roce), (9, 1, 0x1234, 2, false));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(b.build(0, 0, &mut [0u8; 55]), 0, "too short for the headers");
    }

    #[test]
    fn roce_frames_carry_a_bth_and_a_right_icrc() {
        for (kv, l2) in [("size=1000,roce=true,id=3,ecn=ect0", 14), ("size=82-90,roce=true,id=3,pcp=3,vlan=7", 18)] {
            let s = stream(kv);
            let b = FrameBuilder::new(&s, MacAddr([2, 0, 0, 0, 0, 1]));
            for seq in [0u64, 1, 2, 3, 0x0123_4567] {
                let size = usize::from(b.size(seq));
                let mut f = vec![0xaau8; size - 4];
                assert_eq!(b.build(seq, 99, &mut f), f.len());
                let ip_len = usize::from(u16::from_be_bytes([f[l2 + 2], f[l2 + 3]]));
                // Payload and pad end on 4 bytes; the rest (< 4 bytes) is an Ethernet trailer of zeros.
                assert_eq!((ip_len - 20 - 8 - roce::OVERHEAD) % 4, 0, "{kv} seq {seq}");
                assert!(f.len() - l2 - ip_len < 4 && f[l2 + ip_len..].iter().all(|&x| x == 0));
                let ip = &f[l2..l2 + ip_len];
                assert!(roce::icrc_ok(ip), "{kv} seq {seq}");
                assert_eq!(u16::from_be_bytes([ip[22], ip[23]]), roce::UDP_PORT);
                let bth = Bth::read(&ip[28..]).unwrap();
                assert_eq!(
                    (bth.opcode, bth.pkey, bth.dqp, bth.psn, bth.pad),
                    (roce::OPCODE_RC_SEND_ONLY, 0xffff, roce::QP_BASE + 3, seq as u32 & 0xff_ffff, 0)
                );
                match receive(&f) {
                    Received::Ours { payload, roce, .. } => {
                        assert_eq!((payload.stream, payload.seq32, roce), (3, seq as u32, true));
                    }
                    other => panic!("{other:?}"),
                }
                // Its CNP comes back to the stream's QP.
                let mut c = [0u8; 128];
                let n = roce::build_cnp(&f, &mut c, roce::CnpMark { dscp: 48, pcp: 6 });
                assert_eq!(receive(&c[..n]), Received::Cnp { qp: roce::QP_BASE + 3 });
            }
        }
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
                Received::Ours { payload, ecn, .. } => {
                    prop_assert_eq!(payload.seq32, seq as u32);
                    prop_assert_eq!(payload.tsc48, tsc & ((1 << 48) - 1));
                    prop_assert_eq!(ecn, 3);
                }
                other => prop_assert!(false, "{:?}", other),
            }
        }
    }
}
