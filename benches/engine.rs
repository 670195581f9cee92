//! Per-packet costs of the pure engine: parse, classify, MMU admit+release, PFC encode.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use pfcswitch::classify::QosMaps;
use pfcswitch::mmu::{Mmu, MmuConfig, PgProfile, QueueProfile, Threshold, Verdict};
use pfcswitch::wire::{parse, MacAddr, MacControl};

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
    let pg = PgProfile {
        size: 4096,
        xoff: 200_000,
        xon: 0,
        xon_offset: 4096,
        threshold: Threshold::Dynamic(0),
    };
    let q = QueueProfile {
        size: 4096,
        threshold: Threshold::Dynamic(0),
    };
    let mmu = Mmu::new(MmuConfig::uniform(4, 0b0001_1000, pg, q, 8 << 20, 4 << 20)).unwrap();
    c.bench_function("mmu_admit_release_lossless", |b| {
        b.iter(|| {
            if let Verdict::Admit { charge, .. } =
                mmu.admit(black_box(0), 3, 1, 3, black_box(1500), true)
            {
                black_box(mmu.release(charge));
            }
        })
    });
    c.bench_function("mmu_admit_release_lossy", |b| {
        b.iter(|| {
            if let Verdict::Admit { charge, .. } =
                mmu.admit(black_box(0), 0, 1, 0, black_box(1500), false)
            {
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
    c.bench_function("pfc_decode", |b| {
        b.iter(|| MacControl::parse(black_box(&pfc)))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
