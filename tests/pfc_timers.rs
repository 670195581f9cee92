//! PFC timers in TSC ticks: pause durations to the tick, the sender's
//! PAUSE/refresh/RESUME sequence, the per-port aggregate, and the receiver's deadlines.

use pfcswitch::mmu::EdgeKind;
use pfcswitch::pfc::*;
use pfcswitch::wire::MacControl;

const G: u64 = 1_000_000_000;
const TSC_26: u64 = 2_600_000_000;
const TSC_1: u64 = 1_000_000_000;

/// ticks = ceil(quanta · 512 · tsc_hz / speed), worked by hand (exact quotient shown).
#[test]
fn pause_duration_to_the_tick() {
    #[rustfmt::skip]
    let cases: [(u64, u64, u16, u64); 16] = [
        // tsc_hz, speed, quanta, ticks            exact
        (TSC_26, 10 * G, 65535, 8_724_020),      // 8 724 019.2
        (TSC_26, 10 * G, 1, 134),                // 133.12
        (TSC_26, 25 * G, 65535, 3_489_608),      // 3 489 607.68
        (TSC_26, 25 * G, 394, 20_980),           // 20 979.712
        (TSC_26, 100 * G, 65535, 872_402),       // 872 401.92
        (TSC_26, 100 * G, 1, 14),                // 13.312
        (TSC_26, 400 * G, 65535, 218_101),       // 218 100.48
        (TSC_26, 400 * G, 394, 1_312),           // 1 311.232
        (TSC_1, 10 * G, 65535, 3_355_392),       // 3 355 392 exactly (3.355 ms)
        (TSC_1, 10 * G, 394, 20_173),            // 20 172.8
        (TSC_1, 25 * G, 65535, 1_342_157),       // 1 342 156.8
        (TSC_1, 25 * G, 1, 21),                  // 20.48
        (TSC_1, 100 * G, 65535, 335_540),        // 335 539.2 (0.335 ms)
        (TSC_1, 100 * G, 394, 2_018),            // 2 017.28
        (TSC_1, 400 * G, 65535, 83_885),         // 83 884.8
        (TSC_1, 400 * G, 1, 2),                  // 1.28
    ];
    for (hz, speed, q, ticks) in cases {
        assert_eq!(quanta_to_ticks(q, speed, hz), ticks, "{q} quanta at {speed} bps, {hz} Hz");
        // The receiver obeys exactly that long.
        let mut rx = PfcRx::new(0xff, speed);
        let t0 = 1_000_000;
        rx.on_frame(&MacControl::pfc_pause(1 << 2, q), t0, hz);
        assert!(rx.is_paused(2, t0 + ticks - 1));
        assert!(!rx.is_paused(2, t0 + ticks));
    }
    assert_eq!(quanta_to_ticks(0, 100 * G, TSC_26), 0);
}

#[test]
fn sender_pause_refresh_resume_sequence() {
    for (speed, hz) in [(10 * G, TSC_26), (100 * G, TSC_1), (400 * G, TSC_26)] {
        let cfg = PfcTxConfig::default();
        let full = quanta_to_ticks(0xffff, speed, hz);
        let half = full / 2;
        let mut tx = PfcTx::new(&cfg, speed, hz);
        assert_eq!(tx.refresh_ticks(), half);
        let t0 = 42_000;
        assert_eq!(tx.poll(t0), None);
        assert_eq!(tx.next_deadline(), None);
        assert_eq!(tx.on_edge(EdgeKind::Resume, t0), None, "RESUME while ON sends nothing");
        assert_eq!(tx.on_edge(EdgeKind::Pause, t0), Some(Send { quanta: 0xffff }));
        assert_eq!(tx.on_edge(EdgeKind::Pause, t0 + 1), None, "duplicate PAUSE edge");
        // Refreshes at t0 + half, t0 + 2·half, ... when polled on time.
        let mut sent = vec![t0];
        let mut t = t0;
        for k in 1..=5u64 {
            assert_eq!(tx.next_deadline(), Some(t0 + k * half));
            assert_eq!(tx.poll(t0 + k * half - 1), None);
            t = t0 + k * half;
            assert_eq!(tx.poll(t), Some(Send { quanta: 0xffff }));
            assert_eq!(tx.poll(t), None, "one refresh per deadline");
            sent.push(t);
        }
        // A late poll refreshes immediately and re-arms from the send time.
        let late = t + half + 7;
        assert_eq!(tx.poll(late), Some(Send { quanta: 0xffff }));
        assert_eq!(tx.next_deadline(), Some(late + half));
        sent.push(late);
        // The peer never sees a gap longer than the pause time.
        assert!(sent.windows(2).all(|w| w[1] - w[0] < full));
        // One RESUME, then nothing at all.
        assert_eq!(tx.on_edge(EdgeKind::Resume, late + 10), Some(Send { quanta: 0 }));
        assert_eq!(tx.next_deadline(), None);
        for dt in [0, half, full, 10 * full] {
            assert_eq!(tx.poll(late + 10 + dt), None);
        }
        assert_eq!(tx.on_edge(EdgeKind::Resume, late + 20), None);
    }
}

#[test]
fn port_aggregate_one_frame_for_several_priorities() {
    let hz = TSC_1;
    let speed = 100 * G;
    let half = quanta_to_ticks(0xffff, speed, hz) / 2; // 167 770
    let mut tx = PfcPortTx::new(PfcTxConfig { coalesce_ticks: 1000, ..Default::default() }, speed, hz);
    let counters = tx.counters();
    // A PG carrying priorities 3 and 4 goes OFF: one frame, both classes.
    let f = tx.on_edge(0b0001_1000, EdgeKind::Pause, 0).unwrap();
    assert_eq!(f, MacControl::pfc_pause(0b0001_1000, 0xffff));
    assert_eq!(tx.off_mask(), 0b0001_1000);
    // Priority 1 pauses 500 ticks later (its own PG).
    assert_eq!(tx.on_edge(0b10, EdgeKind::Pause, 500), Some(MacControl::pfc_pause(0b10, 0xffff)));
    assert_eq!(tx.next_deadline(), Some(half));
    assert_eq!(tx.poll(half - 1), None);
    // At 3/4's deadline, priority 1 (due at half + 500, within 1000) rides along.
    assert_eq!(tx.poll(half), Some(MacControl::pfc_pause(0b0001_1010, 0xffff)));
    assert_eq!(tx.next_deadline(), Some(2 * half));
    // RESUME for 3/4 only.
    let r = tx.on_edge(0b0001_1000, EdgeKind::Resume, half + 100).unwrap();
    assert_eq!(r, MacControl::pfc_resume(0b0001_1000));
    assert_eq!(tx.off_mask(), 0b10);
    assert_eq!(tx.poll(2 * half), Some(MacControl::pfc_pause(0b10, 0xffff)));
    assert_eq!(tx.on_edge(0b10, EdgeKind::Resume, 2 * half + 5), Some(MacControl::pfc_resume(0b10)));
    assert_eq!(tx.next_deadline(), None);
    assert_eq!(tx.poll(100 * half), None);
    let rx = PfcRx::new(0, speed);
    let s = PfcPrioStats::snapshot(&counters, &rx.counters(), hz);
    assert_eq!((s[3].tx_pause, s[3].tx_resume, s[3].tx_on2off), (2, 1, 1));
    assert_eq!((s[1].tx_pause, s[1].tx_resume), (3, 1));
    // OFF time: 3 from 0 to half+100; 1 from 500 to 2·half+5 (1 GHz: ticks = ns).
    assert_eq!(s[3].tx_pause_duration_us, (half + 100) / 1000);
    assert_eq!(s[1].tx_pause_duration_us, (2 * half + 5 - 500) / 1000);
    assert_eq!(s[0], PfcPrioStats::default());
}

#[test]
fn receiver_rules() {
    let hz = TSC_1;
    let speed = 100 * G;
    // pfc_enable 3,4; told to obey 802.3x PAUSE (a port with PFC ignores it by default).
    let mut rx = PfcRx::new(0b0001_1000, speed).obey_8023x(true);
    let d = rx.deadlines();
    let q100 = quanta_to_ticks(100, speed, hz); // 512 ns
                                                // Priorities 3 and 5 in the vector: 5 has no PFC → ignored, keeps running.
    let o = rx.on_frame(&MacControl::pfc_pause(0b0010_1000, 100), 1000, hz);
    assert_eq!(o, RxOutcome { paused: 0b1000, resumed: 0, on2off: 0b1000, ignored: 0b10_0000 });
    assert_eq!(d.paused_mask(1000), 0b1000);
    assert!(d.is_paused(3, 1000 + q100 - 1) && !d.is_paused(3, 1000 + q100));
    assert!(!d.is_paused(5, 1001) && !d.is_paused(200, 1001));
    // A new PAUSE replaces the deadline, even a shorter one.
    let o = rx.on_frame(&MacControl::pfc_pause(0b1000, 10), 1100, hz);
    assert_eq!((o.paused, o.on2off), (0b1000, 0));
    assert_eq!(d.deadline(3), 1100 + quanta_to_ticks(10, speed, hz));
    // Time 0 clears.
    let o = rx.on_frame(&MacControl::pfc_resume(0b1000), 1101, hz);
    assert_eq!(o.resumed, 0b1000);
    assert!(!d.is_paused(3, 1101));
    // 802.3x PAUSE pauses all eight priorities regardless of pfc_enable; 0 resumes them.
    rx.on_frame(&MacControl::Pause { quanta: 0xffff }, 2000, hz);
    assert_eq!(d.paused_mask(2001), 0xff);
    let o = rx.on_frame(&MacControl::Pause { quanta: 0 }, 3000, hz);
    assert_eq!(o.resumed, 0xff);
    assert_eq!(d.paused_mask(3000), 0);
    // Expiry without a frame is settled by poll.
    rx.on_frame(&MacControl::pfc_pause(0b1_0000, 1), 10_000, hz);
    assert_eq!(rx.poll(10_000), 0);
    assert_eq!(rx.poll(20_000), 0b1_0000);
    let c = rx.counters();
    let s = PfcPrioStats::snapshot(&PfcTxCounters::default(), &c, hz);
    assert_eq!((s[3].rx_pause, s[3].rx_resume, s[3].rx_on2off), (2, 1, 2));
    assert_eq!(s[5].rx_pause, 1, "received frames are counted even if not obeyed");
    assert_eq!(c.link_pause_frames.get(), 1);
    // By default a port with PFC ignores 802.3x PAUSE (802.1Qbb): counted, nothing paused.
    let mut rx = PfcRx::new(0b0001_1000, speed);
    let o = rx.on_frame(&MacControl::Pause { quanta: 0xffff }, 2000, hz);
    assert_eq!(o, RxOutcome::default());
    assert_eq!(rx.deadlines().paused_mask(2001), 0);
    assert_eq!((rx.counters().link_pause_frames.get(), rx.counters().link_pause_ignored.get()), (1, 1));
    // A port without PFC obeys it.
    let mut rx = PfcRx::new(0, speed);
    rx.on_frame(&MacControl::Pause { quanta: 0xffff }, 2000, hz);
    assert_eq!(rx.deadlines().paused_mask(2001), 0xff);
    // Priority 3 paused 1000→1101 and 2000→3000: 1101 ns → 1 µs.
    assert_eq!(s[3].rx_pause_duration_us, (101 + 1000) / 1000);
}

#[test]
fn deadlines_are_readable_from_another_thread() {
    let mut rx = PfcRx::new(0xff, 100 * G);
    let d = rx.deadlines();
    std::thread::scope(|s| {
        let r = s.spawn(move || {
            let mut seen = 0u8;
            for _ in 0..200_000 {
                seen |= d.paused_mask(0);
            }
            seen
        });
        for i in 0..10_000u64 {
            let q = if i % 2 == 0 { 0xffff } else { 0 };
            rx.on_frame(&MacControl::pfc_pause(0xff, q), 1, TSC_1);
        }
        let seen = r.join().unwrap();
        assert!(seen == 0 || seen == 0xff || seen.count_ones() <= 8);
    });
}

/// A refresh is late when it leaves more than the pause time after the previous PAUSE (the
/// peer was free to send in between): counted per priority, never for one on time, and not
/// for the first refresh after a worker's refreshes whose times the sender is not told.
#[test]
fn late_refreshes_are_counted() {
    let (hz, speed) = (TSC_1, 10 * G);
    let full = quanta_to_ticks(0xffff, speed, hz); // 3 355 392 ns
    let half = full / 2;
    let mut tx = PfcPortTx::new(PfcTxConfig::default(), speed, hz);
    let c = tx.counters();
    let late = |c: &PfcTxCounters| c.prio[3].late_refreshes.get();
    tx.on_edge(1 << 3, EdgeKind::Pause, 0).unwrap();
    assert!(tx.poll(half).is_some());
    assert_eq!(late(&c), 0, "on time");
    // Exactly the pause time after the last one: the peer is still held.
    assert!(tx.poll(half + full).is_some());
    assert_eq!(late(&c), 0, "at the pause time, not after it");
    // One tick more than the pause time: the peer was free for a tick.
    assert!(tx.poll(half + 2 * full + 1).is_some());
    assert_eq!(late(&c), 1);
    // A refresh carried along by another priority's edge is judged too.
    let t = half + 4 * full;
    tx.on_edge(1 << 4, EdgeKind::Pause, t).unwrap();
    assert_eq!(late(&c), 2);
    assert_eq!(c.prio[4].late_refreshes.get(), 0, "a first PAUSE is no refresh");
    // RESUME, then a worker's PAUSE with two refreshes of its own taken over: the next
    // refresh is not judged (the worker's last refresh time is unknown), later ones are.
    tx.on_edge(1 << 3, EdgeKind::Resume, t + 1).unwrap();
    let w = t + 10 * full;
    tx.note_sent_pause(1 << 3, w, 3);
    assert!(tx.poll(w + 5 * full).is_some());
    assert_eq!(late(&c), 2, "not judged after a worker's unknown refreshes");
    assert!(tx.poll(w + 7 * full).is_some());
    assert_eq!(late(&c), 3);
    // A worker's single PAUSE has a known time.
    let mut tx = PfcPortTx::new(PfcTxConfig::default(), speed, hz);
    let c = tx.counters();
    tx.note_sent_pause(1 << 3, 100, 1);
    assert!(tx.poll(100 + full + 1).is_some());
    assert_eq!(late(&c), 1);
    let s = PfcPrioStats::snapshot(&c, &PfcRx::new(0, speed).counters(), hz);
    assert_eq!(s[3].tx_late_refresh, 1);
}
