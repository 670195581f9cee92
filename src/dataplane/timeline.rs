//! `run --timeline FILE.csv`: the control lcore samples, every interval, two kinds of
//! series into one CSV (long format, `series` column):
//! * `pg`: each lossless ingress (port, PG): occupancy, shared and headroom bytes,
//!   OFF/ON, the PG's current Dynamic Threshold T, and the PFC frames the port has sent
//!   for the PG's priorities;
//! * `queue`: each egress (port, queue) depth in packets — where an incast builds up,
//!   which is the egress port, not the ingress PG's port. A queue is written while it is
//!   non-empty and once more when it empties (so a plot steps back to 0); never-used
//!   queues add no rows.
//!
//! Columns a series does not have are empty. Rows are formatted into 64 KiB chunks that
//! the I/O thread writes ([`super::io`]): a stalled disk drops chunks (counted), it never
//! stalls the control lcore. The fast path is not involved. `scripts/plot_timeline.py`
//! draws it.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::pfc::PfcTxCounters;
use crate::wire::NUM_TC;

use super::io::{IoMsg, IoSink};
use super::shared::Shared;

pub const HEADER: &str =
    "t_us,port,series,index,occupancy_bytes,shared_bytes,headroom_bytes,off,threshold_bytes,pfc_tx_frames,depth_pkts";

/// Bytes of rows gathered before they go to the I/O thread.
const CHUNK: usize = 64 * 1024;

pub struct Timeline {
    /// Rows not yet handed to the I/O thread.
    out: String,
    every: u64,
    next: u64,
    start: u64,
    tsc_hz: u64,
    /// Per port, the egress queues that were non-empty at the last sample.
    busy: Vec<u8>,
}

impl Timeline {
    /// Create the file and write its header (before the lcores start); the file goes to
    /// the I/O thread, the sampler to the control lcore.
    pub fn create(path: &Path, every: Duration, tsc_hz: u64, now: u64) -> std::io::Result<(Timeline, BufWriter<File>)> {
        let mut file = BufWriter::with_capacity(1 << 20, File::create(path)?);
        writeln!(file, "{HEADER}")?;
        let every = ((every.as_nanos() * tsc_hz as u128) / 1_000_000_000).max(1) as u64;
        let out = String::with_capacity(CHUNK + 4096);
        Ok((Timeline { out, every, next: now, start: now, tsc_hz, busy: Vec::new() }, file))
    }

    #[inline]
    pub fn maybe_sample(&mut self, shared: &Shared, pfc_tx: &[Arc<PfcTxCounters>], now: u64) {
        if now < self.next {
            return;
        }
        self.next = now + self.every;
        let t_us = (now - self.start) as u128 * 1_000_000 / self.tsc_hz as u128;
        self.sample_pgs(shared, pfc_tx, t_us);
        self.sample_queues(shared, t_us);
        if self.out.len() >= CHUNK {
            let rows = std::mem::replace(&mut self.out, String::with_capacity(CHUNK + 4096));
            shared.io.send(IoMsg::Timeline(rows));
        }
    }

    fn sample_pgs(&mut self, shared: &Shared, pfc_tx: &[Arc<PfcTxCounters>], t_us: u128) {
        for (p, rt) in shared.ports.iter().enumerate() {
            let mut pgs = rt.pfc.lossless_pgs();
            while pgs != 0 {
                let pg = pgs.trailing_zeros() as u8;
                pgs &= pgs - 1;
                let occ = shared.mmu.pg_occupancy(p as u16, pg);
                let off = shared.mmu.is_off(p as u16, pg) as u8;
                let th = shared.mmu.pg_threshold(p as u16, pg);
                let prios = rt.pfc.pg_priorities(pg);
                let frames: u64 = (0..8)
                    .filter(|i| prios & (1 << i) != 0)
                    .map(|i| pfc_tx[p].prio[i].pause_frames.get() + pfc_tx[p].prio[i].resume_frames.get())
                    .sum();
                let _ = writeln!(
                    self.out,
                    "{t_us},{},pg,{pg},{},{},{},{off},{th},{frames},",
                    rt.name, occ.total, occ.shared, occ.headroom
                );
            }
        }
    }

    fn sample_queues(&mut self, shared: &Shared, t_us: u128) {
        self.busy.resize(shared.ports.len(), 0);
        for (p, rt) in shared.ports.iter().enumerate() {
            let mut busy = 0u8;
            for q in 0..NUM_TC {
                let depth = shared.egress[p].depth(q);
                if depth > 0 {
                    busy |= 1 << q;
                }
                if depth > 0 || self.busy[p] & (1 << q) != 0 {
                    let _ = writeln!(self.out, "{t_us},{},queue,{q},,,,,,,{depth}", rt.name);
                }
            }
            self.busy[p] = busy;
        }
    }

    /// Hand the last rows to the I/O thread.
    pub fn finish(self, io: &IoSink) {
        if !self.out.is_empty() {
            io.send(IoMsg::Timeline(self.out));
        }
    }
}
