//! The FFI layer on a real EAL (in this process, one net_ring port looped back onto
//! itself): a burst with holes left by `take` reaches the PMD compacted (no NULL mbuf is
//! ever handed to a driver from safe code), and a `drain` dropped half-way frees what it
//! did not yield; bulk allocation, `pop` and `set_len`. One EAL per process: everything
//! is in one test.

use std::sync::Arc;

use pfcswitch::dpdk::{Eal, Mbuf, MbufBurst, Mempool, Port};

fn frame(pool: &Mempool, tag: u8) -> Mbuf {
    let mut m = pool.alloc().expect("mbuf");
    let d = m.append(64).expect("room");
    d.fill(tag);
    m
}

#[test]
fn bursts_with_holes_and_partial_drains() {
    let dir = std::env::temp_dir().join(format!("pfcsw-burst-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::env::set_var("RUNTIME_DIRECTORY", &dir);
    let args: Vec<String> = ["burst-test", "--no-huge", "-m", "256", "--no-pci", "--lcores=0@0", "--vdev=net_ring0"]
        .iter()
        .map(|s| s.to_string())
        .chain([format!("--file-prefix=burst{}", std::process::id()), "--log-level=5".to_string()])
        .collect();
    let eal = Eal::init(&args).expect("EAL");
    let pool = Arc::new(Mempool::new("burst_pool", 511, 0, 2048 + 128, -1).expect("mempool"));
    let id = Port::id_by_name("net_ring0").expect("net_ring0");
    let (mut port, mut rxq, mut txq) = Port::configure(id, 1, 1, 256, 256, pool.clone(), None).expect("configure");
    port.start().expect("start");
    let (mut rxq, mut txq) = (rxq.remove(0), txq.remove(0));

    // Five frames, the 2nd and 4th taken out: three go, in order, and nothing else.
    let mut burst = MbufBurst::new();
    for tag in 1..=5u8 {
        assert!(burst.push(frame(&pool, tag)).is_ok());
    }
    drop(burst.take(1));
    drop(burst.take(3));
    assert!(burst.has_holes());
    let sent = txq.tx_burst(&mut burst);
    assert_eq!(sent, 3, "the PMD must see the three mbufs, no holes");
    assert!(burst.is_empty());
    let mut got = MbufBurst::new();
    let n = rxq.rx_burst(&mut got, 32);
    assert_eq!(n, 3, "looped back");
    let tags: Vec<u8> = got.iter().map(|m| m.data()[0]).collect();
    assert_eq!(tags, vec![1, 3, 5]);
    got.clear();
    assert_eq!(pool.in_use_count(), 0, "every mbuf back in the pool");

    // A drain dropped after one item frees the other three.
    for tag in 1..=4u8 {
        assert!(burst.push(frame(&pool, tag)).is_ok());
    }
    let first = burst.drain().next().expect("one");
    assert_eq!(first.data()[0], 1);
    assert!(burst.is_empty());
    assert_eq!(pool.in_use_count(), 1, "only the yielded mbuf is still out");
    drop(first);
    assert_eq!(pool.in_use_count(), 0);

    // Bulk allocation, pop and set_len (pfcgen's TX path): all or nothing, within the
    // tailroom, only on an empty mbuf.
    let mut stash = MbufBurst::new();
    assert!(pool.alloc_bulk(&mut stash, 8));
    assert_eq!(stash.len(), 8);
    assert_eq!(pool.in_use_count(), 8);
    let mut m = stash.pop().expect("popped");
    assert_eq!(stash.len(), 7);
    assert!(m.set_len(100) && m.len() == 100 && m.pkt_len() == 100);
    assert!(!m.set_len(50), "not empty any more");
    let mut big = stash.pop().expect("popped");
    assert!(!big.set_len(u16::MAX) && big.is_empty(), "beyond the tailroom: unchanged");
    let room = stash.room();
    assert!(!pool.alloc_bulk(&mut stash, room + 1), "more than the burst holds");
    let small = Mempool::new("burst_small", 63, 0, 2048 + 128, -1).expect("small mempool");
    assert!(!small.alloc_bulk(&mut stash, 100) && stash.len() == 6, "more than the pool has: none");
    assert_eq!(small.in_use_count(), 0);
    drop(small); // before EAL goes
    drop((m, big));
    stash.clear();
    assert!(stash.pop().is_none());
    assert_eq!(pool.in_use_count(), 0, "every mbuf back in the pool");

    port.stop().expect("stop");
    drop((rxq, txq, port, pool));
    drop(eal);
    let _ = std::fs::remove_dir_all(&dir);
}
