//! `pfcgen run`: start EAL and the ports, run the [`Generator`] on the main lcore until
//! the streams are done (and the receive side has drained), `--duration` or a signal,
//! print live lines from an ordinary thread, and build the JSON summary.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::engine::{ns_to_ticks, GenPort, Generator, BURST};
use super::live::{live_line, Live};
use super::spec::GenSpec;
use crate::dpdk::{self, rdtsc, tsc_hz, Eal, MbufBurst, Mempool, Port};
use crate::pfc::{PfcPrioStats, PfcRx, PfcTxCounters};
use crate::wire::MacAddr;

/// Descriptors per RX and TX ring.
const RING: u16 = 1024;
/// Speed assumed for a port whose link does not say (PFC quanta, `%` rates).
const DEFAULT_SPEED: u64 = 10_000_000_000;

/// Why a run could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("EAL: {0}")]
    Eal(dpdk::DpdkError),
    #[error("port {name} ({devargs}): {err}")]
    Port { name: String, devargs: String, err: dpdk::DpdkError },
    #[error("mempool: {0}")]
    Mempool(dpdk::DpdkError),
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
}

/// How long to run and what to print.
pub struct RunOptions {
    /// Stop after this long, whatever the streams do.
    pub duration: Option<Duration>,
    /// When sending stops (streams done, `duration`, a signal), keep receiving until no
    /// pfcgen frame arrived for this long.
    pub drain: Duration,
    /// Print a live line this often.
    pub stats_interval: Option<Duration>,
    /// Set by SIGINT/SIGTERM.
    pub stop: Arc<AtomicBool>,
    /// EAL arguments from the command line (after `--`).
    pub eal_extra: Vec<String>,
    /// Wait this long for the ports' links (a memif client connecting) before sending.
    pub link_wait: Duration,
    /// Busy-poll, or nap when idle.
    pub idle: Idle,
    /// Per `stats_interval`, each sending stream's rate as CSV rows
    /// `t_unix_s,stream,tx_bps` (a DCQCN flow's rate over time, for plots).
    pub rates_csv: Option<std::path::PathBuf>,
}

/// What the lcore does between frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Idle {
    /// Poll without pause (a dedicated core, the lowest latency).
    Poll,
    /// After a poll that received and sent nothing, sleep until the next frame is due (or
    /// a pause ends), at most [`NAP_MAX`]: many generators and switches sharing a few CPUs.
    /// PFC is still obeyed at a frame boundary: every poll receives before it sends, and a
    /// nap never runs past a due frame. Frames arriving during a nap wait in the RX ring,
    /// so receive timestamps (and latency) may be late by up to a nap.
    Nap,
}

/// The longest nap: what a frame received during one may wait before it is timestamped.
pub const NAP_MAX: Duration = Duration::from_micros(200);
/// Shorter waits are polled through (a sleep costs about this much).
const NAP_MIN: Duration = Duration::from_micros(20);
/// Wake this much before a due frame: a sleep overruns by the timer slack (50 µs).
const NAP_EARLY: Duration = Duration::from_micros(50);

/// Run `spec`; the JSON summary.
pub fn run(spec: &GenSpec, opts: &RunOptions) -> Result<Value, RunError> {
    let argv = spec.eal_argv(&opts.eal_extra);
    log::info!("EAL arguments: {}", argv[1..].join(" "));
    let eal = Eal::init(&argv).map_err(RunError::Eal)?;
    let result = run_with_eal(&eal, spec, opts);
    drop(eal);
    result
}

fn run_with_eal(eal: &Eal, spec: &GenSpec, opts: &RunOptions) -> Result<Value, RunError> {
    let hz = tsc_hz();
    log::info!("{} up: {} ports probed, TSC {hz} Hz", Eal::version(), eal.port_count());
    let pool = mempool(spec)?;
    let (mut ports, gp, names) = start_ports(spec, opts, &pool)?;
    let mut gen =
        Generator::with_roce(gp, &spec.streams, spec.rx_streams, pool.clone(), hz, rdtsc(), &spec.dcqcn, &spec.cnp);
    log::info!("generating: {} stream(s) on {} port(s)", spec.streams.len(), spec.ports.len());
    // Live lines from an ordinary thread: the lcore never formats or writes.
    let done = Arc::new(AtomicBool::new(false));
    let rates = match &opts.rates_csv {
        Some(p) => {
            let f = std::fs::File::create(p).map_err(|e| RunError::Io(p.display().to_string(), e))?;
            let ids = spec.streams.iter().map(|s| (usize::from(s.id), s.name.clone())).collect();
            Some((std::io::BufWriter::new(f), ids))
        }
        None => None,
    };
    let printer = opts.stats_interval.map(|every| spawn_printer(gen.live(), names, every, done.clone(), rates));
    let (start, sent_until, now) = generate(&mut gen, spec, opts, hz);
    done.store(true, Ordering::Relaxed);
    if let Some(t) = printer {
        let _ = t.join();
    }
    let elapsed = (sent_until - start) as f64 / hz as f64;
    log::info!(
        "stopped sending after {elapsed:.3} s, received for {:.3} s more",
        (now - sent_until) as f64 / hz as f64
    );
    for p in &mut gen.ports {
        p.pfc.poll(now);
    }
    let pmd: Vec<dpdk::PortStats> = ports.iter().map(|p| p.stats()).collect();
    let mut summary = summary(&gen, &pmd, elapsed, now);
    drop(gen);
    for p in &mut ports {
        let _ = p.stop();
    }
    drop(ports);
    summary["mbufs"] = json!({"total": pool.size(), "in_use_after_stop": pool.in_use_count()});
    Ok(summary)
}

/// The mempool: room for every port's rings twice over and the bursts being built, each
/// mbuf touched once (without hugepages the first use of each page faults, and faults in
/// the first polls would make frames late).
fn mempool(spec: &GenSpec) -> Result<Arc<Mempool>, RunError> {
    let max_size = spec.streams.iter().map(|s| u32::from(s.size.max())).max().unwrap_or(64);
    let data_room = (max_size.max(2048) + 128).min(u32::from(u16::MAX)) as u16;
    let want = spec.ports.len() as u32 * u32::from(RING) * 2 + 4096;
    let n_mbufs = want.next_power_of_two() - 1;
    let pool = Arc::new(Mempool::new("pfcgen_pool", n_mbufs, 256, data_room, -1).map_err(RunError::Mempool)?);
    log::info!("mempool: {n_mbufs} mbufs of {data_room} bytes");
    let mut warm = Vec::new();
    loop {
        let mut b = MbufBurst::new();
        if !pool.alloc_bulk(&mut b, BURST) {
            break;
        }
        warm.push(b);
    }
    drop(warm);
    Ok(pool)
}

/// The started ports, the generator's ports and their names.
type Started = (Vec<Port>, Vec<GenPort>, Vec<String>);

/// Configure and start every port, wait for the links (a memif client connects in the
/// background), and build the generator's ports. Returns the ports, the generator's
/// ports and their names.
fn start_ports(spec: &GenSpec, opts: &RunOptions, pool: &Arc<Mempool>) -> Result<Started, RunError> {
    let mut ports = Vec::new();
    let mut gen_ports = Vec::new();
    for ps in &spec.ports {
        let perr = |err| RunError::Port { name: ps.name.clone(), devargs: ps.devargs.clone(), err };
        let id = Port::id_by_name(ps.dpdk_name()).map_err(perr)?;
        let (mut port, mut rxq, mut txq) = Port::configure(id, 1, 1, RING, RING, pool.clone(), None).map_err(perr)?;
        // A NIC must pass PFC frames up and never answer them itself.
        if let dpdk::FlowCtrlOutcome::Failed(e) = port.flow_ctrl_off() {
            log::warn!("port {}: NIC flow control not turned off ({e}): PFC frames may not reach pfcgen", ps.name);
        }
        port.start().map_err(perr)?;
        let mac = match ps.mac {
            Some(m) => {
                if let Err(e) = port.set_mac(m.0) {
                    log::info!("port {}: MAC {m} not set on the device: {}", ps.name, e.msg);
                }
                m
            }
            None => MacAddr(port.mac()),
        };
        ports.push(port.with_name(&ps.name));
        gen_ports.push((ps, id, mac, rxq.remove(0), txq.remove(0)));
    }
    // Links up before the first frame.
    let until = Instant::now() + opts.link_wait;
    for p in &ports {
        while !p.link().up && Instant::now() < until && !opts.stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let mut names = Vec::new();
    let gp: Vec<GenPort> = gen_ports
        .into_iter()
        .zip(&ports)
        .map(|((ps, id, mac, rxq, txq), port)| {
            let l = port.link();
            let link_bps =
                (l.up && l.speed_mbps != 0 && l.speed_mbps != u32::MAX).then(|| u64::from(l.speed_mbps) * 1_000_000);
            let speed = ps.speed_bps.or(link_bps).unwrap_or(DEFAULT_SPEED);
            log::info!(
                "port {} = DPDK port {id} ({}), mac {mac}, link {}, speed {}, obeys PFC for priorities {:?}{}",
                ps.name,
                port.driver(),
                if l.up { "up" } else { "DOWN" },
                crate::units::format_speed(speed),
                (0..8).filter(|b| ps.pfc_enable & (1 << b) != 0).collect::<Vec<_>>(),
                if ps.pause_8023x { " and 802.3x PAUSE" } else { "" }
            );
            names.push(ps.name.clone());
            let pfc = PfcRx::new(ps.pfc_enable, speed).obey_8023x(ps.pause_8023x);
            GenPort::new(&ps.name, mac, speed, pfc, ps.pfc_enable, rxq, txq)
        })
        .collect();
    Ok((ports, gp, names))
}

/// The live-line printer: an ordinary thread reading the generator's live counters.
/// With `rates`, also each stream's rate per interval as CSV rows.
fn spawn_printer(
    live: Arc<Live>,
    names: Vec<String>,
    every: Duration,
    done: Arc<AtomicBool>,
    mut rates: Option<RatesCsv>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let t0 = Instant::now();
        let (mut last, mut last_t) = (live.snapshot(), t0);
        let bits = |id: usize| live.streams.get(id).map_or(0, |s| s.tx_wire_bits.get());
        let mut last_bits: Vec<u64> = rates.as_ref().map_or(Vec::new(), |r| r.1.iter().map(|s| bits(s.0)).collect());
        if let Some((w, _)) = &mut rates {
            let _ = writeln!(w, "t_unix_s,stream,tx_bps");
        }
        while !done.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(20));
            if last_t.elapsed() < every {
                continue;
            }
            let cur = live.snapshot();
            let now = Instant::now();
            let line = live_line(&names, &last, &cur, now - last_t, now - t0);
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
            if let Some((w, ids)) = &mut rates {
                let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
                let dt = (now - last_t).as_secs_f64().max(1e-9);
                for (k, (id, name)) in ids.iter().enumerate() {
                    let b = bits(*id);
                    let _ = writeln!(w, "{:.3},{name},{:.0}", t.as_secs_f64(), (b - last_bits[k]) as f64 / dt);
                    last_bits[k] = b;
                }
                let _ = w.flush();
            }
            (last, last_t) = (cur, now);
        }
    })
}

/// The rates file and the streams (id, name) it follows.
type RatesCsv = (std::io::BufWriter<std::fs::File>, Vec<(usize, String)>);

/// Send (and receive) until every stream is done, `--duration` or a signal; then only
/// receive until nothing of ours arrived for `--drain` (what is still on its way is
/// counted, not lost; a second signal ends this at once). Returns the TSC of the start,
/// of the end of sending, and of the end.
fn generate(gen: &mut Generator, spec: &GenSpec, opts: &RunOptions, hz: u64) -> (u64, u64, u64) {
    // The schedule starts now, not at set-up (thread spawn, first page faults).
    let start = rdtsc();
    gen.start_at(start);
    let end = opts.duration.map(|d| start.saturating_add(ns_to_ticks(d.as_nanos() as u64, hz)));
    let drain = ns_to_ticks(opts.drain.as_nanos() as u64, hz);
    let check_every = (hz / 1000).max(1);
    let mut next_check = start;
    let has_streams = !spec.streams.is_empty();
    let sent_until = loop {
        let now = rdtsc();
        let busy = gen.poll(now);
        if now >= next_check {
            next_check = now + check_every;
            if opts.stop.load(Ordering::Relaxed) || end.is_some_and(|e| now >= e) || (has_streams && gen.tx_done(now)) {
                break now;
            }
        }
        if opts.idle == Idle::Nap && busy == 0 {
            nap(gen.next_due(now).map(|t| t.min(end.unwrap_or(u64::MAX))), now, hz);
        }
    };
    opts.stop.store(false, Ordering::Relaxed);
    let now = loop {
        let now = rdtsc();
        let busy = gen.receive_all(now);
        if now >= next_check {
            next_check = now + check_every;
            if opts.stop.load(Ordering::Relaxed) || now.saturating_sub(sent_until.max(gen.last_rx)) >= drain {
                break now;
            }
        }
        if opts.idle == Idle::Nap && busy == 0 {
            nap(None, now, hz);
        }
    };
    (start, sent_until, now)
}

/// Sleep until `until` (TSC; None: nothing due), less the timer slack, at most
/// [`NAP_MAX`]; not at all when that is under [`NAP_MIN`]. Only after an idle poll, never
/// per frame.
fn nap(until: Option<u64>, now: u64, hz: u64) {
    let max = ns_to_ticks(NAP_MAX.as_nanos() as u64, hz);
    let early = ns_to_ticks(NAP_EARLY.as_nanos() as u64, hz);
    let wait = until.map_or(max, |t| t.saturating_sub(now).saturating_sub(early)).min(max);
    let ns = u128::from(wait) * 1_000_000_000 / u128::from(hz.max(1));
    if ns >= NAP_MIN.as_nanos() {
        std::thread::sleep(Duration::from_nanos(ns as u64));
    }
}

/// The JSON summary of a finished run.
fn summary(gen: &Generator, pmd: &[dpdk::PortStats], elapsed: f64, now: u64) -> Value {
    let hz = gen.tsc_hz();
    let no_tx = PfcTxCounters::default();
    let ports: Vec<Value> = gen
        .ports
        .iter()
        .zip(pmd)
        .map(|(p, pmd)| {
            let rxc = p.pfc.counters();
            let st = PfcPrioStats::snapshot(&no_tx, &rxc, hz);
            let arr = |f: fn(&PfcPrioStats) -> u64| st.iter().map(f).collect::<Vec<_>>();
            let mut v = serde_json::to_value(p.counters).unwrap_or_default();
            v["name"] = json!(p.name);
            v["mac"] = json!(p.mac.to_string());
            v["speed_bps"] = json!(p.speed_bps);
            v["pfc_enable"] = json!((0..8).filter(|b| p.pfc_enable & (1 << b) != 0).collect::<Vec<u8>>());
            v["pfc"] = json!({
                "rx_pause": arr(|s| s.rx_pause), "rx_resume": arr(|s| s.rx_resume),
                "rx_pause_duration_us": arr(|s| s.rx_pause_duration_us), "rx_on2off": arr(|s| s.rx_on2off),
                "paused_at_stop": (0..8).filter(|b| p.pfc.paused_mask(now) & (1 << b) != 0).collect::<Vec<u8>>(),
                "rx_8023x_pause": rxc.link_pause_frames.get(), "rx_8023x_resume": rxc.link_resume_frames.get(),
                "rx_8023x_ignored": rxc.link_pause_ignored.get(), "rx_ignored": rxc.ignored_frames.get(),
            });
            v["pmd"] = serde_json::to_value(pmd).unwrap_or_default();
            v
        })
        .collect();
    let mut sent_ids = vec![false; gen.rx.len()];
    let mut t = Totals::default();
    let streams: Vec<Value> = gen
        .streams
        .iter()
        .map(|s| {
            let id = usize::from(s.spec.id);
            sent_ids[id] = true;
            let span = s.first_tx.map_or(0, |f| s.last_tx - f) as f64 / hz as f64;
            // N frames span N − 1 intervals: the rate leaves the last frame out.
            let per = if s.seq > 0 { s.wire_bits as f64 / s.seq as f64 } else { 0.0 };
            let (bps, pps) = if span > 0.0 && s.seq > 1 {
                ((s.wire_bits as f64 - per) / span, (s.seq - 1) as f64 / span)
            } else {
                (0.0, 0.0)
            };
            let mut v = json!({
                "name": s.spec.name, "id": s.spec.id, "port": gen.ports[s.spec.port].name, "priority": s.spec.priority,
                "tx_packets": s.seq, "tx_bytes": s.bytes, "tx_wire_bits": s.wire_bits,
                "tx_seconds": span, "tx_wire_bps": bps.round(), "tx_pps": pps.round(),
                "pfc_stops": s.pauses,
            });
            if s.spec.roce {
                v["roce"] = json!(true);
                v["cnp_rx"] = json!(s.cnp_rx);
            }
            if let Some(d) = &s.dcqcn {
                v["dcqcn"] = json!({
                    "line_bps": d.params().line_bps, "rate_bps": d.rate_bps(), "target_bps": d.target_bps(),
                    "alpha": d.alpha(), "cnps": d.cnps, "min_rate_bps": d.min_seen_bps,
                });
            }
            // From the first PFC stop on, the stream goes at the rate PFC lets through.
            if let Some((t, bits, frames)) = s.first_stop {
                v["tx_packets_before_first_stop"] = json!(frames);
                if s.last_tx > t {
                    let span = (s.last_tx - t) as f64 / hz as f64;
                    v["tx_wire_bps_after_first_stop"] = json!(((s.wire_bits - bits) as f64 - per).max(0.0) / span);
                }
            }
            // Loss is only known for a stream this process receives: one that never
            // arrived here may be received by another process.
            let rx = &gen.rx[id];
            let r = rx.to_json(Some(s.seq).filter(|_| rx.frames > 0), hz);
            t.add(s.seq, &r);
            merge(&mut v, r);
            if gen.cnp_sent[id] > 0 {
                v["cnp_sent"] = json!(gen.cnp_sent[id]);
            }
            v
        })
        .collect();
    let received: Vec<Value> = gen
        .rx
        .iter()
        .enumerate()
        .filter(|(i, r)| !sent_ids[*i] && r.frames > 0)
        .map(|(i, r)| {
            let v = r.to_json(None, hz);
            t.add(0, &v);
            let mut o = json!({"id": i, "cnp_sent": gen.cnp_sent[i]});
            merge(&mut o, v);
            o
        })
        .collect();
    json!({
        "elapsed_s": elapsed, "tsc_hz": hz, "ports": ports, "streams": streams, "received": received,
        "totals": {
            "tx_packets": t.tx, "rx_packets": t.rx, "lost": t.lost, "reordered": t.reordered,
            "duplicates": t.duplicates, "ecn_ce": t.ce,
            "cnp_tx": gen.ports.iter().map(|p| p.counters.cnp_tx).sum::<u64>(),
            "cnp_rx": gen.ports.iter().map(|p| p.counters.cnp_rx).sum::<u64>(),
            "pause_frames_rx": gen.ports.iter().map(|p| {
                let c = p.pfc.counters();
                c.prio.iter().map(|x| x.pause_frames.get()).sum::<u64>() + c.link_pause_frames.get()
            }).sum::<u64>(),
        },
    })
}

#[derive(Default)]
struct Totals {
    tx: u64,
    rx: u64,
    lost: u64,
    reordered: u64,
    duplicates: u64,
    ce: u64,
}

impl Totals {
    fn add(&mut self, tx: u64, r: &Value) {
        let g = |k: &str| r[k].as_u64().unwrap_or(0);
        self.tx += tx;
        self.rx += g("rx_packets");
        self.lost += g("lost");
        self.reordered += g("reordered");
        self.duplicates += g("duplicates");
        self.ce += g("ecn_ce");
    }
}

fn merge(into: &mut Value, from: Value) {
    if let (Value::Object(a), Value::Object(b)) = (into, from) {
        a.extend(b);
    }
}

/// The human summary printed at stop.
pub fn print_summary(s: &Value) {
    println!("pfcgen: {:.2} s", s["elapsed_s"].as_f64().unwrap_or(0.0));
    println!(
        "  {:<12} {:>12} {:>12} {:>12} {:>12} {:>10} {:>8} {:>6} {:>8} {:>10} {:>10} {:>7}",
        "stream", "tx", "tx bit/s", "rx", "lost", "reordered", "dup", "ce", "pfc stop", "lat p50", "lat p99", "prio"
    );
    let n = |v: &Value| v.as_u64().map_or("-".to_string(), |x| x.to_string());
    let us = |v: &Value| v.as_u64().map_or("-".to_string(), |n| format!("{:.1}us", n as f64 / 1000.0));
    for st in s["streams"].as_array().into_iter().flatten().chain(s["received"].as_array().into_iter().flatten()) {
        let name = st["name"].as_str().map_or_else(|| format!("rx id {}", st["id"]), str::to_string);
        println!(
            "  {:<12} {:>12} {:>12} {:>12} {:>12} {:>10} {:>8} {:>6} {:>8} {:>10} {:>10} {:>7}",
            name,
            st["tx_packets"].as_u64().map_or("-".into(), |n| n.to_string()),
            st["tx_wire_bps"].as_f64().map_or("-".into(), |b| format!("{:.4}M", b / 1e6)),
            n(&st["rx_packets"]),
            n(&st["lost"]),
            n(&st["reordered"]),
            n(&st["duplicates"]),
            n(&st["ecn_ce"]),
            st["pfc_stops"].as_u64().map_or("-".into(), |n| n.to_string()),
            us(&st["latency"]["p50_ns"]),
            us(&st["latency"]["p99_ns"]),
            st["priority"].as_u64().map_or("-".into(), |n| n.to_string()),
        );
    }
    for p in s["ports"].as_array().into_iter().flatten() {
        let pause = p["pfc"]["rx_pause"].as_array().cloned().unwrap_or_default();
        let resume = p["pfc"]["rx_resume"].as_array().cloned().unwrap_or_default();
        let dur = p["pfc"]["rx_pause_duration_us"].as_array().cloned().unwrap_or_default();
        let prios: Vec<String> = (0..8)
            .filter(|&i| {
                pause.get(i).and_then(Value::as_u64).unwrap_or(0) + resume.get(i).and_then(Value::as_u64).unwrap_or(0)
                    > 0
            })
            .map(|i| format!("prio {i}: {} PAUSE {} RESUME, paused {} us", pause[i], resume[i], dur[i]))
            .collect();
        let cnp = match (p["cnp_tx"].as_u64().unwrap_or(0), p["cnp_rx"].as_u64().unwrap_or(0)) {
            (0, 0) => String::new(),
            (tx, rx) => format!(", CNP sent {tx} ({} CE within the interval) received {rx}", p["cnp_suppressed"]),
        };
        println!(
            "  port {}: tx {} rx {} (pfcgen frames and other), PFC {}{cnp}{}",
            p["name"].as_str().unwrap_or("?"),
            p["tx_packets"],
            p["rx_packets"],
            if prios.is_empty() { "none received".to_string() } else { prios.join("; ") },
            match p["tx_refused"].as_u64() {
                Some(n) if n > 0 => format!(", {n} frames refused by a full TX ring (not sent, not counted)"),
                _ => String::new(),
            }
        );
    }
}
