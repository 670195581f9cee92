//! PFC watchdog against a ground-truth model, over random event sequences: received
//! PFC / 802.3x frames go through the real `PfcRx` (pause deadlines) and
//! `PfcwdRxStamps`, the queue state and TX progress are random, polls happen at the
//! watchdog's interval and at random extra times.
//!
//! Invariants checked at every poll:
//! * a storm is declared only while the priority is paused, queued and not sending, and
//!   never earlier than `detection_time` after its current continuous pause began;
//! * a storm is restored only after `restoration_time` without a PAUSE (non-zero time)
//!   for that priority, and not earlier than `restoration_time` after its detection;
//! * per priority `restored <= detected <= restored + 1`, and `stormed` = the difference;
//! * masks follow the action (drop: ignore+drop, forward: ignore, alert: none);
//! * only watched priorities ever storm;
//! * XON (time 0) frames alone never cause a storm.

use pfcswitch::pfc::PfcRx;
use pfcswitch::pfcwd::{Action, Pfcwd, PfcwdRxStamps};
use pfcswitch::wire::MacControl;
use proptest::prelude::*;
use std::sync::atomic::Ordering::Relaxed;

// 1 tick = 1 µs and 1 quantum = 512 bit-times at 512 Mb/s = 1 µs: quanta = ticks.
const HZ: u64 = 1_000_000;
const SPEED: u64 = 512_000_000;

#[derive(Debug, Clone)]
enum Ev {
    Advance(u64),
    Pfc { class_enable: u8, quanta: u16 },
    Pause8023x(u16),
    Queue { nonempty: u8, progress: u8 },
    Poll,
}

fn ev(xon_only: bool) -> impl Strategy<Value = Ev> {
    let quanta = if xon_only {
        Just(0u16).boxed()
    } else {
        prop_oneof![2 => Just(0u16), 8 => 1u16..400, 1 => Just(u16::MAX)].boxed()
    };
    let q2 = quanta.clone();
    prop_oneof![
        6 => (1u64..60).prop_map(Ev::Advance),
        4 => (any::<u8>(), quanta).prop_map(|(class_enable, quanta)| Ev::Pfc { class_enable, quanta }),
        1 => q2.prop_map(Ev::Pause8023x),
        3 => (prop_oneof![3 => Just(0xffu8), 1 => any::<u8>()], prop_oneof![3 => Just(0u8), 1 => any::<u8>()])
            .prop_map(|(nonempty, progress)| Ev::Queue { nonempty, progress }),
        1 => Just(Ev::Poll),
    ]
}

#[derive(Debug, Clone, Copy)]
struct Params {
    action: Action,
    detection: u64,
    restoration: u64,
    interval: u64,
    pfc_enable: u8,
}

fn params() -> impl Strategy<Value = Params> {
    (
        prop_oneof![Just(Action::Drop), Just(Action::Forward), Just(Action::Alert)],
        20u64..400,
        20u64..400,
        1u64..25,
        prop_oneof![Just(0b0001_1000u8), any::<u8>()],
    )
        .prop_map(|(action, detection, restoration, interval, pfc_enable)| Params {
            action,
            detection,
            restoration,
            interval: interval.min(detection).min(restoration),
            pfc_enable,
        })
}

/// Ground truth per priority (only priorities that obey PFC are tracked).
#[derive(Debug, Clone, Copy, Default)]
struct Truth {
    deadline: u64,
    began: u64,
    last_pause: Option<u64>,
    detected_at: Option<u64>,
    detected: u64,
    restored: u64,
}

struct Sim {
    p: Params,
    now: u64,
    rx: PfcRx,
    wd: Pfcwd,
    stamps: std::sync::Arc<PfcwdRxStamps>,
    truth: [Truth; 8],
    nonempty: u8,
    progress: u8,
    storms: u64,
}

impl Sim {
    fn new(p: Params) -> Sim {
        let wd = Pfcwd::with_ticks(p.action, p.detection, p.restoration, p.interval, p.pfc_enable);
        let stamps = wd.rx_stamps();
        Sim {
            p,
            now: 0,
            // The model's 802.3x PAUSE stops every priority: the port is told to obey it.
            rx: PfcRx::new(p.pfc_enable, SPEED).obey_8023x(true),
            wd,
            stamps,
            truth: [Truth::default(); 8],
            nonempty: 0,
            progress: 0,
            storms: 0,
        }
    }

    fn frame(&mut self, f: MacControl, obeying: u8, quanta: [u16; 8]) {
        let out = self.rx.on_frame(&f, self.now, HZ);
        self.stamps.note_rx(&out, self.now);
        let now = self.now;
        for (i, t) in self.truth.iter_mut().enumerate() {
            if obeying & (1 << i) == 0 {
                continue;
            }
            let q = u64::from(quanta[i]);
            if q == 0 {
                t.deadline = 0;
            } else {
                if t.deadline <= now {
                    t.began = now;
                }
                t.deadline = now + q;
                t.last_pause = Some(now);
            }
        }
    }

    fn apply(&mut self, e: &Ev) -> Result<(), TestCaseError> {
        match *e {
            Ev::Advance(dt) => {
                // Poll at every due instant on the way, as the TX loop would.
                let end = self.now + dt;
                while self.now < end {
                    self.now += 1;
                    if self.wd.due(self.now) {
                        self.poll()?;
                    }
                }
            }
            Ev::Pfc { class_enable, quanta } => {
                let f = MacControl::Pfc { class_enable, quanta: [quanta; 8] };
                self.frame(f, class_enable & self.p.pfc_enable, [quanta; 8]);
            }
            Ev::Pause8023x(q) => self.frame(MacControl::Pause { quanta: q }, 0xff, [q; 8]),
            Ev::Queue { nonempty, progress } => {
                self.nonempty = nonempty;
                self.progress |= progress;
            }
            Ev::Poll => self.poll()?,
        }
        Ok(())
    }

    fn poll(&mut self) -> Result<(), TestCaseError> {
        let now = self.now;
        let paused = self.rx.paused_mask(now);
        let (nonempty, progress) = (self.nonempty, self.progress);
        self.progress = 0;
        let t = self.wd.poll(now, paused, nonempty, progress);
        prop_assert_eq!(t.detected & t.restored, 0);
        prop_assert_eq!((t.detected | t.restored) & !self.p.pfc_enable, 0, "unwatched priority changed");
        for i in 0..8u8 {
            let bit = 1u8 << i;
            let tr = &mut self.truth[usize::from(i)];
            if t.detected & bit != 0 {
                prop_assert!(tr.deadline > now, "prio {} stormed at {} while not paused", i, now);
                prop_assert!(paused & nonempty & !progress & bit != 0);
                prop_assert!(
                    now - tr.began >= self.p.detection,
                    "prio {} stormed at {}, pause began at {}, detection {}",
                    i,
                    now,
                    tr.began,
                    self.p.detection
                );
                tr.detected += 1;
                tr.detected_at = Some(now);
                self.storms += 1;
            }
            if t.restored & bit != 0 {
                let d = tr.detected_at.take();
                prop_assert!(d.is_some(), "restored without a storm");
                prop_assert!(now - d.unwrap() >= self.p.restoration);
                if let Some(lp) = tr.last_pause {
                    prop_assert!(
                        now - lp >= self.p.restoration,
                        "prio {} restored at {}, last PAUSE at {}, restoration {}",
                        i,
                        now,
                        lp,
                        self.p.restoration
                    );
                }
                tr.restored += 1;
            }
            prop_assert!(tr.restored <= tr.detected && tr.detected <= tr.restored + 1);
            let s = self.wd.state().snapshot(i);
            prop_assert_eq!(s.storms_detected, tr.detected);
            prop_assert_eq!(s.storms_restored, tr.restored);
            prop_assert_eq!(s.stormed, tr.detected == tr.restored + 1);
            prop_assert_eq!(self.wd.state().prio[usize::from(i)].stormed.load(Relaxed), s.stormed);
        }
        let stormed = self.wd.stormed_mask();
        let (ignore, drop) = match self.p.action {
            Action::Drop => (stormed, stormed),
            Action::Forward => (stormed, 0),
            Action::Alert => (0, 0),
        };
        prop_assert_eq!((self.wd.ignore_pfc_mask(), self.wd.drop_mask()), (ignore, drop));
        let st = self.wd.state();
        prop_assert_eq!((st.ignore_pfc_mask(), st.drop_mask(), st.stormed_mask()), (ignore, drop, stormed));
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn watchdog_invariants(p in params(), evs in prop::collection::vec(ev(false), 1..600)) {
        let mut sim = Sim::new(p);
        for e in &evs {
            sim.apply(e)?;
        }
        // Let time run out with the queue drained and the peer silent: every storm is
        // restored eventually.
        sim.apply(&Ev::Queue { nonempty: 0, progress: 0 })?;
        sim.apply(&Ev::Advance(p.restoration + 2 * p.interval + 1))?;
        prop_assert_eq!(sim.wd.stormed_mask(), 0);
    }

    #[test]
    fn xon_alone_never_storms(p in params(), evs in prop::collection::vec(ev(true), 1..400)) {
        let mut sim = Sim::new(p);
        for e in &evs {
            sim.apply(e)?;
        }
        prop_assert_eq!(sim.storms, 0);
        for i in 0..8 {
            prop_assert_eq!(sim.stamps.last_pause(i), 0);
        }
    }
}

/// The random sequences above do produce storms (the invariants are not vacuous).
#[test]
fn sequences_reach_storms() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut storms, mut restores) = (0, 0);
    for _ in 0..200 {
        let p = params().new_tree(&mut runner).unwrap().current();
        let evs = prop::collection::vec(ev(false), 300..600).new_tree(&mut runner).unwrap().current();
        let mut sim = Sim::new(p);
        for e in &evs {
            sim.apply(e).unwrap();
        }
        storms += sim.storms;
        restores += sim.truth.iter().map(|t| t.restored).sum::<u64>();
    }
    assert!(storms > 20 && restores > 10, "storms {storms}, restores {restores}");
}
