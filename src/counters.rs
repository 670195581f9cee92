//! Per-lcore, single-writer packet counters, aggregated on read.
//!
//! Each lcore owns one [`LcoreCounters`] and is its only writer; it bumps a counter with a
//! relaxed load + store (no locked instruction on the fast path). Any thread may read at
//! any time and sums over lcores ([`Totals::collect`]). Reads are eventually consistent,
//! exact once the writers have stopped.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crossbeam_utils::CachePadded;

/// Declares [`DropReason`] from one list: the variant, its JSON/telemetry name, the port
/// it is counted on ([`Side`]), whether a lossless packet dropped for it is lossless loss,
/// and its doc. Adding a reason is one line.
macro_rules! drop_reasons {
    ($( $(#[$doc:meta])* $v:ident = $name:literal @ $side:ident $(, $loss:ident)?; )*) => {
        /// Why a packet (or packet copy) was dropped. Names are the JSON/telemetry keys.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum DropReason {
            $( $(#[$doc])* $v, )*
        }

        impl DropReason {
            /// Every reason, in counter-index order.
            pub const ALL: [DropReason; [$(DropReason::$v),*].len()] = [$(DropReason::$v),*];
            pub const COUNT: usize = Self::ALL.len();

            pub fn as_str(self) -> &'static str {
                match self {
                    $( DropReason::$v => $name, )*
                }
            }

            /// The port whose `drops` counts it.
            #[inline(always)]
            pub const fn side(self) -> Side {
                match self {
                    $( DropReason::$v => Side::$side, )*
                }
            }

            /// A lossless packet dropped for this reason is lossless loss (counted per PG in
            /// `pg_lossless_drops`); the others are decisions (a dead link, the watchdog,
            /// stop).
            #[inline(always)]
            pub const fn loses_lossless(self) -> bool {
                match self {
                    $( DropReason::$v => drop_reasons!(@loss $($loss)?), )*
                }
            }
        }
    };
    (@loss lossless_loss) => { true };
    (@loss) => { false };
}

/// Which port's `drops` counts a drop: the port the packet came in on, or the one it was
/// queued for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Ingress,
    Egress,
}

drop_reasons! {
    /// Shorter than 60 bytes (the Ethernet minimum without FCS).
    Runt = "runt" @ Ingress;
    /// Longer than the port's MTU plus the largest L2 header (18 B: Ethernet + 802.1Q).
    Oversize = "oversize" @ Ingress;
    /// A chained (multi-segment) mbuf: the switch handles single-segment frames only.
    MultiSegment = "multi_segment" @ Ingress;
    /// A header the parser could not read (truncated VLAN/IP header, bad IP version...).
    Malformed = "malformed" @ Ingress;
    /// A frame of a VLAN the VLAN-aware ingress port is not a member of (a tag's VID, or
    /// untagged/priority-tagged on a port with no untagged VLAN, or an 802.1ad S-tag).
    VlanNotMember = "vlan_not_member" @ Ingress;
    /// Sent to an IEEE 802.1D reserved address 01-80-C2-00-00-0x that is not MAC control.
    LinkLocal = "link_local" @ Ingress;
    /// An LLDP frame over the port's policer (a few per second: a peer sends one every
    /// `hello_time`), dropped at the worker before it reaches the control lcore.
    LldpPoliced = "lldp_policed" @ Ingress;
    /// A lossless-class frame to an unknown unicast destination with
    /// `switch.flood_lossless = false` (never flooded: a PFC deadlock source).
    LosslessUnknownUnicast = "lossless_unknown_unicast" @ Ingress;
    /// A MAC-control frame (EtherType 0x8808) the decoder rejected.
    BadMacControl = "bad_mac_control" @ Ingress;
    /// The destination was learned on the ingress port (a bridge never hairpins).
    SamePort = "same_port" @ Ingress;
    /// No mbuf for a flood copy.
    FloodNoMbuf = "flood_no_mbuf" @ Ingress;
    /// The egress queue ring was full.
    EgressQueueFull = "egress_queue_full" @ Egress, lossless_loss;
    /// MMU: lossless PG full up to private + shared + headroom (a headroom sizing bug).
    LosslessHeadroomFull = "lossless_headroom_full" @ Ingress, lossless_loss;
    /// MMU: lossy egress queue over its Dynamic Threshold or the lossy pool full.
    LossyThreshold = "lossy_threshold" @ Ingress;
    /// MMU: any other admission refusal.
    MmuOther = "mmu_other" @ Ingress;
    /// PFC watchdog: queue stormed with action drop.
    PfcWatchdog = "pfc_watchdog" @ Ingress;
    /// Still queued when the switch stopped (freed at shutdown).
    FlushedAtStop = "flushed_at_stop" @ Egress;
    /// Queued for, or sent to, a port whose link went down (flushed, charges released).
    LinkDown = "link_down" @ Ingress;
    /// WRED at dequeue: a Not-ECT (or unmarked) packet of a lossy queue (docs/design.md §6).
    Wred = "wred" @ Egress;
    /// A packet for the kernel over its class's punt rate limit (`[control_plane.copp]`).
    PuntRateLimited = "punt_rate_limited" @ Ingress;
    /// Refused by a kernel representor's driver (larger than what the tap takes): dropped,
    /// never retried at the head of its TX queue.
    PuntUndelivered = "punt_undelivered" @ Egress;
    /// Routed into a kernel blackhole route.
    RouteBlackhole = "route_blackhole" @ Ingress;
    /// Routed by a route whose next hops all leave through interfaces that are not switch
    /// ports (management, dummy, lo): never punted for the kernel to forward off the fabric.
    RouteNonPort = "route_non_port" @ Ingress;
    /// Sent to the router MAC with IP length fields that overrun the frame.
    RouteMalformed = "route_malformed" @ Ingress;
    /// On a routed port: unicast to a MAC that is not the router's (never bridged).
    NotRouterMac = "not_router_mac" @ Ingress;
    /// On a routed port: a broadcast/multicast the kernel does not take, or a non-IP frame
    /// to the router MAC (never flooded or relayed).
    NotRouted = "not_routed" @ Ingress;
    /// IPv4 header checksum wrong (RFC 1812 5.2.2).
    RouteBadChecksum = "route_bad_checksum" @ Ingress;
    /// A source no router forwards (RFC 1812 5.3.7, RFC 4291).
    RouteMartianSource = "route_martian_source" @ Ingress;
    /// A destination no router forwards (0/8, 127/8, ::, ::1).
    RouteMartianDestination = "route_martian_destination" @ Ingress;
    /// Larger than the egress MTU and not to be fragmented (IPv4 DF, IPv6): answered with
    /// ICMP fragmentation needed / packet too big from the dataplane (counted `generated`).
    TooBig = "too_big" @ Ingress;
}

impl DropReason {
    /// Drops that are always a loss of the lossless class (a sizing bug, reported
    /// loudly). `EgressQueueFull` is one too when the packet's TC is lossless; the
    /// per-PG counters tell (see [`PortTotals::lossless_drops`]).
    pub fn is_lossless_loss(self) -> bool {
        matches!(self, DropReason::LosslessHeadroomFull)
    }

    /// A lossless-class packet dropped for this reason is lost by a decision, not by the
    /// buffer: its egress link was down, or it was for the kernel over the punt rate limit.
    /// Counted per PG in `pg_lossless_discards`, beside (not in) `lossless_drops`.
    #[inline(always)]
    pub const fn discards_lossless(self) -> bool {
        matches!(self, DropReason::LinkDown | DropReason::PuntRateLimited)
    }
}

/// Where a drop happened and what was known of the packet there: every drop is counted
/// through [`LcoreCounters::count_drop`] with one of these.
#[derive(Debug, Clone, Copy)]
pub struct DropSite {
    /// The port the packet came in on.
    pub in_port: usize,
    /// Its traffic class, once classified (its per-TC balance on the ingress port).
    pub tc: Option<u8>,
    /// The egress port and queue, once the forwarding decision named them.
    pub out: Option<(usize, u8)>,
    /// Its ingress PG, when the packet was lossless (then its loss is lossless loss).
    pub lossless_pg: Option<u8>,
}

impl DropSite {
    /// Dropped on arrival: before classification.
    #[inline(always)]
    pub const fn arrival(in_port: usize) -> DropSite {
        DropSite { in_port, tc: None, out: None, lossless_pg: None }
    }

    /// Dropped after classification into `tc`, before an egress was chosen.
    #[inline(always)]
    pub const fn classified(in_port: usize, tc: u8) -> DropSite {
        DropSite { in_port, tc: Some(tc), out: None, lossless_pg: None }
    }

    /// Dropped on its way to queue `queue` of `out`.
    #[inline(always)]
    pub const fn forwarded(in_port: usize, tc: u8, out: usize, queue: u8, lossless_pg: Option<u8>) -> DropSite {
        DropSite { in_port, tc: Some(tc), out: Some((out, queue)), lossless_pg }
    }
}

impl From<crate::mmu::Refusal> for DropReason {
    /// The counter an MMU refusal is counted under.
    fn from(r: crate::mmu::Refusal) -> DropReason {
        use crate::mmu::Refusal as M;
        match r {
            M::LosslessHeadroomFull => DropReason::LosslessHeadroomFull,
            M::LossyDt | M::LossyPoolFull => DropReason::LossyThreshold,
            M::InvalidIndex | M::Oversize => DropReason::MmuOther,
        }
    }
}

/// A counter with one writer.
#[derive(Default, Debug)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Add `n` (single writer: load + store, no lock prefix).
    #[inline(always)]
    pub fn add(&self, n: u64) {
        self.0.store(self.0.load(Relaxed).wrapping_add(n), Relaxed);
    }
    #[inline(always)]
    pub fn inc(&self) {
        self.add(1)
    }
    #[inline(always)]
    pub fn set(&self, v: u64) {
        self.0.store(v, Relaxed);
    }
    #[inline(always)]
    pub fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }
}

/// Declares a set of counters once: the live struct (a [`Counter`] per scalar, an array
/// of them per array field; one writer), its totals (plain `u64`s), the sum of one into
/// the other, and the scalars by name (for the stats JSON and telemetry). Adding a
/// counter is one line in the list.
macro_rules! counter_set {
    (
        $(#[$live_doc:meta])* pub struct $live:ident;
        $(#[$tot_doc:meta])* pub struct $tot:ident;
        scalars { $( $(#[$sdoc:meta])* $s:ident, )* }
        arrays { $( $(#[$adoc:meta])* $a:ident [$n:expr], )* }
    ) => {
        $(#[$live_doc])*
        #[derive(Default, Debug)]
        pub struct $live {
            $( $(#[$sdoc])* pub $s: Counter, )*
            $( $(#[$adoc])* pub $a: [Counter; $n], )*
        }

        $(#[$tot_doc])*
        #[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
        pub struct $tot {
            $( $(#[$sdoc])* pub $s: u64, )*
            $( $(#[$adoc])* pub $a: [u64; $n], )*
        }

        impl $live {
            /// Adds what this lcore counted to `t`.
            pub fn add_to(&self, t: &mut $tot) {
                $( t.$s += self.$s.get(); )*
                $( for (t, c) in t.$a.iter_mut().zip(&self.$a) { *t += c.get(); } )*
            }
        }

        impl $tot {
            /// The scalar counters by name, in declaration order.
            pub fn scalars(&self) -> impl Iterator<Item = (&'static str, u64)> {
                [$( (stringify!($s), self.$s), )*].into_iter()
            }
        }
    };
}

counter_set! {
    /// Per port, as seen by one lcore.
    pub struct PortCounters;
    /// Per port, summed over lcores.
    pub struct PortTotals;
    scalars {
        rx_packets,
        rx_bytes,
        tx_packets,
        tx_bytes,
        /// Extra copies made when flooding (a frame flooded to k ports adds k-1).
        flood_copies,
        /// MAC-control frames (PFC, 802.3x) received and consumed.
        mac_control_rx,
        /// LLDP frames received and handed to the control lcore (consumed; `[lldp]` on).
        lldp_rx,
        /// Frames generated by the switch itself (PFC) and handed to TX; not part of
        /// forwarding conservation.
        control_tx,
        /// Routed (this port as ingress): forwarded to a next hop by the router.
        routed_packets,
        routed_bytes,
        /// ICMP errors the router built itself (packet too big) in answer to packets
        /// received here: they enter forwarding like flood copies.
        generated,
    }
    arrays {
        drops[DropReason::COUNT],
        /// Per egress queue (this port as egress): packets and bytes transmitted, packets
        /// dropped (MMU refusals and full queues, counted by the admitting lcore).
        queue_tx_packets[8],
        queue_tx_bytes[8],
        queue_drops[8],
        /// Per egress queue: packets (bytes) marked CE and dropped by WRED at dequeue
        /// (SONiC `show queue wredcounters`).
        queue_ecn_marked_packets[8],
        queue_ecn_marked_bytes[8],
        queue_wred_dropped_packets[8],
        queue_wred_dropped_bytes[8],
        /// Per TC (this port as ingress): packets classified into the TC, flood copies
        /// made, packets (and copies) that left through tx_burst, dropped after
        /// classification. Conservation per (port, TC): rx + copies = tx + dropped + queued.
        tc_rx[8],
        tc_copies[8],
        tc_tx[8],
        tc_dropped[8],
        /// Per PG (this port as ingress): packets of a lossless class the switch dropped —
        /// the MMU found the PG full up to its headroom, or (counted by the lcore that
        /// drops it) the egress queue of a lossless TC was full.
        pg_lossless_drops[8],
        /// Per PG (this port as ingress): packets of a lossless class dropped by a decision
        /// rather than the buffer ([`DropReason::discards_lossless`]: link down, punt rate
        /// limit). Beside `pg_lossless_drops`, so that "0 lossless drops" still means the
        /// buffer never lost one, and this says what else the class lost.
        pg_lossless_discards[8],
        /// Per [`crate::route::PuntReason`] (this port as ingress): sent up its kernel
        /// representor, and dropped over the punt rate limit.
        punted[crate::route::PuntReason::ALL.len()],
        punt_dropped[crate::route::PuntReason::ALL.len()],
        /// Per [`crate::route::TrapGroup`] (this port as ingress): passed and dropped by
        /// control-plane policing (`[control_plane.copp]`).
        copp_passed[crate::route::TrapGroup::ALL.len()],
        copp_dropped[crate::route::TrapGroup::ALL.len()],
    }
}

counter_set! {
    /// Per worker lcore, about the lcore itself.
    pub struct WorkerCounters;
    /// [`WorkerCounters`] read out (or summed over workers).
    pub struct WorkerTotals;
    scalars {
        /// MMU edges that did not fit the ring to the control lcore (the control lcore's
        /// reconciliation still acts on them).
        edge_overflow,
        /// The longest loop iteration of this worker, TSC cycles (the control lcore ages
        /// the FDB: a worker never sweeps it).
        max_loop_cycles,
        /// Nanoseconds this worker's thread was runnable but waiting for its CPU (the
        /// kernel's schedstat `run_delay`, read at stop): the scheduler's share of
        /// `max_loop_cycles` is at most this.
        runqueue_wait_ns,
        /// TSC cycles spent in iterations that moved at least one packet.
        busy_cycles,
        loops,
        /// PAUSE refreshes this worker sent while the control lcore napped (also counted
        /// in the port's PFC counters once the control lcore takes the note over).
        pause_refreshes,
        /// Frames still in RX rings when the switch stopped, freed unread (never counted
        /// as received: a loopback or memif peer may hold the switch's own mbufs there).
        rx_flushed_at_stop,
        /// PFC frames received on a queue whose lcore does not own the port's receive-side
        /// PFC state that found the hand-over queue full (never seen in practice).
        pfc_inbox_overflow,
        /// Naps taken with `worker_idle = "adaptive"`.
        idle_sleeps,
    }
    arrays {}
}

impl PortCounters {
    #[inline(always)]
    fn drop_n(&self, r: DropReason, n: u64) {
        self.drops[r as usize].add(n);
    }
}

/// One of a port's per-queue, per-TC or per-PG counter arrays, and the names it goes by:
/// `key` in the stats JSON (`"queues": [{"queue": q, <key>: …}]`, likewise `"tc"`), and
/// `<prefix><i>_<telemetry>` in DPDK telemetry and `pfcswitch show` (SONiC's `UC3_packets`,
/// `TC3_rx`, `PG3_lossless_drops`). The lists below are the one place these names are
/// written: adding a counter to them is one line.
pub struct ArrayCounter {
    pub key: &'static str,
    pub telemetry: &'static str,
    pub get: fn(&PortTotals) -> &[u64; 8],
}

impl ArrayCounter {
    /// The telemetry key of element `i` under `prefix` ("UC", "TC", "PG").
    pub fn telemetry_key(&self, prefix: &str, i: usize) -> String {
        format!("{prefix}{i}_{}", self.telemetry)
    }
}

/// Per egress queue (telemetry prefix "UC").
pub const QUEUE_COUNTERS: [ArrayCounter; 7] = [
    ArrayCounter { key: "tx_packets", telemetry: "packets", get: |t| &t.queue_tx_packets },
    ArrayCounter { key: "tx_bytes", telemetry: "bytes", get: |t| &t.queue_tx_bytes },
    ArrayCounter { key: "drops", telemetry: "drops", get: |t| &t.queue_drops },
    ArrayCounter { key: "ecn_marked_packets", telemetry: "ecn_marked_packets", get: |t| &t.queue_ecn_marked_packets },
    ArrayCounter { key: "ecn_marked_bytes", telemetry: "ecn_marked_bytes", get: |t| &t.queue_ecn_marked_bytes },
    ArrayCounter {
        key: "wred_dropped_packets",
        telemetry: "wred_dropped_packets",
        get: |t| &t.queue_wred_dropped_packets,
    },
    ArrayCounter { key: "wred_dropped_bytes", telemetry: "wred_dropped_bytes", get: |t| &t.queue_wred_dropped_bytes },
];

/// The queue counters `show queue counters` prints (SONiC's columns).
pub const Q_TX_PACKETS: &ArrayCounter = &QUEUE_COUNTERS[0];
pub const Q_TX_BYTES: &ArrayCounter = &QUEUE_COUNTERS[1];
pub const Q_DROPS: &ArrayCounter = &QUEUE_COUNTERS[2];
/// The queue counters `show queue wredcounters` prints.
pub const Q_ECN_MARKED_PACKETS: &ArrayCounter = &QUEUE_COUNTERS[3];
pub const Q_ECN_MARKED_BYTES: &ArrayCounter = &QUEUE_COUNTERS[4];
pub const Q_WRED_DROPPED_PACKETS: &ArrayCounter = &QUEUE_COUNTERS[5];
pub const Q_WRED_DROPPED_BYTES: &ArrayCounter = &QUEUE_COUNTERS[6];

/// Per ingress TC (telemetry prefix "TC"): the per-(port, TC) conservation balance.
pub const TC_COUNTERS: [ArrayCounter; 4] = [
    ArrayCounter { key: "rx", telemetry: "rx", get: |t| &t.tc_rx },
    ArrayCounter { key: "flood_copies", telemetry: "flood_copies", get: |t| &t.tc_copies },
    ArrayCounter { key: "tx", telemetry: "tx", get: |t| &t.tc_tx },
    ArrayCounter { key: "dropped", telemetry: "dropped", get: |t| &t.tc_dropped },
];

/// Per ingress PG (telemetry prefix "PG").
pub const PG_COUNTERS: [ArrayCounter; 2] = [
    ArrayCounter { key: "pg_lossless_drops", telemetry: "lossless_drops", get: |t| &t.pg_lossless_drops },
    ArrayCounter { key: "pg_lossless_discards", telemetry: "lossless_discards", get: |t| &t.pg_lossless_discards },
];

/// The last `N` samples of a quantity (e.g. PFC reaction time in TSC ticks), single
/// writer, readable at any time; percentiles are taken on read.
pub struct SampleLog {
    samples: Box<[AtomicU64]>,
    count: AtomicU64,
}

impl SampleLog {
    pub fn new(capacity: usize) -> SampleLog {
        SampleLog { samples: (0..capacity.max(1)).map(|_| AtomicU64::new(0)).collect(), count: AtomicU64::new(0) }
    }
    #[inline]
    pub fn record(&self, v: u64) {
        let n = self.count.load(Relaxed);
        let i = (n % self.samples.len() as u64) as usize;
        self.samples[i].store(v, Relaxed);
        self.count.store(n + 1, Relaxed);
    }
    /// Samples recorded since start (more than are kept when the log wrapped).
    pub fn count(&self) -> u64 {
        self.count.load(Relaxed)
    }
    /// The kept samples.
    pub fn values(&self) -> Vec<u64> {
        let n = (self.count() as usize).min(self.samples.len());
        self.samples[..n].iter().map(|a| a.load(Relaxed)).collect()
    }
}

/// p-th percentile (0..=100) of `v` by nearest rank; None when empty.
pub fn percentile(v: &mut [u64], p: f64) -> Option<u64> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    Some(v[rank.min(v.len()) - 1])
}

/// Everything one lcore counts. Cache-padded so lcores never share a line.
pub struct LcoreCounters {
    pub ports: Box<[PortCounters]>,
    pub worker: WorkerCounters,
    /// PFC reaction: ticks from the admission that crossed Xoff to the PAUSE frame handed
    /// to `tx_burst` (recorded by the lcore that owns the port's TX).
    pub pfc_reaction: SampleLog,
}

impl LcoreCounters {
    /// Count `n` packets dropped at `site` for `why`: on the ingress or the egress port
    /// as the reason says ([`DropReason::side`]), in the ingress port's per-TC balance, on
    /// the egress queue, and per PG when a lossless packet was lost. The one place a drop
    /// is counted.
    #[inline(always)]
    pub fn count_drop(&self, site: DropSite, why: DropReason, n: u64) {
        let port = match (why.side(), site.out) {
            (Side::Egress, Some((out, _))) => out,
            _ => site.in_port,
        };
        self.ports[port].drop_n(why, n);
        if let Some(tc) = site.tc {
            self.ports[site.in_port].tc_dropped[tc as usize & 7].add(n);
        }
        if let Some((out, queue)) = site.out {
            self.ports[out].queue_drops[queue as usize & 7].add(n);
        }
        if let Some(pg) = site.lossless_pg {
            if why.loses_lossless() {
                self.ports[site.in_port].pg_lossless_drops[pg as usize & 7].add(n);
            } else if why.discards_lossless() {
                self.ports[site.in_port].pg_lossless_discards[pg as usize & 7].add(n);
            }
        }
    }

    pub fn new(nports: usize) -> CachePadded<LcoreCounters> {
        CachePadded::new(LcoreCounters {
            ports: (0..nports).map(|_| PortCounters::default()).collect(),
            worker: WorkerCounters::default(),
            pfc_reaction: SampleLog::new(4096),
        })
    }
}

impl PortTotals {
    pub fn drops_total(&self) -> u64 {
        self.drops.iter().sum()
    }
    /// Lossless-class packets dropped by the switch on this ingress port. The per-PG
    /// counters hold the MMU's headroom-full drops plus lossless egress-queue overflows;
    /// `lossless_headroom_full` is also counted by reason, so the two agree unless a
    /// lossless queue overflowed, and the larger one is the loss.
    pub fn lossless_drops(&self) -> u64 {
        self.drop_count(DropReason::LosslessHeadroomFull).max(self.pg_lossless_drops.iter().sum())
    }
    /// Lossless-class packets dropped by a decision on this ingress port (link down, punt
    /// rate limit): beside [`PortTotals::lossless_drops`], not in it.
    pub fn lossless_discards(&self) -> u64 {
        self.pg_lossless_discards.iter().sum()
    }
    pub fn drop_count(&self, r: DropReason) -> u64 {
        self.drops[r as usize]
    }
}

#[derive(Debug, Clone, Default)]
pub struct Totals {
    pub ports: Vec<PortTotals>,
}

impl Totals {
    pub fn collect<'a>(lcores: impl IntoIterator<Item = &'a LcoreCounters>, nports: usize) -> Totals {
        let mut t = Totals { ports: vec![PortTotals::default(); nports] };
        for lc in lcores {
            for (c, o) in lc.ports.iter().zip(t.ports.iter_mut()) {
                c.add_to(o);
            }
        }
        t
    }

    /// Packets that entered forwarding: received plus flood copies plus the router's own
    /// ICMP errors.
    pub fn entered(&self) -> u64 {
        self.ports.iter().map(|p| p.rx_packets + p.flood_copies + p.generated).sum()
    }
    /// Packets that left forwarding: transmitted, consumed (MAC control, LLDP) or dropped.
    pub fn left(&self) -> u64 {
        self.ports.iter().map(|p| p.tx_packets + p.mac_control_rx + p.lldp_rx + p.drops_total()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregate_over_lcores() {
        let a = LcoreCounters::new(2);
        let b = LcoreCounters::new(2);
        a.ports[0].rx_packets.add(3);
        b.ports[0].rx_packets.add(4);
        b.count_drop(DropSite::arrival(1), DropReason::Runt, 1);
        a.ports[1].tx_packets.add(7);
        let t = Totals::collect([&*a, &*b], 2);
        assert_eq!(t.ports[0].rx_packets, 7);
        assert_eq!(t.ports[1].drop_count(DropReason::Runt), 1);
        assert_eq!(t.entered(), 7);
        assert_eq!(t.left(), 8);
    }

    #[test]
    fn lossless_discards_beside_lossless_drops() {
        let a = LcoreCounters::new(2);
        let lossless = DropSite::forwarded(0, 3, 1, 3, Some(3));
        a.count_drop(lossless, DropReason::LinkDown, 2);
        a.count_drop(DropSite { lossless_pg: Some(3), ..DropSite::classified(0, 3) }, DropReason::PuntRateLimited, 1);
        // A lossy packet's link_down drop is no lossless discard.
        a.count_drop(DropSite::forwarded(0, 1, 1, 1, None), DropReason::LinkDown, 5);
        let t = Totals::collect([&*a], 1);
        assert_eq!(t.ports[0].pg_lossless_discards[3], 3);
        assert_eq!(t.ports[0].lossless_discards(), 3);
        assert_eq!(t.ports[0].lossless_drops(), 0, "a decision is not buffer loss");
        assert_eq!(t.ports[0].drop_count(DropReason::LinkDown), 7);
    }

    #[test]
    fn lossless_drops_per_pg_aggregate() {
        let a = LcoreCounters::new(1);
        let b = LcoreCounters::new(1);
        // Two headroom-full drops (counted by reason and per PG) on PG 3.
        a.count_drop(DropSite::forwarded(0, 3, 0, 3, Some(3)), DropReason::LosslessHeadroomFull, 2);
        let t = Totals::collect([&*a, &*b], 1);
        assert_eq!(t.ports[0].pg_lossless_drops[3], 2);
        assert_eq!(t.ports[0].lossless_drops(), 2, "one loss, counted twice, reported once");
        // Plus a lossless egress queue overflow on PG 4 (charged to the egress port, per
        // PG on the ingress port).
        b.count_drop(DropSite::forwarded(0, 4, 0, 4, Some(4)), DropReason::EgressQueueFull, 1);
        let t = Totals::collect([&*a, &*b], 1);
        assert_eq!(t.ports[0].lossless_drops(), 3);
        // A deliberate drop of a lossless packet (a dead link) is not lossless loss.
        b.count_drop(DropSite::forwarded(0, 4, 0, 4, Some(4)), DropReason::LinkDown, 1);
        assert_eq!(Totals::collect([&*a, &*b], 1).ports[0].lossless_drops(), 3);
    }

    #[test]
    fn a_drop_is_counted_on_its_side() {
        let a = LcoreCounters::new(2);
        a.count_drop(DropSite::forwarded(0, 1, 1, 2, None), DropReason::EgressQueueFull, 1);
        a.count_drop(DropSite::forwarded(0, 1, 1, 2, None), DropReason::LinkDown, 1);
        let t = Totals::collect([&*a], 2);
        assert_eq!(t.ports[1].drop_count(DropReason::EgressQueueFull), 1, "egress side");
        assert_eq!(t.ports[0].drop_count(DropReason::LinkDown), 1, "ingress side");
        assert_eq!((t.ports[0].tc_dropped[1], t.ports[1].queue_drops[2]), (2, 2));
    }

    #[test]
    fn sample_log_and_percentiles() {
        let l = SampleLog::new(4);
        for v in [5, 1, 9, 3, 7] {
            l.record(v);
        }
        assert_eq!(l.count(), 5);
        let mut v = l.values();
        assert_eq!(v.len(), 4);
        assert_eq!(percentile(&mut v, 50.0), Some(3)); // 5 was overwritten by 7
        assert_eq!(percentile(&mut v, 100.0), Some(9));
        assert_eq!(percentile(&mut [], 50.0), None);
    }

    #[test]
    fn reason_names_unique() {
        let mut names: Vec<_> = DropReason::ALL.iter().map(|r| r.as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), DropReason::COUNT);
        for (i, r) in DropReason::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i);
        }
    }
}
