//! `[switch]`, `[pfcwd]`, and the mbuf count computed from the buffer and rings.

use super::*;

pub(super) fn resolve_pfcwd(raw: &RawPfcwd) -> FResult<crate::pfcwd::PfcwdConfig> {
    let mut c = crate::pfcwd::PfcwdConfig::default();
    if let Some(a) = &raw.action {
        c.action = crate::pfcwd::Action::parse(a)
            .ok_or_else(|| FieldError::new("pfcwd.action", format!("'{a}' is not one of drop, forward, alert")))?;
    }
    let ms = |v: Option<i64>, name: &str, default: u32| -> FResult<u32> {
        match v {
            Some(x) => Ok(in_range(x, 1, 600_000, name)? as u32),
            None => Ok(default),
        }
    };
    c.detection_time_ms = ms(raw.detection_time, "pfcwd.detection_time", c.detection_time_ms)?;
    c.restoration_time_ms = ms(raw.restoration_time, "pfcwd.restoration_time", c.restoration_time_ms)?;
    c.poll_interval_ms = ms(raw.poll_interval, "pfcwd.poll_interval", c.poll_interval_ms)?;
    c.validate().map_err(|(field, msg)| FieldError::new(format!("pfcwd.{field}"), msg))?;
    Ok(c)
}

/// `[lldp]`: ranges as SONiC's (`hello_time` 1..=3600 s, `multiplier` 1..=100), the
/// system name printable and at most 255 bytes, `roce_priority` 0..=7.
pub(super) fn resolve_lldp(raw: &RawLldp) -> FResult<LldpConfig> {
    let mut c = LldpConfig { enabled: raw.enabled.unwrap_or(false), ..LldpConfig::default() };
    if let Some(h) = raw.hello_time {
        c.hello_time_s = in_range(h, 1, 3600, "lldp.hello_time")? as u32;
    }
    if let Some(m) = raw.multiplier {
        c.multiplier = in_range(m, 1, 100, "lldp.multiplier")? as u32;
    }
    if let Some(n) = &raw.system_name {
        if n.is_empty() || n.len() > 255 || n.chars().any(|ch| ch.is_control()) {
            return Err(FieldError::new("lldp.system_name", "must be 1..=255 bytes of printable text"));
        }
        c.system_name = Some(n.clone());
    }
    if let Some(p) = raw.roce_priority {
        c.roce_priority = Some(in_range(p, 0, 7, "lldp.roce_priority")? as u8);
    }
    Ok(c)
}

pub(super) fn resolve_switch(sw: &RawSwitch) -> FResult<SwitchConfig> {
    let fdb_aging_time = match sw.fdb_aging_time {
        Some(v) => in_range(v, 0, 1_000_000, "switch.fdb_aging_time")? as u32,
        None => defaults::FDB_AGING_TIME,
    };
    let fdb_size = match sw.fdb_size {
        Some(v) => pow2_in(v, 16, 1 << 24, "switch.fdb_size")? as usize,
        None => defaults::FDB_SIZE,
    };
    let dflt = crate::fdb::MoveDamping::default();
    let fdb_move_damping = crate::fdb::MoveDamping {
        max_moves: match sw.fdb_move_limit {
            Some(v) => in_range(v, 0, 255, "switch.fdb_move_limit")? as u32,
            None => dflt.max_moves,
        },
        window_s: match sw.fdb_move_window {
            Some(v) => in_range(v, 1, 86_400, "switch.fdb_move_window")? as u32,
            None => dflt.window_s,
        },
        hold_s: match sw.fdb_move_hold {
            Some(v) => in_range(v, 1, 86_400, "switch.fdb_move_hold")? as u32,
            None => dflt.hold_s,
        },
    };
    let rx_ring_size = match sw.rx_ring_size {
        Some(v) => pow2_in(v, 32, 32768, "switch.rx_ring_size")? as u16,
        None => defaults::RX_RING_SIZE,
    };
    let tx_ring_size = match sw.tx_ring_size {
        Some(v) => pow2_in(v, 32, 32768, "switch.tx_ring_size")? as u16,
        None => defaults::TX_RING_SIZE,
    };
    let burst_size = match sw.burst_size {
        Some(v) => in_range(v, 1, MAX_BURST_SIZE as i64, "switch.burst_size")? as u16,
        None => defaults::BURST_SIZE,
    };
    if burst_size > rx_ring_size {
        return Err(FieldError::new(
            "switch.burst_size",
            format!("{burst_size} is larger than rx_ring_size {rx_ring_size}"),
        ));
    }
    if let Some(v) = sw.mbuf_count {
        in_range(v, 0, u32::MAX as i64, "switch.mbuf_count")?;
    }
    let sw_response_ns = match &sw.sw_response {
        Some(h) => parse_duration_ns(&h.text()).map_err(|e| FieldError::new("switch.sw_response", e.to_string()))?,
        None => crate::headroom::DEFAULT_SW_RESPONSE_NS,
    };
    Ok(SwitchConfig {
        fdb_aging_time,
        fdb_size,
        fdb_move_damping,
        burst_size,
        rx_ring_size,
        tx_ring_size,
        mbuf_count: 0,
        mbuf_count_computed: true,
        mbuf_floor: 0,
        sw_response_ns,
        flood_lossless: sw.flood_lossless.unwrap_or(true),
    })
}

pub(super) fn compute_mbufs(
    switch: &mut SwitchConfig,
    raw: &RawSwitch,
    ports: &[PortConfig],
    lcores: &LcoreConfig,
    buffer: &BufferConfig,
    ctx: &mut Ctx,
) -> FResult<()> {
    let per_pkt = (buffer.cell_size as u64).max(64);
    let buffered = buffer.total_size.div_ceil(per_pkt);
    let rings: u64 =
        ports.iter().map(|p| p.rx_queues as u64 * switch.rx_ring_size as u64 + switch.tx_ring_size as u64).sum();
    let inflight = lcores.workers.len() as u64 * switch.burst_size as u64 * 2;
    let cache = (lcores.workers.len() as u64 + 1) * MBUF_CACHE_SIZE as u64 * 3 / 2;
    let floor = rings + inflight + cache;
    let needed = buffered + floor;
    switch.mbuf_floor = floor;
    match raw.mbuf_count {
        Some(n) if n > 0 => {
            let n = n as u64;
            if n < floor {
                return Err(FieldError::new(
                    "switch.mbuf_count",
                    format!(
                        "{n} mbufs cannot even fill the RX/TX rings, bursts and lcore caches (needs at least {floor})"
                    ),
                ));
            }
            if n < needed {
                ctx.warn(
                    "switch.mbuf_count",
                    format!(
                        "{n} mbufs < {needed} needed to fill the buffer with minimum-size packets plus rings: the NIC may drop at RX before the MMU pauses"
                    ),
                );
            }
            switch.mbuf_count = n as u32;
            switch.mbuf_count_computed = false;
        }
        _ => {
            if needed > u32::MAX as u64 {
                return Err(FieldError::new(
                    "switch.mbuf_count",
                    format!("computed mbuf count {needed} is too large; reduce buffer.total_size or set mbuf_count"),
                ));
            }
            switch.mbuf_count = needed as u32;
            switch.mbuf_count_computed = true;
        }
    }
    Ok(())
}
