//! The receive path as a whole, in the pure engine: arbitrary bursts of frames (bytes,
//! lengths, segment counts, ingress ports) go through the worker's checks (segments,
//! size, runt), parse, MAC control, classify, the MMU (single and bulk admission) and the
//! egress queues; arbitrary dequeues release them. After every burst every frame is
//! accounted for (dropped under a reason, consumed, queued or sent) and the MMU charges
//! exactly what is queued; at the end, with everything released, the MMU is empty and no
//! PG is left OFF.
#![no_main]

use std::collections::VecDeque;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use pfcswitch::mmu::{Charge, Mmu, Verdict};
use pfcswitch::plan::Plan;
use pfcswitch::wire::{self, MacControl, MAX_L2_HEADER, MIN_FRAME_LEN};

const PORTS: usize = 3;
const MTU: u32 = 1500;

/// Three ports, PFC on 3 and 4, a small buffer so every threshold is reached.
const CONFIG: &str = r#"
[eal]
args = ["--no-huge", "--no-pci", "--lcores=0@0,1@1"]
[[port]]
name = "Ethernet0"
devargs = "net_null0"
speed = "10G"
mtu = 1500
[[port]]
name = "Ethernet4"
devargs = "net_null1"
speed = "10G"
mtu = 1500
trust = "pcp"
[[port]]
name = "Ethernet8"
devargs = "net_null2"
speed = "10G"
mtu = 1500
[buffer]
total_size = "256KiB"
"#;

fn plan() -> &'static Plan {
    static PLAN: OnceLock<Plan> = OnceLock::new();
    PLAN.get_or_init(|| {
        let cfg = pfcswitch::config::from_str(CONFIG, "fuzz.toml").expect("fuzz config");
        pfcswitch::plan::plan(&cfg, cfg.switch.sw_response_ns).expect("fuzz plan")
    })
}

#[derive(Default)]
struct Books {
    entered: u64,
    dropped: u64,
    consumed: u64,
    sent: u64,
}

fn mmu_bytes(mmu: &Mmu) -> u64 {
    let s = mmu.pool_stats();
    s.lossless.private_used + s.lossless.shared_used + s.lossless.headroom_used + s.lossy.private_used + s.lossy.shared_used
}

fuzz_target!(|data: &[u8]| {
    let plan = plan();
    let mmu = Mmu::new(plan.mmu.clone()).expect("mmu");
    // Per (egress port, queue): the charges of the packets waiting there.
    let mut queues: Vec<VecDeque<Charge>> = (0..PORTS * 8).map(|_| VecDeque::new()).collect();
    let mut b = Books::default();
    let mut rest = data;
    // Input: a sequence of records. Header byte h: h >= 0xe0 dequeues (h & 0x1f) packets
    // from queue data[1] % 24 and closes a burst; otherwise a frame: ingress port h % 3,
    // segments (h >> 2) & 1 ? 2 : 1, a length byte pair, then that many frame bytes.
    while let Some((&h, tail)) = rest.split_first() {
        rest = tail;
        if h >= 0xe0 {
            let Some((&qsel, tail)) = rest.split_first() else { break };
            rest = tail;
            let q = &mut queues[qsel as usize % (PORTS * 8)];
            for _ in 0..(h & 0x1f) {
                let Some(c) = q.pop_front() else { break };
                let _ = mmu.release(c);
                b.sent += 1;
            }
            check(&mmu, &queues, &b);
            continue;
        }
        if rest.len() < 2 {
            break;
        }
        let wire_len = u16::from_le_bytes([rest[0], rest[1]]) as usize % 10_000;
        rest = &rest[2..];
        let take = wire_len.min(rest.len());
        let (bytes, tail) = rest.split_at(take);
        rest = tail;
        let in_port = (h as usize) % PORTS;
        let segments = if (h >> 2) & 1 == 1 { 2 } else { 1 };
        b.entered += 1;
        // The worker's order: shape, size, runt, parse, MAC control, link-local, classify.
        if segments != 1 || take as u32 > MTU + MAX_L2_HEADER || take < MIN_FRAME_LEN {
            b.dropped += 1;
            continue;
        }
        let Ok(parsed) = wire::parse(bytes) else {
            b.dropped += 1;
            continue;
        };
        if parsed.is_mac_control() {
            match MacControl::parse(bytes) {
                Ok(_) => b.consumed += 1,
                Err(_) => b.dropped += 1,
            }
            continue;
        }
        if parsed.dst.is_link_local_reserved() {
            b.dropped += 1;
            continue;
        }
        let pp = &plan.ports[in_port];
        let class = pp.qos.classify(&parsed);
        let lossless = pp.pfc_mask & (1 << class.priority) != 0;
        let out = parsed.dst.0[5] as usize % PORTS;
        if out == in_port {
            b.dropped += 1;
            continue;
        }
        // Odd ports admit one by one, even ports as a run of one (the bulk path).
        let (ip, op, q, len) = (in_port as u16, out as u16, class.queue & 7, take as u32);
        let charge = if in_port % 2 == 1 {
            match mmu.admit(ip, class.pg, op, q, len, lossless) {
                Verdict::Admit { charge, .. } => Some(charge),
                Verdict::Drop { .. } => None,
            }
        } else {
            mmu.admit_prefix(ip, class.pg, op, q, &[mmu.charged(len)], lossless)
                .map(|(seg, n)| {
                    assert_eq!(n, 1);
                    mmu.bulk_charge(ip, class.pg, op, q, len, seg)
                })
                .or_else(|| match mmu.admit(ip, class.pg, op, q, len, lossless) {
                    Verdict::Admit { charge, .. } => Some(charge),
                    Verdict::Drop { .. } => None,
                })
        };
        match charge {
            Some(c) => queues[out * 8 + q as usize].push_back(c),
            None => b.dropped += 1,
        }
    }
    check(&mmu, &queues, &b);
    // Everything leaves: the MMU is empty and every PG can resume.
    for q in &mut queues {
        while let Some(c) = q.pop_front() {
            let _ = mmu.release(c);
            b.sent += 1;
        }
    }
    check(&mmu, &queues, &b);
    assert_eq!(mmu_bytes(&mmu), 0);
    for p in 0..PORTS as u16 {
        for pg in 0..8 {
            let _ = mmu.check_resume(p, pg);
            assert!(!mmu.is_off(p, pg), "port {p} PG {pg} OFF with an empty buffer");
        }
    }
});

/// Conservation after a burst: every frame that entered is dropped, consumed, waiting or
/// sent, and the MMU charges exactly what waits.
fn check(mmu: &Mmu, queues: &[VecDeque<Charge>], b: &Books) {
    let waiting: u64 = queues.iter().map(|q| q.len() as u64).sum();
    assert_eq!(b.entered, b.dropped + b.consumed + waiting + b.sent, "a frame is unaccounted for");
    let charged: u64 = queues.iter().flat_map(|q| q.iter()).map(|c| c.bytes() as u64).sum();
    assert_eq!(mmu_bytes(mmu), charged, "the MMU charges what is not queued");
}
