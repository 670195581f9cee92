//! Exact-boundary and concurrency tests of the MMU.

use super::*;

const B: u32 = 100;

/// Two ports, PG 3 lossless: φ = 1000, η = 3000, α = 1, xon 0, xon_offset 2000;
/// Bs = 18000 − 2·(1000 + 3000) = 10000. Queues: private 500 (α = 1/2), lossy
/// Bs = 20000 − 16·500 = 12000.
fn cfg(order: ReleaseOrder) -> MmuConfig {
    let pg = PgProfile { size: 1000, xoff: 3000, xon: 0, xon_offset: 2000, threshold: Threshold::Dynamic(0) };
    let q = QueueProfile { size: 500, threshold: Threshold::Dynamic(-1) };
    let mut c = MmuConfig::uniform(2, 1 << 3, pg, q, 18_000, 20_000);
    c.release_order = order;
    c
}

#[test]
fn charge_is_small() {
    assert!(std::mem::size_of::<Charge>() <= 16);
    assert_eq!(std::mem::size_of::<Charge>(), 12);
}

#[test]
fn four_cases_at_exact_boundaries() {
    let m = Mmu::new(cfg(ReleaseOrder::HeadroomFirst)).unwrap();
    assert_eq!(m.pool_stats().lossless.shared_size, 10_000);
    let mut charges = Vec::new();
    // 1. private: packets 0..=9 (10·100 = φ).
    // 2. shared: s < T = 10000 − s ⇔ s < 5000: packets 10..=59 (s = 0..4900 before).
    //    Crossing inside shared needs s + 100 ≥ 10000 − s ⇔ s ≥ 4950: never at a multiple
    //    of 100, so the first packet refused by shared triggers the PAUSE.
    // 3. headroom: packet 60 (PAUSE edge) .. 89 (30·100 = η).
    // 4. drop: packet 90.
    for i in 0..91 {
        let v = m.admit(0, 3, 1, 3, B, true);
        let expect_seg = match i {
            0..=9 => Some(Segment::Private),
            10..=59 => Some(Segment::Shared),
            60..=89 => Some(Segment::Headroom),
            _ => None,
        };
        assert_eq!(v.charge().map(|c| c.segment()), expect_seg, "packet {i}");
        let expect_edge = (i == 60).then_some(Edge::one(0, 3, EdgeKind::Pause));
        assert_eq!(v.edge(), expect_edge, "packet {i}");
        if i == 90 {
            assert_eq!(v, Verdict::drop(Refusal::LosslessHeadroomFull));
        }
        charges.extend(v.charge());
        assert_eq!(m.is_off(0, 3), i >= 60);
    }
    assert_eq!(m.pg_occupancy(0, 3), PgOccupancy { private: 1000, shared: 5000, headroom: 3000, total: 9000 });
    assert_eq!(m.pg_threshold(0, 3), 5000);
    assert_eq!(m.pg_watermarks(0, 3), PgWatermarks { shared: 5000, headroom: 3000 });
    assert_eq!(m.queue_occupancy(1, 3).lossless, 9000);
    // Release FIFO. Headroom drains first (30 releases), then shared. Xon threshold after
    // k shared releases: max(0, (5000 + 100k) − 2000) = 3000 + 100k; usage 5000 − 100k:
    // resume when 200k ≥ 2000, k = 10 → release number 40 (index 39).
    for (i, c) in charges.iter().enumerate() {
        let e = m.release(*c);
        let expect = (i == 39).then_some(Edge::one(0, 3, EdgeKind::Resume));
        assert_eq!(e, expect, "release {i}");
        if i == 29 {
            assert_eq!(m.pg_occupancy(0, 3).headroom, 0);
        }
    }
    assert_eq!(m.pg_occupancy(0, 3), PgOccupancy::default());
    assert_eq!(m.pool_stats().lossless.shared_used + m.pool_stats().lossless.private_used, 0);
    assert_eq!(m.queue_occupancy(1, 3).total, 0);
}

#[test]
fn as_charged_release_order() {
    let m = Mmu::new(cfg(ReleaseOrder::AsCharged)).unwrap();
    let cs: Vec<_> = (0..70).filter_map(|_| m.admit(0, 3, 1, 3, B, true).charge()).collect();
    assert_eq!(m.pg_occupancy(0, 3).headroom, 1000);
    // First release returns a private packet to private.
    assert_eq!(m.release(cs[0]), None);
    assert_eq!(m.pg_occupancy(0, 3), PgOccupancy { private: 900, shared: 5000, headroom: 1000, total: 6900 });
    // Usage above private = s + h. Resume when 5000 − 100k + 1000 ≤ 3000 + 100k ⇔ k ≥ 15:
    // after releasing 9 more private and then 15 shared packets.
    let mut edge_at = None;
    for (i, c) in cs.iter().enumerate().skip(1) {
        if let Some(e) = m.release(*c) {
            assert_eq!(e.kind, EdgeKind::Resume);
            edge_at.get_or_insert(i);
        }
    }
    assert_eq!(edge_at, Some(10 + 14));
}

#[test]
fn crossing_packet_in_shared_triggers_pause() {
    // Static threshold 1000, no private: 300-byte packets enter shared while s < 1000
    // (s = 0, 300, 600, 900); the 4th makes s = 1200 ≥ T → PAUSE on a shared packet.
    let pg = PgProfile { size: 0, xoff: 1200, xon: 0, xon_offset: 500, threshold: Threshold::Static(1000) };
    let m = Mmu::new(MmuConfig::uniform(1, 1, pg, QueueProfile::default(), 100_000, 0)).unwrap();
    let v: Vec<_> = (0..9).map(|_| m.admit(0, 0, 0, 0, 300, true)).collect();
    let segs: Vec<_> = v.iter().map(|v| v.charge().map(|c| c.segment())).collect();
    use Segment::*;
    assert_eq!(
        segs,
        [
            Some(Shared),
            Some(Shared),
            Some(Shared),
            Some(Shared),
            Some(Headroom),
            Some(Headroom),
            Some(Headroom),
            Some(Headroom),
            None
        ]
    );
    assert_eq!(v[3].edge().map(|e| e.kind), Some(EdgeKind::Pause));
    assert!(v.iter().enumerate().all(|(i, v)| i == 3 || v.edge().is_none()));
    // Xon = max(0, 1000 − 500) = 500: usage 1200 + 1200 must fall to ≤ 500: after
    // releasing 2400 − 500 = 1900 → 7 packets (2100).
    let edges: Vec<_> = v.iter().filter_map(|v| v.charge()).map(|c| m.release(c)).collect();
    assert_eq!(edges.iter().position(|e| e.is_some()), Some(6));
    assert_eq!(edges.iter().flatten().count(), 1);
}

#[test]
fn xon_never_above_the_xoff_point() {
    // Static T = 1000 and xon = 2000 (above T): the PG pauses on its 4th 300-byte packet
    // (s = 1200). Read as max(xon, T − xon_offset) = 2000 the PG would be resumable the
    // moment it paused, and the control lcore's periodic check would RESUME it between
    // two arrivals; capped at T it resumes once s + h ≤ 1000.
    let pg = PgProfile { size: 0, xoff: 1200, xon: 2000, xon_offset: 500, threshold: Threshold::Static(1000) };
    let m = Mmu::new(MmuConfig::uniform(1, 1, pg, QueueProfile::default(), 100_000, 0)).unwrap();
    let v: Vec<_> = (0..4).map(|_| m.admit(0, 0, 0, 0, 300, true)).collect();
    assert_eq!(v[3].edge().map(|e| e.kind), Some(EdgeKind::Pause));
    assert_eq!(m.pg_xon_threshold(0, 0), 1000);
    assert_eq!(m.check_resume(0, 0), None, "resumable right after the PAUSE");
    assert!(m.is_off(0, 0));
    // One release: s = 900 ≤ 1000 → RESUME.
    let e = m.release(v[0].charge().unwrap());
    assert_eq!(e.map(|e| e.kind), Some(EdgeKind::Resume));
}

#[test]
fn lossy_dt_and_pool_full() {
    let m = Mmu::new(cfg(ReleaseOrder::HeadroomFirst)).unwrap();
    assert_eq!(m.pool_stats().lossy.shared_size, 12_000);
    // Private 5 packets; shared while s < (12000 − s)/2 ⇔ 3s < 12000 ⇔ s < 4000:
    // s = 0..3900 → 40 packets (5..=44); packet 45 → lossy_dt.
    for i in 0..46 {
        let v = m.admit(0, 0, 1, 2, B, false);
        match i {
            0..=4 => assert_eq!(v.charge().unwrap().segment(), Segment::LossyPrivate, "{i}"),
            5..=44 => assert_eq!(v.charge().unwrap().segment(), Segment::LossyShared, "{i}"),
            _ => assert_eq!(v, Verdict::drop(Refusal::LossyDt)),
        }
        assert!(v.edge().is_none());
    }
    // A lossless-flagged packet on a lossy PG is lossy too.
    assert!(!m.admit(0, 0, 1, 5, B, true).charge().unwrap().is_lossless());
    // Pool full: α = 128, pool shared 12000, 700-byte packets: s < T always until the
    // pool has < 700 left: 17 packets (11900), the 18th does not fit.
    let q = QueueProfile { size: 0, threshold: Threshold::Dynamic(7) };
    let m = Mmu::new(MmuConfig::uniform(1, 0, PgProfile::default(), q, 0, 12_000)).unwrap();
    let v: Vec<_> = (0..18).map(|_| m.admit(0, 0, 0, 0, 700, false)).collect();
    assert!(v[..17].iter().all(|v| v.charge().is_some()));
    assert_eq!(v[17], Verdict::drop(Refusal::LossyPoolFull));
    for c in v.iter().filter_map(|v| v.charge()) {
        m.release(c);
    }
    assert_eq!(
        m.pool_stats().lossy,
        LossyPoolStats { size: 12_000, shared_size: 12_000, shared_watermark: 11_900, ..Default::default() }
    );
}

#[test]
fn cells_and_invalid_input() {
    let mut c = cfg(ReleaseOrder::HeadroomFirst);
    c.cell_size = 256;
    let m = Mmu::new(c).unwrap();
    assert_eq!(m.charge_bytes(1), 256);
    assert_eq!(m.charge_bytes(256), 256);
    assert_eq!(m.charge_bytes(257), 512);
    assert_eq!(m.charge_bytes(0), 0);
    let v = m.admit(0, 3, 1, 3, 60, true);
    assert_eq!(v.charge().unwrap().bytes(), 256);
    assert_eq!(m.pg_occupancy(0, 3).private, 256);
    assert_eq!(m.admit(2, 3, 1, 3, 60, true), Verdict::drop(Refusal::InvalidIndex));
    assert_eq!(m.admit(0, 8, 1, 3, 60, true), Verdict::drop(Refusal::InvalidIndex));
    assert_eq!(m.admit(0, 3, 1, 9, 60, true), Verdict::drop(Refusal::InvalidIndex));
    assert_eq!(m.admit(0, 3, 1, 3, u32::MAX, true), Verdict::drop(Refusal::Oversize));
    assert!(!m.is_off(9, 9));
    assert_eq!(m.pg_occupancy(9, 0), PgOccupancy::default());
}

#[test]
fn config_validation() {
    let ok = cfg(ReleaseOrder::HeadroomFirst);
    let mut c = ok.clone();
    c.total_size = 10;
    assert!(matches!(Mmu::new(c), Err(MmuError::PoolsExceedTotal { .. })));
    let mut c = ok.clone();
    c.lossless_pool_size = 7999;
    c.total_size = 100_000;
    assert!(matches!(Mmu::new(c), Err(MmuError::ReservedExceedsPool { pool: "lossless", .. })));
    let mut c = ok.clone();
    c.ports[1].pgs[2].threshold = Threshold::Dynamic(8);
    assert_eq!(Mmu::new(c).err(), Some(MmuError::DynamicThOutOfRange { port: 1, index: 2, value: 8 }));
    let mut c = ok.clone();
    c.headroom_policy = HeadroomPolicy::Dsh;
    c.lossless_pool_size = 5999; // 2·2·1000 private + 2 insurance of 1000
    assert!(matches!(Mmu::new(c), Err(MmuError::ReservedExceedsPool { pool: "lossless", .. })));
    let mut c = ok.clone();
    c.cell_size = 0;
    assert_eq!(Mmu::new(c).err(), Some(MmuError::ZeroCellSize));
    let mut c = ok;
    c.ports.clear();
    assert_eq!(Mmu::new(c).err(), Some(MmuError::PortCount(0)));
    assert_eq!(Threshold::Dynamic(-8).limit(256), 1);
    assert_eq!(Threshold::Dynamic(7).limit(2), 256);
    assert_eq!(Threshold::Dynamic(7).limit(u64::MAX), u64::MAX);
}

/// Several lcores admit to the same PGs while others release: accounting must return
/// to zero and PAUSE/RESUME edges must balance per PG, in every headroom mode.
#[test]
fn concurrent_admit_release_conserves_and_edges_balance() {
    for policy in [HeadroomPolicy::Static, HeadroomPolicy::SharedPool { size: 50_000 }, HeadroomPolicy::Dsh] {
        concurrent_run(policy);
    }
}

fn concurrent_run(policy: HeadroomPolicy) {
    use std::sync::atomic::AtomicI64;
    let pg = PgProfile { size: 2000, xoff: 40_000, xon: 1000, xon_offset: 3000, threshold: Threshold::Dynamic(-1) };
    let q = QueueProfile { size: 1000, threshold: Threshold::Dynamic(0) };
    let mut c = MmuConfig::uniform(2, 0b0001_1000, pg, q, 200_000, 100_000);
    c.headroom_policy = policy;
    let m = Mmu::new(c).unwrap();
    // Net edges per (port, pg): +1 per PAUSE, −1 per RESUME.
    let net: Vec<AtomicI64> = (0..16).map(|_| AtomicI64::new(0)).collect();
    let threads = 4;
    std::thread::scope(|s| {
        for t in 0..threads {
            let (m, net) = (&m, &net);
            s.spawn(move || {
                let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ (t as u64 + 1);
                let mut next = move || {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    rng
                };
                let mut held = std::collections::VecDeque::new();
                let note = |e: Option<Edge>| {
                    if let Some(e) = e {
                        let d = if e.kind == EdgeKind::Pause { 1 } else { -1 };
                        for pg in e.pg_iter() {
                            let v = net[usize::from(e.port) * 8 + usize::from(pg)].fetch_add(d, Relaxed) + d;
                            // Another thread may not have recorded its opposite edge yet.
                            assert!(v.abs() <= threads as i64 + 1, "edge imbalance {v}");
                        }
                    }
                };
                for _ in 0..100_000 {
                    let r = next();
                    if r % 100 < 55 || held.is_empty() {
                        let port = (r >> 8) as u16 % 2;
                        let pg = [3u8, 4, 0][(r >> 16) as usize % 3];
                        let len = 64 + (r >> 24) as u32 % 4000;
                        let v = m.admit(port, pg, 1 - port, pg, len, pg != 0);
                        note(v.edge());
                        held.extend(v.charge());
                    } else {
                        note(m.release(held.pop_front().unwrap()));
                    }
                }
                for c in held {
                    note(m.release(c));
                }
            });
        }
    });
    // What the control lcore's reconciliation does: Xon re-checked without a packet (a
    // thread's last Xon check may have read another's bytes not yet released).
    for port in 0..2u16 {
        for pg in [3u8, 4] {
            if let Some(e) = m.check_resume(port, pg) {
                for g in e.pg_iter() {
                    net[usize::from(port) * 8 + usize::from(g)].fetch_sub(1, Relaxed);
                }
            }
        }
    }
    for port in 0..2u16 {
        for pg in 0..8u8 {
            let n = net[usize::from(port) * 8 + usize::from(pg)].load(Relaxed);
            assert_eq!(n, m.is_off(port, pg) as i64, "port {port} pg {pg}");
            assert!(!m.is_off(port, pg), "everything released: PG must be ON ({policy:?})");
            assert_eq!(m.pg_occupancy(port, pg), PgOccupancy::default());
            assert_eq!(m.queue_occupancy(port, pg).total, 0);
        }
    }
    let p = m.pool_stats();
    assert_eq!((p.lossless.private_used, p.lossless.shared_used, p.lossless.headroom_used), (0, 0, 0));
    assert_eq!((p.lossy.private_used, p.lossy.shared_used), (0, 0));
    assert!(p.lossless.headroom_watermark > 0, "the test should exercise headroom ({policy:?})");
    assert_eq!(m.port_occupancy(0), (0, 0));
}

#[test]
fn max_packets_counts_minimum_frames_in_whole_cells() {
    let mut c = MmuConfig::uniform(2, 0, PgProfile::default(), QueueProfile::default(), 6000, 0);
    assert_eq!(c.max_packets(60), 100);
    c.cell_size = 256;
    assert_eq!(c.max_packets(60), 24, "a 60-byte frame is charged one 256-byte cell");
    c.cell_size = 32;
    assert_eq!(c.max_packets(60), 94, "two cells of 32");
}

/// SAI shared headroom pool, sonic-mgmt `HdrmPoolSizeTest` style: every PG filled to its
/// Xoff point, then into headroom; the pool (smaller than Σ xoff) runs out before the
/// PGs' own caps, and the next packet drops. Bs grows by what the pool saves.
#[test]
fn shared_headroom_pool_caps_the_sum_and_each_pg() {
    let mut c = cfg(ReleaseOrder::HeadroomFirst);
    // 2 PGs × η 3000 = 6000 of headroom; a pool of 4000 (over-subscription 1.5).
    c.headroom_policy = HeadroomPolicy::SharedPool { size: 4000 };
    let m = Mmu::new(c).unwrap();
    // Bs = 18000 − 2·1000 − 4000 = 12000 (static: 10000).
    assert_eq!(m.pool_stats().lossless.shared_size, 12_000);
    assert_eq!(m.pool_stats().lossless.headroom_pool_size, 4000);
    // Port 0 alone: private 10, shared until T = 12000 − s ⇔ s < 6000: 60 packets, then
    // headroom up to its own cap 3000 (30 packets; the pool has room), then a drop.
    let mut charges = Vec::new();
    let mut first_hr = None;
    for i in 0..101 {
        let v = m.admit(0, 3, 1, 3, B, true);
        if v.charge().is_some_and(|c| c.segment() == Segment::Headroom) && first_hr.is_none() {
            first_hr = Some(i);
        }
        if i < 100 {
            charges.extend(v.charge());
        } else {
            assert_eq!(v, Verdict::drop(Refusal::LosslessHeadroomFull), "PG cap");
        }
    }
    assert_eq!(first_hr, Some(70));
    assert_eq!(m.pg_occupancy(0, 3).headroom, 3000);
    // Port 1: the pool has 1000 left, less than its PG's 3000: 10 packets, then a drop.
    let mut admitted_hr = 0;
    loop {
        let v = m.admit(1, 3, 0, 3, B, true);
        match v {
            Verdict::Admit { charge, .. } => {
                if charge.segment() == Segment::Headroom {
                    admitted_hr += 1;
                }
                charges.push(charge);
            }
            Verdict::Drop { reason: r, .. } => {
                assert_eq!(r, Refusal::LosslessHeadroomFull);
                break;
            }
        }
    }
    assert_eq!(admitted_hr, 10, "the pool, not the PG, ran out");
    assert_eq!(m.pool_stats().lossless.headroom_used, 4000);
    assert_eq!(m.pool_stats().lossless.headroom_watermark, 4000);
    for c in charges {
        m.release(c);
    }
    let s = m.pool_stats().lossless;
    assert_eq!((s.private_used, s.shared_used, s.headroom_used), (0, 0, 0));
    // Validation counts the pool, not Σ xoff.
    let mut c = cfg(ReleaseOrder::HeadroomFirst);
    c.headroom_policy = HeadroomPolicy::SharedPool { size: 16_001 };
    assert!(matches!(Mmu::new(c), Err(MmuError::ReservedExceedsPool { .. })));
}

/// DSH: two ports, PGs 3 and 4 lossless (Nq = 2), φ = 1000, η = 3000, α = 1, Bs = 20000
/// (pool 30000 − 4·1000 private − 2·3000 insurance).
fn dsh_cfg(th: Threshold) -> MmuConfig {
    let pg = PgProfile { size: 1000, xoff: 3000, xon: 0, xon_offset: 0, threshold: th };
    let mut c = MmuConfig::uniform(2, 0b0001_1000, pg, QueueProfile::default(), 30_000, 0);
    c.headroom_policy = HeadroomPolicy::Dsh;
    c
}

/// One PG alone, packet by packet (the hand computation):
/// private 0..=9; shared from 10, T = 20000 − s. Queue-level PAUSE when s + 100 ≥ T − η
/// ⇔ s ≥ 8450 before → s = 8500, packet 95. Port-level PAUSE when S + 100 ≥ 2·T ⇔
/// S ≥ 13300 before → packet 143 (still in shared), naming PG 4 (PG 3 already OFF).
/// Insurance 144..=173 (30 · 100 = η); 174 drops. Releasing FIFO, insurance first (30);
/// the port resumes when S ≤ 2·T: S = 13400 − 100k ≤ 2·(6600 + 100k) ⇔ k ≥ 1 → release
/// 31 (PG 4 ON again); PG 3 at queue level when s ≤ T − η: 13300 − 100j ≤ 3700 + 100j ⇔
/// j ≥ 48 → release 79.
#[test]
fn dsh_one_pg_queue_then_port_level() {
    let m = Mmu::new(dsh_cfg(Threshold::Dynamic(0))).unwrap();
    assert_eq!(m.pool_stats().lossless.shared_size, 20_000);
    assert_eq!(m.pool_stats().lossless.headroom_pool_size, 6000);
    let mut charges = Vec::new();
    for i in 0..175 {
        let v = m.admit(0, 3, 1, 3, B, true);
        let seg = match i {
            0..=9 => Some(Segment::Private),
            10..=143 => Some(Segment::Shared),
            144..=173 => Some(Segment::Headroom),
            _ => None,
        };
        assert_eq!(v.charge().map(|c| c.segment()), seg, "packet {i}");
        let edge = match i {
            95 => Some(Edge::one(0, 3, EdgeKind::Pause)),
            143 => Some(Edge::one(0, 4, EdgeKind::Pause)),
            _ => None,
        };
        assert_eq!(v.edge(), edge, "packet {i}");
        assert_eq!(m.is_off(0, 3), i >= 95, "packet {i}");
        assert_eq!((m.is_off(0, 4), m.is_port_off(0)), (i >= 143, i >= 143), "packet {i}");
        charges.extend(v.charge());
    }
    assert_eq!(m.admit(0, 3, 1, 3, B, true), Verdict::drop(Refusal::LosslessHeadroomFull));
    assert_eq!(m.port_occupancy(0), (13_400, 3000));
    assert!(!m.is_off(1, 3), "the other port is untouched");
    for (i, c) in charges.iter().enumerate() {
        let e = m.release(*c);
        let expect = match i {
            30 => Some(Edge::one(0, 4, EdgeKind::Resume)),
            78 => Some(Edge::one(0, 3, EdgeKind::Resume)),
            _ => None,
        };
        assert_eq!(e, expect, "release {i}");
    }
    assert_eq!(m.port_occupancy(0), (0, 0));
    assert_eq!(m.pool_stats().lossless.shared_used + m.pool_stats().lossless.headroom_used, 0);
}

/// DSH: the shared segment is full (port 1 filled it; static T = 15000 so that no PG of
/// port 0 is near its queue-level point), so port 0's next packet meets its port-level
/// Xoff: one PAUSE naming both lossless PGs, and the insurance headroom takes the port's
/// in-flight bytes (η) whichever PG they belong to. The first release resumes both.
#[test]
fn dsh_port_level_pause_names_every_lossless_pg() {
    let m = Mmu::new(dsh_cfg(Threshold::Static(15_000))).unwrap();
    let mut port0 = Vec::new();
    for pg in [3u8, 4] {
        for _ in 0..10 {
            port0.extend(m.admit(0, pg, 1, pg, B, true).charge());
        }
    }
    // Port 1, PG 3: 10 private, then shared up to Bs (queue PAUSE at s ≥ 15000 − 3000),
    // then the full pool sends it to its insurance with a port-level PAUSE of PG 4.
    let mut edges = Vec::new();
    for _ in 0..211 {
        edges.extend(m.admit(1, 3, 0, 3, B, true).edge());
    }
    assert_eq!(edges, [Edge::one(1, 3, EdgeKind::Pause), Edge::one(1, 4, EdgeKind::Pause)]);
    assert_eq!(m.pool_stats().lossless.shared_used, 20_000);
    assert!(!m.is_off(0, 3) && !m.is_off(0, 4));
    let v = m.admit(0, 3, 1, 3, B, true);
    assert_eq!(v.edge(), Some(Edge { port: 0, pgs: 0b0001_1000, kind: EdgeKind::Pause }));
    assert_eq!(v.charge().map(|c| c.segment()), Some(Segment::Headroom));
    port0.extend(v.charge());
    // Both PGs at once: 29 more packets fill the insurance exactly, without a drop.
    for i in 0..29 {
        let v = m.admit(0, [4u8, 3][i % 2], 1, 3, B, true);
        assert_eq!((v.charge().map(|c| c.segment()), v.edge()), (Some(Segment::Headroom), None), "packet {i}");
        port0.extend(v.charge());
    }
    assert_eq!(m.port_occupancy(0), (0, 3000));
    assert_eq!(m.admit(0, 4, 1, 4, B, true), Verdict::drop(Refusal::LosslessHeadroomFull));
    let last = port0.pop().unwrap();
    assert_eq!(m.release(last), Some(Edge { port: 0, pgs: 0b0001_1000, kind: EdgeKind::Resume }));
    assert!(!m.is_off(0, 3) && !m.is_off(0, 4) && !m.is_port_off(0));
}

/// A PG at or over its Xoff point is paused by every admission that finds it there, even
/// one that drops: PG A (port 0) exhausts the shared headroom pool, then PG B (port 1),
/// still ON, reaches its Xoff point when the pool is empty. Its first refused packet must
/// pause it (one edge), or its peer would lose everything at line rate.
#[test]
fn drop_at_the_xoff_point_pauses() {
    let mut c = cfg(ReleaseOrder::HeadroomFirst);
    // Bs = 18000 − 2·1000 − 2000 = 14000. A: shared while s < 14000 − s (7000), then the
    // pool's 2000 of headroom. B then sees T = 7000 − s: shared while s < 3500, and the
    // packet at 3500 meets its Xoff point with the pool empty.
    c.headroom_policy = HeadroomPolicy::SharedPool { size: 2000 };
    let m = Mmu::new(c).unwrap();
    while m.admit(0, 3, 1, 3, B, true).charge().is_some() {}
    assert_eq!(m.pool_stats().lossless.headroom_used, 2000, "PG A took the whole pool");
    assert!(m.is_off(0, 3));
    let mut edges = Vec::new();
    let first_drop = loop {
        let v = m.admit(1, 3, 0, 3, B, true);
        edges.extend(v.edge());
        if let Some(r) = v.drop_reason() {
            break r;
        }
        assert!(!m.is_off(1, 3), "B is ON while it is admitted below its Xoff point");
    };
    assert_eq!(first_drop, Refusal::LosslessHeadroomFull);
    assert_eq!(m.pg_occupancy(1, 3).shared, 3500);
    assert!(m.is_off(1, 3), "dropped at the Xoff point while ON");
    assert_eq!(edges, [Edge::one(1, 3, EdgeKind::Pause)]);
    // The next drop finds it OFF already: no second edge.
    assert_eq!(m.admit(1, 3, 0, 3, B, true), Verdict::drop(Refusal::LosslessHeadroomFull));
}

/// A hook in `try_resume` between its reading of the counters and its CAS, so a test
/// can force what another lcore might do in that window.
pub(super) mod hook {
    use std::cell::RefCell;
    thread_local! {
        static HOOK: RefCell<Option<Box<dyn FnMut()>>> = RefCell::new(None);
    }
    pub(in crate::mmu) fn between_read_and_cas() {
        if let Some(mut f) = HOOK.with(|h| h.borrow_mut().take()) {
            f();
        }
    }
    /// Run `f` once, the next time this thread's `try_resume` is in its window.
    pub fn set(f: impl FnMut() + 'static) {
        HOOK.with(|h| *h.borrow_mut() = Some(Box::new(f)));
    }
}

/// Xon decided on counters read before the CAS: with `xon_offset = 0` a release could
/// RESUME a PG that an admission (on another lcore, forced here into the window) had just
/// pushed back past its Xoff point while it was still OFF — an admission that made no edge.
/// The PG then read ON at its Xoff point.
#[test]
fn resume_rechecked_after_its_cas() {
    let pg = PgProfile { size: 0, xoff: 100_000, xon: 0, xon_offset: 0, threshold: Threshold::Static(2000) };
    let m =
        std::sync::Arc::new(Mmu::new(MmuConfig::uniform(2, 1 << 3, pg, QueueProfile::default(), 400_000, 0)).unwrap());
    let mut held: Vec<Charge> = (0..20).filter_map(|_| m.admit(0, 3, 1, 3, 100, true).charge()).collect();
    assert!(m.is_off(0, 3), "the 20th packet reached T = 2000");
    let m2 = m.clone();
    hook::set(move || {
        // The other lcore's admission: the PG is OFF, so no edge; s goes past T.
        let v = m2.admit(0, 3, 1, 3, 200, true);
        assert_eq!((v.charge().map(|c| c.segment()), v.edge()), (Some(Segment::Shared), None));
    });
    let e = m.release(held.pop().unwrap());
    assert_eq!(m.pg_occupancy(0, 3).shared, 2100);
    assert!(m.is_off(0, 3), "ON past its Xoff point");
    assert_eq!(e, None, "the RESUME was undone: no edge");
}

#[test]
fn live_limits_change_thresholds_and_keep_the_counters() {
    let m = Mmu::new(cfg(ReleaseOrder::HeadroomFirst)).unwrap();
    // Fill private and 2000 of shared (T = 10000 − s: well below).
    let charges: Vec<Charge> = (0..30).filter_map(|_| m.admit(0, 3, 1, 3, B, true).charge()).collect();
    assert_eq!(m.pg_occupancy(0, 3).shared, 2000);
    assert_eq!(m.pg_threshold(0, 3), 8000);
    // α = 1/4: T = 8000 / 4 = 2000 ≤ s: the next packet is the Xoff point (headroom, PAUSE).
    let mut c = cfg(ReleaseOrder::HeadroomFirst);
    c.ports[0].pgs[3].threshold = Threshold::Dynamic(-2);
    m.set_limits(c.clone()).unwrap();
    assert_eq!(m.pg_threshold(0, 3), 2000);
    let v = m.admit(0, 3, 1, 3, B, true);
    assert_eq!(v.charge().map(|c| c.segment()), Some(Segment::Headroom));
    assert_eq!(v.edge(), Some(Edge::one(0, 3, EdgeKind::Pause)));
    // Headroom shrinking below what the OFF PG may still receive: not safe yet.
    let mut small = c.clone();
    small.ports[0].pgs[3].xoff = 1000;
    assert!(!m.headroom_shrink_safe(&small), "PG 3 is OFF");
    let mut grow = c.clone();
    grow.ports[0].pgs[3].xoff = 4000;
    assert!(m.headroom_shrink_safe(&grow), "growing is always safe");
    // The shape may not change; nothing applied.
    let mut shape = c.clone();
    shape.total_size += 1;
    assert_eq!(m.set_limits(shape), Err(MmuError::ShapeChanged));
    let mut bad = c.clone();
    bad.ports[1].pgs[3].xoff = 1 << 40;
    assert!(matches!(m.set_limits(bad), Err(MmuError::ReservedExceedsPool { .. })));
    assert_eq!(m.pg_threshold(0, 3), 2000);
    // Everything released: back to empty and ON, whatever the limits in between.
    m.set_limits(cfg(ReleaseOrder::HeadroomFirst)).unwrap();
    for c in charges.into_iter().chain(v.charge()) {
        m.release(c);
    }
    assert_eq!(m.pg_occupancy(0, 3).total, 0);
    assert!(!m.is_off(0, 3));
    assert!(m.headroom_shrink_safe(&small));
}

/// `config pfc`: a PG that becomes lossy while OFF is ON at once and its headroom bytes
/// leave through releases; it is lossless again later, judged afresh. With DSH the set of
/// lossless PGs is part of the shape.
#[test]
fn a_pg_changes_between_lossless_and_lossy_live() {
    let m = Mmu::new(cfg(ReleaseOrder::HeadroomFirst)).unwrap();
    let mut charges: Vec<Charge> = Vec::new();
    let mut paused = false;
    while !paused {
        let v = m.admit(0, 3, 1, 3, B, true);
        paused = v.edge() == Some(Edge::one(0, 3, EdgeKind::Pause));
        charges.extend(v.charge());
    }
    charges.extend(m.admit(0, 3, 1, 3, B, true).charge());
    assert!(m.is_off(0, 3) && m.pg_occupancy(0, 3).headroom > 0);
    let mut lossy = cfg(ReleaseOrder::HeadroomFirst);
    lossy.ports[0].lossless_pgs &= !(1 << 3);
    m.set_limits(lossy.clone()).unwrap();
    assert!(!m.is_lossless(0, 3) && !m.is_off(0, 3), "lossy now, and ON");
    // A lossy PG takes no headroom: the next packet is judged by DT alone.
    assert_ne!(m.admit(0, 3, 1, 3, B, true).charge().map(|c| c.segment()), Some(Segment::Headroom));
    let before = m.pg_occupancy(0, 3).headroom;
    m.release(charges.pop().unwrap());
    assert!(m.pg_occupancy(0, 3).headroom < before, "headroom drains first");
    // Lossless again: still over its Xoff point, so the next admission pauses.
    m.set_limits(cfg(ReleaseOrder::HeadroomFirst)).unwrap();
    assert!(m.is_lossless(0, 3));
    let v = m.admit(0, 3, 1, 3, B, true);
    assert_eq!(v.edge(), Some(Edge::one(0, 3, EdgeKind::Pause)));
    let d = Mmu::new(dsh_cfg(Threshold::Dynamic(0))).unwrap();
    let mut shape = dsh_cfg(Threshold::Dynamic(0));
    shape.ports[0].lossless_pgs = 0;
    assert_eq!(d.set_limits(shape), Err(MmuError::ShapeChanged));
}
