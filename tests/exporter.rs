//! `pfcswitch exporter` scraped while a switch runs: net_null ports forward without pause,
//! Ethernet4 is shaped to 10M (far below what a debug build on a loaded machine forwards:
//! at 1G it did not always congest) so Ethernet0's lossless PG 3 (its `default_tc`) keeps
//! pausing. Two scrapes a moment apart: `pfcswitch_up 1`, the port and PFC counters move
//! between them, and every family the exporter promises is on the page.

mod common;
use common::*;

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

/// `GET path` on 127.0.0.1:`port`: (status line, body).
fn get(port: u16, path: &str) -> (String, String) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect to the exporter");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    let mut r = String::new();
    s.read_to_string(&mut r).unwrap();
    let (head, body) = r.split_once("\r\n\r\n").unwrap_or((&r, ""));
    (head.lines().next().unwrap_or("").to_string(), body.to_string())
}

/// The value of the sample line that starts with `series ` (name and labels as written).
fn sample(page: &str, series: &str) -> f64 {
    page.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|r| r.strip_prefix(' ')))
        .unwrap_or_else(|| panic!("no `{series}` in\n{page}"))
        .parse()
        .unwrap()
}

/// Kills the exporter on drop (also when an assertion fails).
struct Killed(std::process::Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn scrape_while_running_counters_move() {
    let d = TestDir::new("prom");
    let cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1")
        .port(Port::new("Ethernet0", "net_null0").set("default_tc", "3"))
        .port(Port::new("Ethernet4", "net_null1").set("shaper_rate", "\"10M\""))
        .one_worker()
        .write(&d.join("prom.toml"));
    let json = d.join("stats.json");
    let mut sw = RunningSwitch::spawn(&cfg, &json, &["--duration", "30"]);
    sw.wait_forwarding(Duration::from_secs(30));

    // A port of our own: the test binaries may run beside another exporter.
    let port = 20000 + (std::process::id() % 20000) as u16;
    let prefix = d.prefix();
    let listen = format!("127.0.0.1:{port}");
    let ex = Command::new(BIN)
        .args(["exporter", "--prefix", &prefix, "--listen", &listen])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _ex = Killed(ex);
    let mut first = None;
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            first = Some(get(port, "/metrics"));
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let (status, a) = first.expect("exporter did not listen");
    assert!(status.contains("200"), "{status}");
    assert_eq!(sample(&a, "pfcswitch_up"), 1.0, "{a}");
    std::thread::sleep(Duration::from_millis(500));
    let t0 = std::time::Instant::now();
    let (_, b) = get(port, "/metrics");
    eprintln!("exporter: a scrape of the forwarding switch took {:?}", t0.elapsed());

    let rx = "pfcswitch_port_rx_packets_total{port=\"Ethernet0\"}";
    let tx = "pfcswitch_port_tx_packets_total{port=\"Ethernet4\"}";
    let pause = "pfcswitch_pfc_tx_pause_frames_total{port=\"Ethernet0\",priority=\"3\"}";
    for s in [rx, tx, pause] {
        assert!(sample(&b, s) > sample(&a, s), "{s} did not move: {} then {}", sample(&a, s), sample(&b, s));
    }
    for s in [
        "pfcswitch_queue_tx_packets_total{port=\"Ethernet4\",queue=\"3\"}",
        "pfcswitch_pg_shared_watermark_bytes{port=\"Ethernet0\",pg=\"3\"}",
        "pfcswitch_buffer_pool_size_bytes{pool=\"ingress_lossless_pool\"}",
        "pfcswitch_latency_packets_total{port=\"Ethernet4\",tc=\"3\"}",
        "pfcswitch_port_drops_total{port=\"Ethernet0\",reason=\"runt\"}",
    ] {
        assert!(sample(&b, s) >= 0.0);
    }
    assert!(sample(&b, "pfcswitch_pg_shared_watermark_bytes{port=\"Ethernet0\",pg=\"3\"}") > 0.0);
    assert!(b.contains("# TYPE pfcswitch_pfc_tx_pause_frames_total counter"), "{b}");
    assert!(get(port, "/nothing").0.contains("404"));

    let out = sw.stop();
    assert!(out.contains("forwarding:"), "{out}");
    assert_conserved(&read_json(&json));
    // The switch gone: the exporter still answers, with up 0.
    let (status, c) = get(port, "/metrics");
    assert!(status.contains("200"), "{status}");
    assert_eq!(sample(&c, "pfcswitch_up"), 0.0, "{c}");
}

/// `GET /metrics` on a fresh connection: (status line, body, time to the whole answer);
/// no answer within 10 s is a status of "timeout".
fn timed_scrape(port: u16) -> (String, String, Duration) {
    let t0 = std::time::Instant::now();
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect to the exporter");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    let mut r = Vec::new();
    if s.read_to_end(&mut r).is_err() {
        return ("timeout".into(), String::new(), t0.elapsed());
    }
    let r = String::from_utf8_lossy(&r).to_string();
    let (head, body) = r.split_once("\r\n\r\n").unwrap_or((&r, ""));
    (head.lines().next().unwrap_or("").to_string(), body.to_string(), t0.elapsed())
}

/// A field of /proc/<pid>/status (its first number).
fn proc_status(pid: u32, field: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

#[test]
fn a_stalling_client_and_idle_connections_do_not_delay_a_scrape() {
    // No switch under this prefix: every scrape is the quick `pfcswitch_up 0` page, so what
    // is timed is the server.
    let port = 20000 + ((std::process::id() + 7919) % 20000) as u16;
    let listen = format!("127.0.0.1:{port}");
    let prefix = format!("pfcsw-exporter-nobody-{}", std::process::id());
    let ex = Command::new(BIN)
        .args(["exporter", "--prefix", &prefix, "--listen", &listen])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = ex.id();
    let _ex = Killed(ex);
    let mut up = false;
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            up = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(up, "exporter did not listen");
    let rss_before = proc_status(pid, "VmRSS:");

    // 400 connections that never send anything.
    let idle: Vec<std::net::TcpStream> =
        (0..400).map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).unwrap()).collect();
    // A client that pipelines requests and never reads an answer: it writes until the
    // socket buffers are full (its write times out) or 100k requests.
    let mut stall = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stall.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut pipelined = 0;
    while pipelined < 100_000 && stall.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n").is_ok() {
        pipelined += 1;
    }
    // One header line of 64 MiB, sent as far as the server takes it.
    let mut big = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    big.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    let _ = big.write_all(b"GET /metrics HTTP/1.1\r\nX-Big: ");
    let chunk = vec![b'a'; 1 << 20];
    let mut big_sent = 0;
    while big_sent < 64 && big.write_all(&chunk).is_ok() {
        big_sent += 1;
    }
    std::thread::sleep(Duration::from_millis(300));

    let mut times = Vec::new();
    for _ in 0..3 {
        let (status, body, t) = timed_scrape(port);
        assert!(status.contains("200"), "scrape beside the stalling client: {status}");
        assert!(body.lines().any(|l| l == "pfcswitch_up 0"), "{body}");
        times.push(t);
    }
    times.sort();
    let threads = proc_status(pid, "Threads:");
    let rss = proc_status(pid, "VmRSS:");
    eprintln!(
        "exporter: scrapes {times:?} beside 400 idle connections, a client that pipelined {pipelined} requests \
         without reading and a {big_sent} MiB header line; {threads} threads, VmRSS {rss_before} → {rss} kB"
    );
    assert!(times[1] < Duration::from_secs(1), "median scrape {:?}", times[1]);
    assert!(threads <= 4, "{threads} threads for 402 connections");
    assert!(rss < rss_before + 64 * 1024, "VmRSS grew from {rss_before} to {rss} kB");
    drop(idle);
    drop(stall);
    drop(big);
}
