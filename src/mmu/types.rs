//! Values the MMU hands out: verdicts, charge tokens, edges, drop reasons, snapshots.

/// The buffer segment a packet was charged to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Segment {
    /// Lossless PG private (reserved minimum).
    Private,
    /// Lossless pool shared segment (Dynamic Threshold).
    Shared,
    /// Lossless PG headroom (only while the PG is OFF); with DSH, the port's insurance
    /// headroom (only while the port is OFF).
    Headroom,
    /// Lossy egress queue private.
    LossyPrivate,
    /// Lossy pool shared segment.
    LossyShared,
}

impl Segment {
    /// True for the three ingress lossless segments.
    #[inline]
    pub const fn is_lossless(self) -> bool {
        matches!(self, Segment::Private | Segment::Shared | Segment::Headroom)
    }
}

/// What one admitted packet was charged: the datapath keeps it beside the mbuf and gives
/// it back to [`crate::mmu::Mmu::release`] exactly once (releasing twice corrupts the
/// accounting). 12 bytes, `Copy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Charge {
    pub(crate) bytes: u32,
    pub(crate) in_port: u16,
    pub(crate) out_port: u16,
    pub(crate) pg: u8,
    pub(crate) queue: u8,
    pub(crate) segment: Segment,
}

impl Charge {
    /// Bytes charged (after cell rounding).
    #[inline]
    pub const fn bytes(&self) -> u32 {
        self.bytes
    }
    /// Ingress port.
    #[inline]
    pub const fn in_port(&self) -> u16 {
        self.in_port
    }
    /// Ingress PG.
    #[inline]
    pub const fn pg(&self) -> u8 {
        self.pg
    }
    /// Egress port.
    #[inline]
    pub const fn out_port(&self) -> u16 {
        self.out_port
    }
    /// Egress queue.
    #[inline]
    pub const fn queue(&self) -> u8 {
        self.queue
    }
    /// Segment charged at admission.
    #[inline]
    pub const fn segment(&self) -> Segment {
        self.segment
    }
    /// Admitted as lossless.
    #[inline]
    pub const fn is_lossless(&self) -> bool {
        self.segment.is_lossless()
    }
    /// The same account with `bytes` charged (the TX side keeps one account per run of
    /// packets and each packet's bytes beside it).
    #[inline]
    pub const fn with_bytes(self, bytes: u32) -> Charge {
        Charge { bytes, ..self }
    }
    /// Charged to the same counters as `o` (all but the bytes equal): such charges may
    /// be released together with [`crate::mmu::Mmu::release_run`].
    #[inline]
    pub fn same_account(&self, o: &Charge) -> bool {
        self.in_port == o.in_port
            && self.out_port == o.out_port
            && self.pg == o.pg
            && self.queue == o.queue
            && self.segment == o.segment
    }
}

/// PAUSE (ON→OFF) or RESUME (OFF→ON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EdgeKind {
    /// The PG crossed its Xoff point: send PFC PAUSE for its priorities.
    Pause,
    /// The PG fell to its Xon threshold: send PFC RESUME.
    Resume,
}

/// A change of PG states on one port, all in one direction; the caller decides what to
/// send. One PG, except a DSH port-level PAUSE or RESUME, which names every lossless PG
/// of the port whose state it changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Edge {
    /// Ingress port.
    pub port: u16,
    /// The PGs that changed: bit n = PG n.
    pub pgs: u8,
    /// Direction.
    pub kind: EdgeKind,
}

impl Edge {
    /// An edge of one PG.
    pub const fn one(port: u16, pg: u8, kind: EdgeKind) -> Edge {
        Edge { port, pgs: 1 << (pg & 7), kind }
    }

    /// The PG, when the edge names exactly one.
    pub const fn single_pg(&self) -> Option<u8> {
        if self.pgs.count_ones() == 1 {
            Some(self.pgs.trailing_zeros() as u8)
        } else {
            None
        }
    }

    /// The PGs it names, lowest first.
    pub fn pg_iter(&self) -> impl Iterator<Item = u8> {
        let m = self.pgs;
        (0..8u8).filter(move |g| m & (1 << g) != 0)
    }
}

/// Why a packet was not admitted. `as_str` names are stable counter keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// Lossless PG: private, shared and headroom all full. Headroom is undersized or
    /// the peer ignores PAUSE: count it loudly.
    LosslessHeadroomFull,
    /// Lossy queue above its Dynamic/static threshold.
    LossyDt,
    /// Lossy pool shared segment exhausted.
    LossyPoolFull,
    /// Port, PG or queue index out of range.
    InvalidIndex,
    /// Packet larger than 4 GiB after cell rounding.
    Oversize,
}

impl Refusal {
    /// Every reason, for counter tables.
    pub const ALL: [Refusal; 5] = [
        Refusal::LosslessHeadroomFull,
        Refusal::LossyDt,
        Refusal::LossyPoolFull,
        Refusal::InvalidIndex,
        Refusal::Oversize,
    ];

    /// Counter key.
    pub const fn as_str(&self) -> &'static str {
        match self {
            Refusal::LosslessHeadroomFull => "lossless_headroom_full",
            Refusal::LossyDt => "lossy_dt",
            Refusal::LossyPoolFull => "lossy_pool_full",
            Refusal::InvalidIndex => "invalid_index",
            Refusal::Oversize => "oversize",
        }
    }

    /// Dense index 0..ALL.len(), for counter arrays.
    pub const fn index(&self) -> usize {
        *self as usize
    }
}

/// Admission result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Enqueue; keep `charge`; act on `edge` if any.
    Admit { charge: Charge, edge: Option<Edge> },
    /// Free the packet and count the reason; act on `edge` if any (a lossless packet
    /// dropped at or over its PG's Xoff point pauses the PG all the same).
    Drop { reason: Refusal, edge: Option<Edge> },
}

impl Verdict {
    /// The charge, if admitted.
    pub fn charge(&self) -> Option<Charge> {
        match self {
            Verdict::Admit { charge, .. } => Some(*charge),
            Verdict::Drop { .. } => None,
        }
    }
    /// The edge, if any (admitted or not).
    pub fn edge(&self) -> Option<Edge> {
        match self {
            Verdict::Admit { edge, .. } | Verdict::Drop { edge, .. } => *edge,
        }
    }
    /// The reason, if dropped.
    pub fn drop_reason(&self) -> Option<Refusal> {
        match self {
            Verdict::Admit { .. } => None,
            Verdict::Drop { reason, .. } => Some(*reason),
        }
    }
    /// A drop without an edge.
    pub const fn drop(reason: Refusal) -> Verdict {
        Verdict::Drop { reason, edge: None }
    }
}

/// Bytes held by one ingress (port, PG).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PgOccupancy {
    /// In the private segment.
    pub private: u64,
    /// In the shared segment.
    pub shared: u64,
    /// In headroom.
    pub headroom: u64,
    /// Sum.
    pub total: u64,
}

/// High-water marks of one PG since creation or the last reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PgWatermarks {
    /// Shared segment.
    pub shared: u64,
    /// Headroom.
    pub headroom: u64,
}

/// Bytes held by one egress (port, queue).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueOccupancy {
    /// Lossless bytes (accounted at ingress, counted here for visibility/ECN).
    pub lossless: u64,
    /// Lossy private.
    pub private: u64,
    /// Lossy shared.
    pub shared: u64,
    /// Sum.
    pub total: u64,
    /// High-water mark of `total`.
    pub watermark: u64,
}

/// Lossless ingress pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LosslessPoolStats {
    /// Configured size.
    pub size: u64,
    /// Shared segment Bs = size − Σ(private + headroom) of lossless PGs.
    pub shared_size: u64,
    /// Private bytes in use.
    pub private_used: u64,
    /// Σω: shared bytes in use.
    pub shared_used: u64,
    /// Headroom bytes in use.
    pub headroom_used: u64,
    /// High-water mark of `shared_used`.
    pub shared_watermark: u64,
    /// High-water mark of `headroom_used`.
    pub headroom_watermark: u64,
    /// The shared headroom pool's size (`xoff`, `shared_pool`), or Σ insurance headroom
    /// over the ports (`dsh`); 0 with per-PG (static) headroom.
    pub headroom_pool_size: u64,
}

/// Lossy egress pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LossyPoolStats {
    /// Configured size.
    pub size: u64,
    /// Shared segment = size − Σ queue private.
    pub shared_size: u64,
    /// Private bytes in use.
    pub private_used: u64,
    /// Shared bytes in use.
    pub shared_used: u64,
    /// High-water mark of `shared_used`.
    pub shared_watermark: u64,
}

/// Both pools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PoolStats {
    /// Lossless ingress pool.
    pub lossless: LosslessPoolStats,
    /// Lossy egress pool.
    pub lossy: LossyPoolStats,
}
