//! MMU configuration: plain data plus validation. Sizes are bytes; charges are rounded
//! up to `cell_size`.

/// How a buffer limit above the reserved minimum is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threshold {
    /// Dynamic Threshold: limit = α·(free shared bytes of the pool), α = 2^dynamic_th,
    /// dynamic_th in -8..=7 (SONiC/SAI `dynamic_th`).
    Dynamic(i8),
    /// Fixed limit in bytes (SAI `static_th`), still bounded by the pool.
    Static(u64),
}

impl Threshold {
    /// The limit for `free` shared bytes.
    #[inline]
    pub fn limit(self, free: u64) -> u64 {
        match self {
            Threshold::Dynamic(a) if a >= 0 => free.saturating_mul(1u64 << (a as u32 & 7)),
            Threshold::Dynamic(a) => free >> (a.unsigned_abs() as u32 & 15),
            Threshold::Static(s) => s,
        }
    }
}

/// Ingress (port, PG) buffer profile (SONiC BUFFER_PROFILE of a lossless PG).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PgProfile {
    /// Private (reserved minimum) φ, bytes.
    pub size: u64,
    /// Headroom η (SONiC `xoff`), bytes.
    pub xoff: u64,
    /// Xon floor (SONiC/SAI `xon`), bytes of PG usage above `size`.
    pub xon: u64,
    /// Xon hysteresis below the Xoff point (SONiC/SAI `xon_offset`), bytes.
    pub xon_offset: u64,
    /// Shared limit.
    pub threshold: Threshold,
}

impl Default for PgProfile {
    fn default() -> Self {
        PgProfile { size: 0, xoff: 0, xon: 0, xon_offset: 0, threshold: Threshold::Dynamic(0) }
    }
}

/// Egress (port, queue) profile for lossy traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueProfile {
    /// Private (reserved minimum), bytes.
    pub size: u64,
    /// Shared limit on the lossy pool.
    pub threshold: Threshold,
}

impl Default for QueueProfile {
    fn default() -> Self {
        QueueProfile { size: 0, threshold: Threshold::Dynamic(0) }
    }
}

/// One port's profiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PortMmuConfig {
    /// Bit n set: PG n is lossless on this port (derived by the caller from
    /// `pfc_enable` and the TC→PG map). Profiles of lossy PGs are ignored.
    pub lossless_pgs: u8,
    /// Per-PG ingress profiles.
    pub pgs: [PgProfile; 8],
    /// Per-queue egress profiles (lossy pool).
    pub queues: [QueueProfile; 8],
}

/// Where headroom lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HeadroomPolicy {
    /// Each lossless (port, PG) owns its `xoff` bytes, carved out of the lossless pool.
    #[default]
    Static,
    /// SAI/SONiC shared headroom pool (`SAI_BUFFER_POOL_ATTR_XOFF_SIZE`, CONFIG_DB
    /// `BUFFER_POOL|ingress_lossless_pool.xoff`): one pool of `size` bytes, counted inside
    /// the lossless pool, holds every PG's headroom; a PG's `xoff` only caps what it may
    /// take from it. The pool may be smaller than Σ xoff (over-subscribed): all PGs rarely
    /// need their headroom at once.
    SharedPool { size: u64 },
    /// Dynamic and Shared Headroom (Shan et al., ICDCS'23): no per-PG headroom. A PG's
    /// in-flight bytes after its (queue-level) PAUSE, sent at `T(t) − xoff`, land in the
    /// shared segment; a port-level PAUSE (every lossless PG of the port) at `Nq·T(t)` of
    /// the port's summed shared occupancy sends later arrivals to the port's insurance
    /// headroom: one η per port ([`MmuConfig::insurance`], the largest `xoff` of its
    /// lossless PGs), because one link carries at most one η after a PAUSE, whatever the
    /// priorities.
    Dsh,
}

/// Which segment a release returns lossless bytes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReleaseOrder {
    /// Broadcom/ns-3 HPCC order: released bytes leave the PG's headroom first, then
    /// shared, then private, so headroom is empty again before the PG resumes and is
    /// whole for the next PAUSE. PG, pool and queue totals are exactly those charged.
    #[default]
    HeadroomFirst,
    /// Each packet's bytes return to the segment that admission charged.
    AsCharged,
}

/// Everything the MMU needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MmuConfig {
    /// Total buffer B, bytes. Must hold both pools.
    pub total_size: u64,
    /// Accounting granularity: a packet of `len` bytes charges ceil(len/cell)·cell.
    /// 1 = byte accounting.
    pub cell_size: u32,
    /// Ingress lossless pool: Σ private + shared Bs + Σ headroom.
    pub lossless_pool_size: u64,
    /// Egress lossy pool: Σ queue private + shared.
    pub lossy_pool_size: u64,
    /// Headroom policy.
    pub headroom_policy: HeadroomPolicy,
    /// Release order for lossless bytes.
    pub release_order: ReleaseOrder,
    /// Per port, indexed by port id.
    pub ports: Vec<PortMmuConfig>,
}

impl MmuConfig {
    /// `num_ports` identical ports; pools sized by the caller, total = their sum.
    pub fn uniform(
        num_ports: u16,
        lossless_pgs: u8,
        pg: PgProfile,
        queue: QueueProfile,
        lossless_pool_size: u64,
        lossy_pool_size: u64,
    ) -> Self {
        MmuConfig {
            total_size: lossless_pool_size + lossy_pool_size,
            cell_size: 1,
            lossless_pool_size,
            lossy_pool_size,
            headroom_policy: HeadroomPolicy::Static,
            release_order: ReleaseOrder::HeadroomFirst,
            ports: vec![PortMmuConfig { lossless_pgs, pgs: [pg; 8], queues: [queue; 8] }; usize::from(num_ports)],
        }
    }

    /// The part of the lossless pool that is not shared: Σ private over lossless PGs,
    /// plus Σ headroom (static) or the shared headroom pool.
    pub fn lossless_reserved(&self) -> u64 {
        let private = self.lossless_profiles().fold(0u64, |a, g| a.saturating_add(g.size));
        let headroom = match self.headroom_policy {
            HeadroomPolicy::SharedPool { size } => size,
            HeadroomPolicy::Dsh => (0..self.ports.len()).fold(0u64, |a, p| a.saturating_add(self.insurance(p))),
            HeadroomPolicy::Static => self.headroom_sum(),
        };
        private.saturating_add(headroom)
    }

    /// Σ xoff over lossless PGs: the headroom a static policy reserves.
    pub fn headroom_sum(&self) -> u64 {
        self.lossless_profiles().fold(0u64, |a, g| a.saturating_add(g.xoff))
    }

    /// DSH insurance headroom of `port`: the largest `xoff` of its lossless PGs (0 for a
    /// port without any, or an unknown port).
    pub fn insurance(&self, port: usize) -> u64 {
        self.ports.get(port).map_or(0, |p| {
            p.pgs
                .iter()
                .enumerate()
                .filter(|(i, _)| p.lossless_pgs & (1 << i) != 0)
                .map(|(_, g)| g.xoff)
                .max()
                .unwrap_or(0)
        })
    }

    /// The profiles of the lossless PGs (profiles of lossy PGs are ignored).
    fn lossless_profiles(&self) -> impl Iterator<Item = &PgProfile> {
        self.ports
            .iter()
            .flat_map(|p| p.pgs.iter().enumerate().filter(move |(i, _)| p.lossless_pgs & (1 << i) != 0).map(|(_, g)| g))
    }

    /// The most packets the buffer can hold at once: both pools filled with frames of
    /// `min_frame` bytes, each charged whole cells. Every queue a packet may wait in after
    /// admission must hold this many, or an admitted packet could find no place.
    pub fn max_packets(&self, min_frame: u32) -> u64 {
        let cell = u64::from(self.cell_size.max(1));
        let charge = u64::from(min_frame.max(1)).div_ceil(cell) * cell;
        self.lossless_pool_size.saturating_add(self.lossy_pool_size).div_ceil(charge)
    }

    /// Σ queue private sizes.
    pub fn lossy_reserved(&self) -> u64 {
        self.ports.iter().flat_map(|p| p.queues.iter()).fold(0u64, |a, q| a.saturating_add(q.size))
    }

    /// Checks the configuration; on success returns (Bs lossless, Bs lossy).
    pub fn validate(&self) -> Result<(u64, u64), MmuError> {
        if self.ports.is_empty() || self.ports.len() > usize::from(u16::MAX) {
            return Err(MmuError::PortCount(self.ports.len()));
        }
        if self.cell_size == 0 {
            return Err(MmuError::ZeroCellSize);
        }
        let pools = self.lossless_pool_size.saturating_add(self.lossy_pool_size);
        if pools > self.total_size {
            return Err(MmuError::PoolsExceedTotal {
                lossless: self.lossless_pool_size,
                lossy: self.lossy_pool_size,
                total: self.total_size,
            });
        }
        for (port, p) in self.ports.iter().enumerate() {
            let ths = p.pgs.iter().map(|g| g.threshold).chain(p.queues.iter().map(|q| q.threshold));
            for (index, th) in ths.enumerate() {
                if let Threshold::Dynamic(a) = th {
                    if !(-8..=7).contains(&a) {
                        return Err(MmuError::DynamicThOutOfRange { port, index, value: a });
                    }
                }
            }
        }
        let r = self.lossless_reserved();
        if r > self.lossless_pool_size {
            return Err(MmuError::ReservedExceedsPool { pool: "lossless", reserved: r, size: self.lossless_pool_size });
        }
        let q = self.lossy_reserved();
        if q > self.lossy_pool_size {
            return Err(MmuError::ReservedExceedsPool { pool: "lossy", reserved: q, size: self.lossy_pool_size });
        }
        Ok((self.lossless_pool_size - r, self.lossy_pool_size - q))
    }
}

/// Configuration errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MmuError {
    /// 1..=65535 ports are supported.
    #[error("MMU needs 1..=65535 ports, got {0}")]
    PortCount(usize),
    /// `cell_size` must be at least 1.
    #[error("cell_size must be >= 1")]
    ZeroCellSize,
    /// The pools do not fit in the buffer.
    #[error("lossless pool {lossless} B + lossy pool {lossy} B exceed the buffer of {total} B")]
    PoolsExceedTotal { lossless: u64, lossy: u64, total: u64 },
    /// Private + headroom reservations exceed the pool.
    #[error("{pool} pool: reserved {reserved} B exceeds its size {size} B")]
    ReservedExceedsPool { pool: &'static str, reserved: u64, size: u64 },
    /// `dynamic_th` outside -8..=7 (index 0..8 = PGs, 8..16 = queues).
    #[error("port {port} profile {index}: dynamic_th {value} is outside -8..=7")]
    DynamicThOutOfRange { port: usize, index: usize, value: i8 },
    /// A live change ([`crate::mmu::Mmu::set_limits`]) may change limits, not the shape.
    #[error("a live change may set thresholds, headroom, private sizes and Xon only (not ports, lossless PGs, pools, cell size or headroom policy)")]
    ShapeChanged,
}
