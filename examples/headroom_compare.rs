//! The headroom modes side by side on one buffer: N:1 incast through the MMU the switch
//! runs (`Mmu`, built from a configuration by the same plan), driven by a link model in
//! frame slots at line rate. `scripts/headroom-compare.sh` runs it for each mode and N
//! and checks its first figure on a running switch.
//!
//! Topology (every port at the same speed C): port 0 is the egress, ports 1..=N the
//! senders (lossless TC 3, PFC-obeying), port N+1 a bursty lossy background (TC 0) into
//! the same egress. Delays come from the headroom calculator's terms for the link: a
//! PAUSE edge at slot t reaches the wire after `sw_response`, the sender after the
//! cable's one-way propagation, and stops it after `peer_response`; frames on the wire
//! arrive one propagation later. The egress sends one frame per slot, oldest first.
//!
//! Printed, one JSON object per run:
//! * `burst_stalled_frames`: the largest burst per sender (frames) the switch takes with
//!   no PAUSE when the egress is stalled and the senders' frames arrive as a worker reads
//!   them (bursts of `burst_size` per port, round robin) — what the real switch can be
//!   asked and is (`scripts/headroom_compare.py`);
//! * `burst_frames`: the same with the egress draining at C and the senders at C;
//! * for `--bursts` incast bursts of `--burst-kb` per sender every `--period-us`, with the
//!   background sending `--bg-kb` every `--bg-period-us`: PAUSE frames the switch sends
//!   (edges and refreshes), time the senders spend paused, lossless and lossy drops.
//!
//! Usage: headroom_compare --config FILE [--burst-kb K] [--period-us P] [--bursts B]
//!        [--bg-kb K] [--bg-period-us P]

use std::collections::VecDeque;

use pfcswitch::mmu::{Charge, EdgeKind, Mmu, Verdict};
use serde_json::json;

const PG: u8 = 3;

struct Link {
    /// Frame bytes and slots per µs.
    frame: u32,
    slots_per_us: f64,
    /// PAUSE/RESUME edge → sender stops/starts, and sender → switch, in slots.
    react: u64,
    prop: u64,
    /// PFC refresh interval (half of 0xFFFF quanta), slots.
    refresh: u64,
    burst_size: usize,
}

struct Workload {
    burst_frames: u64,
    period: u64,
    bursts: u64,
    bg_frames: u64,
    bg_period: u64,
}

#[derive(Default, Debug)]
struct Outcome {
    pause_edges: u64,
    pause_frames: u64,
    paused_slots: u64,
    lossless_drops: u64,
    lossy_drops: u64,
    delivered: u64,
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = arg(&args, "--config") else {
        eprintln!("usage: headroom_compare --config FILE [--burst-kb K] [--period-us P] [--bursts B] [--bg-kb K] [--bg-period-us P]");
        std::process::exit(2);
    };
    let num = |name: &str, default: f64| arg(&args, name).map_or(default, |v| v.parse().expect(name));
    let cfg = pfcswitch::config::load(std::path::Path::new(&path)).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let plan = pfcswitch::plan::plan(&cfg, cfg.switch.sw_response_ns).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let n = cfg.ports.len() - 2;
    let frame = 1000u32;
    let term = |name: &str| plan.ports[1].headroom_calc.terms.iter().find(|t| t.0 == name).map_or(0, |t| t.1);
    let slot_bytes = f64::from(frame);
    let to_slots = |bytes: u64| (bytes as f64 / slot_bytes).ceil() as u64;
    let c = cfg.ports[1].speed_bps as f64;
    let link = Link {
        frame,
        slots_per_us: c / 8.0 / slot_bytes / 1e6,
        react: to_slots(term("sw_response") + term("peer_response") + term("propagation") / 2),
        prop: to_slots(term("propagation") / 2),
        refresh: to_slots((65535 * 512 / 8) / 2),
        burst_size: usize::from(cfg.switch.burst_size),
    };
    let us = |v: f64| (v * link.slots_per_us).round() as u64;
    let frames_of_kb = |kb: f64| (kb * 1024.0 / slot_bytes).round() as u64;
    let w = Workload {
        burst_frames: frames_of_kb(num("--burst-kb", 256.0)),
        period: us(num("--period-us", 1000.0)).max(1),
        bursts: num("--bursts", 10.0) as u64,
        bg_frames: frames_of_kb(num("--bg-kb", 128.0)),
        bg_period: us(num("--bg-period-us", 250.0)).max(1),
    };
    let mk = || Mmu::new(plan.mmu.clone()).expect("plan validated the MMU");
    let stalled = largest(|b| no_pause_stalled(&mk(), n, b, &link));
    let drained = largest(|b| {
        let one = Workload { burst_frames: b, period: u64::MAX, bursts: 1, bg_frames: 0, bg_period: u64::MAX };
        simulate(&mk(), n, &link, &one).pause_edges == 0
    });
    let o = simulate(&mk(), n, &link, &w);
    let v = json!({
        "policy": cfg.buffer.headroom_policy.name(),
        "senders": n,
        "frame_bytes": frame,
        "lossless_pool_bytes": plan.mmu.lossless_pool_size,
        "shared_bytes": mk().pool_stats().lossless.shared_size,
        "burst_stalled_frames": stalled,
        "burst_stalled_bytes": stalled * n as u64 * u64::from(frame),
        "burst_frames": drained,
        "burst_bytes": drained * n as u64 * u64::from(frame),
        "workload": {"burst_bytes": w.burst_frames * u64::from(frame), "period_us": w.period as f64 / link.slots_per_us,
                     "bursts": w.bursts, "bg_bytes": w.bg_frames * u64::from(frame),
                     "bg_period_us": w.bg_period as f64 / link.slots_per_us},
        "pause_edges": o.pause_edges,
        "pause_frames": o.pause_frames,
        "paused_us": o.paused_slots as f64 / link.slots_per_us,
        "lossless_drops": o.lossless_drops,
        "lossy_drops": o.lossy_drops,
        "delivered": o.delivered,
    });
    println!("{v}");
}

/// The largest b ≥ 0 for which `ok(b)` holds (`ok` monotone: true up to a point).
fn largest(ok: impl Fn(u64) -> bool) -> u64 {
    let mut hi = 1;
    while ok(hi) {
        hi *= 2;
        if hi > 1 << 24 {
            return hi;
        }
    }
    let mut lo = hi / 2; // ok(lo) holds (or lo = 0)
    while lo + 1 < hi {
        let mid = (lo + hi) / 2;
        if ok(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// `b` frames from each sender into a stalled egress, in the order one worker reads them
/// (`burst_size` frames per port, round robin): no PAUSE?
fn no_pause_stalled(m: &Mmu, n: usize, b: u64, link: &Link) -> bool {
    let mut left = vec![b; n];
    while left.iter().any(|&l| l > 0) {
        for (i, l) in left.iter_mut().enumerate() {
            let k = (*l).min(link.burst_size as u64);
            for _ in 0..k {
                if let Verdict::Admit { edge: Some(e), .. } = m.admit(i as u16 + 1, PG, 0, PG, link.frame, true) {
                    if e.kind == EdgeKind::Pause {
                        return false;
                    }
                }
            }
            *l -= k;
        }
    }
    true
}

/// Per sender: what the switch decided and when the sender sees it.
#[derive(Default, Clone)]
struct Sender {
    backlog: u64,
    /// OFF at the switch (its PG, or its port with DSH), and since when.
    off_since: Option<u64>,
    /// Pending state changes at the sender: (slot, paused).
    changes: VecDeque<(u64, bool)>,
    paused: bool,
    /// Frames on the wire: arrival slots.
    wire: VecDeque<u64>,
}

fn simulate(m: &Mmu, n: usize, link: &Link, w: &Workload) -> Outcome {
    let mut o = Outcome::default();
    let mut s = vec![Sender::default(); n];
    let bg_port = n as u16 + 1;
    let mut bg_backlog = 0u64;
    let mut egress: VecDeque<Charge> = VecDeque::new();
    let reconcile = (100.0 * link.slots_per_us) as u64;
    let end =
        w.period.saturating_mul(w.bursts.saturating_sub(1)).saturating_add(w.burst_frames * n as u64 * 4 + 100_000);
    let mut t = 0u64;
    let on_edge = |s: &mut [Sender], o: &mut Outcome, e: pfcswitch::mmu::Edge, t: u64| {
        let Some(x) = (e.port as usize).checked_sub(1).filter(|&x| x < s.len()) else { return };
        if e.pgs & (1 << PG) == 0 {
            return;
        }
        let pause = e.kind == EdgeKind::Pause;
        if pause {
            o.pause_edges += 1;
            o.pause_frames += 1;
            s[x].off_since = Some(t);
        } else if let Some(t0) = s[x].off_since.take() {
            o.pause_frames += (t - t0) / link.refresh;
        }
        s[x].changes.push_back((t + link.react, pause));
    };
    while t < end {
        // New bursts.
        if w.bursts > 0 && t.is_multiple_of(w.period) && t / w.period < w.bursts {
            for x in s.iter_mut() {
                x.backlog += w.burst_frames;
            }
        }
        if w.bg_frames > 0 && t.is_multiple_of(w.bg_period) && t < end.saturating_sub(100_000) {
            bg_backlog += w.bg_frames;
        }
        // Senders: apply what reached them, then send one frame each if allowed.
        for x in s.iter_mut() {
            while x.changes.front().is_some_and(|c| c.0 <= t) {
                x.paused = x.changes.pop_front().map_or(x.paused, |c| c.1);
            }
            if x.paused {
                o.paused_slots += 1;
            } else if x.backlog > 0 {
                x.backlog -= 1;
                x.wire.push_back(t + link.prop);
            }
        }
        // Arrivals at the switch.
        for i in 0..n {
            while s[i].wire.front().is_some_and(|&a| a <= t) {
                s[i].wire.pop_front();
                match m.admit(i as u16 + 1, PG, 0, PG, link.frame, true) {
                    Verdict::Admit { charge, edge } => {
                        egress.push_back(charge);
                        if let Some(e) = edge {
                            on_edge(&mut s, &mut o, e, t);
                        }
                    }
                    Verdict::Drop { edge, .. } => {
                        o.lossless_drops += 1;
                        if let Some(e) = edge {
                            on_edge(&mut s, &mut o, e, t);
                        }
                    }
                }
            }
        }
        if bg_backlog > 0 {
            bg_backlog -= 1;
            match m.admit(bg_port, 0, 0, 0, link.frame, false) {
                Verdict::Admit { charge, .. } => egress.push_back(charge),
                Verdict::Drop { .. } => o.lossy_drops += 1,
            }
        }
        // The egress sends one frame per slot.
        if let Some(c) = egress.pop_front() {
            o.delivered += 1;
            if let Some(e) = m.release(c) {
                on_edge(&mut s, &mut o, e, t);
            }
        }
        // The control lcore's reconciliation: Xon without a packet event.
        if t.is_multiple_of(reconcile.max(1)) {
            for i in 0..n {
                if let Some(e) = m.check_resume(i as u16 + 1, PG) {
                    on_edge(&mut s, &mut o, e, t);
                }
            }
        }
        let idle = egress.is_empty()
            && bg_backlog == 0
            && s.iter().all(|x| x.backlog == 0 && x.wire.is_empty() && x.off_since.is_none());
        if idle && t >= w.period.saturating_mul(w.bursts.saturating_sub(1)) {
            break;
        }
        t += 1;
    }
    for x in &s {
        if let Some(t0) = x.off_since {
            o.pause_frames += (t - t0) / link.refresh;
        }
    }
    o
}
