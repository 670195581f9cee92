//! Receive side of PFC (802.1Qbb) and 802.3x PAUSE, observed on the wire.
//!
//! Two ports. The source port S (`Ethernet4`, net_pcap) reads a backlog of 64-byte
//! VLAN frames, PCP 3 (lossless) and PCP 1 (lossy) interleaved, all to an unknown unicast
//! MAC, so they flood to the only other port X (`Ethernet0`). X runs at `speed = 10M`
//! (one pause quantum = 51.2 µs, so pauses last seconds and are measurable) and is shaped
//! to 1 Mb/s, so both traffic classes stay backlogged for the whole run and leave X at a
//! steady ~1400 frames/s. X's capture (`tx_pcap`) holds the real transmit times.
//!
//! X receives from a kernel veth (`rx_iface_in`): the test writes crafted MAC-control
//! frames into the peer end at chosen moments, while traffic is flowing. From the
//! capture's timestamps each test checks which priority stopped, when, and for how long
//! (quanta × 512 / speed), and from the counters JSON what the switch says it received.
//!
//! Needs root (veth, AF_PACKET); skipped with a message otherwise. The runs are
//! serialized: they measure time on a 2-core machine.

mod common;
use common::*;

use std::sync::Mutex;
use std::time::Duration;

static SERIAL: Mutex<()> = Mutex::new(());

const X_SPEED_BPS: u64 = 10_000_000;
const SHAPER_BPS: u64 = 1_000_000;
const FRAME: usize = 64;
/// Frames of each priority in S's backlog: more than X can send in any run here.
const PER_PCP: usize = 8000;
/// Wire overhead the shaper counts per frame (FCS, preamble, IFG).
const WIRE_OVERHEAD: usize = 24;
/// A strict-priority flow at 1 Mb/s sends a frame every 0.7 ms: it never stops longer
/// than this unless paused (generous: a busy 2-core host deschedules the worker for tens
/// of ms now and then; the pauses looked for are ≥ 500 ms). Bounds add the lcores' longest
/// recorded pass ([`Outcome::away`]): beside a CPU hog a worker is away for longer.
const STRICT_GAP_NS: u64 = 150_000_000;
/// Under DWRR (weight 1: one 9238-byte quantum per round, 74 ms at 1 Mb/s) a class may
/// wait for a round of the other class; far below the pauses these tests look for
/// (≥ 1 s; 3.355 s for the ignored one).
const DWRR_GAP_NS: u64 = 400_000_000;
/// Slack for a measured pause: it may not be shorter than the quanta say (minus the time
/// of one frame), and may be longer by scheduling noise on a busy 2-core machine.
const EARLY_NS: u64 = 5_000_000;
const LATE_NS: u64 = 150_000_000;

const PEER: [u8; 6] = [0x02, 0, 0, 0, 0, 0x77];
const SRC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x51];
const DST: [u8; 6] = [0x02, 0, 0, 0, 0, 0xdd]; // never learned: flooded to X

/// Pause time of `q` quanta on X, in ns.
fn quanta_ns(q: u16) -> u64 {
    q as u64 * 512 * 1_000_000_000 / X_SPEED_BPS
}

/// Frames per second X's shaper allows for our frames.
fn line_fps() -> f64 {
    SHAPER_BPS as f64 / ((FRAME + WIRE_OVERHEAD) * 8) as f64
}

struct Rig {
    dir: TestDir,
    veth: Veth,
    sw: RunningSwitch,
}

struct Outcome {
    /// (tx time ns, pcp) of every data frame X sent, in order.
    tx: Vec<(u64, u8)>,
    json: serde_json::Value,
    log: String,
}

impl Outcome {
    fn times(&self, pcp: u8) -> Vec<u64> {
        self.tx.iter().filter(|&&(_, p)| p == pcp).map(|&(t, _)| t).collect()
    }
    fn x(&self) -> &serde_json::Value {
        port(&self.json, "Ethernet0")
    }
    fn pfc(&self, field: &str) -> Vec<u64> {
        self.x()["pfc"][field]
            .as_array()
            .unwrap_or_else(|| panic!("no pfc.{field}"))
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect()
    }
    /// How long the switch's lcores were away at most (descheduled on a loaded machine):
    /// every time bound here is widened by it, never by a guess (docs/testing.md).
    fn away(&self) -> u64 {
        lcores_away_ns(&self.json)
    }

    fn away_note(&self) -> String {
        format!(" (lcores away at most {:.1} ms)", ms(self.away()))
    }

    fn count_between(&self, pcp: u8, from: u64, to: u64) -> usize {
        self.tx.iter().filter(|&&(t, p)| p == pcp && t > from && t < to).count()
    }
}

/// Largest gap between consecutive timestamps: (start, end).
fn largest_gap(ts: &[u64]) -> (u64, u64) {
    ts.windows(2).map(|w| (w[0], w[1])).max_by_key(|&(a, b)| b - a).expect("fewer than 2 frames")
}

/// Largest gap between consecutive timestamps, ignoring the gap that starts at `skip`.
fn largest_other_gap(ts: &[u64], skip: Option<u64>) -> u64 {
    ts.windows(2).filter(|w| Some(w[0]) != skip).map(|w| w[1] - w[0]).max().unwrap_or(0)
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// `strict3`: TC 3 strict priority over TC 1, so priority 3 holds the link whenever it
/// may send, and priority 1 gets exactly the time priority 3 is paused; gaps of
/// priority 3 then are pauses, to within one frame time. Otherwise the default DWRR.
fn config(d: &TestDir, veth_a: &str, strict3: bool) -> SwitchConfig {
    let sched = if strict3 {
        "[qos.scheduler]\n\"3\" = { type = \"STRICT\" }"
    } else {
        // Weight 1: a DWRR round is one 9238-byte quantum per class, 74 ms at 1 Mb/s.
        "[qos.scheduler]\n\"1\" = { type = \"DWRR\", weight = 1 }\n\"3\" = { type = \"DWRR\", weight = 1 }"
    };
    // X has PFC on 3 and 4, so it ignores 802.3x PAUSE by default (802.1Qbb: the two are
    // exclusive on a link); these runs tell it to obey, to observe what PAUSE does.
    veth_and_pcap(d, veth_a).edit_port("Ethernet0", |p| p.set("pause_8023x", "\"obey\"")).one_worker().toml(sched)
}

/// Root check, veth, S's backlog, config; start the switch and let traffic settle.
/// None (with a SKIP message) when not root.
fn start(tag: &str, strict3: bool) -> Option<Rig> {
    if !is_root() {
        eprintln!("SKIP: needs root (veth pair, AF_PACKET socket)");
        return None;
    }
    let dir = TestDir::new(tag);
    let id = std::process::id() % 100_000;
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst) % 10;
    let veth = Veth::new(&format!("prx{id}{n}a"), &format!("prx{id}{n}b"));
    let mut frames = Vec::with_capacity(2 * PER_PCP);
    for i in 0..PER_PCP as u32 {
        frames.push(vlan_frame(DST, SRC, 3, 10, 0x33, i, FRAME));
        frames.push(vlan_frame(DST, SRC, 1, 10, 0x11, i, FRAME));
    }
    write_pcap(&dir.join("in1.pcap"), &frames);
    let cfg = dir.join("rx.toml");
    config(&dir, &veth.a, strict3).write(&cfg);
    let mut sw = RunningSwitch::spawn(&cfg, &dir.join("stats.json"), &[]);
    sw.wait_forwarding(Duration::from_secs(30));
    // S's file is read at once; X's queues are now backlogged and X sends at 1 Mb/s.
    std::thread::sleep(Duration::from_millis(800));
    Some(Rig { dir, veth, sw })
}

/// Stop the switch; parse X's capture and the counters; the checks every run ends with.
fn finish(rig: Rig) -> Outcome {
    let Rig { dir, veth, sw } = rig;
    let log = sw.stop();
    drop(veth);
    let json = read_json(&dir.join("stats.json"));
    let mut tx = Vec::new();
    for (t, f) in read_pcap_ts(&dir.join("out0.pcap")) {
        // X sends only the flooded data (PCP 1/3) and nothing of its own (no PFC: its
        // ingress carries no data worth pausing).
        assert!(f.len() >= 14 && f[12..14] != [0x88, 0x08], "X sent a MAC control frame: {f:02x?}");
        if let Some(p) = frame_pcp(&f) {
            assert_eq!(f.len(), FRAME, "frame changed on the way");
            tx.push((t, p));
        }
    }
    let o = Outcome { tx, json, log };
    assert!(o.tx.windows(2).all(|w| w[0].0 <= w[1].0), "capture timestamps go backwards");
    // Nothing is lost: every frame from S left X or was still queued at stop; a pause
    // never drops (neither lossless nor lossy: the MMU holds the backlog).
    let (x, s) = (o.x(), port(&o.json, "Ethernet4"));
    assert_eq!(s["rx_packets"], 2 * PER_PCP as u64, "S did not read its backlog\n{}", o.log);
    let flushed = x["drops"]["flushed_at_stop"].as_u64().unwrap();
    assert_eq!(x["tx_packets"].as_u64().unwrap() as usize, o.tx.len(), "capture and counters disagree");
    assert_eq!(o.tx.len() as u64 + flushed, 2 * PER_PCP as u64, "frames lost: {}", x["drops"]);
    for p in [x, s] {
        assert_eq!(p["lossless_drops"], 0, "{}", p["drops"]);
        assert_eq!(
            p["drops_total"].as_u64().unwrap(),
            p["drops"]["flushed_at_stop"].as_u64().unwrap(),
            "{}: drops {}",
            p["name"],
            p["drops"]
        );
    }
    // The queues really were backlogged until the end (else gaps would mean nothing).
    assert!(flushed > 1000, "backlog ran dry before the end of the run: {flushed} left");
    assert_conserved(&o.json);
    eprintln!("lcores away at most {:.1} ms (time bounds widened by it)", ms(o.away()));
    o
}

/// `pcp` used the whole link (at the shaper's rate, without stopping) between `from`
/// and `to`.
fn assert_flows_within(o: &Outcome, pcp: u8, from: u64, to: u64) {
    let mut ts: Vec<u64> = vec![from];
    ts.extend(o.times(pcp).into_iter().filter(|&t| t > from && t < to));
    ts.push(to);
    let n = ts.len() - 2;
    let expect = line_fps() * (to - from) as f64 / 1e9;
    assert!(
        n as f64 >= 0.8 * expect,
        "PCP {pcp} sent {n} frames in {:.1} ms, line rate allows {expect:.0}",
        ms(to - from)
    );
    let g = largest_other_gap(&ts, None);
    assert!(g < STRICT_GAP_NS + o.away(), "PCP {pcp} stopped for {:.1} ms within the window{}", ms(g), o.away_note());
}

fn sleep_until(t_ns: u64) {
    let now = now_ns();
    if t_ns > now {
        std::thread::sleep(Duration::from_nanos(t_ns - now));
    }
}

/// `pcp` flows from its first frame to its last without stopping longer than `max_gap`,
/// apart from the gap that starts at `skip`.
fn assert_steady(o: &Outcome, pcp: u8, skip: Option<u64>, max_gap: u64) {
    let ts = o.times(pcp);
    assert!(ts.len() > 500, "PCP {pcp}: only {} frames sent", ts.len());
    let g = largest_other_gap(&ts, skip);
    eprintln!("PCP {pcp}: {} frames, longest other stop {:.1} ms", ts.len(), ms(g));
    assert!(g < max_gap + o.away(), "PCP {pcp} stopped for {:.1} ms outside the pause{}", ms(g), o.away_note());
}

/// (a) PFC PAUSE for priority 3 (in `pfc_enable`) with 40000 quanta = 2.048 s at 10M:
/// priority 3 stops for exactly that long, from the moment the frame arrives; priority 1
/// keeps flowing and gets the whole link meanwhile; priority 3 flows again afterwards.
#[test]
fn pfc_pause_stops_only_the_named_priority_for_its_quanta() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(rig) = start("pause", true) else { return };
    const Q: u16 = 40_000;
    let d = quanta_ns(Q);
    let t_pause = rig.veth.inject(&pfc_frame(PEER, 0x08, [0, 0, 0, Q, 0, 0, 0, 0]));
    // A RESUME after the pause has expired changes nothing on the wire (and closes the
    // pause in the receive counters; see the ignored test below).
    sleep_until(t_pause + d + 400_000_000);
    let t_late = rig.veth.inject(&pfc_frame(PEER, 0x08, [0; 8]));
    sleep_until(t_late + 600_000_000);
    let o = finish(rig);

    let p3 = o.times(3);
    let (g0, g1) = largest_gap(&p3);
    eprintln!(
        "PCP3 gap {:.1} ms (quanta say {:.1} ms), starting {:+.1} ms after the PAUSE was sent",
        ms(g1 - g0),
        ms(d),
        (g0 as f64 - t_pause as f64) / 1e6
    );
    assert!(
        g1 - g0 + EARLY_NS >= d && g1 - g0 <= d + LATE_NS + o.away(),
        "priority 3 paused {:.1} ms, expected {:.1} ms",
        ms(g1 - g0),
        ms(d)
    );
    assert!(
        g0 + 20_000_000 >= t_pause && g0 <= t_pause + 100_000_000 + o.away(),
        "pause began {:+.1} ms from the frame",
        (g0 as f64 - t_pause as f64) / 1e6
    );
    assert!(
        p3.iter().any(|&t| t < g0) && p3.iter().filter(|&&t| t > g1).count() > 300,
        "priority 3 not flowing before and after the pause"
    );
    assert_steady(&o, 3, Some(g0), STRICT_GAP_NS);
    // During the pause priority 1 had the link to itself (work-conserving scheduler).
    assert_flows_within(&o, 1, g0, g1);

    assert_eq!(o.x()["mac_control_rx"], 2);
    assert_eq!(o.pfc("rx_pause"), [0, 0, 0, 1, 0, 0, 0, 0]);
    assert_eq!(o.pfc("rx_resume"), [0, 0, 0, 1, 0, 0, 0, 0]);
    assert_eq!(o.pfc("rx_on2off"), [0, 0, 0, 1, 0, 0, 0, 0]);
    let dur = o.pfc("rx_pause_duration_us");
    assert!(dur[3].abs_diff(d / 1000) <= 2, "rx_pause_duration_us[3] = {} µs, expected {} µs", dur[3], d / 1000);
    assert!(dur.iter().enumerate().all(|(i, &v)| i == 3 || v == 0), "{dur:?}");
    assert_eq!(o.pfc("tx_pause"), [0; 8], "X sent PFC");
}

/// (b) PAUSE with the maximum time (65535 quanta = 3.355 s), then a RESUME (time 0)
/// 0.5 s later: priority 3 restarts at the RESUME, not at the quanta's expiry.
#[test]
fn pfc_resume_restarts_at_once() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(rig) = start("resume", true) else { return };
    let t_pause = rig.veth.inject(&pfc_frame(PEER, 0x08, [0, 0, 0, 0xffff, 0, 0, 0, 0]));
    sleep_until(t_pause + 500_000_000);
    let t_resume = rig.veth.inject(&pfc_frame(PEER, 0x08, [0; 8]));
    // Stop well before the 3.355 s would have expired.
    sleep_until(t_resume + 1_500_000_000);
    let o = finish(rig);

    let p3 = o.times(3);
    let (g0, g1) = largest_gap(&p3);
    let sent = t_resume - t_pause;
    eprintln!("PCP3 gap {:.1} ms; PAUSE→RESUME sent {:.1} ms apart", ms(g1 - g0), ms(sent));
    assert!(
        g1 - g0 + EARLY_NS >= sent && g1 - g0 <= sent + LATE_NS + o.away(),
        "priority 3 paused {:.1} ms, RESUME came {:.1} ms after the PAUSE",
        ms(g1 - g0),
        ms(sent)
    );
    assert!(
        g0 + 20_000_000 >= t_pause && g0 <= t_pause + 100_000_000 + o.away(),
        "pause began {:+.1} ms from the frame",
        (g0 as f64 - t_pause as f64) / 1e6
    );
    // net_pcap stamps captures from the TSC (rte_get_timer_hz, estimated at start) plus one
    // gettimeofday at start, so its clock drifts from the test's by a few ms over a run.
    assert!(
        g1 + 20_000_000 >= t_resume && g1 <= t_resume + 100_000_000 + o.away(),
        "restart {:+.1} ms from the RESUME",
        (g1 as f64 - t_resume as f64) / 1e6
    );
    assert!(p3.iter().filter(|&&t| t > g1).count() > 500, "priority 3 not flowing after the RESUME");
    assert_steady(&o, 3, Some(g0), STRICT_GAP_NS);
    assert_flows_within(&o, 1, g0, g1);

    assert_eq!(o.pfc("rx_pause"), [0, 0, 0, 1, 0, 0, 0, 0]);
    assert_eq!(o.pfc("rx_resume"), [0, 0, 0, 1, 0, 0, 0, 0]);
    assert_eq!(o.pfc("rx_on2off"), [0, 0, 0, 1, 0, 0, 0, 0]);
    let dur = o.pfc("rx_pause_duration_us")[3] * 1000;
    assert!(
        dur.abs_diff(g1 - g0) <= 60_000_000,
        "rx_pause_duration_us[3] = {:.1} ms, wire shows {:.1} ms",
        ms(dur),
        ms(g1 - g0)
    );
}

/// (c) A PFC frame whose class-enable vector names only priority 1 (not in
/// `pfc_enable = [3, 4]`), with time 0xFFFF for priority 1 *and* for priority 3 (whose
/// enable bit is clear): nothing stops. The frame is counted as received for priority 1.
#[test]
fn pfc_for_a_priority_without_pfc_is_ignored() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(rig) = start("ign", false) else { return };
    let t = rig.veth.inject(&pfc_frame(PEER, 0x02, [0, 0xffff, 0, 0xffff, 0, 0, 0, 0]));
    sleep_until(t + 1_500_000_000);
    let o = finish(rig);

    for pcp in [1, 3] {
        assert_steady(&o, pcp, None, DWRR_GAP_NS);
        // And each kept about its share of the link after the frame.
        let n = o.count_between(pcp, t, t + 1_500_000_000);
        assert!(n as f64 > 0.3 * line_fps() * 1.5, "PCP {pcp}: {n} frames in the 1.5 s after the frame");
    }
    assert_eq!(o.x()["mac_control_rx"], 1);
    assert_eq!(o.pfc("rx_pause"), [0, 1, 0, 0, 0, 0, 0, 0]);
    assert_eq!(o.pfc("rx_on2off"), [0; 8]);
    assert_eq!(o.pfc("rx_pause_duration_us"), [0; 8]);
    assert_eq!(o.x()["drops"]["bad_mac_control"], 0);
}

/// (d) An 802.3x PAUSE (opcode 0x0001) of 20000 quanta = 1.024 s stops every priority,
/// lossless or not, for that long; a later 802.3x PAUSE with time 0 is harmless.
#[test]
fn link_pause_stops_every_priority() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(rig) = start("link", false) else { return };
    const Q: u16 = 20_000;
    let d = quanta_ns(Q);
    let t_pause = rig.veth.inject(&pause_8023x_frame(PEER, Q));
    sleep_until(t_pause + d + 400_000_000);
    let t_late = rig.veth.inject(&pause_8023x_frame(PEER, 0));
    sleep_until(t_late + 600_000_000);
    let o = finish(rig);

    let all: Vec<u64> = o.tx.iter().map(|&(t, _)| t).collect();
    let (g0, g1) = largest_gap(&all);
    eprintln!(
        "link silent {:.1} ms (quanta say {:.1} ms), from {:+.1} ms after the PAUSE",
        ms(g1 - g0),
        ms(d),
        (g0 as f64 - t_pause as f64) / 1e6
    );
    assert!(
        g1 - g0 + EARLY_NS >= d && g1 - g0 <= d + LATE_NS + o.away(),
        "link paused {:.1} ms, expected {:.1} ms",
        ms(g1 - g0),
        ms(d)
    );
    assert!(
        g0 + 20_000_000 >= t_pause && g0 <= t_pause + 100_000_000 + o.away(),
        "pause began {:+.1} ms from the frame",
        (g0 as f64 - t_pause as f64) / 1e6
    );
    for pcp in [1, 3] {
        let ts = o.times(pcp);
        let (a, b) = largest_gap(&ts);
        assert!(
            a <= g0 + 5_000_000 && b + 5_000_000 >= g1,
            "PCP {pcp}: largest gap {:.1}..{:.1} ms not the link pause",
            ms(a - g0),
            ms(b - g0)
        );
        assert_steady(&o, pcp, Some(a), DWRR_GAP_NS);
        assert!(ts.iter().filter(|&&t| t > g1).count() > 300, "PCP {pcp} not flowing after the pause");
    }
    assert_eq!(o.x()["mac_control_rx"], 2);
    assert_eq!(o.pfc("rx_on2off"), [1; 8]);
    let dur = o.pfc("rx_pause_duration_us");
    assert!(dur.iter().all(|&v| v.abs_diff(d / 1000) <= 2), "rx_pause_duration_us {dur:?}, expected {} each", d / 1000);
}

/// A pause that simply expires (no later frame for that priority) must still be counted
/// in `rx_pause_duration_us` (SAI RX_PAUSE_DURATION): the worker settles expired deadlines
/// (`PfcRx::poll`), not only a later frame.
#[test]
fn expired_pause_is_counted_in_rx_pause_duration() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(rig) = start("expire", true) else { return };
    const Q: u16 = 10_000;
    let d = quanta_ns(Q);
    let t = rig.veth.inject(&pfc_frame(PEER, 0x08, [0, 0, 0, Q, 0, 0, 0, 0]));
    sleep_until(t + d + 500_000_000);
    let o = finish(rig);
    let (g0, g1) = largest_gap(&o.times(3));
    assert!(g1 - g0 + EARLY_NS >= d, "no pause on the wire");
    let dur = o.pfc("rx_pause_duration_us")[3];
    assert!(dur.abs_diff(d / 1000) <= 2, "rx_pause_duration_us[3] = {dur} µs, expected {} µs", d / 1000);
}
