//! The limits of one configuration, resolved per PG, per queue and per port for
//! admission; replaced whole when the configuration changes.

use super::state::PORT_OFF;
use super::{HeadroomPolicy, MmuConfig, MmuError, QueueProfile, Threshold};

/// Immutable per-port limits.
#[derive(Clone, Copy)]
pub(super) struct PortLimits {
    pub(super) lossless: u8,
    /// DSH: the threshold whose T sets the port-level point `Nq·T` (its lowest lossless
    /// PG's: SONiC gives a port's lossless PGs one profile), the number of lossless PGs
    /// Nq, insurance η_p, Σ xon, Σ xon_offset.
    pub(super) th: Threshold,
    pub(super) nq: u64,
    pub(super) insurance: u64,
    pub(super) xon: u64,
    pub(super) xon_offset: u64,
}

impl PortLimits {
    /// PGs OFF for an OFF-state word: their own bit or the port's.
    #[inline]
    pub(super) fn off_pgs(&self, w: u32) -> u8 {
        (w as u8) | if w & PORT_OFF != 0 { self.lossless } else { 0 }
    }
}

/// Immutable per-PG limits.
#[derive(Clone, Copy)]
pub(super) struct PgLimits {
    pub(super) lossless: bool,
    pub(super) private: u64,
    pub(super) headroom: u64,
    pub(super) xon: u64,
    pub(super) xon_offset: u64,
    pub(super) th: Threshold,
}

/// Every limit of one configuration: replaced whole ([`super::Mmu::set_limits`]), so an
/// admission, a release or an Xon check that loaded it sees one configuration, never a mix.
pub(super) struct Limits {
    pub(super) cfg: MmuConfig,
    pub(super) bs_lossless: u64,
    pub(super) bs_lossy: u64,
    /// The shared headroom pool's size (`HeadroomPolicy::SharedPool`), else None.
    pub(super) hp_cap: Option<u64>,
    pub(super) pg_limits: Box<[PgLimits]>,
    pub(super) q_limits: Box<[QueueProfile]>,
    pub(super) port_limits: Box<[PortLimits]>,
}

impl Limits {
    pub(super) fn new(cfg: MmuConfig) -> Result<Limits, MmuError> {
        let (bs_lossless, bs_lossy) = cfg.validate()?;
        let n = cfg.ports.len();
        let mut pg_limits = Vec::with_capacity(n * 8);
        let mut q_limits = Vec::with_capacity(n * 8);
        let mut port_limits = Vec::with_capacity(n);
        for (pi, p) in cfg.ports.iter().enumerate() {
            let ll = p.pgs.iter().enumerate().filter(|(i, _)| p.lossless_pgs & (1 << i) != 0).map(|(_, g)| g);
            port_limits.push(PortLimits {
                lossless: p.lossless_pgs,
                th: ll.clone().next().map_or(Threshold::Static(0), |g| g.threshold),
                nq: u64::from(p.lossless_pgs.count_ones()),
                insurance: cfg.insurance(pi),
                xon: ll.clone().map(|g| g.xon).sum(),
                xon_offset: ll.map(|g| g.xon_offset).sum(),
            });
            for (i, g) in p.pgs.iter().enumerate() {
                pg_limits.push(PgLimits {
                    lossless: p.lossless_pgs & (1 << i) != 0,
                    private: g.size,
                    headroom: g.xoff,
                    xon: g.xon,
                    xon_offset: g.xon_offset,
                    th: g.threshold,
                });
            }
            q_limits.extend_from_slice(&p.queues);
        }
        Ok(Limits {
            bs_lossless,
            bs_lossy,
            hp_cap: match cfg.headroom_policy {
                HeadroomPolicy::SharedPool { size } => Some(size),
                _ => None,
            },
            pg_limits: pg_limits.into_boxed_slice(),
            q_limits: q_limits.into_boxed_slice(),
            port_limits: port_limits.into_boxed_slice(),
            cfg,
        })
    }
}
