//! MMU property tests against a reference model of the accounting, plus a model link
//! that checks the calculated headroom is enough (and that less is not).

use pfcswitch::headroom::{compute, HeadroomInputs, PROPAGATION_V_MPS};
use pfcswitch::mmu::*;
use proptest::prelude::*;

const PORTS: u16 = 3;
const LOSSLESS: u8 = 0b0001_1000;

#[derive(Debug, Clone)]
struct Params {
    private: u64,
    xoff: u64,
    xon: u64,
    xon_offset: u64,
    th: Threshold,
    shared: u64,
    q_private: u64,
    q_th: Threshold,
    lossy_shared: u64,
    cell: u32,
    order: ReleaseOrder,
    mode: Mode,
}

/// Headroom mode under test.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Static,
    /// A shared headroom pool of Σ xoff / d.
    Pool(u64),
    /// DSH: one insurance xoff per port.
    Dsh,
}

fn params() -> impl Strategy<Value = Params> {
    (
        (0u64..6000, 9216u64..40_000, 0u64..8000, 0u64..12_000),
        prop_oneof![(-3i8..=3).prop_map(Threshold::Dynamic), (0u64..60_000).prop_map(Threshold::Static)],
        0u64..120_000,
        (0u64..3000, (-2i8..=2).prop_map(Threshold::Dynamic), 0u64..80_000),
        prop_oneof![Just(1u32), Just(256u32)],
        prop_oneof![Just(ReleaseOrder::HeadroomFirst), Just(ReleaseOrder::AsCharged)],
        prop_oneof![Just(Mode::Static), Just(Mode::Pool(1)), Just(Mode::Pool(2)), Just(Mode::Pool(4)), Just(Mode::Dsh)],
    )
        .prop_map(
            |((private, xoff, xon, xon_offset), th, shared, (q_private, q_th, lossy_shared), cell, order, mode)| {
                Params { private, xoff, xon, xon_offset, th, shared, q_private, q_th, lossy_shared, cell, order, mode }
            },
        )
}

fn config(p: &Params) -> MmuConfig {
    let pg = PgProfile { size: p.private, xoff: p.xoff, xon: p.xon, xon_offset: p.xon_offset, threshold: p.th };
    let q = QueueProfile { size: p.q_private, threshold: p.q_th };
    let headroom = match p.mode {
        Mode::Static => u64::from(PORTS) * 2 * p.xoff,
        Mode::Pool(d) => u64::from(PORTS) * 2 * p.xoff / d,
        Mode::Dsh => u64::from(PORTS) * p.xoff,
    };
    let lossless_reserved = u64::from(PORTS) * 2 * p.private + headroom;
    let lossy_reserved = u64::from(PORTS) * 8 * p.q_private;
    let mut c =
        MmuConfig::uniform(PORTS, LOSSLESS, pg, q, lossless_reserved + p.shared, lossy_reserved + p.lossy_shared);
    c.cell_size = p.cell;
    c.release_order = p.order;
    c.headroom_policy = match p.mode {
        Mode::Static => HeadroomPolicy::Static,
        Mode::Pool(_) => HeadroomPolicy::SharedPool { size: headroom },
        Mode::Dsh => HeadroomPolicy::Dsh,
    };
    c
}

#[derive(Debug, Clone)]
enum Op {
    Admit {
        in_port: u16,
        pg: u8,
        out_port: u16,
        queue: u8,
        len: u32,
        lossless: bool,
    },
    Release(usize),
    /// The control lcore's periodic Xon check of every PG (T grows when others drain; a
    /// PG paused by a drop may hold nothing to release).
    Reconcile,
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let admit = (0..PORTS, prop_oneof![Just(3u8), Just(4u8), 0u8..8], 0..PORTS, 0u8..8, 64u32..=9216, any::<bool>())
        .prop_map(|(in_port, pg, out_port, queue, len, l)| Op::Admit {
            in_port,
            pg,
            out_port,
            queue,
            len,
            lossless: l || pg == 3,
        });
    proptest::collection::vec(
        prop_oneof![3 => admit, 2 => any::<usize>().prop_map(Op::Release), 1 => Just(Op::Reconcile)],
        1..400,
    )
}

#[derive(Debug, Default, Clone, Copy)]
struct PgModel {
    p: u64,
    s: u64,
    h: u64,
    off: bool,
}

#[derive(Debug, Default, Clone, Copy)]
struct QModel {
    lossless: u64,
    private: u64,
    shared: u64,
}

struct Model {
    pgs: Vec<PgModel>,
    qs: Vec<QModel>,
}

fn ix(port: u16, i: u8) -> usize {
    usize::from(port) * 8 + usize::from(i)
}

/// Lossless PGs of a port in the configs here.
const NQ: u64 = LOSSLESS.count_ones() as u64;

impl Model {
    fn check(&self, m: &Mmu, p: &Params) -> Result<(), TestCaseError> {
        let (mut sp, mut ss, mut sh, mut qp, mut qs) = (0, 0, 0, 0, 0);
        for port in 0..PORTS {
            for i in 0..8u8 {
                let g = self.pgs[ix(port, i)];
                let o = m.pg_occupancy(port, i);
                prop_assert_eq!((o.private, o.shared, o.headroom, o.total), (g.p, g.s, g.h, g.p + g.s + g.h));
                prop_assert_eq!(m.is_off(port, i), g.off, "state of {}/{}", port, i);
                prop_assert!(g.p <= p.private && g.h <= p.xoff, "segment over its limit");
                let q = self.qs[ix(port, i)];
                let o = m.queue_occupancy(port, i);
                prop_assert_eq!((o.lossless, o.private, o.shared), (q.lossless, q.private, q.shared));
                prop_assert!(q.private <= p.q_private);
                sp += g.p;
                ss += g.s;
                sh += g.h;
                qp += q.private;
                qs += q.shared;
            }
        }
        if p.mode == Mode::Dsh {
            for port in 0..PORTS {
                let (s, h) = (0..8u8).map(|i| self.pgs[ix(port, i)]).fold((0, 0), |(s, h), g| (s + g.s, h + g.h));
                prop_assert_eq!(m.port_occupancy(port), (s, h), "port {} sums", port);
                prop_assert!(h <= p.xoff, "insurance over η");
            }
        }
        let st = m.pool_stats();
        prop_assert_eq!((st.lossless.private_used, st.lossless.shared_used, st.lossless.headroom_used), (sp, ss, sh));
        prop_assert_eq!((st.lossy.private_used, st.lossy.shared_used), (qp, qs));
        prop_assert!(ss <= p.shared && qs <= p.lossy_shared, "pool overflow");
        prop_assert!(st.lossless.shared_watermark <= p.shared && st.lossy.shared_watermark <= p.lossy_shared);
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Accounting conserves per segment and in total; nothing exceeds its pool or
    /// segment; edges alternate per PG; headroom is only charged to an OFF PG; the
    /// segment choice follows the four cases; everything returns to zero and ON.
    #[test]
    fn accounting_and_edges(p in params(), ops in ops()) {
        let m = Mmu::new(config(&p)).unwrap();
        let mut model = Model { pgs: vec![PgModel::default(); 8 * usize::from(PORTS)], qs: vec![QModel::default(); 8 * usize::from(PORTS)] };
        let mut held: Vec<Charge> = Vec::new();
        let edge = |model: &mut Model, e: Option<Edge>| -> Result<(), TestCaseError> {
            if let Some(e) = e {
                prop_assert!(e.pgs != 0 && e.pgs & !LOSSLESS == 0, "edge names only lossless PGs: {:?}", e);
                for pg in e.pg_iter() {
                    let g = &mut model.pgs[ix(e.port, pg)];
                    match e.kind {
                        EdgeKind::Pause => { prop_assert!(!g.off, "PAUSE while OFF"); g.off = true; }
                        EdgeKind::Resume => { prop_assert!(g.off, "RESUME while ON"); g.off = false; }
                    }
                }
            }
            Ok(())
        };
        for op in ops.iter().chain([Op::Release(usize::MAX), Op::Reconcile].iter()) {
            match *op {
                Op::Reconcile => {
                    for port in 0..PORTS {
                        for pg in 0..8 {
                            edge(&mut model, m.check_resume(port, pg))?;
                        }
                    }
                }
                Op::Admit { in_port, pg, out_port, queue, len, lossless } => {
                    let b = u64::from(len).div_ceil(u64::from(p.cell)) * u64::from(p.cell);
                    let before = model.pgs[ix(in_port, pg)];
                    let t = m.pg_threshold(in_port, pg);
                    let port_s: u64 = (0..8u8).map(|i| model.pgs[ix(in_port, i)].s).sum();
                    let port_h: u64 = (0..8u8).map(|i| model.pgs[ix(in_port, i)].h).sum();
                    let port_off = m.is_port_off(in_port);
                    let v = m.admit(in_port, pg, out_port, queue, len, lossless);
                    let is_ll = lossless && LOSSLESS & (1 << pg) != 0;
                    match v {
                        Verdict::Admit { charge, edge: e } => {
                            prop_assert_eq!(u64::from(charge.bytes()), b);
                            prop_assert_eq!(charge.is_lossless(), is_ll);
                            let g = &mut model.pgs[ix(in_port, pg)];
                            let q = &mut model.qs[ix(out_port, queue)];
                            match charge.segment() {
                                Segment::Private => { prop_assert!(before.p + b <= p.private); g.p += b; }
                                Segment::Shared => {
                                    prop_assert!(before.p + b > p.private);
                                    if p.mode == Mode::Dsh {
                                        prop_assert!(!port_off && port_s < NQ * t, "DSH shared past the port's point");
                                    } else {
                                        prop_assert!(before.s < t);
                                    }
                                    g.s += b;
                                }
                                Segment::Headroom => { prop_assert!(before.p + b > p.private); g.h += b; }
                                Segment::LossyPrivate => q.private += b,
                                Segment::LossyShared => q.shared += b,
                            }
                            if is_ll { q.lossless += b; } else { prop_assert!(e.is_none(), "lossy traffic never makes an edge"); }
                            edge(&mut model, e)?;
                            if charge.segment() == Segment::Headroom {
                                prop_assert!(m.is_off(in_port, pg), "headroom charged to an ON PG");
                                if p.mode == Mode::Dsh {
                                    prop_assert!(m.is_port_off(in_port), "insurance charged to an ON port");
                                }
                            }
                            held.push(charge);
                        }
                        Verdict::Drop { reason: r, edge: e } => {
                            edge(&mut model, e)?;
                            if is_ll {
                                // Dropped while ON is never right: the drop itself pauses.
                                prop_assert!(model.pgs[ix(in_port, pg)].off && m.is_off(in_port, pg), "lossless drop while ON");
                                prop_assert_eq!(r, Refusal::LosslessHeadroomFull);
                                // The headroom that mode promises is exhausted: the PG's own,
                                // the shared headroom pool, or (DSH) the port's insurance.
                                let used: u64 = model.pgs.iter().map(|g| g.h).sum();
                                let full = match p.mode {
                                    Mode::Static => before.h + b > p.xoff,
                                    Mode::Pool(d) => before.h + b > p.xoff || used + b > u64::from(PORTS) * 2 * p.xoff / d,
                                    Mode::Dsh => port_h + b > p.xoff,
                                };
                                prop_assert!(full, "dropped with headroom left");
                            } else {
                                prop_assert!(matches!(r, Refusal::LossyDt | Refusal::LossyPoolFull));
                                prop_assert!(e.is_none(), "lossy traffic never makes an edge");
                            }
                        }
                    }
                }
                Op::Release(i) => {
                    // usize::MAX at the end: release everything.
                    let n = if i == usize::MAX { held.len() } else { usize::from(!held.is_empty()) };
                    for _ in 0..n {
                        let c = held.swap_remove(i % held.len());
                        let b = u64::from(c.bytes());
                        let e = m.release(c);
                        let g = &mut model.pgs[ix(c.in_port(), c.pg())];
                        let q = &mut model.qs[ix(c.out_port(), c.queue())];
                        match (c.segment(), p.order) {
                            (Segment::LossyPrivate, _) => q.private -= b,
                            (Segment::LossyShared, _) => q.shared -= b,
                            (s, ReleaseOrder::AsCharged) => {
                                match s { Segment::Private => g.p -= b, Segment::Shared => g.s -= b, _ => g.h -= b }
                                q.lossless -= b;
                            }
                            (_, ReleaseOrder::HeadroomFirst) => {
                                let mut rest = b;
                                for seg in [&mut g.h, &mut g.s, &mut g.p] {
                                    let t = rest.min(*seg);
                                    *seg -= t;
                                    rest -= t;
                                }
                                prop_assert_eq!(rest, 0);
                                q.lossless -= b;
                            }
                        }
                        if !c.is_lossless() { prop_assert!(e.is_none()); }
                        edge(&mut model, e)?;
                    }
                }
            }
            model.check(&m, &p)?;
        }
        prop_assert!(held.is_empty());
        for port in 0..PORTS {
            for pg in 0..8 {
                prop_assert!(!m.is_off(port, pg), "PG {}/{} still OFF with an empty buffer", port, pg);
            }
        }
    }
}

/// Annex 31B.3.7 quanta, written out again for the link model.
fn quanta(speed: u64) -> u64 {
    match speed / 1_000_000_000 {
        0..=10 => 67,
        11..=25 => 80,
        26..=40 => 118,
        41..=50 => 147,
        51..=100 => 394,
        101..=200 => 453,
        _ => 905,
    }
}

/// Frames of `mtu` bytes arrive back to back at line rate on (port 0, PG 3) while the
/// egress never drains. When the MMU raises PAUSE (on the frame that crosses T), the
/// PFC frame leaves after our reaction delay `sw` plus one MTU of our own traffic,
/// travels D, the peer obeys within its Annex 31B time and completes the frame it has
/// started; its last bits travel D back. Returns (lossless drops, headroom bytes used).
fn link_model(speed: u64, cable: f64, mtu: u32, sw_ns: u64, headroom: u64) -> (u32, u64) {
    let t_shared = 20 * u64::from(mtu);
    let pg = PgProfile { size: 0, xoff: headroom, xon: 0, xon_offset: 0, threshold: Threshold::Static(t_shared) };
    let m =
        Mmu::new(MmuConfig::uniform(2, LOSSLESS, pg, QueueProfile::default(), 4 * headroom + 4 * t_shared, 0)).unwrap();
    let c = speed as f64;
    let tau = f64::from(mtu) * 8.0 / c;
    let d = cable / PROPAGATION_V_MPS as f64;
    let resp = quanta(speed) as f64 * 512.0 / c;
    let sw = sw_ns as f64 * 1e-9;
    let mut t_stop = f64::INFINITY;
    let mut drops = 0;
    for k in 0u64.. {
        let start = k as f64 * tau;
        if start >= t_stop {
            break;
        }
        assert!(k < 10_000_000, "model did not stop");
        match m.admit(0, 3, 1, 3, mtu, true) {
            Verdict::Admit { edge: Some(e), charge } => {
                assert_eq!((e.kind, charge.segment()), (EdgeKind::Pause, Segment::Shared));
                let t_edge = start + tau + d;
                t_stop = t_edge + sw + tau + d + resp;
            }
            Verdict::Admit { .. } => {}
            Verdict::Drop { .. } => drops += 1,
        }
    }
    (drops, m.pg_watermarks(0, 3).headroom)
}

#[test]
fn calculated_headroom_is_enough_and_less_is_not() {
    for (speed, cable, mtu, sw) in [
        (10_000_000_000u64, 5.0, 1500u32, 10_000u64),
        (25_000_000_000, 3.0, 9216, 10_000),
        (100_000_000_000, 300.0, 9216, 10_000),
        (100_000_000_000, 2.0, 1500, 0),
        (400_000_000_000, 100.0, 9216, 20_000),
        (40_000_000_000, 2000.0, 4096, 5_000),
    ] {
        let eta = compute(&HeadroomInputs {
            speed_bps: speed,
            cable_m: cable,
            frame: mtu,
            sw_response_ns: sw,
            tx_inflight_bytes: 0,
        })
        .headroom_bytes;
        let (drops, used) = link_model(speed, cable, mtu, sw, eta);
        assert_eq!(drops, 0, "{speed} {cable} {mtu}: drops with η = {eta}");
        // The calculator is within two frames of what was actually needed.
        assert!(eta - used < 2 * u64::from(mtu), "η {eta} used {used}");
        let (drops, _) = link_model(speed, cable, mtu, sw, eta - 2 * u64::from(mtu));
        assert!(drops > 0, "{speed} {cable} {mtu}: no drops with η − 2·MTU");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn headroom_model_link(
        speed in prop::sample::select(vec![10u64, 25, 40, 50, 100, 200, 400]),
        cable in 0.0f64..1500.0,
        mtu in 1500u32..=9216,
        sw in 0u64..20_000,
    ) {
        let speed = speed * 1_000_000_000;
        let eta = compute(&HeadroomInputs { speed_bps: speed, cable_m: cable, frame: mtu, sw_response_ns: sw, tx_inflight_bytes: 0 }).headroom_bytes;
        prop_assert_eq!(link_model(speed, cable, mtu, sw, eta).0, 0);
        prop_assert!(link_model(speed, cable, mtu, sw, eta - 2 * u64::from(mtu)).0 > 0);
    }
}

// ---------------------------------------------------------------------------------------
// Burst admission and release (the dataplane's fast path) against one-by-one.

/// One run as the dataplane forms it: consecutive packets with the same ingress PG and
/// egress queue; `Some(k)` releases the k-th oldest outstanding run (all its packets).
#[derive(Debug, Clone)]
enum RunOp {
    Admit { in_port: u16, pg: u8, out_port: u16, queue: u8, lens: Vec<u32>, lossless: bool },
    Release(usize),
}

fn run_ops() -> impl Strategy<Value = Vec<RunOp>> {
    let admit = (
        0..PORTS,
        prop_oneof![Just(3u8), Just(4u8), Just(0u8)],
        0..PORTS,
        0u8..8,
        proptest::collection::vec(prop_oneof![Just(64u32), Just(1500u32), 60u32..9300], 1..40),
        any::<bool>(),
    )
        .prop_map(|(in_port, pg, out_port, queue, lens, lossless)| RunOp::Admit {
            in_port,
            pg,
            out_port,
            queue,
            lens,
            lossless,
        });
    proptest::collection::vec(prop_oneof![3 => admit, 2 => (0usize..8).prop_map(RunOp::Release)], 1..120)
}

/// The bulk path is taken where it should be, and declines where one by one differs.
#[test]
fn bulk_path_is_taken() {
    let p = Params {
        private: 1000,
        xoff: 9216,
        xon: 0,
        xon_offset: 0,
        th: Threshold::Dynamic(0),
        shared: 100_000,
        q_private: 1000,
        q_th: Threshold::Dynamic(0),
        lossy_shared: 100_000,
        cell: 1,
        order: ReleaseOrder::HeadroomFirst,
        mode: Mode::Static,
    };
    let m = Mmu::new(config(&p)).unwrap();
    // With 1-byte cells a packet's charge is its length.
    // 15 × 64 fit the private 1000, the 16th does not; the next go to shared (T ≈ 100 000).
    let lens = [64u32; 20];
    assert_eq!(m.admit_prefix(0, 3, 1, 3, &lens, true), Some((Segment::Private, 15)));
    assert_eq!(m.admit_prefix(0, 3, 1, 3, &lens[15..], true), Some((Segment::Shared, 5)));
    // A 1500-byte packet no longer fits private but a 40-byte one does: one by one
    // would put them in different segments, so the prefix stops before the small one.
    assert_eq!(m.admit_prefix(0, 3, 1, 3, &[1500, 40, 1500], true), Some((Segment::Shared, 1)));
    // Crossing T: the prefix stops before the packet that reaches it.
    let big = [9000u32; 12];
    let (seg, k) = m.admit_prefix(0, 3, 1, 3, &big, true).unwrap();
    assert_eq!(seg, Segment::Shared);
    assert!(k < 12, "a prefix ran past T");
    assert_eq!(m.admit_prefix(0, 0, 1, 0, &[64; 4], false), Some((Segment::LossyPrivate, 4)));
    assert_eq!(m.pg_occupancy(0, 3).total, 20 * 64 + 1500 + 9000 * k as u64);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// `admit_prefix` (falling back to `admit` one by one when it declines) gives every
    /// packet the segment, and every run the edges, that one-by-one admission gives; and
    /// `release_run` of a run leaves the same occupancy and edges as releasing one by one.
    #[test]
    fn bulk_equals_one_by_one(p in params(), ops in run_ops()) {
        let bulk = Mmu::new(config(&p)).unwrap();
        let single = Mmu::new(config(&p)).unwrap();
        // Outstanding runs: (charges in `bulk`, charges in `single`).
        let mut live: Vec<(Vec<Charge>, Vec<Charge>)> = Vec::new();
        for op in ops {
            match op {
                RunOp::Admit { in_port, pg, out_port, queue, lens, lossless } => {
                    let mut cs1 = Vec::new();
                    let mut e1 = Vec::new();
                    for &l in &lens {
                        match single.admit(in_port, pg, out_port, queue, l, lossless) {
                            Verdict::Admit { charge, edge } => { cs1.push(Some(charge)); e1.extend(edge); }
                            Verdict::Drop { .. } => cs1.push(None),
                        }
                    }
                    let mut cs0 = Vec::new();
                    let mut e0 = Vec::new();
                    // The worker computes each packet's charge once, as it joins a run.
                    let charges: Vec<u32> = lens.iter().map(|&l| bulk.charged(l)).collect();
                    let mut i = 0;
                    while i < lens.len() {
                        match bulk.admit_prefix(in_port, pg, out_port, queue, &charges[i..], lossless) {
                            Some((seg, k)) => {
                                prop_assert!(k >= 1 && i + k <= lens.len());
                                for &l in &lens[i..i + k] {
                                    cs0.push(Some(bulk.bulk_charge(in_port, pg, out_port, queue, l, seg)));
                                }
                                i += k;
                            }
                            None => {
                                match bulk.admit(in_port, pg, out_port, queue, lens[i], lossless) {
                                    Verdict::Admit { charge, edge } => { cs0.push(Some(charge)); e0.extend(edge); }
                                    Verdict::Drop { .. } => cs0.push(None),
                                }
                                i += 1;
                            }
                        }
                    }
                    prop_assert_eq!(&cs0, &cs1, "charges differ for run {:?}", lens);
                    prop_assert_eq!(&e0, &e1);
                    live.push((cs0.into_iter().flatten().collect(), cs1.into_iter().flatten().collect()));
                }
                RunOp::Release(k) => {
                    if live.is_empty() { continue; }
                    let (cs0, cs1) = live.remove(k % live.len());
                    // Bulk side: group consecutive same-account charges as the TX path does.
                    let mut e0 = Vec::new();
                    let mut i = 0;
                    while i < cs0.len() {
                        let mut j = i;
                        let mut sum = 0u64;
                        while j < cs0.len() && cs0[j].same_account(&cs0[i]) {
                            sum += u64::from(cs0[j].bytes());
                            j += 1;
                        }
                        e0.extend(bulk.release_run(cs0[i], sum));
                        i = j;
                    }
                    let mut e1 = Vec::new();
                    for c in cs1 { e1.extend(single.release(c)); }
                    // Xon is checked once per run on the bulk side: same final edge state.
                    let off_after = |es: &Vec<Edge>| es.last().map(|e| e.kind);
                    prop_assert_eq!(off_after(&e0), off_after(&e1));
                }
            }
            for port in 0..PORTS {
                for i in 0..8u8 {
                    prop_assert_eq!(bulk.pg_occupancy(port, i), single.pg_occupancy(port, i));
                    prop_assert_eq!(bulk.is_off(port, i), single.is_off(port, i));
                    let (a, b) = (bulk.queue_occupancy(port, i), single.queue_occupancy(port, i));
                    prop_assert_eq!(a.total, b.total);
                }
            }
        }
    }
}
