//! `run --timeline FILE.csv`: the control lcore samples, every interval, each lossless
//! (port, PG): occupancy, shared and headroom bytes, OFF/ON, the PG's current Dynamic
//! Threshold T, the egress queue depth of the same TC on that port, and the PFC frames
//! the port has sent for the PG's priorities. Rows are buffered and written in large
//! chunks; the fast path is not involved. `scripts/plot_timeline.py` draws it.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use crate::pfc::PfcTxCounters;

use super::Shared;

pub const HEADER: &str = "t_us,port,pg,occupancy_bytes,shared_bytes,headroom_bytes,off,threshold_bytes,queue_depth_pkts,pfc_tx_frames";

pub struct Timeline {
    out: BufWriter<File>,
    every: u64,
    next: u64,
    start: u64,
    tsc_hz: u64,
}

impl Timeline {
    pub fn create(path: &Path, every: Duration, tsc_hz: u64, now: u64) -> std::io::Result<Timeline> {
        let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
        writeln!(out, "{HEADER}")?;
        let every = ((every.as_nanos() as u128 * tsc_hz as u128) / 1_000_000_000).max(1) as u64;
        Ok(Timeline { out, every, next: now, start: now, tsc_hz })
    }

    #[inline]
    pub fn maybe_sample(&mut self, shared: &Shared, pfc_tx: &[Arc<PfcTxCounters>], now: u64) {
        if now < self.next {
            return;
        }
        self.next = now + self.every;
        let t_us = (now - self.start) as u128 * 1_000_000 / self.tsc_hz as u128;
        for (p, rt) in shared.ports.iter().enumerate() {
            let mut pgs = rt.plan.lossless_pgs;
            while pgs != 0 {
                let pg = pgs.trailing_zeros() as u8;
                pgs &= pgs - 1;
                let occ = shared.mmu.pg_occupancy(p as u16, pg);
                let off = shared.mmu.is_off(p as u16, pg) as u8;
                let th = shared.mmu.pg_threshold(p as u16, pg);
                let depth = shared.egress[p].depth(pg as usize & 7);
                let prios = rt.plan.pg_priorities[pg as usize];
                let frames: u64 = (0..8)
                    .filter(|i| prios & (1 << i) != 0)
                    .map(|i| pfc_tx[p].prio[i].pause_frames.load(Relaxed) + pfc_tx[p].prio[i].resume_frames.load(Relaxed))
                    .sum();
                let _ = writeln!(
                    self.out,
                    "{t_us},{},{pg},{},{},{},{off},{th},{depth},{frames}",
                    rt.name, occ.total, occ.shared, occ.headroom
                );
            }
        }
    }

    pub fn finish(mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}
