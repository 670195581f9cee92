//! No blocking I/O on an lcore: with stdout a pipe nobody reads (live counters every
//! millisecond) and the timeline on a device that refuses every write (/dev/full), a PG
//! held OFF keeps its PAUSE refreshed on time — the PFC frames on the wire never leave a
//! gap as long as the pause time (the peer would resume) — and the output the switch could
//! not write is counted in `io_dropped`, never waited for. A gap is allowed only where the
//! switch recorded an lcore off its CPU that long (a loaded machine; docs/testing.md).

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
    // No --duration: the switch runs until the I/O thread is seen blocked on the full pipe
    // (at least 4 s), then is stopped. A fixed run measured the scheduler: beside a CPU hog
    // the control lcore queued too few lines in 4 s to fill the pipe and the queue.
    let min_run = Duration::from_secs(4);
    let mut child = Command::new(BIN)
        .args(["run", "--config", cfg.to_str().unwrap(), "--stats-json", json.to_str().unwrap()])
        .args(["--stats-interval", "1ms", "--timeline", "/dev/full"])
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let err_reader = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut s = String::new();
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            // Forwarding started; the I/O thread left behind at stop (its pipe full).
            if line.contains("forwarding:") || line.contains("left behind") {
                let _ = tx.send(line.contains("left behind"));
            }
            s.push_str(&line);
            s.push('\n');
        }
        s
    });
    // Nobody reads stdout while the switch runs: the I/O thread blocks on the full pipe.
    assert_eq!(rx.recv_timeout(Duration::from_secs(120)), Ok(false), "the switch did not start forwarding");
    let started = std::time::Instant::now();
    while started.elapsed() < min_run || !io_thread_blocked(pid) {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the I/O thread never blocked on stdout (a pipe nobody reads)"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let blocked_after = started.elapsed();
    // A few more live lines for the queue, which the switch then drops at stop.
    std::thread::sleep(Duration::from_millis(500));
    assert!(Command::new("kill").args(["-INT", &pid.to_string()]).status().unwrap().success());
    // Stdout is read only once the switch has given up on its I/O thread: reading it
    // earlier would let the thread write what it queued, and nothing would be dropped.
    let left = rx.recv_timeout(Duration::from_secs(120));
    let mut out = String::new();
    let _ = child.stdout.take().unwrap().read_to_string(&mut out);
    let status = child.wait().unwrap();
    let log = err_reader.join().unwrap();
    assert_eq!(left, Ok(true), "the I/O thread was not left behind at stop\n{log}");
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
    // At 1 Gb/s a pause of 0xffff quanta lasts 65535 × 512 bit times = 33.55 ms; it is
    // refreshed at half of that.
    let pause_ns = 65_535u64 * 512;
    let worst = pfc.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(u64::MAX);
    let span_ns = pfc.last().zip(pfc.first()).map_or(0, |(l, f)| l - f);
    // How long the OS kept an lcore away (its longest pass): a refresh can be no earlier.
    let away_ns = lcores_away_ns(&j);
    eprintln!(
        "{} PFC frames over {:.1} s (I/O thread blocked after {:.1} s), worst gap {:.1} ms, lcores away at most {:.1} ms, io_dropped {dropped}",
        pfc.len(),
        span_ns as f64 / 1e9,
        blocked_after.as_secs_f64(),
        worst as f64 / 1e6,
        away_ns as f64 / 1e6
    );
    // PG 3 stays OFF the whole run: refreshes never stop (the stop's RESUME ends them),
    // but for the time an lcore was recorded away (beside a CPU hog with heavy disk
    // writes, net_pcap's tx_pcap write once held the worker 19 s: frames queued, not sent).
    assert!(
        pfc.len() >= 20 && (span_ns + away_ns) as f64 >= min_run.as_secs_f64() * 1e9 * 0.9,
        "only {} PFC frames over {:.1} s: refreshes stalled\n{log}",
        pfc.len(),
        span_ns as f64 / 1e9
    );
    if worst >= pause_ns {
        // The switch's own record must explain the gap: its lcore was off the CPU (a loaded
        // machine; docs/testing.md). A lcore blocked on output would never have come back.
        assert!(
            away_ns + pause_ns / 2 + 2_000_000 >= worst,
            "a {:.1} ms gap the lcores' longest pass ({:.1} ms) does not explain: the peer resumed while PG 3 was OFF\n{log}",
            worst as f64 / 1e6,
            away_ns as f64 / 1e6
        );
        eprintln!(
            "note: a gap longer than the pause time, while an lcore was descheduled for {:.1} ms (a loaded machine)",
            away_ns as f64 / 1e6
        );
    }
}

/// Whether the switch's `pfcsw-io` thread sleeps writing to a pipe (`/proc` wchan).
fn io_thread_blocked(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return false };
    tasks.filter_map(Result::ok).any(|t| {
        let read = |f: &str| std::fs::read_to_string(t.path().join(f)).unwrap_or_default();
        read("comm").trim() == "pfcsw-io" && read("wchan").contains("pipe_write")
    })
}
