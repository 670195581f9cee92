//! `[qos]` maps and scheduler, and the `<port>|<range>` keys of every binding table.

use super::*;

pub(super) fn qos_map<const N: usize>(
    t: &Option<Table>,
    path: &str,
    out: &mut [u8; N],
    key_max: i64,
    val_max: i64,
) -> FResult<()> {
    let Some(t) = t else { return Ok(()) };
    for (k, v) in t {
        let kp = join(path, k);
        let key: i64 =
            k.trim().parse().map_err(|_| FieldError::new(&kp, format!("key '{k}' is not an integer 0..={key_max}")))?;
        let key = in_range(key, 0, key_max, &kp)?;
        let IntLike(val) = de(v, &kp)?;
        out[key as usize] = in_range(val, 0, val_max, &kp)? as u8;
    }
    Ok(())
}

pub(super) fn resolve_qos(raw: &RawQos) -> FResult<QosConfig> {
    let mut q = QosConfig::default();
    qos_map(&raw.dscp_to_tc, "qos.dscp_to_tc", &mut q.dscp_to_tc, 63, 7)?;
    qos_map(&raw.dot1p_to_tc, "qos.dot1p_to_tc", &mut q.dot1p_to_tc, 7, 7)?;
    qos_map(&raw.tc_to_pg, "qos.tc_to_pg", &mut q.tc_to_pg, 7, 7)?;
    qos_map(&raw.tc_to_queue, "qos.tc_to_queue", &mut q.tc_to_queue, 7, 7)?;
    qos_map(&raw.tc_to_dot1p, "qos.tc_to_dot1p", &mut q.tc_to_dot1p, 7, 7)?;
    if let Some(s) = raw.wred_seed {
        q.wred_seed = Some(in_range(s.0, 0, i64::MAX, "qos.wred_seed")? as u64);
    }
    if let Some(t) = &raw.scheduler {
        for (k, v) in t {
            let kp = join("qos.scheduler", k);
            let tc: i64 = k.trim().parse().map_err(|_| FieldError::new(&kp, format!("key '{k}' is not a TC 0..=7")))?;
            let tc = in_range(tc, 0, 7, &kp)? as usize;
            expect_table(v, &kp)?;
            let s: RawScheduler = de(v, &kp)?;
            q.scheduler[tc] = match s.kind.to_ascii_lowercase().as_str() {
                "strict" => {
                    if s.weight.is_some() {
                        return Err(FieldError::new(join(&kp, "weight"), "a STRICT scheduler has no weight"));
                    }
                    Scheduler::Strict
                }
                "dwrr" | "wrr" => {
                    let w = s.weight.ok_or_else(|| {
                        FieldError::new(join(&kp, "weight"), "missing field (DWRR needs a weight 1..=100)")
                    })?;
                    Scheduler::Dwrr(in_range(w.0, 1, 100, &join(&kp, "weight"))? as u8)
                }
                other => {
                    return Err(FieldError::new(
                        join(&kp, "type"),
                        format!("unknown scheduler type '{other}', expected STRICT or DWRR"),
                    ))
                }
            };
        }
    }
    Ok(q)
}

/// `<port>|<n>` or `<port>|<a>-<b>` → (port index, lo, hi).
pub(super) fn parse_binding_key(k: &str, ports: &[PortConfig], path: &str) -> FResult<(usize, u8, u8)> {
    let (pname, range) = k
        .rsplit_once('|')
        .ok_or_else(|| FieldError::new(path, format!("key '{k}' is not '<port>|<n>' or '<port>|<a>-<b>'")))?;
    let port = port_by_name(ports, pname, path)?;
    let num = |s: &str| -> FResult<u8> {
        let n: i64 =
            s.trim().parse().map_err(|_| FieldError::new(path, format!("'{s}' in key '{k}' is not a number 0..=7")))?;
        Ok(in_range(n, 0, 7, path)? as u8)
    };
    let (lo, hi) = match range.split_once('-') {
        Some((a, b)) => (num(a)?, num(b)?),
        None => {
            let n = num(range)?;
            (n, n)
        }
    };
    if lo > hi {
        return Err(FieldError::new(path, format!("empty range {lo}-{hi} in key '{k}'")));
    }
    Ok((port, lo, hi))
}
