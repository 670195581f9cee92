//! Turns a validated [`Config`] into the engine's plain inputs: the MMU configuration
//! (with headroom calculated from speed, cable length and MTU where a profile does not
//! give `xoff`), the per-port classification maps, which priorities each priority group
//! pauses, and the scheduler/shaper settings. Pure; the same code runs in `check-config`
//! and in `run`, so a buffer that cannot work is refused before EAL starts.

use crate::classify::QosMaps;
use crate::config::{self, Config, PoolType};
use crate::headroom::{self, Breakdown, HeadroomInputs};
use crate::mmu::{self, MmuConfig, PgProfile, PortMmuConfig, QueueProfile};
use crate::sched::TcSched;
use crate::wred::WredProfile;

/// Everything the dataplane needs to know about one port, derived from the config.
#[derive(Debug, Clone)]
pub struct PortPlan {
    pub qos: QosMaps,
    /// PFC-enabled priorities (bit n = priority n).
    pub pfc_mask: u8,
    /// PGs accounted as lossless by the MMU.
    pub lossless_pgs: u8,
    /// Per PG: the PFC priorities a PAUSE/RESUME of that PG names.
    pub pg_priorities: [u8; 8],
    /// Per priority: the egress queue a received PFC frame for it stops.
    pub priority_queue: [u8; 8],
    pub sched: [TcSched; 8],
    pub shaper_bps: Option<u64>,
    /// Headroom per PG as used (explicit or calculated), for reporting.
    pub headroom: [u64; 8],
    /// The calculator's breakdown for this port's link.
    pub headroom_calc: Breakdown,
    /// Bytes of data the port may have in its TX ring, drained at the link speed (None:
    /// as many as the ring takes).
    pub tx_inflight: Option<u64>,
    /// Per egress queue: the WRED/ECN profile bound to it (`[qos.queue]`).
    pub wred: [Option<WredProfile>; 8],
    /// Egress queues that carry a PFC priority (never dropped by WRED).
    pub lossless_queues: u8,
}

#[derive(Debug, Clone)]
pub struct Plan {
    pub mmu: MmuConfig,
    pub ports: Vec<PortPlan>,
    pub warnings: Vec<String>,
}

/// A buffer configuration the MMU cannot run, named by field like a config error.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{file}: {field}: {msg}")]
pub struct PlanError {
    pub file: String,
    pub field: String,
    pub msg: String,
}

/// Default in-flight bytes on a real link: this many ns of line rate...
pub const TX_INFLIGHT_AUTO_NS: u64 = 4_000;

/// The port's `tx_inflight_limit` in bytes. `auto` on a real link: 4 µs at line rate, but
/// never less than one burst of maximum frames (a smaller limit would split every burst
/// and cost throughput, as Linux's BQL floors its limit at what one completion frees).
pub fn tx_inflight_limit(p: &config::PortConfig, burst_size: u16) -> Option<u64> {
    match p.tx_inflight {
        config::TxInflight::Off => None,
        config::TxInflight::Bytes(b) => Some(b),
        config::TxInflight::Auto if !p.has_real_link() => None,
        config::TxInflight::Auto => {
            let frame = u64::from(headroom::max_frame(u32::from(p.mtu)));
            let t = (u128::from(p.speed_bps) * u128::from(TX_INFLIGHT_AUTO_NS)).div_ceil(8 * 1_000_000_000) as u64;
            Some(t.max(u64::from(burst_size) * frame))
        }
    }
}

/// Build the plan. `sw_response_ns` is this switch's own PFC reaction delay for the
/// headroom calculator: normally `cfg.switch.sw_response_ns` (`[switch] sw_response`,
/// default [`headroom::DEFAULT_SW_RESPONSE_NS`]).
pub fn plan(cfg: &Config, sw_response_ns: u64) -> Result<Plan, PlanError> {
    let err = |field: String, msg: String| PlanError { file: cfg.origin.clone(), field, msg };
    let b = &cfg.buffer;
    let mut warnings = Vec::new();
    let lossless_pool_size: u64 = b.pools.iter().filter(|p| p.kind == PoolType::Ingress).map(|p| p.size).sum();
    let lossy_pool_size: u64 = b.pools.iter().filter(|p| p.kind == PoolType::Egress).map(|p| p.size).sum();
    let mut ports = Vec::new();
    let mut mmu_ports = Vec::new();
    for pi in 0..cfg.ports.len() {
        let (port, mmu_port) = plan_port(cfg, pi, sw_response_ns, &mut warnings)?;
        ports.push(port);
        mmu_ports.push(mmu_port);
    }
    let mut mmu_cfg = MmuConfig {
        total_size: b.total_size,
        cell_size: b.cell_size.max(1),
        lossless_pool_size,
        lossy_pool_size,
        headroom_policy: mmu::HeadroomPolicy::Static,
        release_order: mmu::ReleaseOrder::HeadroomFirst,
        ports: mmu_ports,
    };
    mmu_cfg.headroom_policy = match b.headroom_policy {
        config::HeadroomPolicy::Static => mmu::HeadroomPolicy::Static,
        config::HeadroomPolicy::Dsh => mmu::HeadroomPolicy::Dsh,
        config::HeadroomPolicy::SharedPool { xoff: Some(size), .. } => mmu::HeadroomPolicy::SharedPool { size },
        // SONiC's sizing: the pool holds Σ(xoff of the lossless PGs) / over_subscribe_ratio.
        config::HeadroomPolicy::SharedPool { xoff: None, over_subscribe_ratio } => mmu::HeadroomPolicy::SharedPool {
            size: mmu_cfg.headroom_sum().div_ceil(u64::from(over_subscribe_ratio.unwrap_or(1).max(1))),
        },
    };
    let shared = match mmu_cfg.validate() {
        Ok((shared, _)) => shared,
        Err(e) => {
            let pool = b
                .pools
                .iter()
                .find(|p| p.kind == PoolType::Ingress)
                .map(|p| p.name.as_str())
                .unwrap_or("ingress_lossless_pool");
            return Err(err(format!("buffer.pool.{pool}.size"), e.to_string()));
        }
    };
    ecn_check(cfg, &ports, &mmu_cfg, shared, &mut warnings);
    Ok(Plan { mmu: mmu_cfg, ports, warnings })
}

/// One port's plan and MMU profile: classification, headroom, lossless PGs and queues,
/// scheduler, WRED.
fn plan_port(
    cfg: &Config,
    pi: usize,
    sw_response_ns: u64,
    warnings: &mut Vec<String>,
) -> Result<(PortPlan, PortMmuConfig), PlanError> {
    let p = &cfg.ports[pi];
    let b = &cfg.buffer;
    let qos = QosMaps {
        trust: p.trust,
        dscp_to_tc: cfg.qos.dscp_to_tc,
        dot1p_to_tc: cfg.qos.dot1p_to_tc,
        tc_to_pg: cfg.qos.tc_to_pg,
        tc_to_queue: cfg.qos.tc_to_queue,
        default_tc: p.default_tc,
    };
    let frame = headroom::max_frame(u32::from(p.mtu));
    let tx_inflight = tx_inflight_limit(p, cfg.switch.burst_size);
    // A PFC frame on its own TX queue waits for no data (the one frame already on the
    // wire is `mtu_local`). `auto` may put it there on a NIC; counted as not, to be safe.
    let ahead = match p.control_tx_queue {
        config::ControlTxQueue::On => 0,
        _ => tx_inflight.unwrap_or(0),
    };
    let calc = headroom::compute(&HeadroomInputs {
        speed_bps: p.speed_bps,
        cable_m: p.cable_length_m,
        frame,
        sw_response_ns,
        tx_inflight_bytes: ahead,
    });
    let mut pg_priorities = [0u8; 8];
    for prio in 0..8u8 {
        if p.pfc_mask & (1 << prio) != 0 {
            let pg = qos.tc_to_pg[prio as usize] & 7;
            pg_priorities[pg as usize] |= 1 << prio;
        }
    }
    let (lossless_pgs, pgs, headroom_used) =
        ingress_pgs(cfg, pi, frame, calc.headroom_bytes, &pg_priorities, warnings)?;
    let mut queues = [QueueProfile::default(); 8];
    for q in 0..8 {
        if let Some(prof_idx) = b.queue_profile.get(pi).and_then(|a| a[q]) {
            let prof = &b.profiles[prof_idx];
            queues[q] = QueueProfile { size: prof.size, threshold: mmu_threshold(prof.threshold) };
        }
    }
    // Priority n is TC n on the wire (dot1p identity): its queue is tc_to_queue[n].
    let priority_queue: [u8; 8] = qos.tc_to_queue.map(|q| q & 7);
    let sched = cfg.qos.scheduler.map(|s| match s {
        config::Scheduler::Strict => TcSched::Strict,
        config::Scheduler::Dwrr(w) => TcSched::Dwrr(w as u32),
    });
    let wred = std::array::from_fn(|q| {
        let bound = cfg.qos.queue_wred.get(pi).and_then(|a| a[q])?;
        cfg.qos.wred_profiles[bound].engine()
    });
    let lossless_queues =
        (0..8).filter(|&prio| p.pfc_mask & (1 << prio) != 0).fold(0u8, |m, prio| m | 1 << priority_queue[prio]);
    let port = PortPlan {
        qos,
        pfc_mask: p.pfc_mask,
        lossless_pgs,
        pg_priorities,
        priority_queue,
        sched,
        shaper_bps: p.shaper_bps,
        headroom: headroom_used,
        headroom_calc: calc,
        tx_inflight,
        wred,
        lossless_queues,
    };
    Ok((port, PortMmuConfig { lossless_pgs, pgs, queues }))
}

/// The lossless PGs of port `pi` (an ingress profile and a PFC priority) and their MMU
/// profiles: xoff is the profile's or the calculator's `headroom` (warned about if it
/// differs), never below one `frame`. Returns (lossless mask, profiles, xoff per PG).
fn ingress_pgs(
    cfg: &Config,
    pi: usize,
    frame: u32,
    headroom: u64,
    pg_priorities: &[u8; 8],
    warnings: &mut Vec<String>,
) -> Result<(u8, [PgProfile; 8], [u64; 8]), PlanError> {
    let (p, b) = (&cfg.ports[pi], &cfg.buffer);
    let err = |field: String, msg: String| PlanError { file: cfg.origin.clone(), field, msg };
    let mut lossless_pgs = 0u8;
    let mut pgs = [PgProfile::default(); 8];
    let mut headroom_used = [0u64; 8];
    for pg in 0..8 {
        let Some(prof_idx) = b.pg_profile.get(pi).and_then(|a| a[pg]) else { continue };
        let prof = &b.profiles[prof_idx];
        let pool = &b.pools[prof.pool];
        if pool.kind != PoolType::Ingress || pg_priorities[pg] == 0 {
            continue;
        }
        lossless_pgs |= 1 << pg;
        let field = format!("buffer.profile.{}.xoff", prof.name);
        let xoff = match prof.xoff {
            Some(x) => {
                if let Some(w) = headroom::check_explicit(x, headroom) {
                    warnings.push(format!("{}: {field} on {}|{pg}: {w}", cfg.origin, p.name));
                }
                x
            }
            None => headroom,
        };
        if xoff < frame as u64 {
            return Err(err(
                field,
                format!("headroom {xoff} bytes on {}|{pg} is smaller than one frame ({frame} bytes)", p.name),
            ));
        }
        headroom_used[pg] = xoff;
        pgs[pg] = PgProfile {
            size: prof.size,
            xoff,
            // Defaults: resume two frames above private at the latest, one frame
            // below the Xoff point (SONiC-style xon / xon_offset).
            xon: prof.xon.unwrap_or(2 * frame as u64),
            xon_offset: prof.xon_offset.unwrap_or(frame as u64),
            threshold: mmu_threshold(prof.threshold),
        };
    }
    Ok((lossless_pgs, pgs, headroom_used))
}

/// The config's threshold as the MMU takes it.
fn mmu_threshold(t: config::Threshold) -> mmu::Threshold {
    match t {
        config::Threshold::Dynamic(a) => mmu::Threshold::Dynamic(a),
        config::Threshold::Static(s) => mmu::Threshold::Static(s),
    }
}

/// Where an ingress PG pauses when it is the only congested one: φ + s with s = T =
/// α·(Bs − s), i.e. α·Bs/(1 + α) under Dynamic Threshold (a static limit: itself); with
/// DSH (`dsh`) the queue-level Xoff point s = T − η, i.e. (α·Bs − η)/(1 + α).
pub fn single_pg_xoff_point(pg: &PgProfile, shared: u64, dsh: bool) -> u64 {
    let eta = if dsh { pg.xoff } else { 0 };
    let s = match pg.threshold {
        mmu::Threshold::Dynamic(a) if a >= 0 => {
            let alpha = 1u64 << (a as u32 & 7);
            shared.saturating_mul(alpha).saturating_sub(eta) / (alpha + 1)
        }
        mmu::Threshold::Dynamic(a) => {
            let d = 1u64 << (a.unsigned_abs() as u32 & 15);
            // s = (Bs − s)/d − η ⇔ s = (Bs − d·η)/(d + 1)
            shared.saturating_sub(d.saturating_mul(eta)) / (d + 1)
        }
        mmu::Threshold::Static(s) => s.min(shared).saturating_sub(eta),
    };
    pg.size.saturating_add(s)
}

/// The classic ECN misconfiguration on a lossless queue: a Kmin/Kmax above the depth at
/// which its ingress PG already pauses (one congested sender), so marking starts (or
/// reaches Pmax) only after PFC has stopped the sender. One warning per queue.
fn ecn_check(cfg: &Config, ports: &[PortPlan], mmu_cfg: &MmuConfig, shared: u64, warnings: &mut Vec<String>) {
    let dsh = mmu_cfg.headroom_policy == mmu::HeadroomPolicy::Dsh;
    for (pi, pp) in ports.iter().enumerate() {
        for q in 0..8u8 {
            let Some(w) = pp.wred[q as usize] else { continue };
            if pp.lossless_queues & (1 << q) == 0 {
                continue;
            }
            // The lossless PGs whose priorities use this queue (same profile on every port).
            let xoff = (0..8usize)
                .filter(|&prio| pp.pfc_mask & (1 << prio) != 0 && pp.priority_queue[prio] == q)
                .map(|prio| pp.qos.tc_to_pg[prio] as usize & 7)
                .filter(|&pg| mmu_cfg.ports[pi].lossless_pgs & (1 << pg) != 0)
                .map(|pg| (pg, single_pg_xoff_point(&mmu_cfg.ports[pi].pgs[pg], shared, dsh)))
                .min_by_key(|&(_, x)| x);
            let Some((pg, xoff)) = xoff else { continue };
            let port = &cfg.ports[pi].name;
            if w.min_bytes >= xoff {
                warnings.push(format!(
                    "{}: qos.queue {port}|{q}: green_min_threshold (Kmin) {} bytes is at or above the Xoff point \
                     of PG {pg} (~{xoff} bytes with one congested sender): ECN never marks before PFC pauses",
                    cfg.origin, w.min_bytes
                ));
            } else if w.max_bytes > xoff {
                warnings.push(format!(
                    "{}: qos.queue {port}|{q}: green_max_threshold (Kmax) {} bytes lies above the Xoff point \
                     of PG {pg} (~{xoff} bytes with one congested sender): marking never reaches \
                     green_drop_probability before PFC pauses",
                    cfg.origin, w.max_bytes
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(extra: &str) -> Config {
        let text = format!(
            r#"
[[port]]
name = "Ethernet0"
devargs = "net_null0"
speed = "100G"
cable_length = "300m"
mtu = 9100
[[port]]
name = "Ethernet4"
devargs = "net_null1"
speed = "10G"
mtu = 1500
{extra}
"#
        );
        config::from_str(&text, "t.toml").unwrap()
    }

    #[test]
    fn calculated_headroom_when_xoff_absent() {
        let c = cfg("");
        let p = plan(&c, 10_000).unwrap();
        let calc = &p.ports[0].headroom_calc;
        assert_eq!(p.ports[0].headroom[3], calc.headroom_bytes);
        assert_eq!(p.mmu.ports[0].pgs[3].xoff, calc.headroom_bytes);
        assert_eq!(p.ports[0].lossless_pgs, 0b0001_1000);
        assert_eq!(p.ports[0].pg_priorities[3], 0b1000);
        // Longer cable and faster link need more headroom.
        assert!(p.ports[0].headroom[3] > p.ports[1].headroom[3]);
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    }

    #[test]
    fn configured_sw_response_feeds_the_headroom() {
        let c = cfg("[switch]\nsw_response = \"20us\"\n");
        assert_eq!(c.switch.sw_response_ns, 20_000);
        let p = plan(&c, c.switch.sw_response_ns).unwrap();
        let d = plan(&cfg(""), crate::headroom::DEFAULT_SW_RESPONSE_NS).unwrap();
        let term = |p: &Plan| p.ports[0].headroom_calc.terms.iter().find(|t| t.0 == "sw_response").unwrap().1;
        // 20 µs at 100G = 250 000 B, twice the default's 125 000 B.
        assert_eq!((term(&p), term(&d)), (250_000, 125_000));
        assert_eq!(p.ports[0].headroom[3], d.ports[0].headroom[3] + 125_000);
    }

    #[test]
    fn explicit_small_xoff_warns_with_both_numbers() {
        let c = cfg(r#"
[buffer]
total_size = "12MiB"
[buffer.pool.ingress_lossless_pool]
size = "8MiB"
type = "ingress"
[buffer.pool.egress_lossy_pool]
size = "4MiB"
type = "egress"
[buffer.profile.pg_lossless]
pool = "ingress_lossless_pool"
size = 4096
xoff = 20000
dynamic_th = 0
[buffer.pg]
"Ethernet0|3-4" = "pg_lossless"
"#);
        let p = plan(&c, 10_000).unwrap();
        let calc = p.ports[0].headroom_calc.headroom_bytes;
        assert_eq!(p.mmu.ports[0].pgs[3].xoff, 20000);
        assert_eq!(p.warnings.len(), 2, "{:?}", p.warnings);
        assert!(p.warnings[0].contains("20000") && p.warnings[0].contains(&calc.to_string()), "{}", p.warnings[0]);
    }

    #[test]
    fn headroom_larger_than_pool_is_a_field_error() {
        let c = cfg(r#"
[buffer]
total_size = "256KiB"
"#);
        let e = plan(&c, 10_000).unwrap_err();
        assert!(e.to_string().starts_with("t.toml: buffer.pool.ingress_lossless_pool.size: "), "{e}");
        assert_eq!(e.to_string().lines().count(), 1);
    }

    fn wred(kmin: u64, kmax: u64) -> String {
        format!(
            "[qos.wred_profile.W]\ngreen_min_threshold = {kmin}\ngreen_max_threshold = {kmax}\n\
             ecn = \"ecn_all\"\nwred_green_enable = true\n[qos.queue]\n\"Ethernet0|3\" = {{ wred_profile = \"W\" }}\n\
             \"Ethernet4|1\" = {{ wred_profile = \"W\" }}\n"
        )
    }

    #[test]
    fn wred_bound_per_queue_and_lossless_queues_known() {
        let p = plan(&cfg(&wred(1000, 2000)), 10_000).unwrap();
        assert_eq!(p.ports[0].wred[3].map(|w| (w.min_bytes, w.max_bytes)), Some((1000, 2000)));
        assert!(p.ports[0].wred[1].is_none());
        assert!(p.ports[1].wred[1].is_some());
        assert_eq!(p.ports[0].lossless_queues, 0b1_1000);
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    }

    #[test]
    fn kmax_above_the_xoff_point_warns() {
        let c = cfg(&wred(1000, 2000));
        let p = plan(&c, 10_000).unwrap();
        let shared = p.mmu.validate().unwrap().0;
        let xoff = single_pg_xoff_point(&p.mmu.ports[0].pgs[3], shared, false);
        assert!(xoff > 2000);
        let p = plan(&cfg(&wred(1000, xoff + 1)), 10_000).unwrap();
        assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
        assert!(p.warnings[0].contains("Ethernet0|3: green_max_threshold (Kmax)"), "{}", p.warnings[0]);
        let p = plan(&cfg(&wred(xoff, xoff + 1)), 10_000).unwrap();
        assert!(p.warnings[0].contains("never marks before PFC pauses"), "{}", p.warnings[0]);
        // The lossy queue (Ethernet4|1) is never warned about.
        assert!(p.warnings.iter().all(|w| !w.contains("Ethernet4")));
    }
}
