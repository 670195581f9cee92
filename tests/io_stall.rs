//! No blocking I/O on an lcore: with stdout a pipe nobody reads (live counters every
//! millisecond) and the timeline on a device that refuses every write (/dev/full), a PG
//! held OFF keeps its PAUSE refreshed on time — the PFC frames on the wire never leave a
//! gap as long as the pause time (the peer would resume) — and the output the switch could
//! not write is counted in `io_dropped`, never waited for.

mod common;
use common::*;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

fn lossless_frame(i: u32) -> Vec<u8> {
    vlan_frame(mac(0xbb), mac(0xaa), 3, 1, 0x33, i, 1000)
}

#[test]
fn pause_refresh_on_time_while_stdout_and_timeline_stall() {
    let d = TestDir::new("iostall");
    write_pcap(&d.join("in0.pcap"), &(0..150).map(lossless_frame).collect::<Vec<_>>());
    write_pcap(&d.join("in1.pcap"), &[]);
    // Ethernet4 does not transmit: what Ethernet0 receives stays buffered and PG 3 OFF.
    let cfg = pcap_pair(&d, "1G")
        .edit_port("Ethernet0", |p| p.set("trust", "\"pcp\""))
        .edit_port("Ethernet4", |p| p.set("trust", "\"pcp\""))
        .toml("[buffer]\ntotal_size = \"200KiB\"")
        .write(&d.join("t.toml"));
    let json = d.join("stats.json");
    let run_s = 4.0;
    let mut child = Command::new(BIN)
        .args(["run", "--config", cfg.to_str().unwrap(), "--stats-json", json.to_str().unwrap()])
        .args(["--duration", &run_s.to_string(), "--stats-interval", "1ms", "--timeline", "/dev/full"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    // Nobody reads stdout while the switch runs: the pipe fills within a second.
    std::thread::sleep(Duration::from_secs_f64(run_s + 1.0));
    let mut out = String::new();
    let _ = child.stdout.take().unwrap().read_to_string(&mut out);
    let status = child.wait().unwrap();
    let log = err_reader.join().unwrap();
    assert!(status.success(), "{log}");

    let j = read_json(&json);
    let dropped = &j["io_dropped"];
    assert!(dropped["stdout_lines"].as_u64().unwrap() > 0, "stdout never stalled? {dropped}\n{log}");
    assert_conserved(&j);

    // PFC frames the switch sent on Ethernet0, with their transmit times.
    let pfc: Vec<u64> = read_pcap_ts(&d.join("out0.pcap"))
        .into_iter()
        .filter(|(_, f)| f.len() >= 16 && f[12..14] == [0x88, 0x08] && f[14..16] == [0x01, 0x01])
        .map(|(t, _)| t)
        .collect();
    // At 1 Gb/s a pause of 0xffff quanta lasts 65535 × 512 bit times = 33.55 ms.
    let pause_ns = 65_535u64 * 512;
    let worst = pfc.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(u64::MAX);
    eprintln!("{} PFC frames, worst gap {:.1} ms, io_dropped {dropped}", pfc.len(), worst as f64 / 1e6);
    assert!(pfc.len() >= 100, "only {} PFC frames in {run_s} s: refreshes stalled\n{log}", pfc.len());
    assert!(worst < pause_ns, "a {:.1} ms gap: the peer resumed while PG 3 was OFF\n{log}", worst as f64 / 1e6);
}
