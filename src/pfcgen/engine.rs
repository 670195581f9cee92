//! The generating loop of one lcore: per port, receive (PFC/PAUSE frames into the
//! switch's own [`PfcRx`], pfcgen frames into the per-stream statistics), then transmit
//! the streams that are due and whose priority is not paused.
//!
//! **PFC at a frame boundary.** The paused mask is read before a port's frames are built,
//! at the `now` of this poll, after this poll's received PFC frames were applied; a paused
//! priority's streams build nothing. Frames the device refuses (TX ring full) are undone
//! (sequence number, pacer, counters) and freed, never held back: whatever the generator
//! hands to the device afterwards is built again under the pause state of that later
//! poll. What the device already holds in its own TX ring is out of reach (as on a NIC);
//! on memif, `tx_burst` copies into the peer's ring at once.
//!
//! Nothing here allocates, locks, formats or makes a syscall per packet.

use std::sync::Arc;

use super::dcqcn::Dcqcn;
use super::frame::{self, FrameBuilder, Received};
use super::live::{Live, LivePort, LiveStream};
use super::pacer::{self, PaceRate, Pacer};
use super::payload;
use super::roce::{self, CnpMark};
use super::rxstats::RxStream;
use super::spec::{CnpSpec, DcqcnSpec, RateSpec, StreamSpec};
use crate::dpdk::{Mbuf, MbufBurst, Mempool, RxQueue, TxQueue, BURST_CAP};
use crate::pfc::{PauseDeadlines, PfcRx};
use crate::wire::MacAddr;

/// Frames per burst.
pub const BURST: usize = 32;
/// Most RX bursts per port and poll (a full burst is followed by another).
pub const RX_BURSTS: usize = 4;

/// One port the generator drives.
pub struct GenPort {
    pub name: String,
    pub mac: MacAddr,
    pub speed_bps: u64,
    pub pfc_enable: u8,
    rxq: RxQueue,
    txq: TxQueue,
    pub pfc: PfcRx,
    /// `pfc`'s deadlines: when a paused priority may send again (for [`Generator::next_due`]).
    deadlines: Arc<PauseDeadlines>,
    /// The TX streams of this port (indices into [`Generator::streams`]).
    streams: Vec<usize>,
    rr: usize,
    /// Frames to build next poll: a full burst, or after a full TX ring what it took
    /// (at least one), doubling back (frames built only to be refused cost CPU).
    budget: usize,
    pub counters: PortCounters,
}

/// What a port counted besides the streams.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PortCounters {
    pub tx_packets: u64,
    pub rx_packets: u64,
    pub mac_control_rx: u64,
    /// MAC Control frames that did not decode (counted, dropped).
    pub bad_mac_control: u64,
    /// Frames that are not pfcgen's (counted, dropped).
    pub rx_other: u64,
    /// pfcgen frames whose stream id is beyond the receive table.
    pub rx_unknown_stream: u64,
    /// Frames built and refused by a full TX ring (undone: never counted as sent).
    pub tx_refused: u64,
    /// Polls where the mempool had no mbuf for a frame.
    pub tx_nombuf: u64,
    /// CNPs sent (this port received CE-marked RoCEv2 frames: a notification point).
    pub cnp_tx: u64,
    /// CE-marked RoCEv2 frames not answered: a CNP for their flow went out less than the
    /// CNP interval before.
    pub cnp_suppressed: u64,
    /// CNPs built but refused by a full TX ring (or no mbuf).
    pub cnp_tx_failed: u64,
    /// CNPs received (a reaction point), and those naming no stream of this process.
    pub cnp_rx: u64,
    pub cnp_rx_unknown_qp: u64,
}

impl GenPort {
    pub fn new(
        name: &str,
        mac: MacAddr,
        speed_bps: u64,
        pfc: PfcRx,
        pfc_enable: u8,
        rxq: RxQueue,
        txq: TxQueue,
    ) -> GenPort {
        GenPort {
            name: name.to_string(),
            mac,
            speed_bps,
            pfc_enable,
            rxq,
            txq,
            deadlines: pfc.deadlines(),
            pfc,
            streams: Vec::new(),
            rr: 0,
            budget: BURST,
            counters: PortCounters::default(),
        }
    }

    /// Send one raw frame now (e.g. a PFC frame), outside any stream and any pause.
    /// Returns whether the device took it.
    pub fn send_raw(&mut self, pool: &Mempool, frame: &[u8]) -> bool {
        let Some(mut m) = pool.alloc() else { return false };
        let Some(d) = u16::try_from(frame.len()).ok().and_then(|n| m.append(n)) else { return false };
        d.copy_from_slice(frame);
        let mut b = MbufBurst::new();
        let _ = b.push(m);
        self.txq.tx_burst(&mut b) == 1
    }
}

/// One transmitting stream.
pub struct TxStream {
    pub spec: StreamSpec,
    builder: FrameBuilder,
    pacer: Pacer,
    rate: PaceRate,
    /// Frames sent (= the next sequence number).
    pub seq: u64,
    pub bytes: u64,
    pub wire_bits: u64,
    count: u64,
    end: u64,
    /// Paused by PFC at the last poll.
    pub paused: bool,
    /// Times the stream was stopped by PFC (running → paused).
    pub pauses: u64,
    /// TSC of the first PFC stop, and the wire bits and frames sent by then: the rate from
    /// there on is the rate PFC let through.
    pub first_stop: Option<(u64, u64, u64)>,
    pub first_tx: Option<u64>,
    pub last_tx: u64,
    /// DCQCN's reaction point, for a stream with `dcqcn`.
    pub dcqcn: Option<Dcqcn>,
    /// CNPs received for this stream's QP.
    pub cnp_rx: u64,
}

impl TxStream {
    /// The pacer follows DCQCN's current rate.
    #[inline]
    fn follow_dcqcn(&mut self, now: u64, max_lag: u64) {
        if let Some(d) = &self.dcqcn {
            self.rate = PaceRate::bps(d.rate_bps());
            self.pacer.set_rate(self.rate, now, max_lag);
        }
    }

    #[inline]
    fn done(&self, now: u64) -> bool {
        self.seq >= self.count || now >= self.end
    }
}

/// TSC ticks in `ns` nanoseconds.
pub fn ns_to_ticks(ns: u64, hz: u64) -> u64 {
    u64::try_from(u128::from(ns) * u128::from(hz) / 1_000_000_000).unwrap_or(u64::MAX)
}

/// The whole generator on one lcore.
pub struct Generator {
    pub ports: Vec<GenPort>,
    pub streams: Vec<TxStream>,
    /// Receive statistics by stream id.
    pub rx: Vec<RxStream>,
    pool: Arc<Mempool>,
    hz: u64,
    burst: MbufBurst,
    /// Fresh mbufs not yet used.
    stash: MbufBurst,
    /// Per frame in `burst`: (stream index, size).
    owners: [(u32, u16); BURST_CAP],
    rx_burst: MbufBurst,
    live: Arc<Live>,
    /// Last TSC any data frame arrived.
    pub last_rx: u64,
    /// Notification point: CNP interval (ticks) and marking, when answering CE.
    cnp: Option<(u64, CnpMark)>,
    /// Per stream id: the earliest TSC its next CNP may leave, and CNPs sent for it.
    cnp_next: Vec<u64>,
    pub cnp_sent: Vec<u64>,
    cnp_out: MbufBurst,
    /// Stream id → index into `streams` (u32::MAX: not sent here), for CNPs.
    by_id: Vec<u32>,
    /// The backlog a DCQCN rate change keeps (ticks).
    max_lag: u64,
}

impl Generator {
    /// A generator over `ports` sending `streams` from `start` (TSC), with receive slots
    /// for stream ids `0..rx_streams`.
    pub fn new(
        ports: Vec<GenPort>,
        streams: &[StreamSpec],
        rx_streams: usize,
        pool: Arc<Mempool>,
        hz: u64,
        start: u64,
    ) -> Generator {
        Generator::with_roce(ports, streams, rx_streams, pool, hz, start, &DcqcnSpec::default(), &CnpSpec::default())
    }

    /// [`Generator::new`] with DCQCN's parameters for the streams that have `dcqcn`, and
    /// a notification point answering CE with CNPs when `cnp.enable`.
    #[allow(clippy::too_many_arguments)]
    pub fn with_roce(
        mut ports: Vec<GenPort>,
        streams: &[StreamSpec],
        rx_streams: usize,
        pool: Arc<Mempool>,
        hz: u64,
        start: u64,
        dcqcn: &DcqcnSpec,
        cnp: &CnpSpec,
    ) -> Generator {
        let tx: Vec<TxStream> = streams
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let port = &mut ports[s.port];
                port.streams.push(i);
                let mut rate = match s.rate {
                    RateSpec::Max => PaceRate::Max,
                    RateSpec::Pps(p) => PaceRate::pps(p),
                    RateSpec::Bps(b) => PaceRate::bps(b),
                    RateSpec::Percent(p) => PaceRate::bps(port.speed_bps as f64 * p / 100.0),
                };
                // DCQCN's line rate is the stream's configured rate (the port's for max).
                let dcqcn = s.dcqcn.then(|| {
                    let line = match s.rate {
                        RateSpec::Max => port.speed_bps as f64,
                        RateSpec::Pps(p) => p * (s.size.mean() + pacer::WIRE_OVERHEAD as f64) * 8.0,
                        RateSpec::Bps(b) => b,
                        RateSpec::Percent(p) => port.speed_bps as f64 * p / 100.0,
                    };
                    rate = PaceRate::bps(line);
                    Dcqcn::new(dcqcn.params(line, hz), start)
                });
                let t0 = start + ns_to_ticks(s.start_ns, hz);
                let burst = s.burst.map(|b| (ns_to_ticks(b.on_ns, hz), ns_to_ticks(b.off_ns, hz)));
                TxStream {
                    builder: FrameBuilder::new(s, port.mac),
                    pacer: Pacer::new(rate, hz, t0, burst),
                    rate,
                    seq: 0,
                    bytes: 0,
                    wire_bits: 0,
                    count: s.count.unwrap_or(u64::MAX),
                    end: s.duration_ns.map_or(u64::MAX, |d| t0.saturating_add(ns_to_ticks(d, hz))),
                    paused: false,
                    pauses: 0,
                    first_stop: None,
                    first_tx: None,
                    last_tx: 0,
                    dcqcn,
                    cnp_rx: 0,
                    spec: s.clone(),
                }
            })
            .collect();
        let live = Arc::new(Live {
            streams: (0..rx_streams.max(tx.iter().map(|s| usize::from(s.spec.id) + 1).max().unwrap_or(0)))
                .map(|_| LiveStream::default())
                .collect(),
            ports: ports
                .iter()
                .map(|p| LivePort { name: p.name.clone(), paused: Default::default(), pfc: p.pfc.counters() })
                .collect(),
        });
        let n_ids = live.streams.len();
        let mut by_id = vec![u32::MAX; n_ids];
        for (i, s) in tx.iter().enumerate() {
            by_id[usize::from(s.spec.id)] = i as u32;
        }
        let scaled = (cnp.interval_ns as f64 * dcqcn.time_scale).round() as u64;
        Generator {
            cnp: cnp.enable.then(|| (ns_to_ticks(scaled, hz), CnpMark { dscp: cnp.dscp, pcp: cnp.pcp })),
            cnp_next: vec![0; n_ids],
            cnp_sent: vec![0; n_ids],
            cnp_out: MbufBurst::new(),
            by_id,
            max_lag: hz / 1000,
            rx: (0..n_ids).map(|_| RxStream::new(hz)).collect(),
            ports,
            streams: tx,
            pool,
            hz,
            burst: MbufBurst::new(),
            stash: MbufBurst::new(),
            owners: [(0, 0); BURST_CAP],
            rx_burst: MbufBurst::new(),
            live,
            last_rx: start,
        }
    }

    /// Start every stream's schedule from `t0` (TSC) instead of the `start` given to
    /// [`Generator::new`]: called right before the first poll, so that set-up time is not
    /// taken for frames that are late and sent back to back. Only before any frame.
    pub fn start_at(&mut self, t0: u64) {
        for s in &mut self.streams {
            let t = t0 + ns_to_ticks(s.spec.start_ns, self.hz);
            s.pacer.restart_at(t);
            s.end = s.spec.duration_ns.map_or(u64::MAX, |d| t.saturating_add(ns_to_ticks(d, self.hz)));
        }
        self.last_rx = t0;
    }

    /// The counters the live lines read.
    pub fn live(&self) -> Arc<Live> {
        self.live.clone()
    }

    pub fn tsc_hz(&self) -> u64 {
        self.hz
    }

    /// Every stream has sent its count or reached its duration.
    pub fn tx_done(&self, now: u64) -> bool {
        self.streams.iter().all(|s| s.done(now))
    }

    /// One pass over every port at `now`. Returns the frames received and sent (0: an
    /// idle poll).
    pub fn poll(&mut self, now: u64) -> usize {
        let mut n = 0;
        for p in 0..self.ports.len() {
            n += self.receive(p, now);
            n += self.transmit(p, now);
        }
        n
    }

    /// Receive on every port, send nothing (the drain after sending stopped). Returns the
    /// frames received.
    pub fn receive_all(&mut self, now: u64) -> usize {
        (0..self.ports.len()).map(|p| self.receive(p, now)).sum()
    }

    /// The earliest TSC at which a stream that is not done may have a frame to send: its
    /// pacer's due time, or, while its priority is paused, the pause's end (a RESUME
    /// arriving earlier is seen at the next poll). `None` when every stream is done. An
    /// on/off stream between two on-periods reads as due at once (no nap for it).
    pub fn next_due(&self, now: u64) -> Option<u64> {
        self.streams
            .iter()
            .filter(|s| !s.done(now))
            .map(|s| if s.paused { self.ports[s.spec.port].deadlines.deadline(s.spec.priority) } else { s.pacer.due() })
            .min()
    }

    /// Receive on port `p`: up to [`RX_BURSTS`] bursts, so that a PFC frame queued behind
    /// a burst of data is applied before this poll transmits. Returns the frames received.
    pub fn receive(&mut self, p: usize, now: u64) -> usize {
        let Generator {
            ports,
            rx,
            rx_burst,
            live,
            hz,
            last_rx,
            cnp,
            cnp_next,
            cnp_sent,
            cnp_out,
            pool,
            streams,
            by_id,
            max_lag,
            ..
        } = self;
        let port = &mut ports[p];
        let mut got = 0;
        for _ in 0..RX_BURSTS {
            let n = port.rxq.rx_burst(rx_burst, BURST);
            got += n;
            for m in rx_burst.drain() {
                port.counters.rx_packets += 1;
                match frame::receive(m.data()) {
                    Received::Ours { payload: pl, ecn, roce } => {
                        *last_rx = now;
                        let id = usize::from(pl.stream);
                        // Notification point: CE on RoCEv2 → a CNP, one per flow per interval.
                        if let (true, 3, Some((every, mark)), Some(next)) = (roce, ecn, *cnp, cnp_next.get_mut(id)) {
                            if now < *next {
                                port.counters.cnp_suppressed += 1;
                            } else if let Some(c) = cnp_reply(pool, m.data(), mark) {
                                *next = now + every;
                                cnp_sent[id] += 1;
                                if cnp_out.push(c).is_err() {
                                    port.counters.cnp_tx_failed += 1;
                                }
                            } else {
                                port.counters.cnp_tx_failed += 1;
                            }
                        }
                        match rx.get_mut(id) {
                            Some(r) => {
                                r.on_frame(
                                    pl.seq32,
                                    now,
                                    payload::elapsed(pl.tsc48, now),
                                    ecn == 3,
                                    u64::from(m.pkt_len()) + 4,
                                );
                                let l = &live.streams[id];
                                l.rx_packets.set(r.frames);
                                l.rx_unique.set(r.unique());
                                l.rx_next.set(r.highest_plus_one());
                                l.rx_reordered.set(r.reordered);
                                l.rx_ce.set(r.ce);
                            }
                            None => port.counters.rx_unknown_stream += 1,
                        }
                    }
                    Received::Cnp { qp } => {
                        port.counters.cnp_rx += 1;
                        let i = qp.checked_sub(roce::QP_BASE).and_then(|i| by_id.get(i as usize)).copied();
                        match i.and_then(|i| streams.get_mut(i as usize)) {
                            Some(s) => {
                                s.cnp_rx += 1;
                                if let Some(d) = &mut s.dcqcn {
                                    d.on_cnp(now);
                                    s.follow_dcqcn(now, *max_lag);
                                }
                            }
                            None => port.counters.cnp_rx_unknown_qp += 1,
                        }
                    }
                    Received::MacControl(Ok(f)) => {
                        port.counters.mac_control_rx += 1;
                        port.pfc.on_frame(&f, now, *hz);
                    }
                    Received::MacControl(Err(_)) => port.counters.bad_mac_control += 1,
                    Received::Other => port.counters.rx_other += 1,
                }
            }
            if !cnp_out.is_empty() {
                let k = cnp_out.len();
                let sent = port.txq.tx_burst(cnp_out);
                port.counters.cnp_tx += sent as u64;
                port.counters.cnp_tx_failed += (k - sent) as u64;
                cnp_out.clear();
            }
            if n < BURST {
                break;
            }
        }
        // Close pauses that expired (pause time counters).
        port.pfc.poll(now);
        got
    }

    /// Build and send what is due on port `p` at `now`. Returns the frames the device took.
    pub fn transmit(&mut self, p: usize, now: u64) -> usize {
        let Generator { ports, streams, pool, burst, stash, owners, live, max_lag, .. } = self;
        let port = &mut ports[p];
        let paused = port.pfc.paused_mask(now);
        live.ports[p].paused.set(u64::from(paused));
        for &si in &port.streams {
            let s = &mut streams[si];
            if s.dcqcn.as_mut().is_some_and(|d| d.tick(now)) {
                s.follow_dcqcn(now, *max_lag);
            }
            let now_paused = paused & (1 << s.spec.priority) != 0;
            if s.paused && !now_paused {
                // Resumed (RESUME or expiry): no catch-up for the paused time.
                s.pacer.rebase(now);
            } else if !s.paused && now_paused {
                s.pauses += 1;
                s.first_stop.get_or_insert((now, s.wire_bits, s.seq));
            }
            s.paused = now_paused;
        }
        let n = port.streams.len();
        if n == 0 {
            return 0;
        }
        let mut k = 0usize;
        'fill: loop {
            let mut progressed = false;
            for j in 0..n {
                if k == port.budget {
                    break 'fill;
                }
                let si = port.streams[(port.rr + j) % n];
                let s = &mut streams[si];
                if s.paused || s.done(now) || !s.pacer.ready(now) {
                    continue;
                }
                let size = s.builder.size(s.seq);
                let Some(m) = new_frame(pool, stash, size - 4) else {
                    port.counters.tx_nombuf += 1;
                    break 'fill;
                };
                let mut m = m;
                s.builder.build(s.seq, now, m.data_mut());
                let c = pacer::cost(s.rate, size);
                s.pacer.sent(c);
                s.seq += 1;
                s.bytes += u64::from(size);
                s.wire_bits += (u64::from(size) + pacer::WIRE_OVERHEAD) * 8;
                owners[k] = (si as u32, size);
                k += 1;
                let _ = burst.push(m);
                progressed = true;
            }
            if !progressed {
                break;
            }
        }
        port.rr = (port.rr + 1) % n;
        if k == 0 {
            return 0;
        }
        let sent = port.txq.tx_burst(burst);
        // Undo the refused tail, newest first (each stream's frames are in order).
        for &(si, size) in owners[sent..k].iter().rev() {
            let s = &mut streams[si as usize];
            s.seq -= 1;
            s.pacer.unsent(pacer::cost(s.rate, size));
            s.bytes -= u64::from(size);
            s.wire_bits -= (u64::from(size) + pacer::WIRE_OVERHEAD) * 8;
        }
        port.counters.tx_refused += (k - sent) as u64;
        port.budget = if sent < k { sent.max(1) } else { (port.budget * 2).min(BURST) };
        port.counters.tx_packets += sent as u64;
        burst.clear();
        for &(si, size) in &owners[..sent] {
            let s = &mut streams[si as usize];
            s.first_tx.get_or_insert(now);
            s.last_tx = now;
            if s.dcqcn.as_mut().is_some_and(|d| d.on_sent(u64::from(size))) {
                s.follow_dcqcn(now, *max_lag);
            }
        }
        for &si in &port.streams {
            let s = &streams[si];
            let l = &live.streams[usize::from(s.spec.id)];
            l.tx_packets.set(s.seq);
            l.tx_wire_bits.set(s.wire_bits);
        }
        sent
    }
}

/// The CNP answering the RoCEv2 frame `rx`, in a fresh mbuf (None: no mbuf, or `rx` is
/// not one).
#[inline]
fn cnp_reply(pool: &Mempool, rx: &[u8], mark: CnpMark) -> Option<Mbuf> {
    const ROOM: u16 = 128;
    let mut m = pool.alloc()?;
    if !m.set_len(ROOM) {
        return None;
    }
    let len = roce::build_cnp(rx, m.data_mut(), mark);
    (len > 0 && m.trim(ROOM - len as u16)).then_some(m)
}

/// An mbuf holding `len` bytes of frame (contents to be written), from `stash` (refilled
/// a burst at a time: one bulk allocation instead of one call per frame).
#[inline]
fn new_frame(pool: &Mempool, stash: &mut MbufBurst, len: u16) -> Option<Mbuf> {
    if stash.is_empty() && !pool.alloc_bulk(stash, BURST) {
        let mut m = pool.alloc()?;
        return m.set_len(len).then_some(m);
    }
    let mut m = stash.pop()?;
    m.set_len(len).then_some(m)
}
