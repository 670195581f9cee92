//! Per-packet costs of the pure engine: parse, classify, MMU admit+release, PFC encode,
//! scheduler pick, FDB learn+lookup, shaper, and the whole pure per-packet pipeline.
//!
//! Run: `cargo bench --no-default-features --bench engine -- --warm-up-time 1 --measurement-time 2`
//! (docs/benchmarks.md lists the figures measured on the reference machine).

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use pfcswitch::classify::{QosMaps, Trust};
use pfcswitch::fdb::Fdb;
use pfcswitch::mmu::{Mmu, MmuConfig, PgProfile, QueueProfile, Threshold, Verdict};
use pfcswitch::sched::{Scheduler, Shaper, TcSched};
use pfcswitch::wire::{parse, MacAddr, MacControl};

/// TSC frequency assumed by the time-based parts (FDB aging, shaper): 2 GHz.
const HZ: u64 = 2_000_000_000;

/// The frame net_null hands out: 64 zero bytes (untagged, EtherType 0 = 802.3 length).
fn null_frame() -> [u8; 64] {
    [0u8; 64]
}

/// Untagged IPv4, DSCP 3.
fn ipv4_frame() -> [u8; 64] {
    let mut f = [0u8; 64];
    f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 2]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[15] = 3 << 2;
    f
}

/// The SONiC default scheduler: TC7 strict, TC3/4 DWRR 15, others DWRR 14.
fn sonic_sched() -> Scheduler {
    let mut k = [TcSched::Dwrr(14); 8];
    k[3] = TcSched::Dwrr(15);
    k[4] = TcSched::Dwrr(15);
    k[7] = TcSched::Strict;
    Scheduler::new(k, pfcswitch::wire::max_frame_len(9100))
}

fn frame() -> [u8; 64] {
    let mut f = [0u8; 64];
    f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 2]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&[0x81, 0x00]);
    f[14..16].copy_from_slice(&0x6064u16.to_be_bytes());
    f[16..18].copy_from_slice(&[0x08, 0x00]);
    f[18] = 0x45;
    f[19] = (3 << 2) | 2;
    f
}

fn bench(c: &mut Criterion) {
    let f = frame();
    c.bench_function("parse_tagged_ipv4", |b| b.iter(|| parse(black_box(&f))));
    let maps = QosMaps::default();
    let p = parse(&f).unwrap();
    c.bench_function("classify_dscp", |b| b.iter(|| maps.classify(black_box(&p))));
    let pg = PgProfile { size: 4096, xoff: 200_000, xon: 0, xon_offset: 4096, threshold: Threshold::Dynamic(0) };
    let q = QueueProfile { size: 4096, threshold: Threshold::Dynamic(0) };
    let mmu = Mmu::new(MmuConfig::uniform(4, 0b0001_1000, pg, q, 8 << 20, 4 << 20)).unwrap();
    c.bench_function("mmu_admit_release_lossless", |b| {
        b.iter(|| {
            if let Verdict::Admit { charge, .. } = mmu.admit(black_box(0), 3, 1, 3, black_box(1500), true) {
                black_box(mmu.release(charge));
            }
        })
    });
    c.bench_function("mmu_admit_release_lossy", |b| {
        b.iter(|| {
            if let Verdict::Admit { charge, .. } = mmu.admit(black_box(0), 0, 1, 0, black_box(1500), false) {
                black_box(mmu.release(charge));
            }
        })
    });
    let src = MacAddr([2, 0, 0, 0, 0, 1]);
    let mut out = [0u8; 60];
    c.bench_function("pfc_encode", |b| {
        b.iter(|| MacControl::pfc_pause(black_box(0b0001_1000), 0xffff).emit(src, &mut out))
    });
    let pfc = MacControl::pfc_pause(0b1000, 0xffff).to_bytes(src);
    c.bench_function("pfc_decode", |b| b.iter(|| MacControl::parse(black_box(&pfc))));
}

/// Parse and classify variants the dataplane meets (net_null frames, untagged IPv4, PCP).
fn bench_parse_classify(c: &mut Criterion) {
    let nf = null_frame();
    let v4 = ipv4_frame();
    c.bench_function("parse_untagged_nonip_null_frame", |b| b.iter(|| parse(black_box(&nf))));
    c.bench_function("parse_untagged_ipv4", |b| b.iter(|| parse(black_box(&v4))));
    let maps = QosMaps { default_tc: 3, ..QosMaps::default() };
    let p = parse(&nf).unwrap();
    c.bench_function("classify_default_tc", |b| b.iter(|| maps.classify(black_box(&p))));
    let pcp = QosMaps { trust: Trust::Pcp, ..QosMaps::default() };
    let t = parse(&frame()).unwrap();
    c.bench_function("classify_pcp", |b| b.iter(|| pcp.classify(black_box(&t))));
}

fn mmu_4ports() -> Mmu {
    let pg = PgProfile { size: 4096, xoff: 200_000, xon: 0, xon_offset: 4096, threshold: Threshold::Dynamic(0) };
    let q = QueueProfile { size: 4096, threshold: Threshold::Dynamic(0) };
    Mmu::new(MmuConfig::uniform(4, 0b0001_1000, pg, q, 8 << 20, 4 << 20)).unwrap()
}

/// A burst of 32 lossless packets admitted, then released: the MMU cost as the worker
/// sees it (occupancy moves, the DT threshold is recomputed, no edge is crossed).
fn bench_mmu_burst(c: &mut Criterion) {
    let mmu = mmu_4ports();
    let mut g = c.benchmark_group("mmu_burst32");
    g.throughput(Throughput::Elements(32));
    g.bench_function("admit32_then_release32_lossless_64B", |b| {
        let mut charges = Vec::with_capacity(32);
        b.iter(|| {
            for _ in 0..32 {
                if let Verdict::Admit { charge, .. } = mmu.admit(black_box(0), 3, 1, 3, black_box(64), true) {
                    charges.push(charge);
                }
            }
            for ch in charges.drain(..) {
                black_box(mmu.release(ch));
            }
        })
    });
    g.finish();
}

fn bench_sched(c: &mut Criterion) {
    let mut s = sonic_sched();
    c.bench_function("sched_pick_dwrr_2tc", |b| b.iter(|| s.pick(black_box(0b0001_1000), |_| 64)));
    let mut s = sonic_sched();
    c.bench_function("sched_pick_dwrr_1tc", |b| b.iter(|| s.pick(black_box(0b0000_1000), |_| 64)));
    let mut s = sonic_sched();
    c.bench_function("sched_pick_dwrr_7tc_mixed_len", |b| {
        b.iter(|| s.pick(black_box(0b0111_1111), |tc| 64 + 200 * tc as u32))
    });
    let mut s = sonic_sched();
    c.bench_function("sched_pick_strict", |b| b.iter(|| s.pick(black_box(0b1001_1000), |_| 64)));
    let mut s = sonic_sched();
    c.bench_function("sched_pick_none_eligible", |b| b.iter(|| s.pick(black_box(0), |_| 64)));
}

fn bench_fdb(c: &mut Criterion) {
    let n = 1024usize;
    let macs: Vec<[u8; 6]> = (0..n as u32)
        .map(|i| {
            let b = i.to_be_bytes();
            [0x02, 0x10, b[0], b[1], b[2], b[3]]
        })
        .collect();
    let mut fdb = Fdb::new(65536, 300, HZ);
    for (i, m) in macs.iter().enumerate() {
        fdb.learn(*m, (i & 1) as u16, 1);
    }
    let mut i = 0usize;
    let mut now = 1u64;
    c.bench_function("fdb_learn_refresh_plus_lookup_hit_1k", |b| {
        b.iter(|| {
            i = (i + 1) & (n - 1);
            now += 1;
            black_box(fdb.learn(macs[i], (i & 1) as u16, now));
            black_box(fdb.lookup(macs[(i + 7) & (n - 1)], now))
        })
    });
    let unknown = [0x02, 0x99, 0, 0, 0, 1];
    c.bench_function("fdb_lookup_miss", |b| b.iter(|| fdb.lookup(black_box(unknown), now)));
    c.bench_function("fdb_learn_zero_src", |b| b.iter(|| fdb.learn(black_box([0; 6]), 0, now)));
    // A full table (64K entries, load 1/2): learn+lookup of random residents.
    let big: Vec<[u8; 6]> = (0..65536u32)
        .map(|i| {
            let x = i.wrapping_mul(2_654_435_761);
            let b = x.to_be_bytes();
            [0x02, 0x20, b[0], b[1], b[2], b[3]]
        })
        .collect();
    let mut fdb = Fdb::new(65536, 300, HZ);
    for (i, m) in big.iter().enumerate() {
        fdb.learn(*m, (i & 3) as u16, 1);
    }
    let mut j = 0usize;
    c.bench_function("fdb_learn_refresh_plus_lookup_hit_64k", |b| {
        b.iter(|| {
            j = (j + 40_503) & 65535;
            now += 1;
            black_box(fdb.learn(big[j], (j & 3) as u16, now));
            black_box(fdb.lookup(big[(j + 12_345) & 65535], now))
        })
    });
}

/// A lookup miss on the shared table after MAC churn: 64K entries (half the slots)
/// learned and aged out 8 times over, then 32K live entries. Aging turns slots into
/// tombstones; reclaiming them keeps a miss as short as on a fresh table.
fn bench_fdb_churn(c: &mut Criterion) {
    const CAP: usize = 1 << 16;
    let fdb = pfcswitch::fdb::SharedFdb::new(CAP, 1, HZ);
    let mac = |i: u32| {
        let b = i.wrapping_mul(2_654_435_761).to_be_bytes();
        [0x02, 0x40, b[0], b[1], b[2], b[3]]
    };
    let mut now = 1u64;
    for round in 0..8u32 {
        for i in 0..CAP as u32 / 2 {
            fdb.learn(0, mac(round << 20 | i), 1, now);
        }
        now += 2 * HZ;
        fdb.age_slice(fdb.slots(), now);
    }
    for i in 0..CAP as u32 / 2 {
        fdb.learn(0, mac(9 << 20 | i), 1, now);
    }
    let unknown: Vec<[u8; 6]> = (0..1024u32).map(|i| mac(12 << 20 | i)).collect();
    let probes: usize = unknown.iter().map(|m| fdb.probe_len(0, *m)).sum();
    eprintln!(
        "fdb after churn: {} empty slots of {}, {:.1} slots per miss",
        fdb.empty_slots(),
        fdb.slots(),
        probes as f64 / 1024.0
    );
    let mut k = 0usize;
    c.bench_function("fdb_shared_lookup_miss_after_churn", |b| {
        b.iter(|| {
            k = (k + 1) & 1023;
            fdb.lookup(0, black_box(unknown[k]), now)
        })
    });
}

/// FDB aging at `fdb_size = 1048576` (2 Mi slots): the full sweep a worker used to run
/// once a second with a table per worker, against the bounded slice the control lcore
/// now ages every millisecond in the shared table; and the shared table's per-packet cost.
fn bench_fdb_aging(c: &mut Criterion) {
    const CAP: usize = 1 << 20;
    let mac = |i: u32| {
        let b = i.wrapping_mul(2_654_435_761).to_be_bytes();
        [0x02, 0x30, b[0], b[1], b[2], b[3]]
    };
    let mut own = Fdb::new(CAP, 300, HZ);
    let shared = pfcswitch::fdb::SharedFdb::new(CAP, 300, HZ);
    for i in 0..(CAP as u32 / 2) {
        own.learn(mac(i), (i & 3) as u16, 1);
        shared.learn(0, mac(i), (i & 3) as u16, 1);
    }
    let mut g = c.benchmark_group("fdb_aging_1m");
    g.sample_size(10);
    // Nothing expires: the sweep's cost is reading every slot (48 MiB).
    g.bench_function("per_worker_full_sweep", |b| b.iter(|| black_box(own.age(black_box(2)))));
    g.bench_function("shared_slice_512", |b| b.iter(|| black_box(shared.age_slice(512, black_box(2)))));
    g.finish();
    let mut j = 0u32;
    let mut now = 2u64;
    c.bench_function("shared_fdb_learn_refresh_plus_lookup_hit_512k", |b| {
        b.iter(|| {
            j = (j + 40_503) & (CAP as u32 / 2 - 1);
            now += 1;
            black_box(shared.learn(0, mac(j), (j & 3) as u16, now));
            black_box(shared.lookup(0, mac((j + 12_345) & (CAP as u32 / 2 - 1)), now))
        })
    });
}

fn bench_shaper(c: &mut Criterion) {
    let mut sh = Shaper::new(100_000_000_000, Shaper::default_burst(100_000_000_000, 1522 + 24), HZ, 0);
    let mut now = 0u64;
    c.bench_function("shaper_refill_consume_100G_64B", |b| {
        b.iter(|| {
            now += 15; // ~7.5 ns per packet at 2 GHz
            sh.refill(black_box(now));
            black_box(sh.try_consume(64 + 24))
        })
    });
    let mut sh = Shaper::new(10_000_000_000, Shaper::default_burst(10_000_000_000, 1522 + 24), HZ, 0);
    c.bench_function("shaper_consume_only", |b| {
        b.iter(|| {
            if !sh.try_consume(black_box(88)) {
                sh.refill(now);
                now += 2_000_000;
            }
        })
    });
}

/// The pure per-packet work of the null benchmark, without DPDK: parse a net_null frame,
/// classify (default_tc 3), FDB learn (zero source: skipped) and lookup (miss → flood to
/// the one other port), MMU admit, scheduler pick, shaper, MMU release. The gap between
/// this and the dataplane's cycles per packet is the DPDK/mbuf/ring/counter overhead.
fn bench_pipeline(c: &mut Criterion) {
    let nf = null_frame();
    let maps = QosMaps { default_tc: 3, ..QosMaps::default() };
    let mut fdb = Fdb::new(65536, 300, HZ);
    let mmu = mmu_4ports();
    let mut sched = sonic_sched();
    let mut sh = Shaper::new(400_000_000_000, Shaper::default_burst(400_000_000_000, 1522 + 24), HZ, 0);
    let mut now = 0u64;
    c.bench_function("pipeline_pure_per_packet_null_frame", |b| {
        b.iter(|| {
            now += 10;
            let p = parse(black_box(&nf)).unwrap();
            fdb.learn(p.src.0, 0, now);
            let class = maps.classify(&p);
            let out = if p.dst.is_multicast() { None } else { fdb.lookup(p.dst.0, now) };
            let out = out.unwrap_or(1);
            if let Verdict::Admit { charge, .. } = mmu.admit(0, class.pg, out, class.queue, 64, true) {
                let tc = sched.pick(1 << class.queue, |_| 64).unwrap_or(0);
                sh.refill(now);
                black_box(sh.try_consume(64 + 24));
                black_box(tc);
                black_box(mmu.release(charge));
            }
        })
    });
}

criterion_group!(
    benches,
    bench,
    bench_parse_classify,
    bench_mmu_burst,
    bench_sched,
    bench_fdb,
    bench_fdb_aging,
    bench_fdb_churn,
    bench_shaper,
    bench_pipeline
);
criterion_main!(benches);
