//! Releases: what a charge took goes back to its segment and pool, then Xon is checked.

use super::atomic::take_upto;
use super::{Charge, Edge, Mmu, ReleaseOrder, Segment};
use std::sync::atomic::Ordering::*;

impl Mmu {
    /// Returns what `c` charged (the packet left or was dropped after admission); may
    /// produce a RESUME edge.
    #[inline]
    pub fn release(&self, c: Charge) -> Option<Edge> {
        self.release_bytes(c, u64::from(c.bytes))
    }

    /// Releases several charges at once: `c` and every other charge of the run have the
    /// same ports, PG, queue and segment ([`Charge::same_account`]), `bytes` is the sum
    /// of their bytes. The end state equals releasing them one by one; Xon is checked
    /// once, after the whole run.
    #[inline]
    pub fn release_run(&self, c: Charge, bytes: u64) -> Option<Edge> {
        self.release_bytes(c, bytes)
    }

    #[inline]
    fn release_bytes(&self, c: Charge, b: u64) -> Option<Edge> {
        let (Some(pi), Some(qi)) = (self.idx(c.in_port, c.pg), self.idx(c.out_port, c.queue)) else {
            return None;
        };
        let q = self.queues.get(qi)?;
        if !c.segment.is_lossless() {
            let pool = &*self.lossy;
            let (qc, pc) = match c.segment {
                Segment::LossyPrivate => (&q.private, &pool.private),
                _ => (&q.shared, &pool.shared),
            };
            qc.fetch_sub(b, Relaxed);
            pc.fetch_sub(b, Relaxed);
            return None;
        }
        let l = self.limits.load();
        let st = self.pgs.get(pi)?;
        let lim = l.pg_limits.get(pi)?;
        let (ps, pl) = (self.ports.get(usize::from(c.in_port))?, l.port_limits.get(usize::from(c.in_port))?);
        let pool = &*self.lossless;
        // DSH keeps per-port sums of the shared and insurance bytes.
        let port_sum = |seg: Segment, n: u64| {
            if self.dsh {
                match seg {
                    Segment::Shared => ps.shared.fetch_sub(n, Relaxed),
                    Segment::Headroom => ps.insurance.fetch_sub(n, Relaxed),
                    _ => 0,
                };
            }
        };
        match l.cfg.release_order {
            ReleaseOrder::AsCharged => {
                let (sc, pc) = match c.segment {
                    Segment::Private => (&st.private, &pool.private),
                    Segment::Shared => (&st.shared, &pool.shared),
                    _ => (&st.headroom, &pool.headroom),
                };
                sc.fetch_sub(b, Relaxed);
                pc.fetch_sub(b, Relaxed);
                port_sum(c.segment, b);
            }
            ReleaseOrder::HeadroomFirst => {
                let mut rest = b;
                // One pass in practice; more only if concurrent admissions refill a
                // segment this release already looked at (the PG's segments always
                // hold at least `rest` bytes between them).
                for _ in 0..1024 {
                    for (seg, sc, pc) in [
                        (Segment::Headroom, &st.headroom, &pool.headroom),
                        (Segment::Shared, &st.shared, &pool.shared),
                        (Segment::Private, &st.private, &pool.private),
                    ] {
                        let got = take_upto(sc, rest);
                        if got != 0 {
                            pc.fetch_sub(got, Relaxed);
                            port_sum(seg, got);
                            rest -= got;
                        }
                        if rest == 0 {
                            break;
                        }
                    }
                    if rest == 0 {
                        break;
                    }
                    std::hint::spin_loop();
                }
            }
        }
        q.lossless.fetch_sub(b, Relaxed);
        self.try_resume(&l, c.in_port, c.pg, st, lim, ps, pl)
    }

    /// Re-evaluates Xon for (port, PG) without a packet event: T grows when *other* PGs
    /// release, so the control lcore may call this periodically for OFF PGs.
    pub fn check_resume(&self, port: u16, pg: u8) -> Option<Edge> {
        let i = self.idx(port, pg)?;
        let l = self.limits.load();
        let (st, lim) = (self.pgs.get(i)?, l.pg_limits.get(i)?);
        let (ps, pl) = (self.ports.get(usize::from(port))?, l.port_limits.get(usize::from(port))?);
        self.try_resume(&l, port, pg, st, lim, ps, pl)
    }
}
