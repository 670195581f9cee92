//! `pfcswitch probe`: proves on a running switch that `pfcswitch thresholds` is right.
//!
//! For every lossless (port, PG) of a configuration (optionally in another headroom
//! mode), the switch is started on net_pcap vdevs ([`mod@derive`]) with the stalled egress's
//! `tx_enable = false`, and a burst of equal frames of the PG's TC is sent into the port,
//! the way sonic-mgmt's `PFCtest` / `XonHysteresisTest` do it on hardware:
//! * `pause_at − 1` frames: no PAUSE on the wire; `pause_at` frames: a PAUSE naming the
//!   PG's priority (two runs: a PAUSE cannot be traced back to the packet that caused it);
//! * `first_drop` frames in a third run: exactly one lossless drop (the PG only drops
//!   once its headroom is full, and nothing leaves a stalled egress, so the drop is the
//!   last packet); then, through `/pfcswitch/tx_release`, `xon_after − 1` packets may
//!   leave: no RESUME; one more: the RESUME.
//!
//! Observed counts come from the switch's own counters over DPDK telemetry while it runs
//! and from the frames it wrote to the ingress port's pcap. A mismatch is reported with
//! what was seen; the command exits non-zero.

pub mod derive;
pub mod frames;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::dpdk::telemetry;
use crate::thresholds::{self, PgThresholds};
use derive::Derive;
use frames::Marking;

/// What to probe.
#[derive(Debug, Clone)]
pub struct Options {
    pub config: PathBuf,
    /// Another headroom mode than the file's.
    pub policy: Option<String>,
    pub frame: u32,
    pub port: Option<String>,
    pub pg: Option<u8>,
    /// The pfcswitch binary to run (this one).
    pub bin: PathBuf,
}

/// One check: what thresholds says and what the switch did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub expected: Option<u64>,
    /// `Ok(())` when the switch agreed, else what it did instead.
    pub result: Result<(), String>,
}

/// One (port, PG)'s three checks.
#[derive(Debug, Clone)]
pub struct Probed {
    pub row: PgThresholds,
    pub pause: Check,
    pub xon: Check,
    pub drop: Check,
}

impl Probed {
    pub fn ok(&self) -> bool {
        self.pause.result.is_ok() && self.xon.result.is_ok() && self.drop.result.is_ok()
    }
}

/// A probe that could not run (bad config, the switch would not start...).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct ProbeError(pub String);

fn err(s: impl Into<String>) -> ProbeError {
    ProbeError(s.into())
}

/// A scratch directory removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Probe every lossless (port, PG) `opts` selects. Returns the headroom mode probed and
/// one [`Probed`] per (port, PG).
pub fn probe(opts: &Options) -> Result<(String, Vec<Probed>), ProbeError> {
    let text = std::fs::read_to_string(&opts.config).map_err(|e| err(format!("{}: {e}", opts.config.display())))?;
    let orig: toml::Table = text.parse().map_err(|e| err(format!("{}: {e}", opts.config.display())))?;
    // The file must be valid as it is (one line naming the field otherwise).
    let cfg = crate::config::load(&opts.config).map_err(|e| err(e.to_string()))?;
    let plan = crate::plan::plan(&cfg, cfg.switch.sw_response_ns).map_err(|e| err(e.to_string()))?;
    let nonce = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let tag = format!("probe{}-{nonce}", std::process::id());
    let dir = Scratch(std::env::temp_dir().join(format!("pfcswitch-{tag}")));
    std::fs::create_dir_all(&dir.0).map_err(|e| err(format!("{}: {e}", dir.0.display())))?;
    let lcores = if std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2 { "0@0,1@1" } else { "0@0,1@0" };

    // Pin what a real device adds to the calculated headroom (its TX ring limit), so
    // that the pcap run computes the same η as the file does on its devices.
    let mut base = orig.clone();
    if let Some(toml::Value::Array(ports)) = base.get_mut("port") {
        for (p, pp) in ports.iter_mut().zip(&plan.ports) {
            if let (toml::Value::Table(p), Some(b)) = (p, pp.tx_inflight) {
                p.insert("tx_inflight_limit".into(), toml::Value::Integer(b as i64));
            }
        }
    }
    let write = |t: &toml::Table, name: &str| -> Result<PathBuf, ProbeError> {
        let path = dir.0.join(name);
        std::fs::write(&path, toml::to_string(t).map_err(|e| err(e.to_string()))?)
            .map_err(|e| err(format!("{}: {e}", path.display())))?;
        Ok(path)
    };
    let derive_for = |base: &toml::Table, egress: usize, prefix: &str| {
        let d = Derive { dir: &dir.0, file_prefix: prefix, egress, policy: opts.policy.as_deref(), lcores };
        derive::derive(base, &d).map_err(err)
    };

    // The thresholds of the configuration that runs.
    let first = write(&derive_for(&base, 0, &tag)?, "probe.toml")?;
    let dcfg = crate::config::load(&first).map_err(|e| err(e.to_string()))?;
    let dplan = crate::plan::plan(&dcfg, dcfg.switch.sw_response_ns).map_err(|e| err(e.to_string()))?;
    let names: Vec<String> = dcfg.ports.iter().map(|p| p.name.clone()).collect();
    let rows = thresholds::compute(&dplan, &names, opts.frame, opts.port.as_deref(), opts.pg)
        .map_err(|e| err(e.to_string()))?;
    let policy = dcfg.buffer.headroom_policy.name().to_string();
    if opts.policy.is_none() {
        // What the file's own devices would give: the same unless a device term could
        // not be carried over (e.g. a PCI port's own control TX queue).
        let points = |r: &PgThresholds| (r.pause_at, r.xon_after, r.first_drop);
        let orig_names: Vec<String> = cfg.ports.iter().map(|p| p.name.clone()).collect();
        if let Ok(orig_rows) = thresholds::compute(&plan, &orig_names, opts.frame, opts.port.as_deref(), opts.pg) {
            for (o, d) in orig_rows.iter().zip(&rows).filter(|(o, d)| points(o) != points(d)) {
                log::warn!(
                    "{}|{}: on its own devices this port's points are {:?}, on the probe's vdevs {:?} (PAUSE, RESUME, drop)",
                    o.port,
                    o.pg,
                    points(o),
                    points(d)
                );
            }
        }
    }
    // Mbufs for the longest burst, not for a buffer full of 64-byte frames: populating
    // a mempool of hundreds of MB would be most of each run's time.
    let longest = rows.iter().map(|r| r.first_drop.unwrap_or(0)).max().unwrap_or(0);
    if let toml::Value::Table(sw) = base.entry("switch").or_insert_with(|| toml::Value::Table(toml::Table::new())) {
        let n = dcfg.switch.mbuf_floor + 2 * longest + 1024;
        if n < u64::from(dcfg.switch.mbuf_count) {
            sw.insert("mbuf_count".into(), toml::Value::Integer(n as i64));
        }
    }

    let mut out = Vec::new();
    for (k, row) in rows.into_iter().enumerate() {
        let ingress = names.iter().position(|n| *n == row.port).ok_or_else(|| err("port vanished"))?;
        let egress = names.iter().position(|n| *n == row.egress).ok_or_else(|| err("port vanished"))?;
        let marking = frames::marking_for(&dplan.ports[ingress].qos, row.tc)
            .ok_or_else(|| err(format!("{}: no DSCP, PCP or default TC classifies into TC {}", row.port, row.tc)))?;
        let prefix = format!("{tag}-{k}");
        let cfg_path = write(&derive_for(&base, egress, &prefix)?, &format!("probe-{k}.toml"))?;
        let pg = PgProbe {
            bin: &opts.bin,
            cfg: &cfg_path,
            dir: &dir.0,
            prefix: &prefix,
            nports: names.len(),
            ingress,
            egress,
            marking,
            frame: opts.frame as usize,
            row: &row,
        };
        let pause = pg.check_pause()?;
        let (drop, xon) = pg.check_drop_and_xon()?;
        out.push(Probed { row, pause, xon, drop });
    }
    Ok((policy, out))
}

/// The probe of one (port, PG): the switch runs it starts, and what it checks in each.
struct PgProbe<'a> {
    bin: &'a Path,
    cfg: &'a Path,
    dir: &'a Path,
    prefix: &'a str,
    nports: usize,
    ingress: usize,
    egress: usize,
    marking: Marking,
    frame: usize,
    row: &'a PgThresholds,
}

/// A switch started by the probe: stopped (SIGINT, then killed) when dropped.
struct Switch {
    child: Child,
    client: telemetry::Client,
    runtime: PathBuf,
}

impl Drop for Switch {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        // A killed switch cannot remove its EAL runtime directory itself; a probe starts
        // dozens, each with its own prefix.
        let _ = std::fs::remove_dir_all(&self.runtime);
    }
}

impl Switch {
    fn query(&mut self, cmd: &str) -> Result<Value, ProbeError> {
        let v = self.client.query(cmd).map_err(|e| err(format!("{cmd}: {e}")))?;
        match v.get("error") {
            Some(e) => Err(err(format!("{cmd}: {e}"))),
            None => Ok(v),
        }
    }

    /// A counter of `port` from a per-port telemetry command.
    fn counter(&mut self, cmd: &str, port: &str, key: &str) -> Result<u64, ProbeError> {
        let v = self.query(&format!("{cmd},{port}"))?;
        v.get(port).and_then(|o| o.get(key)).and_then(Value::as_u64).ok_or_else(|| err(format!("{cmd}: no {key}")))
    }

    /// Polls until `f` holds (true) or `timeout` passes (false).
    fn wait_for(
        &mut self,
        timeout: Duration,
        mut f: impl FnMut(&mut Switch) -> Result<bool, ProbeError>,
    ) -> Result<bool, ProbeError> {
        let until = Instant::now() + timeout;
        loop {
            if f(self)? {
                return Ok(true);
            }
            if Instant::now() >= until {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// SIGINT, and the exit status.
    fn stop(mut self) -> Result<(), ProbeError> {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-INT", &pid]).status();
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            match self.child.try_wait() {
                Ok(Some(s)) if s.success() => return Ok(()),
                Ok(Some(s)) => return Err(err(format!("the switch exited with {s}"))),
                Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(10)),
                _ => return Err(err("the switch did not stop within 20 s of SIGINT")),
            }
        }
    }
}

impl PgProbe<'_> {
    fn prio(&self) -> usize {
        usize::from(self.row.tc)
    }

    /// Starts the switch with `n` burst frames waiting on the ingress port; returns once
    /// all of them have been received.
    fn start(&self, n: u64) -> Result<Switch, ProbeError> {
        for i in 0..self.nports {
            let frames: Vec<Vec<u8>> = if i == self.ingress {
                (0..n).map(|s| frames::burst_frame(self.marking, self.frame, s as u16)).collect()
            } else if i == self.egress {
                vec![frames::learning_frame()]
            } else {
                Vec::new()
            };
            let path = self.dir.join(format!("in{i}.pcap"));
            std::fs::write(&path, frames::pcap_bytes(&frames)).map_err(|e| err(format!("{}: {e}", path.display())))?;
        }
        let log = std::fs::File::create(self.dir.join("switch.log")).map_err(|e| err(e.to_string()))?;
        let child = Command::new(self.bin)
            .args(["run", "--config"])
            .arg(self.cfg)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| err(format!("{}: {e}", self.bin.display())))?;
        let socket = telemetry::socket_path(self.prefix);
        let until = Instant::now() + Duration::from_secs(60);
        let mut child = Some(child);
        let client = loop {
            if let Ok(c) = telemetry::Client::connect(&socket) {
                break c;
            }
            if let Some(Ok(Some(s))) = child.as_mut().map(Child::try_wait) {
                let log = std::fs::read_to_string(self.dir.join("switch.log")).unwrap_or_default();
                let _ = std::fs::remove_dir_all(telemetry::runtime_dir(self.prefix));
                return Err(err(format!("the switch exited with {s} at start: {}", log.trim())));
            }
            if Instant::now() >= until {
                return Err(err("the switch's telemetry socket did not appear within 60 s"));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let runtime = telemetry::runtime_dir(self.prefix);
        let mut sw = Switch { child: child.take().expect("child"), client, runtime };
        // The socket is EAL's; the switch registers its commands once it has set up.
        let registered = sw.wait_for(Duration::from_secs(60), |s| {
            Ok(s.client.query("/pfcswitch/ports").is_ok_and(|v| v.get("ports").is_some()))
        })?;
        if !registered {
            return Err(err("the switch did not register its telemetry commands within 60 s"));
        }
        let (port, tc) = (self.row.port.clone(), self.row.tc);
        let got = sw.wait_for(Duration::from_secs(30), |s| {
            Ok(s.counter("/pfcswitch/conservation", &port, &format!("TC{tc}_rx"))? >= n)
        })?;
        if !got {
            return Err(err(format!("{port}: the switch did not receive the {n} frames within 30 s")));
        }
        Ok(sw)
    }

    /// The PFC frames naming the PG's priority that the ingress port sent: (PAUSEs,
    /// RESUMEs), read from its pcap after the switch stopped. A switch that stops with
    /// the PG OFF sends one last RESUME (docs/lossless.md, "On a real NIC"); it is not
    /// counted.
    fn wire_pfc(&self, stopped_off: bool) -> (u64, u64) {
        let b = std::fs::read(self.dir.join(format!("out{}.pcap", self.ingress))).unwrap_or_default();
        let bit = 1u8 << self.row.tc;
        let mut v: Vec<bool> = frames::pcap_frames(&b)
            .iter()
            .filter_map(|f| frames::pfc_frame(f))
            .filter(|(ce, _)| ce & bit != 0)
            .map(|(_, t)| t[self.prio()] != 0)
            .collect();
        if stopped_off && v.last() == Some(&false) {
            v.pop();
        }
        (v.iter().filter(|p| **p).count() as u64, v.iter().filter(|p| !**p).count() as u64)
    }

    /// PAUSE: none after `pause_at − 1` frames, one after `pause_at`.
    fn check_pause(&self) -> Result<Check, ProbeError> {
        let Some(at) = self.row.pause_at else {
            return Ok(Check { expected: None, result: Err("thresholds found no PAUSE".into()) });
        };
        let port = self.row.port.clone();
        let key = format!("tx_pause{}", self.prio());
        if at > 1 {
            let mut sw = self.start(at - 1)?;
            // Whatever the switch does with them, it has done within 200 ms.
            std::thread::sleep(Duration::from_millis(200));
            let counted = sw.counter("/pfcswitch/pfc_counters", &port, &key)?;
            sw.stop()?;
            let (wire, _) = self.wire_pfc(false);
            if counted != 0 || wire != 0 {
                return Ok(Check {
                    expected: Some(at),
                    result: Err(format!("PAUSE already after {} packets ({wire} on the wire)", at - 1)),
                });
            }
        }
        let mut sw = self.start(at)?;
        let seen =
            sw.wait_for(Duration::from_secs(10), |s| Ok(s.counter("/pfcswitch/pfc_counters", &port, &key)? > 0))?;
        sw.stop()?;
        let (wire, _) = self.wire_pfc(true);
        let result = match (seen, wire) {
            (true, w) if w > 0 => Ok(()),
            (true, _) => Err(format!("PAUSE counted after {at} packets but not on the wire")),
            (false, _) => Err(format!("no PAUSE after {at} packets")),
        };
        Ok(Check { expected: Some(at), result })
    }

    /// The first drop, then Xon while draining, in one run.
    fn check_drop_and_xon(&self) -> Result<(Check, Check), ProbeError> {
        let Some(first) = self.row.first_drop else {
            let none = || Check { expected: None, result: Err("thresholds found no drop".into()) };
            return Ok((none(), none()));
        };
        let (port, egress, tc) = (self.row.port.clone(), self.row.egress.clone(), self.row.tc);
        let mut sw = self.start(first)?;
        std::thread::sleep(Duration::from_millis(200));
        let dropped = sw.counter("/pfcswitch/conservation", &port, &format!("TC{tc}_dropped"))?;
        let lossless = sw.counter("/pfcswitch/port_counters", &port, "lossless_drops")?;
        let drop = Check {
            expected: Some(first),
            result: if dropped == 1 && lossless == 1 {
                Ok(())
            } else {
                Err(format!("{first} packets: {dropped} dropped ({lossless} lossless), expected exactly the last"))
            },
        };
        let resume_key = format!("tx_resume{}", self.prio());
        let xon = match self.row.xon_after {
            None => Check { expected: None, result: Err("thresholds found no RESUME".into()) },
            Some(x) => {
                let queue = format!("UC{}_packets", self.row.queue);
                let release = |sw: &mut Switch, n: u64, total: u64| -> Result<bool, ProbeError> {
                    if n > 0 {
                        sw.query(&format!("/pfcswitch/tx_release,{egress},{n}"))?;
                    }
                    sw.wait_for(Duration::from_secs(10), |s| {
                        Ok(s.counter("/pfcswitch/queue_counters", &egress, &queue)? >= total)
                    })
                };
                let mut result = Ok(());
                if !release(&mut sw, x - 1, x - 1)? {
                    result = Err(format!("{egress} did not send the {} released packets", x - 1));
                } else {
                    // The RESUME, if the Xon point were already reached, is out by now.
                    std::thread::sleep(Duration::from_millis(100));
                    if sw.counter("/pfcswitch/pfc_counters", &port, &resume_key)? != 0 {
                        result = Err(format!("RESUME after only {} packets drained", x - 1));
                    } else if !release(&mut sw, 1, x)? {
                        result = Err(format!("{egress} did not send the released packet"));
                    } else if !sw.wait_for(Duration::from_secs(10), |s| {
                        Ok(s.counter("/pfcswitch/pfc_counters", &port, &resume_key)? > 0)
                    })? {
                        result = Err(format!("no RESUME after {x} packets drained"));
                    }
                }
                Check { expected: Some(x), result }
            }
        };
        sw.stop()?;
        let (pauses, resumes) = self.wire_pfc(false);
        let xon = match (xon.result.is_ok(), pauses, resumes) {
            (true, p, r) if p == 0 || r == 0 => {
                Check { result: Err(format!("counted, but the wire has {p} PAUSE and {r} RESUME frames")), ..xon }
            }
            _ => xon,
        };
        Ok((drop, xon))
    }
}

/// The table `pfcswitch probe` prints.
pub fn render(policy: &str, frame: u32, rows: &[Probed]) -> String {
    let mut s = format!(
        "{frame}-byte frames into a stalled egress, one (port, PG) at a time, on net_pcap vdevs (headroom: {policy}):\n"
    );
    s.push_str(&format!(
        "{:<12} {:>2} {:>2} {:<12} {:>12} {:>16} {:>12}  {}\n",
        "Port", "PG", "TC", "egress", "PAUSE at", "RESUME after", "first drop", "result"
    ));
    let cell = |c: &Check, unit: &str| match (c.expected, &c.result) {
        (Some(n), Ok(())) => format!("{unit}{n} ok"),
        (Some(n), Err(_)) => format!("{unit}{n} FAIL"),
        (None, _) => "-".to_string(),
    };
    for p in rows {
        let why: Vec<&str> =
            [&p.pause, &p.xon, &p.drop].iter().filter_map(|c| c.result.as_ref().err()).map(|s| s.as_str()).collect();
        s.push_str(&format!(
            "{:<12} {:>2} {:>2} {:<12} {:>12} {:>16} {:>12}  {}\n",
            p.row.port,
            p.row.pg,
            p.row.tc,
            p.row.egress,
            cell(&p.pause, "#"),
            cell(&p.xon, ""),
            cell(&p.drop, "#"),
            if why.is_empty() { "ok".to_string() } else { why.join("; ") }
        ));
    }
    s
}
