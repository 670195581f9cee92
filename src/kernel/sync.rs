//! The control thread that mirrors the kernel into the FIB: subscribe to rtnetlink events,
//! dump links, addresses, neighbours, nexthop objects and routes, then apply events as they
//! come, everything queued on the socket (up to a budget) as one batch through the one
//! writer: one commit, one grace period.
//!
//! It heals rather than stops (docs/routing.md, "Netlink that heals"): whatever makes the
//! mirror doubtful — an overrun (ENOBUFS), an error answer to a dump (EBUSY), a dump that
//! stalls, a truncated datagram, an event that cannot be decoded — closes the socket, opens
//! a new one (subscribe, then dump) and reconciles the whole RIB against the dump
//! ([`Rib::resync`]); `synced` is false meanwhile. Refused prefixes are retried on a timer.
//! The health ([`SyncStatus::health`]) goes wherever counters go.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::decode::decode_message;
use super::netlink::{event_rcvbuf, Dump, Message, Received, RtNetlink};
use super::KernelError;
use crate::route::{Grace, KernelEvent, LpmWriter, Rib, RibStats, RibView};

/// A dump that sends nothing for this long is given up (the socket is reopened).
const DUMP_STALL: Duration = Duration::from_secs(3);
/// One batch takes at most this many datagrams, or this long to read, whatever comes first
/// (then it is committed; the rest is the next batch).
const BATCH_READS: usize = 4096;
const BATCH_TIME: Duration = Duration::from_millis(50);
/// Refused prefixes are retried this often (besides after every batch that deleted).
const RETRY_EVERY: Duration = Duration::from_secs(1);
/// At most one log line per kind (resyncs, refusals) this often; the rest is counted.
const LOG_EVERY: Duration = Duration::from_secs(10);
/// Pause before reopening after a failed try, doubled up to the maximum while tries fail.
const BACKOFF_MIN: Duration = Duration::from_millis(10);
const BACKOFF_MAX: Duration = Duration::from_secs(1);
/// The thread beats at least every read timeout (100 ms) and every dump read; silent this
/// long, it is reported dead.
const ALIVE_WITHIN: Duration = Duration::from_secs(5);

/// What the control thread shares with the rest of the switch.
pub struct SyncStatus {
    /// True while the FIB mirrors a complete dump and every event since: false before the
    /// first dump is in, and from a loss of events until the next dump is in.
    pub synced: AtomicBool,
    /// Batches applied (each read of the socket), dumps included.
    pub batches: AtomicU64,
    /// Socket reopenings and full re-dumps after lost or doubtful messages.
    pub resyncs: AtomicU64,
    /// Messages of a dump that could not be decoded (skipped: a new dump would repeat them).
    pub undecodable: AtomicU64,
    /// Why the last resync happened.
    pub last_resync: Mutex<Option<String>>,
    /// Milliseconds since `base` of the last heartbeat and the last batch (0: none yet).
    heartbeat_ms: AtomicU64,
    last_batch_ms: AtomicU64,
    /// The thread runs (false once it returned).
    running: AtomicBool,
    base: Instant,
    /// The writer's counters after the last batch.
    pub stats: Mutex<RibStats>,
    /// Why the thread stopped, if it did on an error.
    pub error: Mutex<Option<String>>,
    /// The last view of what is installed (`show ip route`, `show arp`), and when it was
    /// taken. Taken on request ([`SyncStatus::view`]) by the control thread, between
    /// batches: the writer is never shared.
    view: Mutex<Option<(Instant, Arc<RibView>)>>,
    view_wanted: AtomicBool,
}

impl Default for SyncStatus {
    fn default() -> SyncStatus {
        SyncStatus {
            synced: AtomicBool::new(false),
            batches: AtomicU64::new(0),
            resyncs: AtomicU64::new(0),
            undecodable: AtomicU64::new(0),
            last_resync: Mutex::new(None),
            heartbeat_ms: AtomicU64::new(0),
            last_batch_ms: AtomicU64::new(0),
            running: AtomicBool::new(false),
            base: Instant::now(),
            stats: Mutex::new(RibStats::default()),
            error: Mutex::new(None),
            view: Mutex::new(None),
            view_wanted: AtomicBool::new(false),
        }
    }
}

/// The routing thread's health, as exported (stats JSON, telemetry `/pfcswitch/routing`,
/// `show routing`, Prometheus).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Health {
    /// The thread runs and beat within the last 5 s (false once stopped).
    pub alive: bool,
    pub synced: bool,
    pub resyncs: u64,
    pub batches: u64,
    /// Since the last batch was committed (None: none yet).
    pub last_batch_age_ms: Option<u64>,
    pub heartbeat_age_ms: u64,
    /// Prefixes the FIB refused (full), waiting for room.
    pub routes_refused: u64,
    /// The FIB may differ from the kernel: not synced, prefixes refused, or the thread
    /// silent while it should run.
    pub fib_out_of_sync: bool,
    pub undecodable: u64,
    pub last_resync: Option<String>,
}

impl SyncStatus {
    fn now_ms(&self) -> u64 {
        // +1: 0 means "never".
        self.base.elapsed().as_millis() as u64 + 1
    }

    fn beat(&self) {
        self.heartbeat_ms.store(self.now_ms(), Ordering::Relaxed);
    }

    fn batch_done<L: LpmWriter, G: Grace>(&self, rib: &Rib<L, G>) {
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.last_batch_ms.store(self.now_ms(), Ordering::Relaxed);
        *self.stats.lock().unwrap_or_else(|p| p.into_inner()) = rib.stats().clone();
    }

    /// The thread's health now.
    pub fn health(&self) -> Health {
        let now = self.now_ms();
        let age = |t: u64| (t != 0).then(|| now.saturating_sub(t));
        let heartbeat_age_ms = age(self.heartbeat_ms.load(Ordering::Relaxed)).unwrap_or(now);
        let running = self.running.load(Ordering::Relaxed);
        let alive = running && heartbeat_age_ms <= ALIVE_WITHIN.as_millis() as u64;
        let synced = self.synced.load(Ordering::Acquire);
        let routes_refused = self.stats.lock().unwrap_or_else(|p| p.into_inner()).refused;
        Health {
            alive,
            synced,
            resyncs: self.resyncs.load(Ordering::Relaxed),
            batches: self.batches.load(Ordering::Relaxed),
            last_batch_age_ms: age(self.last_batch_ms.load(Ordering::Relaxed)),
            heartbeat_age_ms,
            routes_refused,
            fib_out_of_sync: (running && !alive) || !synced || routes_refused > 0,
            undecodable: self.undecodable.load(Ordering::Relaxed),
            last_resync: self.last_resync.lock().unwrap_or_else(|p| p.into_inner()).clone(),
        }
    }

    /// A view at most `max_age` old: the last one, or a fresh one asked of the control
    /// thread (which answers within one read timeout, 100 ms), waiting up to `wait`. None
    /// if the thread does not answer (stopped, or a long batch).
    pub fn view(&self, max_age: Duration, wait: Duration) -> Option<Arc<RibView>> {
        let lock = || self.view.lock().unwrap_or_else(|p| p.into_inner());
        let asked = Instant::now();
        if let Some((t, v)) = lock().as_ref() {
            if t.elapsed() <= max_age {
                return Some(v.clone());
            }
        }
        self.view_wanted.store(true, Ordering::Release);
        while asked.elapsed() < wait {
            std::thread::sleep(Duration::from_millis(2));
            if let Some((t, v)) = lock().as_ref() {
                if *t >= asked {
                    return Some(v.clone());
                }
            }
        }
        None
    }

    fn publish_view<L: LpmWriter, G: Grace>(&self, rib: &Rib<L, G>) {
        if self.view_wanted.swap(false, Ordering::AcqRel) {
            let v = Arc::new(rib.view());
            *self.view.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), v));
        }
    }
}

/// The control thread; joining it gives the writer back.
pub type SyncThread<L, G> = JoinHandle<Rib<L, G>>;

/// Start the control thread: it enters `netns` (if given), then mirrors that namespace's
/// kernel into `rib` until `stop` is set. Returns the thread (joining gives the `Rib` back)
/// and its status. The thread ends only at `stop` or when it cannot enter `netns`.
pub fn spawn<L, G>(
    netns: Option<String>,
    mut rib: Rib<L, G>,
    stop: Arc<AtomicBool>,
) -> std::io::Result<(SyncThread<L, G>, Arc<SyncStatus>)>
where
    L: LpmWriter + Send + 'static,
    G: Grace + Send + Sync + 'static,
{
    let status = Arc::new(SyncStatus::default());
    status.running.store(true, Ordering::Relaxed);
    status.beat();
    let st = status.clone();
    // Read once: every socket the thread opens gets the same buffer.
    let rcvbuf = event_rcvbuf();
    let h = std::thread::Builder::new().name("pfcsw-route".into()).spawn(move || {
        if let Err(e) = run(netns.as_deref(), rcvbuf, &mut rib, &stop, &st) {
            log::error!("routing control thread: {e}");
            *st.error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
            st.synced.store(false, Ordering::Release);
        }
        // Stopped: `synced` keeps saying whether the FIB mirrored the kernel to the end.
        st.running.store(false, Ordering::Relaxed);
        rib
    })?;
    Ok((h, status))
}

/// At most one line per [`LOG_EVERY`]; what falls between is counted into the next.
#[derive(Default)]
struct RateLimited {
    last: Option<Instant>,
    held: u64,
}

impl RateLimited {
    /// Some(lines held back since the last one) when a line may go out now.
    fn may_log(&mut self) -> Option<u64> {
        if self.last.is_some_and(|t| t.elapsed() < LOG_EVERY) {
            self.held += 1;
            return None;
        }
        self.last = Some(Instant::now());
        Some(std::mem::take(&mut self.held))
    }
}

/// What the thread carries from one socket to the next.
struct Thread<'a> {
    stop: &'a AtomicBool,
    st: &'a SyncStatus,
    rcvbuf: usize,
    /// The read buffer the last socket grew to (a datagram that was cut).
    read_buf: usize,
    msgs: Vec<Message>,
    events: Vec<KernelEvent>,
    resync_log: RateLimited,
    refusal_log: RateLimited,
    errors_logged: u64,
    last_retry: Instant,
}

fn run<L: LpmWriter, G: Grace>(
    netns: Option<&str>,
    rcvbuf: usize,
    rib: &mut Rib<L, G>,
    stop: &AtomicBool,
    st: &SyncStatus,
) -> Result<(), KernelError> {
    if let Some(ns) = netns {
        super::netns::enter(ns)?;
    }
    let mut t = Thread {
        stop,
        st,
        rcvbuf,
        read_buf: 0,
        msgs: Vec::new(),
        events: Vec::new(),
        resync_log: RateLimited::default(),
        refusal_log: RateLimited::default(),
        errors_logged: 0,
        last_retry: Instant::now(),
    };
    let mut backoff = BACKOFF_MIN;
    while !stop.load(Ordering::Relaxed) {
        let mut synced_once = false;
        let why = match t.session(rib, &mut synced_once) {
            Ok(()) => break,
            Err(why) => why,
        };
        st.synced.store(false, Ordering::Release);
        st.resyncs.fetch_add(1, Ordering::Relaxed);
        if let Some(held) = t.resync_log.may_log() {
            let more = if held > 0 { format!(" ({held} more since the last line)") } else { String::new() };
            log::warn!("routing: rtnetlink {why}: reopening the socket and dumping everything again{more}");
        }
        *st.last_resync.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
        // A socket that synced starts the pause over; one that fails at once waits longer.
        backoff = if synced_once { BACKOFF_MIN } else { (backoff * 2).min(BACKOFF_MAX) };
        let until = Instant::now() + backoff;
        while Instant::now() < until && !stop.load(Ordering::Relaxed) {
            st.beat();
            std::thread::sleep((until - Instant::now()).min(Duration::from_millis(100)));
        }
    }
    Ok(())
}

impl Thread<'_> {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// One socket's life: subscribe, dump, reconcile, then events until `stop` (Ok) or
    /// something that makes the mirror doubtful (Err: why; the caller reopens).
    fn session<L: LpmWriter, G: Grace>(&mut self, rib: &mut Rib<L, G>, synced: &mut bool) -> Result<(), String> {
        let mut nl = RtNetlink::subscribe_with(self.rcvbuf, self.read_buf).map_err(|e| e.to_string())?;
        let r = self.session_on(&mut nl, rib, synced);
        self.read_buf = self.read_buf.max(nl.read_buf());
        r
    }

    fn session_on<L: LpmWriter, G: Grace>(
        &mut self,
        nl: &mut RtNetlink,
        rib: &mut Rib<L, G>,
        synced: &mut bool,
    ) -> Result<(), String> {
        self.events.clear();
        self.dump_all(nl)?;
        if self.stopped() {
            return Ok(());
        }
        rib.resync(self.events.drain(..));
        self.st.synced.store(true, Ordering::Release);
        *synced = true;
        self.st.batch_done(rib);
        self.after_batch(rib);
        while !self.stopped() {
            self.st.beat();
            self.st.publish_view(rib);
            if rib.refused() > 0 && self.last_retry.elapsed() >= RETRY_EVERY {
                self.last_retry = Instant::now();
                rib.retry_refused();
                *self.st.stats.lock().unwrap_or_else(|p| p.into_inner()) = rib.stats().clone();
                self.after_batch(rib);
            }
            if self.read_batch(nl)? == 0 {
                continue;
            }
            if !self.events.is_empty() {
                rib.apply(self.events.drain(..));
                self.st.batch_done(rib);
                self.after_batch(rib);
            }
        }
        Ok(())
    }

    /// Everything queued on the socket (the first read waits up to its timeout), up to
    /// the budget, decoded into `events`. Returns the datagrams read.
    fn read_batch(&mut self, nl: &mut RtNetlink) -> Result<usize, String> {
        let t0 = Instant::now();
        let mut reads = 0;
        while reads < BATCH_READS && t0.elapsed() < BATCH_TIME {
            let r = if reads == 0 { nl.recv(&mut self.msgs) } else { nl.recv_now(&mut self.msgs) };
            match r.map_err(|e| e.to_string())? {
                Received::Timeout => break,
                Received::Lost(loss) => return Err(loss.to_string()),
                Received::Messages { skipped, .. } if skipped > 0 => {
                    return Err(format!("{skipped} undecodable event message(s)"));
                }
                Received::Messages { .. } => reads += 1,
            }
            self.events.extend(self.msgs.drain(..).filter_map(decode_message));
        }
        Ok(reads)
    }

    /// A rate-limited line when prefixes were newly refused.
    fn after_batch<L: LpmWriter, G: Grace>(&mut self, rib: &Rib<L, G>) {
        let s = rib.stats();
        if s.errors > self.errors_logged && self.refusal_log.may_log().is_some() {
            log::warn!(
                "routing: the FIB refused {} prefix(es) since the last line ({} waiting for room, retried every {:?} and after deletes); last: {}",
                s.errors - self.errors_logged,
                s.refused,
                RETRY_EVERY,
                s.last_error.as_deref().unwrap_or("?")
            );
            self.errors_logged = s.errors;
        }
    }

    /// Dump links, addresses, neighbours, nexthop objects, routes in that order (each
    /// needs the ones before: a route names its nexthop object), keeping any event that
    /// arrives meanwhile in order. Err: why the dump cannot be trusted (events lost, an
    /// error answer such as EBUSY, no answer within [`DUMP_STALL`], a truncated datagram):
    /// open a new socket and dump again.
    fn dump_all(&mut self, nl: &mut RtNetlink) -> Result<(), String> {
        for what in [Dump::Links, Dump::Addresses, Dump::Neighbours, Dump::NextHops, Dump::Routes] {
            let seq = nl.dump(what).map_err(|e| format!("{what:?} dump request: {e}"))?;
            let mut heard = Instant::now();
            loop {
                if self.stopped() {
                    return Ok(());
                }
                self.st.beat();
                let r = nl.recv(&mut self.msgs).map_err(|e| format!("{what:?} dump: {e}"))?;
                self.events.extend(self.msgs.drain(..).filter_map(decode_message));
                match r {
                    Received::Messages { done, skipped } => {
                        heard = Instant::now();
                        if skipped > 0 {
                            // In a dump a new dump would repeat it: counted, not retried.
                            self.st.undecodable.fetch_add(u64::from(skipped), Ordering::Relaxed);
                        }
                        if done == Some(seq) {
                            break;
                        }
                    }
                    Received::Lost(loss) => return Err(format!("{loss} during the {what:?} dump")),
                    Received::Timeout if heard.elapsed() > DUMP_STALL => {
                        return Err(format!("{what:?} dump: no answer for {DUMP_STALL:?}"));
                    }
                    Received::Timeout => {}
                }
            }
        }
        Ok(())
    }
}
