//! LLDP (IEEE 802.1AB) frames with the IEEE DCBX TLVs of 802.1Qaz: a codec. [`Lldpdu::parse`]
//! takes any bytes and returns a value or an error, never panics; [`Lldpdu::to_bytes`]
//! writes a frame that parses back to the same value. Runs on the control lcore, never on
//! the fast path (it allocates).
//!
//! Frame: destination 01-80-C2-00-00-0E (nearest bridge), EtherType 0x88CC, then TLVs of
//! a 7-bit type and a 9-bit length: Chassis ID, Port ID and TTL first (in that order), the
//! optional ones, End. DCBX lives in organizationally specific TLVs (type 127) of the
//! IEEE 802.1 OUI 00-80-C2:
//!
//! | subtype | TLV | body after OUI and subtype |
//! |---|---|---|
//! | 9 | ETS Configuration | willing·CBS·3 reserved·Max TCs (3 bits, 0 = 8); priority → TC table (4 bytes, priority 0 in the high nibble); TC bandwidth % (8); TSA per TC (8: 0 strict, 1 CBS, 2 ETS, 255 vendor) |
//! | 10 | ETS Recommendation | one reserved byte, then the same three tables |
//! | 11 | PFC Configuration | willing·MBC·2 reserved·PFC capability (4 bits); enable bitmap (bit n = priority n) |
//! | 12 | Application Priority | one reserved byte; entries of priority (3 bits)·2 reserved·selector (3 bits) and a 16-bit protocol id |
//!
//! Application selectors: 1 EtherType, 2 TCP/SCTP port, 3 UDP/DCCP port, 4 TCP/SCTP/UDP/DCCP
//! port, 5 DSCP. Other organizationally specific TLVs (802.3, LLDP-MED, CEE DCBX) and
//! unknown TLV types are skipped and counted in [`Lldpdu::skipped`].

use super::{MacAddr, MIN_FRAME_LEN};

/// LLDP's EtherType.
pub const ETHERTYPE_LLDP: u16 = 0x88cc;

/// The nearest-bridge group address LLDP is sent to (802.1AB): never forwarded by a bridge.
pub const LLDP_DST: MacAddr = MacAddr([0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e]);

/// The IEEE 802.1 OUI of the DCBX TLVs.
pub const OUI_8021: [u8; 3] = [0x00, 0x80, 0xc2];

const TLV_END: u8 = 0;
const TLV_CHASSIS_ID: u8 = 1;
const TLV_PORT_ID: u8 = 2;
const TLV_TTL: u8 = 3;
const TLV_PORT_DESCRIPTION: u8 = 4;
const TLV_SYSTEM_NAME: u8 = 5;
const TLV_SYSTEM_DESCRIPTION: u8 = 6;
const TLV_ORG: u8 = 127;

const SUB_ETS_CONFIG: u8 = 9;
const SUB_ETS_RECOMMENDATION: u8 = 10;
const SUB_PFC: u8 = 11;
const SUB_APP: u8 = 12;

/// A TLV's information string holds at most 511 bytes (9-bit length).
pub const MAX_TLV_LEN: usize = 511;

/// Chassis ID subtype 4: a MAC address.
pub const CHASSIS_MAC: u8 = 4;
/// Port ID subtype 5: an interface name (what lldpd and SONiC send).
pub const PORT_IFNAME: u8 = 5;

/// Transmission selection algorithm of one traffic class (802.1Q Table 8-6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tsa {
    Strict,
    CreditBased,
    Ets,
    Vendor,
    /// Any other (reserved) value, kept as received.
    Other(u8),
}

impl Tsa {
    pub fn from_u8(v: u8) -> Tsa {
        match v {
            0 => Tsa::Strict,
            1 => Tsa::CreditBased,
            2 => Tsa::Ets,
            255 => Tsa::Vendor,
            o => Tsa::Other(o),
        }
    }
    pub fn to_u8(self) -> u8 {
        match self {
            Tsa::Strict => 0,
            Tsa::CreditBased => 1,
            Tsa::Ets => 2,
            Tsa::Vendor => 255,
            Tsa::Other(o) => o,
        }
    }
    /// lldptool's spelling.
    pub fn name(self) -> &'static str {
        match self {
            Tsa::Strict => "strict",
            Tsa::CreditBased => "cb_shaper",
            Tsa::Ets => "ets",
            Tsa::Vendor => "vendor",
            Tsa::Other(_) => "reserved",
        }
    }
}

/// The body of an ETS Configuration or Recommendation TLV.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ets {
    /// Configuration only (0 in a recommendation).
    pub willing: bool,
    /// Credit-based shaper supported (configuration only).
    pub cbs: bool,
    /// Traffic classes supported, 1..=8 (configuration only; 8 in a recommendation).
    pub max_tcs: u8,
    /// Per priority: its traffic class (0..=15 as a nibble).
    pub prio_tc: [u8; 8],
    /// Per traffic class: bandwidth percent.
    pub tc_bw: [u8; 8],
    /// Per traffic class: transmission selection algorithm.
    pub tsa: [Tsa; 8],
}

/// The body of a PFC Configuration TLV.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PfcTlv {
    pub willing: bool,
    /// MACsec bypass capability bit.
    pub mbc: bool,
    /// Traffic classes that can have PFC at once (0..=15).
    pub cap: u8,
    /// Bit n: PFC enabled on priority n.
    pub enable: u8,
}

/// Application selector values (802.1Qaz, Table D-9).
pub mod selector {
    pub const ETHERTYPE: u8 = 1;
    pub const TCP: u8 = 2;
    pub const UDP: u8 = 3;
    pub const TCP_UDP: u8 = 4;
    pub const DSCP: u8 = 5;
}

/// One Application Priority entry: traffic matching (`selector`, `protocol`) gets `priority`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct AppEntry {
    pub priority: u8,
    pub selector: u8,
    pub protocol: u16,
}

/// A decoded LLDPDU: the mandatory TLVs, the common optional ones, and the DCBX TLVs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Lldpdu {
    pub chassis_subtype: u8,
    pub chassis_id: Vec<u8>,
    pub port_subtype: u8,
    pub port_id: Vec<u8>,
    /// Seconds the receiver keeps this information (0: forget it now).
    pub ttl: u16,
    pub port_description: Option<String>,
    pub system_name: Option<String>,
    pub system_description: Option<String>,
    pub ets_config: Option<Ets>,
    pub ets_recommendation: Option<Ets>,
    pub pfc: Option<PfcTlv>,
    /// Application Priority entries (None: no such TLV).
    pub app: Option<Vec<AppEntry>>,
    /// TLVs not decoded here (other types, other OUIs and subtypes). Never emitted.
    pub skipped: u16,
}

/// Why bytes are not an LLDPDU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LldpError {
    #[error("not an LLDP frame (EtherType or destination)")]
    NotLldp,
    #[error("TLV at offset {0} runs past the end of the frame")]
    Truncated(usize),
    #[error("mandatory TLV {0} missing or out of order")]
    Mandatory(u8),
    #[error("TLV type {kind} has a bad length {len}")]
    BadLength { kind: u8, len: usize },
    #[error("the frame has no End TLV")]
    NoEnd,
}

/// A TLV's text; invalid UTF-8 replaced, and cut (at a character) to what a TLV holds,
/// so that what is parsed is also what would be sent again.
fn text(b: &[u8]) -> String {
    let mut s = String::from_utf8_lossy(b).into_owned();
    let mut n = s.len().min(MAX_TLV_LEN);
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    s.truncate(n);
    s
}

fn parse_tables(b: &[u8]) -> ([u8; 8], [u8; 8], [Tsa; 8]) {
    let mut prio_tc = [0u8; 8];
    for (i, p) in prio_tc.iter_mut().enumerate() {
        let byte = b[i / 2];
        *p = if i % 2 == 0 { byte >> 4 } else { byte & 0x0f };
    }
    let mut tc_bw = [0u8; 8];
    tc_bw.copy_from_slice(&b[4..12]);
    let tsa = std::array::from_fn(|i| Tsa::from_u8(b[12 + i]));
    (prio_tc, tc_bw, tsa)
}

fn write_tables(out: &mut Vec<u8>, e: &Ets) {
    for pair in e.prio_tc.chunks(2) {
        out.push((pair[0] & 0x0f) << 4 | (pair[1] & 0x0f));
    }
    out.extend_from_slice(&e.tc_bw);
    out.extend(e.tsa.iter().map(|t| t.to_u8()));
}

impl Lldpdu {
    /// Parse an Ethernet frame (untagged, or with one 802.1Q tag) carrying an LLDPDU.
    /// Padding after the End TLV is ignored.
    pub fn parse(frame: &[u8]) -> Result<Lldpdu, LldpError> {
        if frame.len() < 14 || frame[0..6] != LLDP_DST.0 {
            return Err(LldpError::NotLldp);
        }
        let mut off = 12;
        if frame[off..off + 2] == [0x81, 0x00] {
            off += 4;
        }
        if frame.get(off..off + 2) != Some(&ETHERTYPE_LLDP.to_be_bytes()[..]) {
            return Err(LldpError::NotLldp);
        }
        Self::parse_tlvs(&frame[off + 2..], off + 2)
    }

    /// Parse the TLVs of an LLDPDU (`base`: their offset in the frame, for errors).
    pub fn parse_tlvs(b: &[u8], base: usize) -> Result<Lldpdu, LldpError> {
        let mut d = Lldpdu::default();
        let mut off = 0usize;
        let mut index = 0usize;
        loop {
            let Some(h) = b.get(off..off + 2) else {
                return Err(if index < 3 { LldpError::Mandatory(index as u8 + 1) } else { LldpError::NoEnd });
            };
            let kind = h[0] >> 1;
            let len = usize::from(h[0] & 1) << 8 | usize::from(h[1]);
            let v = b.get(off + 2..off + 2 + len).ok_or(LldpError::Truncated(base + off))?;
            off += 2 + len;
            // Chassis ID, Port ID and TTL come first, in that order (802.1AB 8.2).
            if index < 3 && kind != index as u8 + 1 {
                return Err(LldpError::Mandatory(index as u8 + 1));
            }
            index += 1;
            let bad = || LldpError::BadLength { kind, len };
            match kind {
                TLV_END => return if len == 0 { Ok(d) } else { Err(bad()) },
                TLV_CHASSIS_ID | TLV_PORT_ID => {
                    // A subtype and 1..=255 bytes of id.
                    if !(2..=256).contains(&len) {
                        return Err(bad());
                    }
                    if kind == TLV_CHASSIS_ID {
                        (d.chassis_subtype, d.chassis_id) = (v[0], v[1..].to_vec());
                    } else {
                        (d.port_subtype, d.port_id) = (v[0], v[1..].to_vec());
                    }
                }
                TLV_TTL => {
                    if len < 2 {
                        return Err(bad());
                    }
                    d.ttl = u16::from_be_bytes([v[0], v[1]]);
                }
                TLV_PORT_DESCRIPTION => d.port_description = Some(text(v)),
                TLV_SYSTEM_NAME => d.system_name = Some(text(v)),
                TLV_SYSTEM_DESCRIPTION => d.system_description = Some(text(v)),
                TLV_ORG if len >= 4 && v[0..3] == OUI_8021 => {
                    if !d.parse_dcbx(v[3], &v[4..]) {
                        d.skipped = d.skipped.saturating_add(1);
                    }
                }
                _ => d.skipped = d.skipped.saturating_add(1),
            }
        }
    }

    /// An IEEE 802.1 TLV body; false if it is not one decoded here (or malformed: a DCBX
    /// TLV of the wrong length is ignored, as lldpad does, not fatal for the LLDPDU).
    fn parse_dcbx(&mut self, sub: u8, v: &[u8]) -> bool {
        match sub {
            SUB_ETS_CONFIG | SUB_ETS_RECOMMENDATION if v.len() == 21 => {
                let (prio_tc, tc_bw, tsa) = parse_tables(&v[1..]);
                let f = v[0];
                let ets = if sub == SUB_ETS_CONFIG {
                    let m = f & 7;
                    Ets {
                        willing: f & 0x80 != 0,
                        cbs: f & 0x40 != 0,
                        max_tcs: if m == 0 { 8 } else { m },
                        prio_tc,
                        tc_bw,
                        tsa,
                    }
                } else {
                    Ets { willing: false, cbs: false, max_tcs: 8, prio_tc, tc_bw, tsa }
                };
                if sub == SUB_ETS_CONFIG {
                    self.ets_config = Some(ets);
                } else {
                    self.ets_recommendation = Some(ets);
                }
                true
            }
            SUB_PFC if v.len() == 2 => {
                let f = v[0];
                self.pfc = Some(PfcTlv { willing: f & 0x80 != 0, mbc: f & 0x40 != 0, cap: f & 0x0f, enable: v[1] });
                true
            }
            SUB_APP if !v.is_empty() && (v.len() - 1).is_multiple_of(3) => {
                let entries = v[1..]
                    .chunks_exact(3)
                    .map(|e| AppEntry {
                        priority: e[0] >> 5,
                        selector: e[0] & 7,
                        protocol: u16::from_be_bytes([e[1], e[2]]),
                    })
                    .collect();
                self.app = Some(entries);
                true
            }
            _ => false,
        }
    }

    /// The frame: LLDP destination, source `src`, the TLVs, padded to 60 bytes. Strings and
    /// ids are cut to what a TLV holds; Application entries beyond one TLV are left out.
    pub fn to_bytes(&self, src: MacAddr) -> Vec<u8> {
        let mut f = Vec::with_capacity(256);
        f.extend_from_slice(&LLDP_DST.0);
        f.extend_from_slice(&src.0);
        f.extend_from_slice(&ETHERTYPE_LLDP.to_be_bytes());
        let tlv = |f: &mut Vec<u8>, kind: u8, v: &[u8]| {
            let v = &v[..v.len().min(MAX_TLV_LEN)];
            // Strings are cut at a character by `text` on the way in; here only bytes count.
            f.push(kind << 1 | (v.len() >> 8) as u8);
            f.push(v.len() as u8);
            f.extend_from_slice(v);
        };
        // A subtype and 1..=255 bytes of id (an empty id is sent as one zero byte).
        let id = |sub: u8, id: &[u8]| {
            let mut v = vec![sub];
            v.extend_from_slice(&id[..id.len().min(255)]);
            if v.len() == 1 {
                v.push(0);
            }
            v
        };
        tlv(&mut f, TLV_CHASSIS_ID, &id(self.chassis_subtype, &self.chassis_id));
        tlv(&mut f, TLV_PORT_ID, &id(self.port_subtype, &self.port_id));
        tlv(&mut f, TLV_TTL, &self.ttl.to_be_bytes());
        for (kind, s) in [
            (TLV_PORT_DESCRIPTION, &self.port_description),
            (TLV_SYSTEM_NAME, &self.system_name),
            (TLV_SYSTEM_DESCRIPTION, &self.system_description),
        ] {
            if let Some(s) = s {
                tlv(&mut f, kind, s.as_bytes());
            }
        }
        let org = |sub: u8, body: &[u8]| {
            let mut v = OUI_8021.to_vec();
            v.push(sub);
            v.extend_from_slice(body);
            v
        };
        if let Some(e) = &self.ets_config {
            let mut b = vec![u8::from(e.willing) << 7 | u8::from(e.cbs) << 6 | (e.max_tcs & 7)];
            write_tables(&mut b, e);
            tlv(&mut f, TLV_ORG, &org(SUB_ETS_CONFIG, &b));
        }
        if let Some(e) = &self.ets_recommendation {
            let mut b = vec![0];
            write_tables(&mut b, e);
            tlv(&mut f, TLV_ORG, &org(SUB_ETS_RECOMMENDATION, &b));
        }
        if let Some(p) = &self.pfc {
            let b = [u8::from(p.willing) << 7 | u8::from(p.mbc) << 6 | (p.cap & 0x0f), p.enable];
            tlv(&mut f, TLV_ORG, &org(SUB_PFC, &b));
        }
        if let Some(app) = &self.app {
            let mut b = vec![0];
            // 4 bytes of OUI and subtype, 1 reserved: at most 168 entries in one TLV.
            for e in app.iter().take((MAX_TLV_LEN - 5) / 3) {
                b.push((e.priority & 7) << 5 | (e.selector & 7));
                b.extend_from_slice(&e.protocol.to_be_bytes());
            }
            tlv(&mut f, TLV_ORG, &org(SUB_APP, &b));
        }
        tlv(&mut f, TLV_END, &[]);
        if f.len() < MIN_FRAME_LEN {
            f.resize(MIN_FRAME_LEN, 0);
        }
        f
    }

    /// The chassis id as lldpctl prints it: a MAC as `aa:bb:...`, text otherwise.
    pub fn chassis_text(&self) -> String {
        id_text(self.chassis_subtype, &self.chassis_id)
    }

    /// The port id as lldpctl prints it.
    pub fn port_text(&self) -> String {
        id_text(self.port_subtype, &self.port_id)
    }
}

/// An id (chassis or port) for display: subtype 3 (port) / 4 (chassis) MAC address as a
/// MAC, printable text as text, anything else in hex.
pub fn id_text(subtype: u8, id: &[u8]) -> String {
    if id.len() == 6 && (subtype == 3 || subtype == 4) {
        return MacAddr([id[0], id[1], id[2], id[3], id[4], id[5]]).to_string();
    }
    match std::str::from_utf8(id) {
        Ok(s) if s.chars().all(|c| !c.is_control()) => s.to_string(),
        _ => id.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> Lldpdu {
        Lldpdu {
            chassis_subtype: CHASSIS_MAC,
            chassis_id: vec![2, 0, 0, 0, 0, 1],
            port_subtype: PORT_IFNAME,
            port_id: b"Ethernet0".to_vec(),
            ttl: 120,
            port_description: None,
            system_name: Some("tor1".into()),
            system_description: Some("pfcswitch".into()),
            ets_config: Some(Ets {
                willing: false,
                cbs: false,
                max_tcs: 8,
                prio_tc: [0, 1, 2, 3, 4, 5, 6, 7],
                tc_bw: [13, 13, 12, 12, 25, 0, 0, 25],
                tsa: [Tsa::Ets, Tsa::Ets, Tsa::Ets, Tsa::Ets, Tsa::Ets, Tsa::Strict, Tsa::Strict, Tsa::Ets],
            }),
            ets_recommendation: None,
            pfc: Some(PfcTlv { willing: false, mbc: false, cap: 8, enable: 0x18 }),
            app: Some(vec![
                AppEntry { priority: 3, selector: selector::DSCP, protocol: 26 },
                AppEntry { priority: 3, selector: selector::UDP, protocol: 4791 },
            ]),
            skipped: 0,
        }
    }

    /// The bytes of the standard's layout, written out by hand.
    #[test]
    fn pfc_and_app_tlvs_by_hand() {
        let f = sample().to_bytes(MacAddr([2, 0, 0, 0, 0, 1]));
        assert_eq!(&f[0..6], &[0x01, 0x80, 0xc2, 0, 0, 0x0e]);
        assert_eq!(&f[12..14], &[0x88, 0xcc]);
        // Chassis ID: type 1, length 7, subtype 4, the MAC.
        assert_eq!(&f[14..23], &[0x02, 0x07, 4, 2, 0, 0, 0, 0, 1]);
        // PFC: type 127 length 6: OUI 00-80-C2, subtype 11, willing 0 MBC 0 cap 8, enable 3,4.
        let pfc = [0xfe, 0x06, 0x00, 0x80, 0xc2, 0x0b, 0x08, 0x18];
        assert!(f.windows(8).any(|w| w == pfc), "{f:02x?}");
        // Application: length 5 + 2×3: priority 3 DSCP 26; priority 3 UDP 4791 (0x12b7).
        let app = [0xfe, 0x0b, 0x00, 0x80, 0xc2, 0x0c, 0x00, 0x65, 0x00, 0x1a, 0x63, 0x12, 0xb7];
        assert!(f.windows(13).any(|w| w == app), "{f:02x?}");
        // ETS configuration: 25 bytes, max TCs 8 sent as 0, priority table 0x01 0x23 ...
        let ets = [0xfe, 0x19, 0x00, 0x80, 0xc2, 0x09, 0x00, 0x01, 0x23, 0x45, 0x67, 13, 13, 12, 12, 25, 0, 0, 25];
        assert!(f.windows(ets.len()).any(|w| w == ets), "{f:02x?}");
        assert_eq!(Lldpdu::parse(&f), Ok(sample()));
    }

    #[test]
    fn mandatory_order_and_end() {
        let mut f = sample().to_bytes(MacAddr([2, 0, 0, 0, 0, 1]));
        assert_eq!(Lldpdu::parse(&f[..20]), Err(LldpError::Truncated(14)));
        f[14] = 0x04; // Chassis ID → Port ID type.
        assert_eq!(Lldpdu::parse(&f), Err(LldpError::Mandatory(1)));
        assert_eq!(Lldpdu::parse(&[0u8; 60]), Err(LldpError::NotLldp));
    }

    #[test]
    fn unknown_and_malformed_dcbx_tlvs_are_skipped() {
        let mut d = sample();
        d.pfc = None;
        let mut f = d.to_bytes(MacAddr([2, 0, 0, 0, 0, 1]));
        // Before End: a PFC TLV one byte short, and an 802.3 org TLV.
        let pos = {
            // Find End: the last TLV header 00 00 the walk reaches.
            let mut off = 14;
            loop {
                let len = usize::from(f[off] & 1) << 8 | usize::from(f[off + 1]);
                if f[off] >> 1 == 0 {
                    break off;
                }
                off += 2 + len;
            }
        };
        let extra = [0xfe, 0x05, 0x00, 0x80, 0xc2, 0x0b, 0x08, 0xfe, 0x04, 0x00, 0x12, 0x0f, 0x01];
        f.splice(pos..pos, extra);
        let got = Lldpdu::parse(&f).unwrap();
        assert_eq!(got.pfc, None);
        assert_eq!(got.skipped, 2);
        assert_eq!(got.app, d.app);
    }

    fn arb_ets() -> impl Strategy<Value = Ets> {
        (
            any::<bool>(),
            any::<bool>(),
            1u8..=8,
            prop::array::uniform8(0u8..16),
            prop::array::uniform8(any::<u8>()),
            prop::array::uniform8(any::<u8>()),
        )
            .prop_map(|(willing, cbs, max_tcs, prio_tc, tc_bw, tsa)| Ets {
                willing,
                cbs,
                max_tcs,
                prio_tc,
                tc_bw,
                tsa: tsa.map(Tsa::from_u8),
            })
    }

    prop_compose! {
        fn arb_lldpdu()(
            chassis in (any::<u8>(), prop::collection::vec(any::<u8>(), 1..255)),
            port in (any::<u8>(), prop::collection::vec(any::<u8>(), 1..255)),
            ttl in any::<u16>(),
            names in prop::option::of("[a-zA-Z0-9 ._-]{0,80}"),
            ets in prop::option::of(arb_ets()),
            rec in prop::option::of(arb_ets()),
            pfc in prop::option::of((any::<bool>(), any::<bool>(), 0u8..16, any::<u8>())),
            app in prop::option::of(prop::collection::vec((0u8..8, 0u8..8, any::<u16>()), 0..40)),
        ) -> Lldpdu {
            Lldpdu {
                chassis_subtype: chassis.0,
                chassis_id: chassis.1,
                port_subtype: port.0,
                port_id: port.1,
                ttl,
                port_description: names.clone(),
                system_name: names.clone().map(|n| n + "x"),
                system_description: names,
                ets_config: ets,
                ets_recommendation: rec.map(|e| Ets { willing: false, cbs: false, max_tcs: 8, ..e }),
                pfc: pfc.map(|(willing, mbc, cap, enable)| PfcTlv { willing, mbc, cap, enable }),
                app: app.map(|v| v.into_iter().map(|(priority, selector, protocol)| AppEntry { priority, selector, protocol }).collect()),
                skipped: 0,
            }
        }
    }

    proptest! {
        /// What we write parses back to itself.
        #[test]
        fn round_trip(d in arb_lldpdu()) {
            let f = d.to_bytes(MacAddr([2, 0, 0, 0, 0, 9]));
            prop_assert_eq!(Lldpdu::parse(&f), Ok(d));
        }

        /// Any bytes: an error or a value, never a panic; a value re-encodes to a frame that
        /// parses to the same value (less what is skipped).
        #[test]
        fn any_bytes(tail in prop::collection::vec(any::<u8>(), 0..600)) {
            let mut f = vec![0x01, 0x80, 0xc2, 0, 0, 0x0e, 2, 0, 0, 0, 0, 1, 0x88, 0xcc];
            f.extend_from_slice(&tail);
            if let Ok(d) = Lldpdu::parse(&f) {
                let again = Lldpdu::parse(&d.to_bytes(MacAddr([2, 0, 0, 0, 0, 1]))).unwrap();
                prop_assert_eq!(again, Lldpdu { skipped: 0, ..d });
            }
        }

        /// Every truncation of a valid frame is refused or parses (never panics).
        #[test]
        fn truncations(d in arb_lldpdu(), cut in 0usize..700) {
            let f = d.to_bytes(MacAddr([2, 0, 0, 0, 0, 9]));
            let _ = Lldpdu::parse(&f[..cut.min(f.len())]);
        }
    }
}
