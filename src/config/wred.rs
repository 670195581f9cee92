//! `[qos.wred_profile.<NAME>]` (SONiC `WRED_PROFILE`) and their bindings to egress
//! queues, `[qos.queue] "<port>|<q>" = { wred_profile = "<NAME>" }` (SONiC
//! `QUEUE|<port>|<q>.wred_profile`). There is no policer, so every packet is green: the
//! green fields act; yellow and red are accepted and validated for compatibility.

use serde::{Deserialize, Serialize};

use super::error::{join, FResult, FieldError};
use super::raw::{de, expect_table, Human, IntLike};
use super::resolve::{bytes, in_range, parse_binding_key};
use super::types::{PortConfig, NUM_TC};
use crate::wred::WredProfile;

/// SONiC's `ecn` field: which colours are marked instead of dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EcnMode {
    EcnNone,
    EcnGreen,
    EcnYellow,
    EcnRed,
    EcnGreenYellow,
    EcnGreenRed,
    EcnYellowRed,
    EcnAll,
}

impl EcnMode {
    const ALL: [(&'static str, EcnMode); 8] = [
        ("ecn_none", EcnMode::EcnNone),
        ("ecn_green", EcnMode::EcnGreen),
        ("ecn_yellow", EcnMode::EcnYellow),
        ("ecn_red", EcnMode::EcnRed),
        ("ecn_green_yellow", EcnMode::EcnGreenYellow),
        ("ecn_green_red", EcnMode::EcnGreenRed),
        ("ecn_yellow_red", EcnMode::EcnYellowRed),
        ("ecn_all", EcnMode::EcnAll),
    ];

    pub fn as_str(self) -> &'static str {
        Self::ALL.iter().find(|(_, m)| *m == self).map_or("ecn_none", |(s, _)| s)
    }

    /// Green packets (all of them, without a policer) are ECN-marked.
    pub fn marks_green(self) -> bool {
        matches!(self, EcnMode::EcnGreen | EcnMode::EcnGreenYellow | EcnMode::EcnGreenRed | EcnMode::EcnAll)
    }
}

/// One colour's thresholds as written (bytes, percent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WredColour {
    pub enabled: bool,
    pub min_threshold: Option<u64>,
    pub max_threshold: Option<u64>,
    pub drop_probability: u8,
}

/// A resolved `[qos.wred_profile.<NAME>]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WredProfileConfig {
    pub name: String,
    pub ecn: EcnMode,
    pub green: WredColour,
    pub yellow: WredColour,
    pub red: WredColour,
}

impl WredProfileConfig {
    /// What the dataplane runs: the green colour. None if the profile neither marks nor
    /// drops green packets (it then does nothing without a policer).
    pub fn engine(&self) -> Option<WredProfile> {
        let mark = self.ecn.marks_green();
        if !mark && !self.green.enabled {
            return None;
        }
        Some(WredProfile {
            min_bytes: self.green.min_threshold?,
            max_bytes: self.green.max_threshold?,
            probability_pct: self.green.drop_probability,
            mark,
            drop: self.green.enabled,
        })
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWredProfile {
    green_min_threshold: Option<Human>,
    green_max_threshold: Option<Human>,
    green_drop_probability: Option<IntLike>,
    wred_green_enable: Option<bool>,
    yellow_min_threshold: Option<Human>,
    yellow_max_threshold: Option<Human>,
    yellow_drop_probability: Option<IntLike>,
    wred_yellow_enable: Option<bool>,
    red_min_threshold: Option<Human>,
    red_max_threshold: Option<Human>,
    red_drop_probability: Option<IntLike>,
    wred_red_enable: Option<bool>,
    ecn: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQueueBinding {
    wred_profile: Option<String>,
}

fn colour(
    path: &str,
    c: &str,
    min: &Option<Human>,
    max: &Option<Human>,
    prob: Option<IntLike>,
    enable: Option<bool>,
    marked: bool,
) -> FResult<WredColour> {
    let min_p = join(path, &format!("{c}_min_threshold"));
    let max_p = join(path, &format!("{c}_max_threshold"));
    let min = min.as_ref().map(|h| bytes(h, &min_p)).transpose()?;
    let max = max.as_ref().map(|h| bytes(h, &max_p)).transpose()?;
    let enabled = enable.unwrap_or(false);
    // SONiC writes 100 when a colour is enabled and its probability is absent.
    let drop_probability = match prob {
        Some(p) => in_range(p.0, 0, 100, &join(path, &format!("{c}_drop_probability")))? as u8,
        None => 100,
    };
    if let (Some(lo), Some(hi)) = (min, max) {
        if lo > hi {
            return Err(FieldError::new(min_p, format!("{lo} is above {c}_max_threshold {hi}")));
        }
    }
    if enabled || marked {
        if min.is_none() {
            return Err(FieldError::new(min_p, "missing field (the colour is enabled or ECN-marked)"));
        }
        if max.is_none() {
            return Err(FieldError::new(max_p, "missing field (the colour is enabled or ECN-marked)"));
        }
    }
    Ok(WredColour { enabled, min_threshold: min, max_threshold: max, drop_probability })
}

/// Per port, per egress queue: an index into the profiles.
pub(crate) type QueueBindings = Vec<[Option<usize>; NUM_TC]>;

/// The profiles of `[qos.wred_profile]` and, per port, the profile bound to each egress
/// queue by `[qos.queue]` (empty when nothing is bound).
pub(crate) fn resolve(qos: &toml::Table, ports: &[PortConfig]) -> FResult<(Vec<WredProfileConfig>, QueueBindings)> {
    let mut profiles = Vec::new();
    if let Some(v) = qos.get("wred_profile") {
        for (name, pv) in expect_table(v, "qos.wred_profile")? {
            let path = join("qos.wred_profile", name);
            expect_table(pv, &path)?;
            let r: RawWredProfile = de(pv, &path)?;
            let ecn = match &r.ecn {
                None => EcnMode::EcnNone,
                Some(s) => EcnMode::ALL.iter().find(|(n, _)| n == s).map(|(_, m)| *m).ok_or_else(|| {
                    let names: Vec<&str> = EcnMode::ALL.iter().map(|(n, _)| *n).collect();
                    FieldError::new(
                        join(&path, "ecn"),
                        format!("unknown value '{s}', expected one of {}", names.join(", ")),
                    )
                })?,
            };
            let green = colour(
                &path,
                "green",
                &r.green_min_threshold,
                &r.green_max_threshold,
                r.green_drop_probability,
                r.wred_green_enable,
                ecn.marks_green(),
            )?;
            let yellow = colour(
                &path,
                "yellow",
                &r.yellow_min_threshold,
                &r.yellow_max_threshold,
                r.yellow_drop_probability,
                r.wred_yellow_enable,
                false,
            )?;
            let red = colour(
                &path,
                "red",
                &r.red_min_threshold,
                &r.red_max_threshold,
                r.red_drop_probability,
                r.wred_red_enable,
                false,
            )?;
            profiles.push(WredProfileConfig { name: name.clone(), ecn, green, yellow, red });
        }
    }
    let mut bound = vec![[None; NUM_TC]; ports.len()];
    if let Some(v) = qos.get("queue") {
        for (k, bv) in expect_table(v, "qos.queue")? {
            let path = join("qos.queue", k);
            let (port, lo, hi) = parse_binding_key(k, ports, &path)?;
            expect_table(bv, &path)?;
            let b: RawQueueBinding = de(bv, &path)?;
            let Some(name) = b.wred_profile else { continue };
            let idx = profiles.iter().position(|p| p.name == name).ok_or_else(|| {
                let v: Vec<&str> = profiles.iter().map(|p| p.name.as_str()).collect();
                FieldError::new(
                    join(&path, "wred_profile"),
                    format!(
                        "unknown WRED profile '{name}' (profiles: {})",
                        if v.is_empty() { "none".to_string() } else { v.join(", ") }
                    ),
                )
            })?;
            for q in lo..=hi {
                bound[port][q as usize] = Some(idx);
            }
        }
    }
    // No binding at all: empty, like the default (look bindings up with `.get(port)`).
    if bound.iter().all(|q| q.iter().all(Option::is_none)) {
        bound.clear();
    }
    Ok((profiles, bound))
}
