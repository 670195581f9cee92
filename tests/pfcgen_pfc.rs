//! pfcgen obeys PFC at a frame boundary, on a real EAL (in this process) and real ports:
//! two net_ring ports, each looped back onto itself, so every frame the generator sends
//! comes back to its own receive side, and a PFC frame sent with `send_raw` reaches it
//! through the PMD like a peer's. Time is the test's: each poll gets a `now` in TSC ticks,
//! so the pause deadlines (the switch's own `PfcRx` and quanta→ticks) are checked to the
//! poll, with no timing tolerance.
//!
//! Two streams per port at 1000 frames/s (one frame per 1 ms poll): PCP 3 and PCP 1.
//! * a PAUSE for priority 3 stops the PCP-3 stream from the poll that receives it (the
//!   frames already sent are not recalled, none after), the PCP-1 stream never stops, and
//!   the PCP-3 stream resumes at the first poll at or after the deadline, with no
//!   catch-up burst;
//! * a PAUSE of 0xFFFF quanta then a RESUME: it resumes at the poll that receives the
//!   RESUME, long before the deadline;
//! * a full-speed stream (a burst of 32 per poll) stops at the next burst;
//! * on a port that obeys priority 3 only, a PAUSE for priority 1 and an 802.3x PAUSE
//!   change nothing (counted as ignored);
//! * at the end every frame sent came back exactly once, in order, and every mbuf is
//!   back in the pool.
//!
//! One EAL per process: everything is in one test.

use std::sync::Arc;

use pfcswitch::dpdk::{tsc_hz, Eal, Mempool, Port};
use pfcswitch::pfc::{quanta_to_ticks, PfcRx};
use pfcswitch::pfcgen::engine::{GenPort, Generator};
use pfcswitch::pfcgen::spec::{resolve, CliSpec};
use pfcswitch::wire::{MacAddr, MacControl};

const SPEED: u64 = 100_000_000; // 1 quantum = 5.12 µs

fn pfc(prio: u8, quanta: u16) -> Vec<u8> {
    MacControl::pfc_pause(1 << prio, quanta).to_bytes(MacAddr([2, 0, 0, 0, 0, 0x99])).to_vec()
}

#[test]
fn pfcgen_stops_paused_priorities_at_a_frame_boundary() {
    let dir = std::env::temp_dir().join(format!("pfcgen-pfc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::env::set_var("RUNTIME_DIRECTORY", &dir);
    let args: Vec<String> =
        ["pfcgen-test", "--no-huge", "-m", "256", "--no-pci", "--lcores=0@0", "--vdev=net_ring0", "--vdev=net_ring1"]
            .iter()
            .map(|s| s.to_string())
            .chain([format!("--file-prefix=pfcgen-pfc{}", std::process::id()), "--log-level=5".to_string()])
            .collect();
    let eal = Eal::init(&args).expect("EAL");
    let hz = tsc_hz();
    let pool = Arc::new(Mempool::new("pfcgen_test", 4095, 0, 2048 + 128, -1).expect("mempool"));
    // Two queue pairs per port (net_ring loops queue n onto itself): one for each generator.
    let mut ports = Vec::new();
    let mut gps = Vec::new();
    let mut spare = Vec::new();
    for (i, (name, obey)) in [("net_ring0", 0xffu8), ("net_ring1", 1 << 3)].into_iter().enumerate() {
        let id = Port::id_by_name(name).expect(name);
        let (mut port, mut rxq, mut txq) = Port::configure(id, 2, 2, 512, 512, pool.clone(), None).expect("configure");
        port.start().expect("start");
        let rx = PfcRx::new(obey, SPEED).obey_8023x(false);
        gps.push(GenPort::new(
            &format!("p{i}"),
            MacAddr([2, 0, 0, 0, 0, i as u8]),
            SPEED,
            rx,
            obey,
            rxq.remove(0),
            txq.remove(0),
        ));
        spare.push((rxq.remove(0), txq.remove(0)));
        ports.push(port);
    }
    let cli = CliSpec {
        ports: vec!["net_ring0".into(), "net_ring1".into()],
        streams: [
            "port=0,rate=1000pps,size=128,pcp=3",
            "port=0,rate=1000pps,size=128,pcp=1",
            "port=1,rate=1000pps,size=128,pcp=3",
            "port=1,rate=1000pps,size=128,pcp=1",
        ]
        .map(String::from)
        .to_vec(),
        ..Default::default()
    };
    let spec = resolve(None, &cli).expect("spec");
    let t0 = 1u64 << 40;
    let mut gen = Generator::new(gps, &spec.streams, spec.rx_streams, pool.clone(), hz, t0);
    let ms = hz / 1000;
    let mut now = t0;
    // Poll every 1 ms of test time; return how many frames each stream sent.
    let step = |gen: &mut Generator, n: usize, now: &mut u64| -> Vec<u64> {
        let before: Vec<u64> = gen.streams.iter().map(|s| s.seq).collect();
        for _ in 0..n {
            gen.poll(*now);
            *now += ms;
        }
        gen.streams.iter().zip(before).map(|(s, b)| s.seq - b).collect()
    };

    // Running: one frame per stream per poll.
    assert_eq!(step(&mut gen, 10, &mut now), vec![10, 10, 10, 10]);

    // PAUSE for priority 3, 1000 quanta (5.12 ms at 100M): from the poll that receives it.
    let pause = quanta_to_ticks(1000, SPEED, hz);
    assert!(gen.ports[0].send_raw(&pool, &pfc(3, 1000)));
    let received_at = now;
    assert_eq!(step(&mut gen, 1, &mut now), vec![0, 1, 1, 1], "priority 3 sent in the poll that received the PAUSE");
    assert_eq!(gen.ports[0].counters.mac_control_rx, 1);
    assert_eq!(gen.ports[0].pfc.counters().prio[3].pause_frames.get(), 1);
    // Polls strictly before the deadline: nothing of priority 3; priority 1 keeps going.
    let polls_paused = (pause - 1) / ms; // polls at received_at + k·ms < deadline, k ≥ 1
    assert_eq!(step(&mut gen, polls_paused as usize, &mut now), vec![0, polls_paused, polls_paused, polls_paused]);
    assert!(now >= received_at + pause, "the next poll is at or after the deadline");
    // At the deadline it resumes, one frame per poll: no catch-up for the paused time.
    assert_eq!(step(&mut gen, 3, &mut now), vec![3, 3, 3, 3]);
    assert_eq!(gen.streams[0].pauses, 1);

    // 0xFFFF quanta (335 ms) then RESUME after 3 polls: resumes at the RESUME.
    assert!(gen.ports[0].send_raw(&pool, &pfc(3, 0xffff)));
    assert_eq!(step(&mut gen, 3, &mut now), vec![0, 3, 3, 3]);
    assert!(gen.ports[0].send_raw(&pool, &pfc(3, 0)));
    assert_eq!(step(&mut gen, 1, &mut now), vec![1, 1, 1, 1], "resumed by the RESUME in this poll");
    let c = gen.ports[0].pfc.counters();
    assert_eq!((c.prio[3].pause_frames.get(), c.prio[3].resume_frames.get(), c.prio[3].on2off.get()), (2, 1, 2));
    let paused_us = pfcswitch::pfc::ticks_to_us(c.prio[3].pause_ticks.get(), hz);
    let want_us = pfcswitch::pfc::ticks_to_us(pause + 3 * ms, hz);
    assert!(paused_us.abs_diff(want_us) <= 1, "paused {paused_us} us, want {want_us}");

    // A port that obeys priority 3 only: PFC for priority 1 and 802.3x PAUSE are ignored.
    assert!(gen.ports[1].send_raw(&pool, &pfc(1, 0xffff)));
    let mut pause_8023x = MacControl::Pause { quanta: 0xffff }.to_bytes(MacAddr([2, 0, 0, 0, 0, 0x99])).to_vec();
    assert!(gen.ports[1].send_raw(&pool, &pause_8023x));
    assert_eq!(step(&mut gen, 5, &mut now), vec![5, 5, 5, 5]);
    let c1 = gen.ports[1].pfc.counters();
    assert_eq!((c1.ignored_frames.get(), c1.link_pause_ignored.get()), (1, 1));
    // The same 802.3x PAUSE on a port that obeys it (port 0 does not either: PFC ports
    // ignore 802.3x by default) is covered by PfcRx's unit tests.
    pause_8023x.truncate(40); // a runt MAC control frame: counted as malformed, no panic
    assert!(gen.ports[1].send_raw(&pool, &pause_8023x));
    step(&mut gen, 1, &mut now);
    assert_eq!(gen.ports[1].counters.bad_mac_control, 1);

    // Receive what the last poll sent, then check: every frame once, in order.
    for p in 0..2 {
        gen.receive(p, now);
    }
    for s in &gen.streams {
        let r = &gen.rx[usize::from(s.spec.id)];
        assert_eq!(
            (r.unique(), r.lost(Some(s.seq)), r.reordered, r.duplicates),
            (s.seq, 0, 0, 0),
            "stream {}",
            s.spec.name
        );
    }

    // Full speed: a PAUSE stops a max-rate stream at the next burst.
    drop(gen);
    let cli = CliSpec {
        ports: vec!["net_ring0".into(), "net_ring1".into()],
        streams: vec!["port=0,rate=max,size=64,pcp=3".into(), "port=0,rate=max,size=64,pcp=0".into()],
        ..Default::default()
    };
    let spec = resolve(None, &cli).expect("spec");
    let gps = spare
        .into_iter()
        .enumerate()
        .map(|(i, (rxq, txq))| {
            GenPort::new(&format!("p{i}"), MacAddr::ZERO, SPEED, PfcRx::new(0xff, SPEED), 0xff, rxq, txq)
        })
        .collect();
    let mut gen = Generator::new(gps, &spec.streams, spec.rx_streams, pool.clone(), hz, now);
    let sent = step(&mut gen, 1, &mut now);
    assert_eq!(sent.iter().sum::<u64>(), 32, "one burst: {sent:?}");
    assert!(sent[0] > 0 && sent[1] > 0, "both streams share the burst: {sent:?}");
    assert!(gen.ports[0].send_raw(&pool, &pfc(3, 0xffff)));
    // The ring holds the PFC frame behind the 32 data frames of the last poll: the next
    // poll receives all of them (up to 4 bursts) before it builds anything.
    let sent = step(&mut gen, 1, &mut now);
    assert_eq!(sent[0], 0, "a full-speed stream sent after the PAUSE arrived: {sent:?}");
    assert_eq!(sent[1], 32);
    gen.receive(0, now); // what the last poll sent, still in the ring
    assert_eq!(gen.rx[1].unique(), gen.streams[1].seq);
    drop(gen);
    for p in &mut ports {
        p.stop().unwrap();
    }
    drop(ports);
    assert_eq!(pool.in_use_count(), 0, "every mbuf back in the pool");
    drop(pool);
    drop(eal);
    let _ = std::fs::remove_dir_all(&dir);
}
