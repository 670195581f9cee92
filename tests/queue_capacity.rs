//! Queues sized from the buffer: a lossless class the MMU admits without limit (α = 128 in
//! a 16 MiB pool) fills an egress port that does not transmit with 70 000 small frames —
//! more than any fixed queue size the switch used (65 536) — and every admitted packet
//! finds a place: no `egress_queue_full`, no lossless drop; all are still queued at stop
//! (`flushed_at_stop`), and everything balances.

mod common;
use common::*;

const FRAMES: u32 = 70_000;

#[test]
fn admitted_packets_always_have_a_place_to_wait() {
    let d = TestDir::new("qcap");
    let frames: Vec<Vec<u8>> = (0..FRAMES).map(|i| vlan_frame(mac(0xbb), mac(0xaa), 3, 1, 0x33, i, 64)).collect();
    write_pcap(&d.join("in0.pcap"), &frames);
    write_pcap(&d.join("in1.pcap"), &[]);
    // α = 128 in a 16 MiB lossless pool: the MMU admits all 70 000 frames.
    let pg = LosslessProfile { pool: 16 << 20, size: 0, xoff: 100_000, xon: 2000, xon_offset: 3000, dynamic_th: 7 };
    let buffer =
        format!("[switch]\nmbuf_count = 90000\n\n{}", lossless_buffer(&pg, 1 << 20, &["Ethernet0", "Ethernet4"]));
    // Ethernet4 does not transmit (pcap_pair): everything stays queued there.
    let cfg = pcap_pair(&d, "10G")
        .memory_mb(768)
        .edit_port("Ethernet0", |p| p.set("trust", "\"pcp\""))
        .edit_port("Ethernet4", |p| p.set("trust", "\"pcp\""))
        .toml(&buffer)
        .write(&d.join("t.toml"));
    let j = run_for(&d, &cfg, "3");
    let (e0, e4) = (port(&j, "Ethernet0"), port(&j, "Ethernet4"));
    assert_eq!(e0["rx_packets"], FRAMES as u64, "{e0}");
    assert_eq!(e0["drops"]["egress_queue_full"], 0, "{}", e0["drops"]);
    assert_eq!(e0["lossless_drops"], 0);
    assert_eq!(e4["drops"]["flushed_at_stop"], FRAMES as u64, "{}", e4["drops"]);
    assert_conserved(&j);
}
