//! The `pfcgen` command: a DPDK traffic generator that obeys PFC (docs/pfcgen.md).
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use pfcswitch::pfcgen::run::{self, RunOptions};
use pfcswitch::pfcgen::spec::{self, CliSpec, GenSpec};

const AFTER_HELP: &str = "\
STREAM KEYS (--stream key=value,... or a [[stream]] table):
  port       port name or index (default the first)     rate      max | 50% | 1000pps | 1.5Mpps | 3Mbit/s | 10G
  size       64 | 64-1518 | imix | imix:64x7/594x4/1518x1  (bytes with FCS, as pktgen)
  count      frames to send        duration  10s, 500ms   start     delay before the first frame
  burst_on / burst_off   on/off pattern (e.g. 1ms / 9ms)    id        stream id in the payload (default: index)
  src_mac / dst_mac      aa:bb:cc:dd:ee:ff or a range a-b   src_ip / dst_ip   10.0.0.1 or 10.0.0.1-10.0.0.9
  src_port / dst_port    1234 or 49152-65535 (RoCEv2: dst_port=4791)
  dscp 0-63   ecn not-ect|ect0|ect1|ce   pcp 0-7 / vlan VID (either makes the frame 802.1Q-tagged)
  priority   PFC priority that stops the stream (default: pcp if tagged, else the TC of SONiC's DSCP map)
  roce=true  RoCEv2 (UDP 4791, BTH RC SEND-only, QP 0x10000 + id, ICRC; default size 1086)
  dcqcn=true RoCEv2 whose rate DCQCN sets from the CNPs it gets (line rate = its rate)
Bit rates count wire bits: (size + 20) x 8 per frame.

[dcqcn] (file): g, alpha_period, timer, byte_counter, f, ai_rate, hai_rate, min_rate, initial_alpha,
time_scale (paper defaults at 40G: 1/256, 55us, 55us, 10MiB, 5, line/1000, 10 x ai_rate, line/1000, 1, 1).
[cnp] (file): enable, interval (50us), dscp (48), pcp (6). docs/dcqcn.md.

PORT KEYS ([[port]] tables): name, devargs, speed (PFC quanta and % rates; default the link's,
else 10G), pfc_enable (priorities obeyed, default all; [] = ignore PFC), pause_8023x, mac.

EXAMPLES:
  pfcgen run --port net_null0 --stream rate=3Mbit/s,size=1000 --duration 10 -- --no-huge -m 256 --no-pci --lcores=0@1
  pfcgen run --config gen.toml --count 100000 --stats-json out.json
";

#[derive(Parser)]
#[command(
    name = "pfcgen",
    version,
    about = "A DPDK traffic generator that obeys PFC (802.1Qbb) per priority, and measures loss, \
             reordering, duplicates, latency and ECN marks on what it receives",
    after_help = AFTER_HELP
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Start EAL and the ports, send the streams (obeying PFC), receive, print live lines
    /// and a summary. EAL arguments go after `--` (default: --no-huge -m 512 --no-pci
    /// --lcores=0@0; a unique --file-prefix is added unless given).
    #[command(after_help = AFTER_HELP)]
    Run {
        #[command(flatten)]
        spec: SpecArgs,
        /// Stop after this long: seconds ("10", "2.5") or with a unit ("500ms").
        #[arg(long, allow_hyphen_values = true)]
        duration: Option<String>,
        /// When sending stops (streams done, --duration, SIGINT), keep receiving until
        /// nothing arrived for this long (a second SIGINT ends that at once).
        #[arg(long, default_value = "500ms", allow_hyphen_values = true)]
        drain: String,
        /// Print a live line this often (0 = off).
        #[arg(long, default_value = "1", allow_hyphen_values = true)]
        stats_interval: String,
        /// Write the JSON summary here.
        #[arg(long)]
        stats_json: Option<PathBuf>,
        /// Write each sending stream's rate per --stats-interval here (CSV: t_unix_s,
        /// stream, tx_bps): a DCQCN flow's rate over time.
        #[arg(long)]
        rates_csv: Option<PathBuf>,
        /// Wait up to this long for the ports' links before sending (a memif client
        /// connecting to its server).
        #[arg(long, default_value = "10s", allow_hyphen_values = true)]
        link_wait: String,
        /// Between frames: "poll" (busy, a dedicated core) or "nap" (sleep until the next
        /// frame is due, at most 200 µs: many processes sharing a few CPUs; PFC is still
        /// obeyed at a frame boundary, receive timestamps may be late by up to a nap).
        #[arg(long, default_value = "poll", value_parser = ["poll", "nap"])]
        idle: String,
        /// EAL arguments.
        #[arg(last = true)]
        eal: Vec<String>,
    },
    /// Validate a file (and command-line streams): print the streams, exit 0; else one
    /// line naming the field, exit 2.
    #[command(after_help = AFTER_HELP)]
    CheckConfig {
        #[command(flatten)]
        spec: SpecArgs,
    },
}

#[derive(Args)]
struct SpecArgs {
    /// TOML file with `[eal]`, `[[port]]` and `[[stream]]` tables (docs/pfcgen.md).
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// A port by its devargs (vdev or PCI address), named p0, p1, ... Repeatable.
    #[arg(long = "port")]
    ports: Vec<String>,
    /// A stream: key=value,... (keys below). Repeatable.
    #[arg(long = "stream")]
    streams: Vec<String>,
    /// Every port's speed unless its table gives one, e.g. 100G.
    #[arg(long)]
    speed: Option<String>,
    /// Priorities whose PFC frames every port obeys unless its table says: "3,4" or "none".
    #[arg(long)]
    pfc_enable: Option<String>,
    /// At most this many frames per stream (caps the file's counts: short CI runs of a
    /// long soak).
    #[arg(long)]
    count: Option<u64>,
    /// Receive slots for stream ids this process does not send (a sink for another
    /// generator).
    #[arg(long)]
    rx_streams: Option<usize>,
    /// Every stream is RoCEv2 (UDP 4791, BTH, ICRC; its QP is its flow).
    #[arg(long)]
    roce: bool,
    /// Every stream is RoCEv2 and its rate follows DCQCN (cut on CNPs, timers and byte
    /// counter raise it again); parameters in the file's `[dcqcn]` table (docs/dcqcn.md).
    #[arg(long)]
    dcqcn: bool,
    /// Answer CE-marked RoCEv2 frames with CNPs (a notification point), at most one per
    /// flow per `[cnp]` interval (default 50 µs × the DCQCN time scale).
    #[arg(long)]
    cnp: bool,
    /// Multiply DCQCN's time constants and the CNP interval (links slower than 40G).
    #[arg(long)]
    dcqcn_time_scale: Option<f64>,
}

impl SpecArgs {
    fn resolve(&self) -> Result<GenSpec, ExitCode> {
        let text = match &self.config {
            Some(p) => match std::fs::read_to_string(p) {
                Ok(t) => Some((p.display().to_string(), t)),
                Err(e) => {
                    eprintln!("{}: cannot read: {e}", p.display());
                    return Err(ExitCode::from(2));
                }
            },
            None => None,
        };
        let cli = CliSpec {
            ports: self.ports.clone(),
            streams: self.streams.clone(),
            speed: self.speed.clone(),
            pfc_enable: self.pfc_enable.clone(),
            count: self.count,
            rx_streams: self.rx_streams,
            roce: self.roce,
            dcqcn: self.dcqcn,
            cnp: self.cnp,
            dcqcn_time_scale: self.dcqcn_time_scale,
        };
        spec::resolve(text.as_ref().map(|(o, t)| (o.as_str(), t.as_str())), &cli).map_err(|e| {
            eprintln!("{e}");
            ExitCode::from(2)
        })
    }
}

fn duration(flag: &str, text: &str) -> Result<Duration, ExitCode> {
    pfcswitch::config::parse_cli_duration_ns(text).map(Duration::from_nanos).map_err(|e| {
        eprintln!("{flag}: {e}");
        ExitCode::from(2)
    })
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
        .format_timestamp_millis()
        .init();
    std::panic::set_hook(Box::new(|info| {
        eprintln!("pfcgen: panicked: {info}");
        std::process::abort();
    }));
    match Cli::parse().cmd {
        Cmd::CheckConfig { spec } => match spec.resolve() {
            Ok(s) => {
                for p in &s.ports {
                    println!("port {}: {} speed {:?} pfc_enable {:#04x}", p.name, p.devargs, p.speed_bps, p.pfc_enable);
                }
                for st in &s.streams {
                    println!(
                        "stream {} (id {}): port {}, rate {:?}, size {:?}, priority {}{}",
                        st.name,
                        st.id,
                        s.ports[st.port].name,
                        st.rate,
                        st.size,
                        st.priority,
                        match (st.roce, st.dcqcn) {
                            (_, true) => ", RoCEv2 with DCQCN",
                            (true, false) => ", RoCEv2",
                            _ => "",
                        }
                    );
                }
                println!("ok");
                ExitCode::SUCCESS
            }
            Err(c) => c,
        },
        Cmd::Run { spec, duration: dur, drain, stats_interval, stats_json, rates_csv, link_wait, idle, eal } => {
            let parsed = (|| {
                let d = dur.as_deref().map(|t| duration("--duration", t)).transpose()?;
                Ok::<_, ExitCode>((
                    d.filter(|d| !d.is_zero()),
                    duration("--drain", &drain)?,
                    Some(duration("--stats-interval", &stats_interval)?).filter(|d| !d.is_zero()),
                    duration("--link-wait", &link_wait)?,
                    spec.resolve()?,
                ))
            })();
            let (duration, drain, stats_interval, link_wait, spec) = match parsed {
                Ok(x) => x,
                Err(c) => return c,
            };
            if let Some(p) = &stats_json {
                if let Err(e) = std::fs::OpenOptions::new().write(true).create(true).truncate(false).open(p) {
                    eprintln!("--stats-json: cannot write {}: {e}", p.display());
                    return ExitCode::from(2);
                }
            }
            let stop = Arc::new(AtomicBool::new(false));
            for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
                if let Err(e) = signal_hook::flag::register(sig, stop.clone()) {
                    eprintln!("pfcgen: cannot install signal handler: {e}");
                    return ExitCode::FAILURE;
                }
            }
            let idle = if idle == "nap" { run::Idle::Nap } else { run::Idle::Poll };
            if rates_csv.is_some() && stats_interval.is_none() {
                eprintln!("--rates-csv: needs a --stats-interval above 0 (its sampling period)");
                return ExitCode::from(2);
            }
            let opts = RunOptions { duration, drain, stats_interval, stop, eal_extra: eal, link_wait, idle, rates_csv };
            let summary = match run::run(&spec, &opts) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("pfcgen: {e}");
                    return ExitCode::FAILURE;
                }
            };
            run::print_summary(&summary);
            if let Some(p) = stats_json {
                let text = serde_json::to_string_pretty(&summary).expect("json");
                if let Err(e) = std::fs::write(&p, text + "\n") {
                    eprintln!("pfcgen: cannot write {}: {e}", p.display());
                    return ExitCode::FAILURE;
                }
            }
            if summary["mbufs"]["in_use_after_stop"].as_u64() != Some(0) {
                eprintln!("pfcgen: MBUF LEAK: {}", summary["mbufs"]);
                return ExitCode::FAILURE;
            }
            ExitCode::SUCCESS
        }
    }
}
