//! The control thread that mirrors the kernel into the FIB: subscribe to rtnetlink events,
//! dump links, addresses, neighbours and routes, then apply events as they come, each read
//! (up to a few hundred messages) as one batch through the one writer. A lost event
//! (ENOBUFS) is answered by dumping everything again ([`Rib::resync`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::decode::decode;
use super::netlink::{Dump, Received, RtNetlink};
use super::KernelError;
use crate::route::{Grace, KernelEvent, LpmWriter, Rib, RibStats, RibView};

/// What the control thread shares with the rest of the switch.
#[derive(Default)]
pub struct SyncStatus {
    /// Set when the first full dump is in the FIB (the switch may start forwarding).
    pub synced: AtomicBool,
    /// Batches applied (each read of the socket), dumps included.
    pub batches: AtomicU64,
    /// Full re-dumps after lost events.
    pub resyncs: AtomicU64,
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

impl SyncStatus {
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
/// and its status.
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
    let st = status.clone();
    let h = std::thread::Builder::new().name("pfcsw-route".into()).spawn(move || {
        if let Err(e) = run(netns.as_deref(), &mut rib, &stop, &st) {
            log::error!("routing control thread: {e}");
            *st.error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
        }
        rib
    })?;
    Ok((h, status))
}

fn run<L: LpmWriter, G: Grace>(
    netns: Option<&str>,
    rib: &mut Rib<L, G>,
    stop: &AtomicBool,
    st: &SyncStatus,
) -> Result<(), KernelError> {
    if let Some(ns) = netns {
        super::netns::enter(ns)?;
    }
    let mut nl = RtNetlink::subscribe()?;
    let mut msgs = Vec::new();
    let mut events: Vec<KernelEvent> = Vec::new();
    let mut full = true;
    while !stop.load(Ordering::Relaxed) {
        st.publish_view(rib);
        if full {
            events.clear();
            while !dump_all(&mut nl, &mut msgs, &mut events, stop)? {
                log::warn!("routing: rtnetlink overrun during the dump: dumping again");
                st.resyncs.fetch_add(1, Ordering::Relaxed);
                events.clear();
            }
            if stop.load(Ordering::Relaxed) {
                break;
            }
            rib.resync(events.drain(..));
            full = false;
            st.synced.store(true, Ordering::Release);
            st.batches.fetch_add(1, Ordering::Relaxed);
            *st.stats.lock().unwrap_or_else(|p| p.into_inner()) = rib.stats().clone();
            continue;
        }
        match nl.recv(&mut msgs)? {
            Received::Timeout => continue,
            Received::Overrun => {
                log::warn!("routing: rtnetlink overrun (events lost): dumping everything again");
                st.resyncs.fetch_add(1, Ordering::Relaxed);
                full = true;
                continue;
            }
            Received::Messages { .. } => {}
        }
        events.extend(msgs.drain(..).filter_map(|(m, f)| decode(&m, f)));
        if !events.is_empty() {
            rib.apply(events.drain(..));
            st.batches.fetch_add(1, Ordering::Relaxed);
            *st.stats.lock().unwrap_or_else(|p| p.into_inner()) = rib.stats().clone();
        }
    }
    Ok(())
}

/// Dump links, addresses, neighbours, routes in that order (each needs the ones before),
/// keeping any event that arrives meanwhile in order. `Ok(false)`: events were lost, dump
/// again.
fn dump_all(
    nl: &mut RtNetlink,
    msgs: &mut Vec<(netlink_packet_route::RouteNetlinkMessage, u16)>,
    events: &mut Vec<KernelEvent>,
    stop: &AtomicBool,
) -> Result<bool, KernelError> {
    for what in [Dump::Links, Dump::Addresses, Dump::Neighbours, Dump::Routes] {
        let seq = nl.dump(what)?;
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(true);
            }
            let r = nl.recv(msgs)?;
            events.extend(msgs.drain(..).filter_map(|(m, f)| decode(&m, f)));
            match r {
                Received::Messages { done: Some(s) } if s == seq => break,
                Received::Overrun => return Ok(false),
                _ => {}
            }
        }
    }
    Ok(true)
}
