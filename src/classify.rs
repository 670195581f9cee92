//! Classification maps: trust mode (`pcp` or `dscp`) → traffic class (TC) → ingress
//! priority group (PG) and egress queue, with SONiC's defaults.
//!
//! Defaults are SONiC's `AZURE` maps from `files/build_templates/qos_config.j2`:
//! * DSCP_TO_TC_MAP: 3→3, 4→4, 5→2, 8→0, 46→5, 48→6, every other DSCP → 1;
//! * TC_TO_PRIORITY_GROUP_MAP: 0,0,0,3,4,0,0,7 for TC 0..7 (TC 7 has its own PG 7 in
//!   SONiC, not PG 0);
//! * DOT1P_TO_TC and TC_TO_QUEUE: identity.

use crate::wire::Parsed;

/// Which header field selects the traffic class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Trust {
    /// 802.1p PCP of the VLAN tag.
    Pcp,
    /// IP DSCP (falls back to PCP for tagged non-IP frames, as SONiC does).
    Dscp,
}

/// SONiC's default DSCP→TC map (`AZURE`).
pub const SONIC_DSCP_TO_TC: [u8; 64] = {
    let mut m = [1u8; 64];
    m[3] = 3;
    m[4] = 4;
    m[5] = 2;
    m[8] = 0;
    m[46] = 5;
    m[48] = 6;
    m
};

/// SONiC's default TC→PG map (`AZURE`): lossless TCs 3 and 4 get their own PGs, TC 7
/// PG 7, everything else shares PG 0.
pub const SONIC_TC_TO_PG: [u8; 8] = [0, 0, 0, 3, 4, 0, 0, 7];

/// Identity map for 8 entries.
pub const IDENTITY_8: [u8; 8] = [0, 1, 2, 3, 4, 5, 6, 7];

/// The per-port QoS maps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QosMaps {
    /// Which field to trust.
    pub trust: Trust,
    /// DSCP (0..63) → TC.
    pub dscp_to_tc: [u8; 64],
    /// 802.1p priority (0..7) → TC.
    pub dot1p_to_tc: [u8; 8],
    /// TC → ingress priority group.
    pub tc_to_pg: [u8; 8],
    /// TC → egress queue.
    pub tc_to_queue: [u8; 8],
    /// TC of frames the trusted field does not cover (untagged non-IP, or untagged under
    /// `trust pcp`).
    pub default_tc: u8,
}

impl Default for QosMaps {
    fn default() -> Self {
        QosMaps {
            trust: Trust::Dscp,
            dscp_to_tc: SONIC_DSCP_TO_TC,
            dot1p_to_tc: IDENTITY_8,
            tc_to_pg: SONIC_TC_TO_PG,
            tc_to_queue: IDENTITY_8,
            default_tc: 0,
        }
    }
}

/// The result of classification.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Class {
    /// Traffic class, 0..=7.
    pub tc: u8,
    /// Ingress priority group, 0..=7.
    pub pg: u8,
    /// Egress queue, 0..=7.
    pub queue: u8,
    /// 802.1p priority used in PFC frames for this traffic: the TC (priority n is
    /// paused by class-enable bit n).
    pub priority: u8,
}

/// A map entry that is not 0..=7.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{map}[{index}] = {value} is out of range (0..=7)")]
pub struct QosMapError {
    /// Map name (e.g. "dscp_to_tc").
    pub map: &'static str,
    /// Key.
    pub index: usize,
    /// Offending value.
    pub value: u8,
}

impl QosMaps {
    /// Classifies a parsed frame. Per packet: no allocation, no panic; out-of-range map
    /// values are masked to 0..=7 (use [`QosMaps::validate`] at configuration time).
    ///
    /// * `trust dscp`: IP → `dscp_to_tc`; tagged non-IP → `dot1p_to_tc`; else `default_tc`.
    /// * `trust pcp`: tagged → `dot1p_to_tc`; else `default_tc`.
    #[inline]
    pub fn classify(&self, p: &Parsed) -> Class {
        let tc = match (self.trust, p.dscp, p.vlan) {
            (Trust::Dscp, Some(d), _) => self.dscp_to_tc[usize::from(d & 63)],
            (_, _, Some(v)) => self.dot1p_to_tc[usize::from(v.pcp & 7)],
            _ => self.default_tc,
        } & 7;
        let i = usize::from(tc);
        Class { tc, pg: self.tc_to_pg[i] & 7, queue: self.tc_to_queue[i] & 7, priority: tc }
    }

    /// Checks every entry is 0..=7.
    pub fn validate(&self) -> Result<(), QosMapError> {
        let maps: [(&'static str, &[u8]); 4] = [
            ("dscp_to_tc", &self.dscp_to_tc),
            ("dot1p_to_tc", &self.dot1p_to_tc),
            ("tc_to_pg", &self.tc_to_pg),
            ("tc_to_queue", &self.tc_to_queue),
        ];
        for (map, m) in maps {
            if let Some((index, &value)) = m.iter().enumerate().find(|(_, v)| **v > 7) {
                return Err(QosMapError { map, index, value });
            }
        }
        if self.default_tc > 7 {
            return Err(QosMapError { map: "default_tc", index: 0, value: self.default_tc });
        }
        Ok(())
    }

    /// The PGs that carry PFC-enabled priorities (priority = TC): the lossless PG mask
    /// to give the MMU for a port with `pfc_enable` (a bitmask from [`pfc_mask`]).
    pub fn lossless_pg_mask(&self, pfc_enable: u8) -> u8 {
        (0..8u8).filter(|tc| pfc_enable & (1 << tc) != 0).fold(0, |m, tc| m | 1 << (self.tc_to_pg[usize::from(tc)] & 7))
    }
}

/// Priorities (e.g. SONiC `pfc_enable: "3,4"` → `[3, 4]`) to a bitmask (`0b0001_1000`).
/// Values above 7 are ignored; see [`pfc_mask_checked`] to reject them.
pub fn pfc_mask(priorities: &[u8]) -> u8 {
    priorities.iter().filter(|&&p| p < 8).fold(0, |m, &p| m | 1 << p)
}

/// Like [`pfc_mask`] but returns the first priority above 7 as an error.
pub fn pfc_mask_checked(priorities: &[u8]) -> Result<u8, u8> {
    match priorities.iter().find(|&&p| p > 7) {
        Some(&p) => Err(p),
        None => Ok(pfc_mask(priorities)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{MacAddr, VlanTag};

    fn parsed(vlan: Option<u8>, dscp: Option<u8>) -> Parsed {
        Parsed {
            dst: MacAddr::BROADCAST,
            src: MacAddr::ZERO,
            vlan: vlan.map(|pcp| VlanTag { pcp, dei: false, vid: 1 }),
            ethertype: if dscp.is_some() { 0x0800 } else { 0x0806 },
            l3_offset: 14,
            dscp,
            ecn: dscp.map(|_| 0),
        }
    }

    #[test]
    fn sonic_defaults() {
        let m = QosMaps::default();
        let tcs: Vec<u8> =
            [0u8, 3, 4, 5, 8, 26, 46, 48, 63].iter().map(|&d| m.classify(&parsed(None, Some(d))).tc).collect();
        assert_eq!(tcs, [1, 3, 4, 2, 0, 1, 5, 6, 1]);
        let c = m.classify(&parsed(Some(6), Some(3)));
        assert_eq!(c, Class { tc: 3, pg: 3, queue: 3, priority: 3 });
        // Tagged non-IP under trust dscp → dot1p map; untagged non-IP → default_tc.
        assert_eq!(m.classify(&parsed(Some(4), None)).tc, 4);
        assert_eq!(m.classify(&parsed(None, None)).tc, 0);
        assert_eq!(m.classify(&parsed(Some(7), None)).pg, 7);
        assert_eq!(m.classify(&parsed(Some(6), None)).pg, 0);
        assert!(m.validate().is_ok());
    }

    #[test]
    fn trust_pcp() {
        let m = QosMaps { trust: Trust::Pcp, default_tc: 2, ..Default::default() };
        assert_eq!(m.classify(&parsed(Some(4), Some(46))).tc, 4);
        assert_eq!(m.classify(&parsed(None, Some(46))).tc, 2);
        assert_eq!(m.classify(&parsed(None, None)).tc, 2);
    }

    #[test]
    fn masks_and_validation() {
        assert_eq!(pfc_mask(&[3, 4]), 0b0001_1000);
        assert_eq!(pfc_mask(&[3, 9]), 0b0000_1000);
        assert_eq!(pfc_mask_checked(&[3, 9]), Err(9));
        assert_eq!(QosMaps::default().lossless_pg_mask(pfc_mask(&[3, 4])), 0b0001_1000);
        let mut m = QosMaps::default();
        m.tc_to_queue[2] = 8;
        assert_eq!(m.validate(), Err(QosMapError { map: "tc_to_queue", index: 2, value: 8 }));
        assert_eq!(m.classify(&parsed(Some(2), None)).queue, 0, "masked, no panic");
        let _ = serde_json::to_string(&Trust::Dscp).map(|s| assert_eq!(s, "\"dscp\""));
    }
}
