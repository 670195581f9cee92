//! Counters the generating lcore publishes for the live lines (single writer, any
//! reader), and the live line itself. Pure.

use std::sync::Arc;
use std::time::Duration;

use crate::counters::Counter;
use crate::pfc::PfcRxCounters;

/// One stream as seen live.
#[derive(Debug, Default)]
pub struct LiveStream {
    pub tx_packets: Counter,
    /// Wire bits sent ((size + 20) · 8, FCS in size).
    pub tx_wire_bits: Counter,
    pub rx_packets: Counter,
    /// Distinct frames received.
    pub rx_unique: Counter,
    /// Highest sequence number received + 1.
    pub rx_next: Counter,
    pub rx_reordered: Counter,
    pub rx_ce: Counter,
}

/// One port as seen live.
#[derive(Debug)]
pub struct LivePort {
    pub name: String,
    /// Bit n: priority n paused by the peer at the last poll.
    pub paused: Counter,
    pub pfc: Arc<PfcRxCounters>,
}

/// Everything the live lines read.
#[derive(Debug)]
pub struct Live {
    /// Indexed by stream id (the receive table's size).
    pub streams: Vec<LiveStream>,
    pub ports: Vec<LivePort>,
}

/// The totals a line compares with the previous line's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub tx_packets: u64,
    pub tx_wire_bits: u64,
    pub rx_packets: u64,
    /// Sum over streams of highest + 1 − unique: missing so far (in flight included).
    pub rx_missing: u64,
    pub rx_reordered: u64,
    pub rx_ce: u64,
    /// Per port: PAUSE frames received (all priorities), paused mask.
    pub pauses: Vec<(u64, u8)>,
}

impl Live {
    pub fn snapshot(&self) -> Snapshot {
        let mut s = Snapshot::default();
        for x in &self.streams {
            s.tx_packets += x.tx_packets.get();
            s.tx_wire_bits += x.tx_wire_bits.get();
            s.rx_packets += x.rx_packets.get();
            s.rx_missing += x.rx_next.get().saturating_sub(x.rx_unique.get());
            s.rx_reordered += x.rx_reordered.get();
            s.rx_ce += x.rx_ce.get();
        }
        s.pauses = self
            .ports
            .iter()
            .map(|p| {
                let n = p.pfc.prio.iter().map(|c| c.pause_frames.get()).sum::<u64>() + p.pfc.link_pause_frames.get();
                (n, p.paused.get() as u8)
            })
            .collect();
        s
    }
}

fn rate(v: f64, unit: &str) -> String {
    if v >= 1e9 {
        format!("{:.2}G{unit}", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.2}M{unit}", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k{unit}", v / 1e3)
    } else {
        format!("{v:.0}{unit}")
    }
}

/// `[   2.0s] tx 9.80kpps 80.2Mb/s  rx 9.79kpps  missing 0 reord 0 ce 0  p0: pause 12 (+3) paused 3`
pub fn live_line(names: &[String], last: &Snapshot, cur: &Snapshot, dt: Duration, since: Duration) -> String {
    let s = dt.as_secs_f64().max(1e-9);
    let mut line = format!(
        "[{:>6.1}s] tx {} {}  rx {}  missing {} reord {} ce {}",
        since.as_secs_f64(),
        rate((cur.tx_packets - last.tx_packets.min(cur.tx_packets)) as f64 / s, "pps"),
        rate((cur.tx_wire_bits - last.tx_wire_bits.min(cur.tx_wire_bits)) as f64 / s, "b/s"),
        rate((cur.rx_packets - last.rx_packets.min(cur.rx_packets)) as f64 / s, "pps"),
        cur.rx_missing,
        cur.rx_reordered,
        cur.rx_ce
    );
    for (i, (n, mask)) in cur.pauses.iter().enumerate() {
        let before = last.pauses.get(i).map_or(0, |p| p.0);
        if *n == 0 && *mask == 0 {
            continue;
        }
        let prios: Vec<String> = (0..8).filter(|b| mask & (1 << b) != 0).map(|b| b.to_string()).collect();
        line.push_str(&format!(
            "  {}: pause {} (+{}){}",
            names.get(i).map_or("?", |x| x.as_str()),
            n,
            n - before.min(*n),
            if prios.is_empty() { String::new() } else { format!(" paused {}", prios.join(",")) }
        ));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line() {
        let live = Live {
            streams: (0..2).map(|_| LiveStream::default()).collect(),
            ports: vec![LivePort { name: "p0".into(), paused: Counter::default(), pfc: Arc::default() }],
        };
        let a = live.snapshot();
        live.streams[0].tx_packets.add(9800);
        live.streams[0].tx_wire_bits.add(9800 * 8 * 1020);
        live.streams[1].rx_packets.add(500);
        live.streams[1].rx_unique.add(499);
        live.streams[1].rx_next.add(502);
        live.ports[0].pfc.prio[3].pause_frames.add(3);
        live.ports[0].paused.set(1 << 3);
        let b = live.snapshot();
        let l = live_line(&["p0".into()], &a, &b, Duration::from_secs(1), Duration::from_secs(2));
        assert_eq!(l, "[   2.0s] tx 9.8kpps 79.97Mb/s  rx 500pps  missing 3 reord 0 ce 0  p0: pause 3 (+3) paused 3");
    }
}
