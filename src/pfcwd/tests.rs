//! Unit tests of the PFC watchdog's state machine (storm detection, restoration, actions).

use super::*;

// 1 tick = 1 ms.
const HZ: u64 = 1000;

fn wd(action: Action) -> Pfcwd {
    Pfcwd::new(&PfcwdConfig { action, poll_interval_ms: 10, ..PfcwdConfig::default() }, HZ, 0b0001_1000)
}

/// Polls every 10 ms from `from` to `to` (inclusive) with fixed masks; returns the
/// first time a transition happened and what it was.
fn run(w: &mut Pfcwd, from: u64, to: u64, paused: u8, nonempty: u8, progress: u8) -> Option<(u64, Transitions)> {
    let mut now = from;
    while now <= to {
        let t = w.poll(now, paused, nonempty, progress);
        if !t.is_empty() {
            return Some((now, t));
        }
        now += 10;
    }
    None
}

#[test]
fn a_priority_no_longer_watched_is_restored_and_forgotten() {
    let mut w = wd(Action::Drop);
    run(&mut w, 0, 1000, 0b1000, 0b1000, 0).expect("storm");
    assert_eq!(w.drop_mask(), 0b1000);
    w.set_watch(0b1_0000);
    assert_eq!((w.watch_mask(), w.stormed_mask(), w.drop_mask(), w.ignore_pfc_mask()), (0b1_0000, 0, 0, 0));
    assert_eq!(w.state().watch_mask(), 0b1_0000);
    // Priority 3 stalls again: not watched, never a storm.
    assert!(run(&mut w, 1000, 2000, 0b1000, 0b1000, 0).is_none());
}

#[test]
fn reconfigure_keeps_the_storm_and_switches_its_action() {
    let mut w = wd(Action::Drop);
    let (at, t) = run(&mut w, 0, 1000, 0b1000, 0b1000, 0).expect("storm");
    assert_eq!(t.detected, 0b1000);
    assert_eq!((w.ignore_pfc_mask(), w.drop_mask()), (0b1000, 0b1000));
    let cfg = PfcwdConfig {
        action: Action::Forward,
        restoration_time_ms: 400,
        poll_interval_ms: 20,
        ..PfcwdConfig::default()
    };
    w.reconfigure(&cfg, HZ);
    assert_eq!(w.action(), Action::Forward);
    assert_eq!((w.ignore_pfc_mask(), w.drop_mask(), w.stormed_mask()), (0b1000, 0, 0b1000));
    assert_eq!(w.state().ignore_pfc_mask(), 0b1000);
    assert_eq!(w.state().drop_mask(), 0);
    // Quiet from `at`: restored after the new 400 ms (not the old 200), polled every 20 ms.
    assert!(run(&mut w, at + 20, at + 380, 0, 0b1000, 0).is_none());
    let (back, t) = run(&mut w, at + 400, at + 500, 0, 0b1000, 0).expect("restored");
    assert_eq!((t.restored, back), (0b1000, at + 400));
    assert_eq!((w.ignore_pfc_mask(), w.drop_mask()), (0, 0));
}

#[test]
fn sonic_defaults_and_validation() {
    let c = PfcwdConfig::default();
    assert_eq!((c.action, c.detection_time_ms, c.restoration_time_ms), (Action::Drop, 200, 200));
    assert!(c.validate().is_ok());
    let bad = PfcwdConfig { detection_time_ms: 50, ..c };
    assert_eq!(bad.validate().unwrap_err().0, "detection_time");
    let bad = PfcwdConfig { restoration_time_ms: 60001, ..c };
    assert_eq!(bad.validate().unwrap_err().0, "restoration_time");
    let bad = PfcwdConfig { poll_interval_ms: 300, ..c };
    let e = bad.validate().unwrap_err();
    assert_eq!(e.0, "poll_interval");
    assert!(!e.1.contains('\n'));
    assert_eq!(Action::parse("forward"), Some(Action::Forward));
    assert_eq!(Action::parse("x"), None);
    assert_eq!(ms_to_ticks(200, 2_500_000_000), 500_000_000);
}

#[test]
fn storm_detected_within_detection_plus_one_poll_not_before() {
    let mut w = wd(Action::Drop);
    let bit = 1 << 3;
    // The stall begins between polls (at 5 ms); first seen at 10 ms.
    assert!(w.poll(0, 0, bit, 0).is_empty());
    let (at, t) = run(&mut w, 10, 1000, bit, bit, 0).unwrap();
    assert_eq!(t.detected, bit);
    assert_eq!(t.restored, 0);
    assert!(at - 5 >= 200, "detected too early at {at}");
    assert!(at - 5 <= 200 + 10, "detected too late at {at}");
    assert_eq!(at, 210);
    assert_eq!(w.stormed_mask(), bit);
    let s = w.state();
    assert!(s.prio[3].stormed.load(Relaxed));
    assert_eq!(s.snapshot(3).storms_detected, 1);
    assert_eq!(s.snapshot(4), PfcwdPrioSnapshot::default());
}

#[test]
fn paused_but_transmitting_is_not_stormed() {
    let mut w = wd(Action::Drop);
    let bit = 1 << 4;
    assert_eq!(run(&mut w, 0, 2000, bit, bit, bit), None);
    // Progress at one poll only resets the clock.
    let mut w = wd(Action::Drop);
    assert_eq!(run(&mut w, 0, 150, bit, bit, 0), None);
    assert!(w.poll(160, bit, bit, bit).is_empty());
    let (at, _) = run(&mut w, 170, 2000, bit, bit, 0).unwrap();
    assert_eq!(at, 170 + 200);
}

#[test]
fn paused_empty_queue_is_not_stormed() {
    let mut w = wd(Action::Drop);
    let bit = 1 << 3;
    assert_eq!(run(&mut w, 0, 2000, bit, 0, 0), None);
    // Packets arrive and do not drain: the clock starts then.
    let (at, _) = run(&mut w, 2010, 5000, bit, bit, 0).unwrap();
    assert_eq!(at, 2210);
}

#[test]
fn unwatched_and_not_paused_priorities_never_storm() {
    let mut w = wd(Action::Drop);
    assert_eq!(run(&mut w, 0, 2000, 0b0000_0001, 0xff, 0), None);
    assert_eq!(run(&mut w, 0, 2000, 0, 0xff, 0), None);
    let mut off = Pfcwd::new(&PfcwdConfig::default(), HZ, 0);
    assert_eq!(run(&mut off, 0, 2000, 0xff, 0xff, 0), None);
}

#[test]
fn restoration_after_silence_not_while_pauses_arrive() {
    let mut w = wd(Action::Drop);
    let stamps = w.rx_stamps();
    let bit = 1 << 3;
    // PAUSEs every 1 ms, as a storming peer sends them.
    let mut now = 0;
    let mut detected_at = None;
    while now < 3000 {
        stamps.note_pause(bit, now);
        if now % 10 == 0 {
            let t = w.poll(now, bit, bit, 0);
            if t.detected != 0 {
                detected_at = Some(now);
            }
            assert_eq!(t.restored, 0, "restored at {now} while PAUSEs arrive");
        }
        now += 1;
    }
    assert_eq!(detected_at, Some(200));
    // Still stormed; PFC ignored and queue dropped.
    assert_eq!((w.ignore_pfc_mask(), w.drop_mask()), (bit, bit));
    // The peer goes quiet after the PAUSE at 2999; the queue has been flushed (empty),
    // its pause deadline still runs for a while (irrelevant for restoration).
    let (at, t) = run(&mut w, 3000, 10_000, bit, 0, 0).unwrap();
    assert_eq!(t.restored, bit);
    assert!(at - 2999 >= 200 && at - 2999 <= 210, "restored at {at}");
    assert_eq!((w.ignore_pfc_mask(), w.drop_mask(), w.stormed_mask()), (0, 0, 0));
    let s = w.state().snapshot(3);
    assert_eq!((s.storms_detected, s.storms_restored, s.stormed), (1, 1, false));
    assert_eq!(s.status(), "operational");
}

#[test]
fn restoration_counts_from_detection_when_pause_was_older() {
    // A single long PAUSE (e.g. 802.3x at a low speed) stalls the queue; no frame
    // arrives afterwards: silence is counted from the detection.
    let mut w = wd(Action::Forward);
    let bit = 1 << 4;
    w.rx_stamps().note_pause(bit, 0);
    let (at, t) = run(&mut w, 0, 1000, bit, bit, 0).unwrap();
    assert_eq!((at, t.detected), (200, bit));
    let (at, t) = run(&mut w, 210, 1000, bit, bit, bit).unwrap();
    assert_eq!((at, t.restored), (400, bit));
}

#[test]
fn xon_stream_alone_never_storms() {
    use crate::pfc::PfcRx;
    use crate::wire::MacControl;
    let mut rx = PfcRx::new(0b0001_1000, 100_000_000_000);
    let dl = rx.deadlines();
    let mut w = wd(Action::Drop);
    let stamps = w.rx_stamps();
    let xon = MacControl::Pfc { class_enable: 0b0001_1000, quanta: [0; 8] };
    for now in 0..5000u64 {
        let out = rx.on_frame(&xon, now, HZ);
        stamps.note_rx(&out, now);
        if now % 10 == 0 {
            let t = w.poll(now, dl.paused_mask(now), 0xff, 0);
            assert!(t.is_empty());
        }
    }
    assert_eq!(stamps.last_pause(3), 0);
    assert_eq!(w.state().snapshot(3).storms_detected, 0);
}

#[test]
fn xon_does_not_keep_a_storm_alive() {
    let mut w = wd(Action::Drop);
    let stamps = w.rx_stamps();
    let bit = 1 << 3;
    stamps.note_pause(bit, 0);
    let (at, _) = run(&mut w, 0, 1000, bit, bit, 0).unwrap();
    assert_eq!(at, 200);
    // XONs every ms: RxOutcome with only `resumed` set stamps nothing.
    for now in 201..500 {
        stamps.note_rx(&RxOutcome { resumed: bit, ..RxOutcome::default() }, now);
    }
    let (at, t) = run(&mut w, 210, 1000, 0, 0, 0).unwrap();
    assert_eq!((at, t.restored), (400, bit));
}

#[test]
fn pause_restarting_between_polls_restarts_the_clock() {
    let mut w = wd(Action::Drop);
    let stamps = w.rx_stamps();
    let bit = 1 << 3;
    stamps.note_rx(&RxOutcome { paused: bit, on2off: bit, ..Default::default() }, 0);
    assert_eq!(run(&mut w, 0, 100, bit, bit, 0), None);
    // The pause lapsed at 103 and a new one began at 105, unseen by the polls.
    stamps.note_rx(&RxOutcome { paused: bit, on2off: bit, ..Default::default() }, 105);
    let (at, _) = run(&mut w, 110, 1000, bit, bit, 0).unwrap();
    assert_eq!(at, 310);
}

#[test]
fn actions_map_to_masks() {
    let bit = 1 << 4;
    for (action, ignore, drop) in [(Action::Drop, bit, bit), (Action::Forward, bit, 0), (Action::Alert, 0, 0)] {
        let mut w = wd(action);
        let s = w.state();
        assert_eq!((w.ignore_pfc_mask(), w.drop_mask()), (0, 0));
        let (_, t) = run(&mut w, 0, 1000, bit, bit, 0).unwrap();
        assert_eq!(t.detected, bit, "{action}");
        assert_eq!((w.ignore_pfc_mask(), w.drop_mask()), (ignore, drop), "{action}");
        assert_eq!((s.ignore_pfc_mask(), s.drop_mask()), (ignore, drop), "{action}");
        assert_eq!(s.stormed_mask(), bit);
        let (_, t) = run(&mut w, 1010, 5000, bit, bit, 0).unwrap();
        assert_eq!(t.restored, bit);
        assert_eq!((s.ignore_pfc_mask(), s.drop_mask(), s.stormed_mask()), (0, 0, 0));
    }
}

#[test]
fn alert_never_changes_masks() {
    let mut w = wd(Action::Alert);
    let stamps = w.rx_stamps();
    for now in (0..10_000u64).step_by(10) {
        if (now / 1000) % 2 == 0 {
            stamps.note_pause(0xff, now);
        }
        w.poll(now, 0xff, 0xff, 0);
        assert_eq!((w.ignore_pfc_mask(), w.drop_mask()), (0, 0));
    }
    let s = w.state().snapshot(3);
    assert!(s.storms_detected >= 2 && s.storms_restored >= 1, "{s:?}");
}

#[test]
fn counters_telemetry_and_queue_map() {
    let mut w = wd(Action::Drop);
    run(&mut w, 0, 1000, 1 << 3, 1 << 3, 0).unwrap();
    let s = w.state();
    s.count_tx_dropped(3, 5);
    s.count_rx_dropped(3, 2);
    s.count_tx_ok(4, 1);
    s.count_rx_ok(9, 1); // out of range: ignored
    let mut o = serde_json::Map::new();
    s.write_telemetry(&mut o);
    assert_eq!(o["prio3_status"], "stormed");
    assert_eq!(o["prio4_status"], "operational");
    assert_eq!(o["prio3_tx_dropped"], 5);
    assert_eq!(o["prio3_rx_dropped"], 2);
    assert_eq!(o["prio3_storms_detected"], 1);
    assert_eq!(o["prio4_tx_ok"], 1);
    assert!(!o.contains_key("prio0_status"));
    let pq = [0, 1, 2, 3, 4, 5, 6, 7];
    assert_eq!(prio_mask_from_queues(0b1000, &pq), 0b1000);
    let pq = [0, 0, 0, 3, 3, 1, 1, 1];
    assert_eq!(prio_mask_from_queues(0b1001, &pq), 0b0001_1111);
}

#[test]
fn due_follows_interval() {
    let mut w = wd(Action::Drop);
    assert!(w.due(0));
    w.poll(0, 0, 0, 0);
    assert!(!w.due(9));
    assert!(w.due(10));
}
