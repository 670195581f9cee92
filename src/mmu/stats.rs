//! What the MMU shows: OFF states, occupancy, watermarks, current thresholds.

use super::state::PORT_OFF;
use super::{
    HeadroomPolicy, LosslessPoolStats, LossyPoolStats, Mmu, PgOccupancy, PgWatermarks, PoolStats, QueueOccupancy,
};
use std::sync::atomic::Ordering::*;

impl Mmu {
    /// True while (port, PG) is OFF (PAUSE asserted, RESUME not yet due): the PG, or with
    /// DSH its port, reached its Xoff point and not yet its Xon point.
    pub fn is_off(&self, port: u16, pg: u8) -> bool {
        self.idx(port, pg).is_some()
            && self
                .ports
                .get(usize::from(port))
                .zip(self.limits.load().port_limits.get(usize::from(port)))
                .is_some_and(|(s, l)| l.off_pgs(s.off.load(Acquire)) & (1 << pg) != 0)
    }

    /// True while the port as a whole is OFF (DSH port-level PAUSE).
    pub fn is_port_off(&self, port: u16) -> bool {
        self.ports.get(usize::from(port)).is_some_and(|s| s.off.load(Acquire) & PORT_OFF != 0)
    }

    /// DSH: the port's summed shared occupancy and its insurance headroom in use (zeros in
    /// the other modes).
    pub fn port_occupancy(&self, port: u16) -> (u64, u64) {
        self.ports.get(usize::from(port)).map_or((0, 0), |s| (s.shared.load(Relaxed), s.insurance.load(Relaxed)))
    }

    /// Bytes held by (port, PG); zeros for an invalid index.
    pub fn pg_occupancy(&self, port: u16, pg: u8) -> PgOccupancy {
        let Some(s) = self.idx(port, pg).and_then(|i| self.pgs.get(i)) else {
            return PgOccupancy::default();
        };
        let (private, shared, headroom) = (s.private.load(Relaxed), s.shared.load(Relaxed), s.headroom.load(Relaxed));
        PgOccupancy { private, shared, headroom, total: private + shared + headroom }
    }

    /// High-water marks of (port, PG).
    pub fn pg_watermarks(&self, port: u16, pg: u8) -> PgWatermarks {
        let Some(s) = self.idx(port, pg).and_then(|i| self.pgs.get(i)) else {
            return PgWatermarks::default();
        };
        PgWatermarks { shared: s.shared_wm.load(Relaxed), headroom: s.headroom_wm.load(Relaxed) }
    }

    /// Headroom (`xoff`) of (port, PG) in force: the profile's, or the calculator's where
    /// the profile has none (a live change included); 0 for a lossy PG or an invalid index.
    pub fn pg_xoff(&self, port: u16, pg: u8) -> u64 {
        let l = self.limits.load();
        l.cfg
            .ports
            .get(usize::from(port))
            .filter(|p| pg < 8 && p.lossless_pgs & (1 << pg) != 0)
            .map_or(0, |p| p.pgs[usize::from(pg)].xoff)
    }

    /// Bytes held by egress (port, queue).
    pub fn queue_occupancy(&self, port: u16, queue: u8) -> QueueOccupancy {
        let Some(q) = self.idx(port, queue).and_then(|i| self.queues.get(i)) else {
            return QueueOccupancy::default();
        };
        let (lossless, private, shared) = (q.lossless.load(Relaxed), q.private.load(Relaxed), q.shared.load(Relaxed));
        QueueOccupancy { lossless, private, shared, total: lossless + private + shared, watermark: q.wm.load(Relaxed) }
    }

    /// Both pools' usage and watermarks.
    pub fn pool_stats(&self) -> PoolStats {
        let (l, y) = (&*self.lossless, &*self.lossy);
        let lim = self.limits.load();
        PoolStats {
            lossless: LosslessPoolStats {
                size: lim.cfg.lossless_pool_size,
                shared_size: lim.bs_lossless,
                private_used: l.private.load(Relaxed),
                shared_used: l.shared.load(Relaxed),
                headroom_used: l.headroom.load(Relaxed),
                shared_watermark: l.shared_wm.load(Relaxed),
                headroom_watermark: l.headroom_wm.load(Relaxed),
                headroom_pool_size: match lim.cfg.headroom_policy {
                    HeadroomPolicy::SharedPool { size } => size,
                    HeadroomPolicy::Dsh => lim.port_limits.iter().map(|p| p.insurance).sum(),
                    HeadroomPolicy::Static => 0,
                },
            },
            lossy: LossyPoolStats {
                size: lim.cfg.lossy_pool_size,
                shared_size: lim.bs_lossy,
                private_used: y.private.load(Relaxed),
                shared_used: y.shared.load(Relaxed),
                shared_watermark: y.shared_wm.load(Relaxed),
            },
        }
    }

    /// Free shared bytes of the lossless pool, Bs − Σω: the pool's T for α = 1. Each PG's
    /// actual limit is [`Mmu::pg_threshold`].
    pub fn threshold(&self) -> u64 {
        self.limits.load().bs_lossless.saturating_sub(self.lossless.shared.load(Relaxed))
    }

    /// Free shared bytes of the lossy pool (T for α = 1).
    pub fn lossy_threshold(&self) -> u64 {
        self.limits.load().bs_lossy.saturating_sub(self.lossy.shared.load(Relaxed))
    }

    /// Current shared limit T of (port, PG).
    pub fn pg_threshold(&self, port: u16, pg: u8) -> u64 {
        let l = self.limits.load();
        let free = l.bs_lossless.saturating_sub(self.lossless.shared.load(Relaxed));
        self.idx(port, pg).and_then(|i| l.pg_limits.get(i)).map_or(0, |g| g.th.limit(free))
    }

    /// Current Xon threshold of (port, PG): max(xon, T − xon_offset), at most the Xoff point.
    pub fn pg_xon_threshold(&self, port: u16, pg: u8) -> u64 {
        let l = self.limits.load();
        self.idx(port, pg).and_then(|i| l.pg_limits.get(i)).map_or(0, |g| self.xon_threshold(&l, g))
    }

    /// Current lossy shared limit of egress (port, queue).
    pub fn queue_threshold(&self, port: u16, queue: u8) -> u64 {
        let l = self.limits.load();
        let free = l.bs_lossy.saturating_sub(self.lossy.shared.load(Relaxed));
        self.idx(port, queue).and_then(|i| l.q_limits.get(i)).map_or(0, |q| q.threshold.limit(free))
    }

    /// Resets every watermark to the current occupancy.
    pub fn reset_watermarks(&self) {
        for s in self.pgs.iter() {
            s.shared_wm.store(s.shared.load(Relaxed), Relaxed);
            s.headroom_wm.store(s.headroom.load(Relaxed), Relaxed);
        }
        for q in self.queues.iter() {
            q.wm.store(q.lossless.load(Relaxed) + q.private.load(Relaxed) + q.shared.load(Relaxed), Relaxed);
        }
        for p in [&*self.lossless, &*self.lossy] {
            p.shared_wm.store(p.shared.load(Relaxed), Relaxed);
            p.headroom_wm.store(p.headroom.load(Relaxed), Relaxed);
        }
    }
}
