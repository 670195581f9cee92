//! Bulk admission: the prefix of a run of packets that one-by-one admission would put
//! in one segment with no threshold crossed, charged at once.

use super::atomic::{raise, try_add_upto};
use super::{Charge, Mmu, Segment};
use std::sync::atomic::Ordering::*;

impl Mmu {
    /// Admits, at once, the longest prefix of a run of packets (their charges `charges`,
    /// each [`Mmu::charged`] of its length, computed once by the caller; all from
    /// (in_port, pg) to (out_port, queue)) that one-by-one admission would put in the same
    /// segment without crossing a threshold and without an edge: one update per counter
    /// for the whole prefix. Returns the segment and the prefix length (≥ 1; each packet's
    /// [`Charge`] is [`Mmu::bulk_charge`]), or `None` when the first packet must be
    /// admitted on its own with [`Mmu::admit`] (it may be the Xoff point, meet an OFF PG,
    /// be dropped...). A batch never hides an Xoff crossing, an Xon check or a drop.
    #[inline]
    pub fn admit_prefix(
        &self,
        in_port: u16,
        pg: u8,
        out_port: u16,
        queue: u8,
        charges: &[u32],
        lossless: bool,
    ) -> Option<(Segment, usize)> {
        let pi = self.idx(in_port, pg)?;
        let qi = self.idx(out_port, queue)?;
        let l = self.limits.load();
        let lim = l.pg_limits.get(pi)?;
        let q = self.queues.get(qi)?;
        if lossless && lim.lossless {
            let st = self.pgs.get(pi)?;
            let (ps, pl) = (self.ports.get(usize::from(in_port))?, l.port_limits.get(usize::from(in_port))?);
            // An OFF PG (or port) checks Xon on every admission: one by one.
            let w = ps.off.load(Relaxed);
            if pl.off_pgs(w) & (1 << pg) != 0 {
                return None;
            }
            let pool = &*self.lossless;
            let room = lim.private.saturating_sub(st.private.load(Relaxed));
            // Private: the packets that fit, in order (each fits after the ones before).
            let (k, sum) = self.prefix(charges, None, |x| x <= room);
            if k > 0 {
                if !try_add_upto(&st.private, sum, lim.private) {
                    return None;
                }
                pool.private.fetch_add(sum, Relaxed);
                let tot = q.lossless.fetch_add(sum, Relaxed) + sum;
                raise(&q.wm, tot + q.private.load(Relaxed) + q.shared.load(Relaxed));
                return Some((Segment::Private, k));
            }
            // Shared: packets that do not fit private, while the PG stays strictly below
            // its Xoff point (T, or T − η with DSH, whose port also stays below Nq·T). T
            // shrinks as the run fills the pool: T after the prefix bounds the T each
            // packet sees.
            let (s0, w0) = (st.shared.load(Relaxed), pool.shared.load(Relaxed));
            let sp0 = if self.dsh { ps.shared.load(Relaxed) } else { 0 };
            let (k, sum) = self.prefix(charges, Some(room), |x| {
                let free = l.bs_lossless.saturating_sub(w0 + x);
                w0 + x <= l.bs_lossless
                    && s0 + x < self.pg_point(lim, free)
                    && (!self.dsh || sp0 + x < self.port_point(pl, free))
            });
            if k == 0 || !try_add_upto(&pool.shared, sum, l.bs_lossless) {
                return None;
            }
            if self.dsh {
                ps.shared.fetch_add(sum, Relaxed);
            }
            let s = st.shared.fetch_add(sum, Relaxed) + sum;
            raise(&st.shared_wm, s);
            raise(&pool.shared_wm, pool.shared.load(Relaxed));
            let tot = q.lossless.fetch_add(sum, Relaxed) + sum;
            raise(&q.wm, tot + q.private.load(Relaxed) + q.shared.load(Relaxed));
            Some((Segment::Shared, k))
        } else {
            let ql = l.q_limits.get(qi)?;
            let pool = &*self.lossy;
            let room = ql.size.saturating_sub(q.private.load(Relaxed));
            let (k, sum) = self.prefix(charges, None, |x| x <= room);
            let seg = if k > 0 {
                if !try_add_upto(&q.private, sum, ql.size) {
                    return None;
                }
                pool.private.fetch_add(sum, Relaxed);
                Segment::LossyPrivate
            } else {
                // One by one, a packet is taken while the queue is below the T it sees;
                // conservatively, the prefix must end at or below T after it.
                let (s0, w0) = (q.shared.load(Relaxed), pool.shared.load(Relaxed));
                let (k2, sum2) = self.prefix(charges, Some(room), |x| {
                    w0 + x <= l.bs_lossy && s0 + x <= ql.threshold.limit(l.bs_lossy - (w0 + x))
                });
                if k2 == 0 || !try_add_upto(&pool.shared, sum2, l.bs_lossy) {
                    return None;
                }
                q.shared.fetch_add(sum2, Relaxed);
                raise(&pool.shared_wm, pool.shared.load(Relaxed));
                let tot = q.lossless.load(Relaxed) + q.private.load(Relaxed) + q.shared.load(Relaxed);
                raise(&q.wm, tot);
                return Some((Segment::LossyShared, k2));
            };
            let tot = q.lossless.load(Relaxed) + q.private.load(Relaxed) + q.shared.load(Relaxed);
            raise(&q.wm, tot);
            Some((seg, k))
        }
    }

    /// The longest prefix of `charges` whose packets each charge more than `above` (if set)
    /// and after each of which `ok(Σ charges so far)` holds: (count, Σ charges). `ok` must
    /// be monotone (true up to some cumulative size, false beyond: every caller's test is
    /// "the counters plus x stay below a limit that only shrinks as x grows"), so when the
    /// whole run passes, every prefix of it does: one pass and one test, not one per packet.
    #[inline]
    fn prefix(&self, charges: &[u32], above: Option<u64>, ok: impl Fn(u64) -> bool) -> (usize, u64) {
        let each = |b: u64| above.is_none_or(|r| b > r);
        // The first packet alone: a run that does not fit at all costs one test.
        match charges.first().map(|&c| u64::from(c)) {
            Some(b) if each(b) && ok(b) => {}
            _ => return (0, 0),
        }
        let (mut total, mut all) = (0u64, true);
        for &c in charges {
            let b = u64::from(c);
            all &= each(b);
            total += b;
        }
        if all && ok(total) {
            return (charges.len(), total);
        }
        let mut sum = 0u64;
        for (i, &c) in charges.iter().enumerate() {
            let b = u64::from(c);
            if !each(b) || !ok(sum + b) {
                return (i, sum);
            }
            sum += b;
        }
        (charges.len(), sum)
    }

    /// The charge of one packet of `len` bytes of a prefix admitted by [`Mmu::admit_prefix`].
    #[inline]
    pub fn bulk_charge(&self, in_port: u16, pg: u8, out_port: u16, queue: u8, len: u32, segment: Segment) -> Charge {
        Charge { bytes: self.charged(len), in_port, out_port, pg, queue, segment }
    }

    /// [`Mmu::charge_bytes`] as a charge's byte count.
    #[inline]
    pub fn charged(&self, len: u32) -> u32 {
        self.charge_bytes(len).min(u64::from(u32::MAX)) as u32
    }
}
