//! One FDB for every worker. Four net_pcap ports, two workers: worker 1 polls Ethernet0
//! and Ethernet4, worker 2 polls Ethernet8 and Ethernet12. Host A on Ethernet0 announces
//! itself (a broadcast, learned by worker 1); later host C on Ethernet8 (worker 2) sends
//! to A: every such frame must go to Ethernet0 only — with a table per worker, worker 2
//! never learns A and floods them for ever. The table is 1 Mi entries: aging it (the
//! control lcore's job, in bounded slices) never stalls a worker.

mod common;
use common::*;

const TO_A: usize = 50;

#[test]
fn a_mac_learned_by_one_worker_is_known_to_all() {
    let d = TestDir::new("fdbshared");
    let (a, c) = (mac(0xa), mac(0xc));
    write_pcap(&d.join("in0.pcap"), &[eth_frame(BCAST, a, 1, 64)]);
    // C's frames come after a long run of runts (dropped, never learned): by then worker 1
    // has long learned A.
    let mut in2: Vec<Vec<u8>> = (0..100_000).map(|_| eth_frame(BCAST, c, 0, 40)).collect();
    in2.extend((0..TO_A).map(|i| eth_frame(a, c, 2 + i as u8, 64)));
    write_pcap(&d.join("in2.pcap"), &in2);
    for i in [1, 3] {
        write_pcap(&d.join(&format!("in{i}.pcap")), &[]);
    }
    let dir = d.path.display();
    // One busy worker per CPU (the control lcore naps on CPU 0 beside worker 2): two workers
    // polling on one CPU preempt each other for a scheduler slice, which the stall bound
    // below would read as a stall.
    let mut cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1,2@0").toml("[switch]\nfdb_size = 1048576");
    for i in 0..4 {
        cfg = cfg.port(
            Port::new(
                &format!("Ethernet{}", 4 * i),
                &format!("net_pcap{i},rx_pcap={dir}/in{i}.pcap,tx_pcap={dir}/out{i}.pcap"),
            )
            .speed("10G"),
        );
    }
    let cfg = cfg
        .worker(1, &["Ethernet0:0", "Ethernet4:0"], &["Ethernet0", "Ethernet4"])
        .worker(2, &["Ethernet8:0", "Ethernet12:0"], &["Ethernet8", "Ethernet12"])
        .write(&d.join("t.toml"));
    let j = run_for(&d, &cfg, "3");
    let to_a =
        |i: usize| read_pcap(&d.join(&format!("out{i}.pcap"))).iter().filter(|f| f[0..6] == a && f[6..12] == c).count();
    assert_eq!(to_a(0), TO_A, "C's frames to A reach A");
    assert_eq!((to_a(1), to_a(3)), (0, 0), "known unicast flooded by the worker that did not learn A");
    assert_conserved(&j);
    let hz = j["tsc_hz"].as_f64().unwrap();
    for w in j["workers"].as_array().unwrap() {
        let us = w["max_loop_cycles"].as_f64().unwrap() / hz * 1e6;
        let waited_us = w["runqueue_wait_ns"].as_f64().unwrap() / 1e3;
        // The longest iteration is the worker's own work plus what the scheduler took: the
        // kernel's count of the time this thread waited for its CPU (over the whole run) is
        // an upper bound of the latter, so the worker itself ran at least `us - waited_us`
        // in it. A full sweep of this table on a worker took tens of ms; a 2-core machine
        // under load deschedules an lcore for as long (a 28 ms stall at load 10), which
        // this subtracts instead of reading as a stall. Assumes no hypervisor steal.
        eprintln!(
            "worker lcore {}: longest loop iteration {us:.1} µs, waited for its CPU {waited_us:.0} µs in all",
            w["lcore"]
        );
        assert!(
            us - waited_us < 20_000.0,
            "worker {} stalled {us:.0} µs with {waited_us:.0} µs of it descheduled",
            w["lcore"]
        );
    }
}
