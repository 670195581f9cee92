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
    let buffer = r#"[switch]
mbuf_count = 90000

[buffer]
total_size = "17MiB"
[buffer.pool.ingress_lossless_pool]
size = "16MiB"
type = "ingress"
[buffer.pool.egress_lossy_pool]
size = "1MiB"
type = "egress"
[buffer.profile.pg_lossless]
pool = "ingress_lossless_pool"
size = 0
xoff = 100000
dynamic_th = 7
[buffer.profile.q_lossy]
pool = "egress_lossy_pool"
size = 0
dynamic_th = 0
[buffer.pg]
"Ethernet0|3-4" = "pg_lossless"
"Ethernet4|3-4" = "pg_lossless"
[buffer.queue]
"Ethernet0|0-2" = "q_lossy"
"Ethernet4|0-2" = "q_lossy"
"Ethernet0|5-7" = "q_lossy"
"Ethernet4|5-7" = "q_lossy""#;
    // Ethernet4 does not transmit (pcap_pair): everything stays queued there.
    let cfg = pcap_pair(&d, "10G")
        .memory_mb(768)
        .edit_port("Ethernet0", |p| p.set("trust", "\"pcp\""))
        .edit_port("Ethernet4", |p| p.set("trust", "\"pcp\""))
        .toml(buffer)
        .write(&d.join("t.toml"));
    let j = run_for(&d, &cfg, "3");
    let (e0, e4) = (port(&j, "Ethernet0"), port(&j, "Ethernet4"));
    assert_eq!(e0["rx_packets"], FRAMES as u64, "{e0}");
    assert_eq!(e0["drops"]["egress_queue_full"], 0, "{}", e0["drops"]);
    assert_eq!(e0["lossless_drops"], 0);
    assert_eq!(e4["drops"]["flushed_at_stop"], FRAMES as u64, "{}", e4["drops"]);
    assert_conserved(&j);
}
