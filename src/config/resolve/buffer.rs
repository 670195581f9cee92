//! `[buffer]`: pools, profiles, PG and queue bindings, or the generated default buffer.

use super::*;
use crate::wire::NUM_TC;

pub(super) fn generated_buffer(
    total_size: u64,
    cell_size: u32,
    headroom_policy: HeadroomPolicy,
    ports: &[PortConfig],
    qos: &QosConfig,
) -> BufferConfig {
    let egress = total_size / 3;
    let ingress = total_size - egress;
    let pools = vec![
        PoolConfig {
            name: "ingress_lossless_pool".into(),
            size: ingress,
            kind: PoolType::Ingress,
            mode: PoolMode::Dynamic,
            xoff: None,
        },
        PoolConfig {
            name: "egress_lossy_pool".into(),
            size: egress,
            kind: PoolType::Egress,
            mode: PoolMode::Dynamic,
            xoff: None,
        },
    ];
    let profiles = vec![
        ProfileConfig {
            name: "pg_lossless_profile".into(),
            pool: 0,
            size: defaults::LOSSLESS_PRIVATE,
            xon: None,
            xoff: None,
            xon_offset: None,
            threshold: Threshold::Dynamic(defaults::LOSSLESS_DYNAMIC_TH),
        },
        ProfileConfig {
            name: "ingress_lossy_profile".into(),
            pool: 0,
            size: 0,
            xon: None,
            xoff: None,
            xon_offset: None,
            threshold: Threshold::Dynamic(defaults::LOSSY_DYNAMIC_TH),
        },
        ProfileConfig {
            name: "queue_lossy_profile".into(),
            pool: 1,
            size: 0,
            xon: None,
            xoff: None,
            xon_offset: None,
            threshold: Threshold::Dynamic(defaults::LOSSY_DYNAMIC_TH),
        },
    ];
    let used_pgs: u8 = qos.tc_to_pg.iter().fold(0, |m, &pg| m | (1 << pg));
    let mut pg_profile = Vec::new();
    let mut queue_profile = Vec::new();
    for p in ports {
        // PFC names priorities; the buffer is bound per PG and per queue: go through the maps.
        let (lossless_pgs, lossless_queues) = p.pfc_enable.iter().fold((0u8, 0u8), |(pgs, qs), &prio| {
            (pgs | 1 << (qos.tc_to_pg[prio as usize] & 7), qs | 1 << (qos.tc_to_queue[prio as usize] & 7))
        });
        let mut pg = [None; NUM_TC];
        let mut q = [None; NUM_TC];
        for n in 0..NUM_TC {
            if lossless_pgs & (1 << n) != 0 {
                pg[n] = Some(0);
            } else if used_pgs & (1 << n) != 0 {
                pg[n] = Some(1);
            }
            if lossless_queues & (1 << n) == 0 {
                q[n] = Some(2);
            }
        }
        pg_profile.push(pg);
        queue_profile.push(q);
    }
    BufferConfig { total_size, cell_size, headroom_policy, pools, profiles, pg_profile, queue_profile, generated: true }
}

/// `[buffer]`: the file's pools, profiles and bindings, or the generated buffer when it
/// names none of them.
pub(super) fn resolve_buffer(
    v: Option<&Value>,
    ports: &[PortConfig],
    qos: &QosConfig,
    ctx: &mut Ctx,
) -> FResult<BufferConfig> {
    let Some(v) = v else {
        return Ok(generated_buffer(defaults::TOTAL_SIZE, defaults::CELL_SIZE, HeadroomPolicy::Static, ports, qos));
    };
    expect_table(v, "buffer")?;
    let raw: RawBuffer = de(v, "buffer")?;
    let (total_size, cell_size, mut headroom_policy) = buffer_scalars(&raw)?;
    if raw.pool.is_none() && raw.profile.is_none() && raw.pg.is_none() && raw.queue.is_none() {
        if matches!(headroom_policy, HeadroomPolicy::SharedPool { over_subscribe_ratio: None, .. }) {
            return Err(FieldError::new(
                "buffer.headroom_policy",
                "\"shared_pool\" with the generated pools needs [buffer] over_subscribe_ratio (pool xoff = Σ PG xoff / ratio)",
            ));
        }
        return Ok(generated_buffer(total_size, cell_size, headroom_policy, ports, qos));
    }

    let mut pools = Vec::new();
    for (name, pv) in raw.pool.iter().flatten() {
        pools.push(resolve_pool(name, pv, &mut headroom_policy)?);
    }
    let sum: u64 = pools.iter().map(|p| p.size).sum();
    if sum > total_size {
        return Err(FieldError::new(
            "buffer.pool",
            format!("pool sizes add up to {}, more than buffer.total_size {}", fmt_bytes(sum), fmt_bytes(total_size)),
        ));
    }
    if matches!(headroom_policy, HeadroomPolicy::SharedPool { xoff: None, over_subscribe_ratio: None }) {
        return Err(FieldError::new(
            "buffer.headroom_policy",
            "\"shared_pool\" needs the ingress lossless pool's xoff (the headroom pool's size) or [buffer] over_subscribe_ratio",
        ));
    }
    let mut profiles = Vec::new();
    for (name, pv) in raw.profile.iter().flatten() {
        profiles.push(resolve_profile(name, pv, &pools)?);
    }
    let pg_profile = bind(&raw.pg, "buffer.pg", PoolType::Ingress, ports, &pools, &profiles)?;
    let queue_profile = bind(&raw.queue, "buffer.queue", PoolType::Egress, ports, &pools, &profiles)?;
    warn_pfc_without_profile(ports, qos, &pg_profile, ctx);
    Ok(BufferConfig {
        total_size,
        cell_size,
        headroom_policy,
        pools,
        profiles,
        pg_profile,
        queue_profile,
        generated: false,
    })
}

/// `buffer.total_size`, `buffer.cell_size` and the headroom policy
/// (`headroom_policy`, `over_subscribe_ratio`).
fn buffer_scalars(raw: &RawBuffer) -> FResult<(u64, u32, HeadroomPolicy)> {
    let total_size = match &raw.total_size {
        Some(h) => bytes(h, "buffer.total_size")?,
        None => defaults::TOTAL_SIZE,
    };
    if total_size == 0 {
        return Err(FieldError::new("buffer.total_size", "must be greater than zero"));
    }
    let cell_size = match raw.cell_size {
        Some(0) | None => 0,
        Some(c) => in_range(c, 32, 16384, "buffer.cell_size")? as u32,
    };
    let over_subscribe_ratio = match raw.over_subscribe_ratio {
        Some(r) => Some(in_range(r, 1, 1000, "buffer.over_subscribe_ratio")? as u32),
        None => None,
    };
    let headroom_policy = match raw.headroom_policy {
        Some(RawHeadroomPolicy::SharedPool) => HeadroomPolicy::SharedPool { xoff: None, over_subscribe_ratio },
        other => {
            if over_subscribe_ratio.is_some() {
                return Err(FieldError::new(
                    "buffer.over_subscribe_ratio",
                    "only applies to headroom_policy = \"shared_pool\"",
                ));
            }
            if other == Some(RawHeadroomPolicy::Dsh) {
                HeadroomPolicy::Dsh
            } else {
                HeadroomPolicy::Static
            }
        }
    };
    Ok((total_size, cell_size, headroom_policy))
}

/// `[buffer.pool.<name>]`. An `xoff` makes it the shared headroom pool: it fills the
/// policy's `xoff` slot (one pool only, and only with `headroom_policy = "shared_pool"`).
fn resolve_pool(name: &str, pv: &Value, headroom_policy: &mut HeadroomPolicy) -> FResult<PoolConfig> {
    let path = join("buffer.pool", name);
    expect_table(pv, &path)?;
    let rp: RawPool = de(pv, &path)?;
    let size = bytes(&rp.size, &join(&path, "size"))?;
    if size == 0 {
        return Err(FieldError::new(join(&path, "size"), "must be greater than zero"));
    }
    let xoff = match &rp.xoff {
        None => None,
        Some(h) => {
            let x = bytes(h, &join(&path, "xoff"))?;
            if rp.kind != RawPoolType::Ingress {
                return Err(FieldError::new(join(&path, "xoff"), "a shared headroom pool lives in an ingress pool"));
            }
            match headroom_policy {
                HeadroomPolicy::SharedPool { xoff: slot @ None, .. } => *slot = Some(x),
                HeadroomPolicy::SharedPool { .. } => {
                    return Err(FieldError::new(
                        join(&path, "xoff"),
                        "only one ingress pool may hold the headroom pool",
                    ))
                }
                HeadroomPolicy::Static | HeadroomPolicy::Dsh => {
                    return Err(FieldError::new(
                        join(&path, "xoff"),
                        "a shared headroom pool needs [buffer] headroom_policy = \"shared_pool\"",
                    ))
                }
            }
            if x > size {
                return Err(FieldError::new(
                    join(&path, "xoff"),
                    format!("{} is more than the pool's size {}", fmt_bytes(x), fmt_bytes(size)),
                ));
            }
            Some(x)
        }
    };
    Ok(PoolConfig {
        name: name.to_string(),
        size,
        kind: match rp.kind {
            RawPoolType::Ingress => PoolType::Ingress,
            RawPoolType::Egress => PoolType::Egress,
        },
        mode: match rp.mode {
            Some(RawPoolMode::Static) => PoolMode::Static,
            _ => PoolMode::Dynamic,
        },
        xoff,
    })
}

/// `[buffer.profile.<name>]`: its pool (by name), private size, xon/xoff (ingress pools
/// only) and threshold (`dynamic_th` or `static_th`).
fn resolve_profile(name: &str, pv: &Value, pools: &[PoolConfig]) -> FResult<ProfileConfig> {
    let path = join("buffer.profile", name);
    expect_table(pv, &path)?;
    let rp: RawProfile = de(pv, &path)?;
    let pool = pools.iter().position(|p| p.name == rp.pool).ok_or_else(|| {
        let v: Vec<&str> = pools.iter().map(|p| p.name.as_str()).collect();
        let names = if v.is_empty() { "none defined".to_string() } else { v.join(", ") };
        FieldError::new(join(&path, "pool"), format!("unknown pool '{}' (pools: {names})", rp.pool))
    })?;
    let size = match &rp.size {
        Some(h) => bytes(h, &join(&path, "size"))?,
        None => 0,
    };
    if size > pools[pool].size {
        return Err(FieldError::new(
            join(&path, "size"),
            format!(
                "private size {} exceeds pool '{}' ({})",
                fmt_bytes(size),
                pools[pool].name,
                fmt_bytes(pools[pool].size)
            ),
        ));
    }
    let opt = |h: &Option<Human>, k: &str| -> FResult<Option<u64>> {
        match h {
            None => Ok(None),
            Some(h) => {
                if pools[pool].kind != PoolType::Ingress {
                    return Err(FieldError::new(
                        join(&path, k),
                        format!(
                            "{k} applies only to profiles of an ingress pool ('{}' is an egress pool)",
                            pools[pool].name
                        ),
                    ));
                }
                Ok(Some(bytes(h, &join(&path, k))?))
            }
        }
    };
    let xon = opt(&rp.xon, "xon")?;
    let xoff = opt(&rp.xoff, "xoff")?;
    let xon_offset = opt(&rp.xon_offset, "xon_offset")?;
    let threshold = match (&rp.dynamic_th, &rp.static_th) {
        (Some(_), Some(_)) => {
            return Err(FieldError::new(join(&path, "static_th"), "give dynamic_th or static_th, not both"))
        }
        (Some(IntLike(d)), None) => Threshold::Dynamic(in_range(*d, -8, 7, &join(&path, "dynamic_th"))? as i8),
        (None, Some(h)) => Threshold::Static(bytes(h, &join(&path, "static_th"))?),
        (None, None) => {
            return Err(FieldError::new(
                join(&path, "dynamic_th"),
                "missing field (a profile needs dynamic_th or static_th)",
            ))
        }
    };
    Ok(ProfileConfig { name: name.to_string(), pool, size, xon, xoff, xon_offset, threshold })
}

/// A warning per PFC-enabled priority whose PG has no profile: it would never send PAUSE.
fn warn_pfc_without_profile(
    ports: &[PortConfig],
    qos: &QosConfig,
    pg_profile: &[[Option<usize>; NUM_TC]],
    ctx: &mut Ctx,
) {
    for p in ports {
        for &prio in &p.pfc_enable {
            let pg = qos.tc_to_pg[prio as usize] & 7;
            if pg_profile[p.index][pg as usize].is_none() {
                ctx.warn(
                    "buffer.pg",
                    format!(
                        "{} has PFC enabled on priority {prio} but no profile for PG {pg}: it will never send PAUSE",
                        p.name
                    ),
                );
            }
        }
    }
}

/// `[buffer.pg]` or `[buffer.queue]` (`section`): `"<port>|<range>" = "<profile>"` →
/// per port, per PG/queue, the profile index. Each profile must live in a pool of kind
/// `want` (PGs: ingress, queues: egress); a PG/queue may be bound once.
fn bind(
    t: &Option<Table>,
    section: &str,
    want: PoolType,
    ports: &[PortConfig],
    pools: &[PoolConfig],
    profiles: &[ProfileConfig],
) -> FResult<Vec<[Option<usize>; NUM_TC]>> {
    let mut out = vec![[None; NUM_TC]; ports.len()];
    let mut by: HashMap<(usize, u8), String> = HashMap::new();
    for (k, pv) in t.iter().flatten() {
        let path = join(section, k);
        let (port, lo, hi) = parse_binding_key(k, ports, &path)?;
        let pname: String = match pv {
            Value::String(s) => s.clone(),
            other => return Err(FieldError::new(&path, format!("expected a profile name (string), found {other}"))),
        };
        let prof = profiles.iter().position(|p| p.name == pname).ok_or_else(|| {
            let v: Vec<&str> = profiles.iter().map(|p| p.name.as_str()).collect();
            FieldError::new(&path, format!("unknown profile '{pname}' (profiles: {})", v.join(", ")))
        })?;
        let pool = &pools[profiles[prof].pool];
        if pool.kind != want {
            return Err(FieldError::new(
                &path,
                format!(
                    "profile '{pname}' uses {} pool '{}', a {} needs an {} pool",
                    match pool.kind {
                        PoolType::Ingress => "ingress",
                        PoolType::Egress => "egress",
                    },
                    pool.name,
                    if want == PoolType::Ingress { "PG" } else { "queue" },
                    match want {
                        PoolType::Ingress => "ingress",
                        PoolType::Egress => "egress",
                    }
                ),
            ));
        }
        for n in lo..=hi {
            if let Some(prev) = by.get(&(port, n)) {
                return Err(FieldError::new(
                    &path,
                    format!(
                        "{} {n} of {} is already bound by {}",
                        if want == PoolType::Ingress { "PG" } else { "queue" },
                        ports[port].name,
                        prev
                    ),
                ));
            }
            by.insert((port, n), path.clone());
            out[port][n as usize] = Some(prof);
        }
    }
    Ok(out)
}
