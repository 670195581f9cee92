//! `[qos.wred_profile.<NAME>]` (SONiC `WRED_PROFILE`) and their bindings to egress
//! queues, `[qos.queue] "<port>|<q>" = { wred_profile = "<NAME>" }` (SONiC
//! `QUEUE|<port>|<q>.wred_profile`). There is no policer, so every packet is green: the
//! green fields act; yellow and red are accepted and validated for compatibility.

use super::*;
use crate::wire::NUM_TC;

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
type QueueBindings = Vec<[Option<usize>; NUM_TC]>;

/// The profiles of `[qos.wred_profile]` and, per port, the profile bound to each egress
/// queue by `[qos.queue]` (empty when nothing is bound).
pub(super) fn resolve(qos: &toml::Table, ports: &[PortConfig]) -> FResult<(Vec<WredProfileConfig>, QueueBindings)> {
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
