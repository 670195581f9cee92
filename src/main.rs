//! The `pfcswitch` command: run the switch, validate configurations, size headroom.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use pfcswitch::config::Config;
use pfcswitch::dataplane::{self, RunOptions};
use pfcswitch::plan::Plan;

// The binary's own modules live in src/cli/ (src/ is the library's).
#[path = "cli/live.rs"]
mod live;
use live::{exporter, find_socket, live_config, show};

#[derive(Parser)]
#[command(
    name = "pfcswitch",
    version,
    about = "A DPDK software ToR switch with a lossless Ethernet class (PFC, shared-buffer MMU)"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Start EAL, the ports and the lcores, and forward until SIGINT/SIGTERM or --duration.
    Run(RunArgs),
    /// Validate a configuration: exit 0 if valid, else one line naming the field, exit 2.
    CheckConfig { file: PathBuf },
    /// Convert another switch's configuration into pfcswitch's (docs/sonic.md)
    Import {
        #[command(subcommand)]
        what: ImportCmd,
    },
    /// Is each port's NIC ready for software PFC? Start EAL and each port as `run` would,
    /// ask the PMD (driver, link, queues, RSS, flow control off with MAC-control frames
    /// forwarded, NUMA), check hugepages against the mempool, and print one verdict line per
    /// port: ready / ready with warnings / not ready. Exit 1 if any is not ready. Stop a
    /// switch using the same devices first. docs/nic.md
    NicCheck {
        /// Configuration file (TOML)
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Show live state of a running switch (SONiC-style tables, or --json), read over DPDK
    /// telemetry: pfc counters | queue counters | queue watermark | priority-group watermark shared|headroom |
    /// buffer pool | pfcwd stats | latency | counters | conservation | ip route | ipv6 route |
    /// arp | ndp | mac | lldp neighbors | dcbx
    Show {
        /// EAL file prefix of the instance (default: the only pfcswitch instance running)
        #[arg(long)]
        prefix: Option<String>,
        #[arg(long)]
        json: bool,
        #[arg(required = true, num_args = 1..)]
        what: Vec<String>,
    },
    /// Clear counters as `show` displays them (a snapshot; the live counters keep counting);
    /// `clear fdb all|vlan VlanN` removes learned MACs; `clear watermarks` (or `queue
    /// watermark`) restarts every MMU watermark from the current occupancy
    Clear {
        #[arg(long)]
        prefix: Option<String>,
        #[arg(required = true, num_args = 1..)]
        what: Vec<String>,
    },
    /// Change the running switch's configuration live, over DPDK telemetry: validated like
    /// the file (one line naming the field, exit 2, nothing applied), installed by the
    /// control lcore while traffic runs, logged. `config save FILE` writes the running
    /// configuration. docs/live-config.md
    Config {
        /// EAL file prefix of the instance (default: the only pfcswitch instance running)
        #[arg(long)]
        prefix: Option<String>,
        #[command(subcommand)]
        what: ConfigCmd,
    },
    /// Serve the running switch's counters to Prometheus (text format 0.0.4) at
    /// http://LISTEN/metrics, read over DPDK telemetry at each scrape like `show`.
    Exporter {
        /// EAL file prefix of the instance (default: the only pfcswitch instance running)
        #[arg(long)]
        prefix: Option<String>,
        /// Address and port to listen on
        #[arg(long, default_value = "127.0.0.1:9400")]
        listen: String,
    },
    /// WRED/ECN profiles and their queue bindings in a configuration (like SONiC's
    /// `ecnconfig -l`), with the ECN-vs-PFC check of lossless queues.
    Ecn {
        /// Configuration file (TOML)
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Headroom a lossless PG needs on a link: every term and the total.
    Headroom(HeadroomArgs),
    /// Check `thresholds` on a running switch: per lossless (port, PG), start the switch
    /// with this configuration on net_pcap vdevs (stalled egress), send bursts, and compare
    /// the PAUSE, Xon and first-drop packets with what `thresholds` computes. Exit 1 on a
    /// mismatch, 2 if the probe cannot run.
    Probe {
        #[command(flatten)]
        sel: PgSelection,
        /// Probe another headroom mode than the file's: static | shared_pool | dsh
        #[arg(long)]
        headroom_policy: Option<String>,
    },
    /// Per lossless (port, PG): the packet that sends PAUSE, the Xon point when draining
    /// and the first drop for a burst of equal frames into a stalled egress, from the MMU
    /// the switch would run (every other PG idle).
    Thresholds {
        #[command(flatten)]
        sel: PgSelection,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
}

/// What `pfcswitch import` reads.
#[derive(Subcommand)]
enum ImportCmd {
    /// SONiC CONFIG_DB files (config_db.json, or a redis dump's flat "TABLE|key" form;
    /// several merge, a later file's field winning) → pfcswitch TOML, validated. What is
    /// not supported or approximated: one line each on stderr. Exit 2 on an error (one
    /// line naming TABLE|key|field) or, with --strict, if anything is not supported.
    Sonic {
        #[arg(required = true, num_args = 1..)]
        files: Vec<PathBuf>,
        #[command(flatten)]
        src: SonicSource,
        /// Write the TOML here (default: standard output)
        #[arg(long, short)]
        output: Option<PathBuf>,
        /// Also write FRR's bgpd.conf and zebra.conf into this directory (BGP_NEIGHBOR,
        /// DEVICE_METADATA bgp_asn, LOOPBACK_INTERFACE, VLAN_INTERFACE)
        #[arg(long)]
        frr: Option<PathBuf>,
    },
}

/// How SONiC files are read (`import sonic`, `run --config-db`).
#[derive(Args)]
struct SonicSource {
    /// Port map: SONiC port name → devargs, TOML or CSV (docs/sonic.md); default: port i
    /// is the vdev net_null<i>
    #[arg(long)]
    ports: Option<PathBuf>,
    /// Exit 2 if a table or field is not supported (instead of ignoring it)
    #[arg(long)]
    strict: bool,
}

/// What `pfcswitch config` changes.
#[derive(Subcommand)]
enum ConfigCmd {
    /// A buffer profile (SONiC `config buffer profile set`)
    Buffer {
        #[command(subcommand)]
        what: BufferCmd,
    },
    /// A port (SONiC `config interface`)
    Interface {
        #[command(subcommand)]
        what: InterfaceCmd,
    },
    /// A port's PFC priorities (SONiC `PORT_QOS_MAP|<port>|pfc_enable`): which PGs are
    /// lossless, their headroom, PAUSE generation and obedience, the watchdog and DCBX
    Pfc {
        port: String,
        /// Priorities, e.g. 3,4 (none: PFC off on the port)
        #[arg(long)]
        enable: String,
    },
    /// A WRED/ECN profile the file defines (SONiC `config ecn -profile NAME -gmin … -gmax …`)
    #[command(alias = "ecn")]
    Wred {
        name: String,
        /// Bytes ("20KiB" or a number)
        #[arg(long)]
        green_min_threshold: Option<String>,
        /// Bytes ("200KiB" or a number)
        #[arg(long)]
        green_max_threshold: Option<String>,
        /// Percent 0..=100
        #[arg(long)]
        green_drop_probability: Option<String>,
        /// ecn_none | ecn_green | ecn_green_yellow | ecn_green_red | ecn_all …
        #[arg(long)]
        ecn: Option<String>,
        /// true | false
        #[arg(long)]
        wred_green_enable: Option<String>,
    },
    /// The PFC watchdog, when the file turns it on (SONiC `config pfcwd start`, `config
    /// pfcwd interval`)
    Pfcwd {
        /// drop | forward | alert
        #[arg(long)]
        action: Option<String>,
        /// Milliseconds
        #[arg(long)]
        detection_time: Option<String>,
        /// Milliseconds
        #[arg(long)]
        restoration_time: Option<String>,
        /// Milliseconds
        #[arg(long)]
        poll_interval: Option<String>,
    },
    /// Write the running configuration (with every change made) to FILE as TOML, or with
    /// `--format sonic` as a SONiC config_db.json (what CONFIG_DB cannot hold: one line
    /// each on stderr; docs/sonic.md)
    Save {
        file: PathBuf,
        /// toml | sonic
        #[arg(long, default_value = "toml")]
        format: String,
    },
    /// Make the running switch match FILE where that can be done live (the service's
    /// `systemctl reload`): one change per table that differs, each as `config ...` would
    /// send it; refused in one line, exit 2, nothing applied, if FILE differs in anything
    /// else (that needs a restart)
    Reload { file: PathBuf },
}

#[derive(Subcommand)]
enum BufferCmd {
    /// `config buffer profile NAME --dynamic-th N --xoff B …`: a profile the file defines
    Profile {
        name: String,
        /// α = 2^N, -8..=7 (replaces static_th)
        #[arg(long, allow_negative_numbers = true)]
        dynamic_th: Option<String>,
        /// Bytes (replaces dynamic_th)
        #[arg(long)]
        static_th: Option<String>,
        /// Private (reserved) bytes
        #[arg(long)]
        size: Option<String>,
        /// Headroom bytes (fixes it; without it the calculator sizes it)
        #[arg(long)]
        xoff: Option<String>,
        /// Bytes
        #[arg(long)]
        xon: Option<String>,
        /// Bytes
        #[arg(long)]
        xon_offset: Option<String>,
    },
}

#[derive(Subcommand)]
enum InterfaceCmd {
    /// `config interface cable-length PORT LEN` ("300m", "1.5km", or metres): the port's
    /// lossless headroom recomputed by the same calculator as at start
    CableLength { port: String, length: String },
}

// The flags of `run`.
#[derive(Args)]
struct RunArgs {
    /// Configuration file (TOML), e.g. dpdk-config/null.toml
    #[arg(long, short, required_unless_present = "config_db", conflicts_with = "config_db")]
    config: Option<PathBuf>,
    /// Run from SONiC CONFIG_DB files instead (as `import sonic` converts them)
    #[arg(long, num_args = 1..)]
    config_db: Vec<PathBuf>,
    /// With --config-db: the port map
    #[arg(long, requires = "config_db")]
    ports: Option<PathBuf>,
    /// With --config-db: refuse unsupported tables and fields
    #[arg(long, requires = "config_db")]
    strict: bool,
    /// Stop after this long: seconds ("10", "2.5") or with a unit ("500ms", "1s").
    #[arg(long, allow_hyphen_values = true)]
    duration: Option<String>,
    /// Write the counters as JSON here at stop.
    #[arg(long)]
    stats_json: Option<PathBuf>,
    /// Print a live counters line this often: seconds or with a unit (0 = off).
    #[arg(long, default_value = "0", allow_hyphen_values = true)]
    stats_interval: String,
    /// Sample per-PG occupancy, OFF/ON, T, queue depth and PFC frames into this CSV
    /// (draw it with scripts/plot_timeline.py).
    #[arg(long)]
    timeline: Option<PathBuf>,
    /// Timeline sampling interval in microseconds.
    #[arg(long, default_value_t = 100)]
    timeline_interval_us: u64,
}

// The flags of `headroom`.
#[derive(Args)]
struct HeadroomArgs {
    /// Link speed, e.g. 100G
    #[arg(long)]
    speed: String,
    /// Cable length, e.g. 300m
    #[arg(long)]
    cable: String,
    /// The port's MTU in bytes (IP MTU, as in `[[port]] mtu`; the frame adds 22 B)
    #[arg(long)]
    mtu: u32,
    /// This switch's reaction delay in ns (default: the documented measured figure)
    #[arg(long)]
    sw_response_ns: Option<u64>,
    /// Data that can be in the TX ring ahead of a PFC frame: the port's
    /// tx_inflight_limit, e.g. 48K (default 0: PFC frames on their own TX queue)
    #[arg(long)]
    tx_inflight: Option<String>,
    /// Print JSON
    #[arg(long)]
    json: bool,
}

/// Which lossless (port, PG)s `thresholds` and `probe` look at, and with what frames.
#[derive(Args)]
struct PgSelection {
    /// Configuration file (TOML)
    #[arg(long, short)]
    config: PathBuf,
    /// Only this port
    #[arg(long)]
    port: Option<String>,
    /// Only this PG
    #[arg(long)]
    pg: Option<u8>,
    /// Frame length in bytes, as received (without FCS)
    #[arg(long, default_value_t = 1000)]
    frame_size: u32,
}

/// Why a command failed: one line to print, and the exit code it gives.
enum Fail {
    /// Bad input (a configuration, a flag, an argument), or a probe that cannot run: exit
    /// 2, before anything started.
    Input(String),
    /// The command could not do its work (EAL, a port, a signal handler, a file, the
    /// telemetry socket): exit 1.
    Runtime(String),
}

impl Fail {
    fn exit_code(&self) -> ExitCode {
        match self {
            Fail::Input(_) => ExitCode::from(2),
            Fail::Runtime(_) => ExitCode::FAILURE,
        }
    }

    fn line(&self) -> &str {
        match self {
            Fail::Input(s) | Fail::Runtime(s) => s,
        }
    }
}

/// What a command gives: its exit code when it ran to the end (0, or 1 for a mismatch it
/// found), else why it failed.
type Outcome = Result<ExitCode, Fail>;

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
        .format_timestamp_millis()
        .init();
    install_panic_hook();
    let outcome = match Cli::parse().cmd {
        Cmd::Run(args) => run(args),
        Cmd::CheckConfig { file } => check_config(&file),
        Cmd::Import { what: ImportCmd::Sonic { files, src, output, frr } } => {
            import_sonic(&files, &src, output.as_deref(), frr.as_deref())
        }
        Cmd::NicCheck { config } => nic_check(&config),
        Cmd::Show { prefix, json, what } => show(prefix, json, &what, false),
        Cmd::Clear { prefix, what } => show(prefix, false, &what, true),
        Cmd::Exporter { prefix, listen } => exporter(prefix, &listen),
        Cmd::Config { prefix, what } => live_config(prefix, what),
        Cmd::Ecn { config } => ecn(&config),
        Cmd::Headroom(args) => headroom(args),
        Cmd::Probe { sel, headroom_policy } => probe(sel, headroom_policy),
        Cmd::Thresholds { sel, json } => thresholds(sel, json),
    };
    outcome.unwrap_or_else(|fail| {
        eprintln!("{}", fail.line());
        fail.exit_code()
    })
}

/// Load, validate and plan a configuration.
fn load(path: &Path) -> Result<(Config, Plan), Fail> {
    let cfg = pfcswitch::config::load(path).map_err(|e| Fail::Input(e.to_string()))?;
    let plan = pfcswitch::plan::plan(&cfg, cfg.switch.sw_response_ns).map_err(|e| Fail::Input(e.to_string()))?;
    Ok((cfg, plan))
}

/// Convert and validate SONiC CONFIG_DB files: the notes (one line each, through `note`),
/// then the import; `--strict` refuses unsupported tables and fields.
fn sonic(files: &[PathBuf], src: &SonicSource, note: impl Fn(&str)) -> Result<pfcswitch::sonic::Import, Fail> {
    use pfcswitch::sonic;
    let map = src.ports.as_deref().map(sonic::PortMap::load).transpose().map_err(|e| Fail::Input(e.to_string()))?;
    let db = sonic::Db::load(files).map_err(|e| Fail::Input(e.to_string()))?;
    let origin = files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ");
    let imp = sonic::import(&db, map.as_ref(), &origin).map_err(|e| Fail::Input(e.to_string()))?;
    for n in &imp.notes {
        note(&n.to_string());
    }
    let unsupported = imp.unsupported().count();
    if src.strict && unsupported > 0 {
        return Err(Fail::Input(format!(
            "{origin}: --strict: {unsupported} unsupported table(s) or field(s), listed above"
        )));
    }
    pfcswitch::plan::plan(&imp.config, imp.config.switch.sw_response_ns)
        .map_err(|e| Fail::Input(format!("{origin}: {e}")))?;
    Ok(imp)
}

/// `import sonic`: the notes on stderr, the TOML to `output` or stdout, FRR's files into
/// `frr`.
fn import_sonic(files: &[PathBuf], src: &SonicSource, output: Option<&Path>, frr: Option<&Path>) -> Outcome {
    let imp = sonic(files, src, |l| eprintln!("{l}"))?;
    for w in &imp.config.warnings {
        eprintln!("warning: {w}");
    }
    if let Some(dir) = frr {
        let db = pfcswitch::sonic::Db::load(files).map_err(|e| Fail::Input(e.to_string()))?;
        let f = pfcswitch::sonic::frr::frr(&db).map_err(|e| Fail::Input(e.to_string()))?;
        for n in &f.notes {
            eprintln!("unsupported: {n}");
        }
        if src.strict && !f.notes.is_empty() {
            return Err(Fail::Input(format!(
                "{}: --strict: FRR: {} unsupported key(s), listed above",
                dir.display(),
                f.notes.len()
            )));
        }
        let write = |name: &str, text: &str| {
            let p = dir.join(name);
            std::fs::write(&p, text).map_err(|e| Fail::Runtime(format!("pfcswitch: cannot write {}: {e}", p.display())))
        };
        std::fs::create_dir_all(dir)
            .map_err(|e| Fail::Runtime(format!("pfcswitch: cannot create {}: {e}", dir.display())))?;
        write("bgpd.conf", &f.bgpd)?;
        write("zebra.conf", &f.zebra)?;
        eprintln!("{}: bgpd.conf, zebra.conf", dir.display());
    }
    match output {
        Some(p) => {
            std::fs::write(p, &imp.text)
                .map_err(|e| Fail::Runtime(format!("pfcswitch: cannot write {}: {e}", p.display())))?;
            eprintln!("{}: {} ports, ok", p.display(), imp.config.ports.len());
        }
        None => print!("{}", imp.text),
    }
    Ok(ExitCode::SUCCESS)
}

/// `check-config`: the warnings, then `<file>: ok`.
fn check_config(file: &Path) -> Outcome {
    let (cfg, plan) = load(file)?;
    for w in cfg.warnings.iter().chain(&plan.warnings) {
        println!("warning: {w}");
    }
    println!("{}: ok", file.display());
    Ok(ExitCode::SUCCESS)
}

/// `nic-check`: switch-wide lines, then one verdict line per port; 1 if any is not ready.
fn nic_check(config: &Path) -> Outcome {
    let (cfg, plan) = load(config)?;
    // A switch running on this configuration holds its devices and its EAL prefix: say so
    // instead of EAL's own failure.
    let prefix = cfg.file_prefix();
    if let Ok(sock) = find_socket(Some(prefix.clone())) {
        if pfcswitch::dpdk::telemetry::Client::connect(&sock).is_ok() {
            return Err(Fail::Input(format!(
                "pfcswitch: nic-check: a switch is running with file prefix '{prefix}' ({}): stop it first (systemctl stop pfcswitch)",
                sock.display()
            )));
        }
    }
    let spec = dataplane::SwitchSpec::from_config(&cfg, plan);
    let findings = dataplane::nic_check(&spec).map_err(|e| Fail::Runtime(format!("pfcswitch: nic-check: {e}")))?;
    for (_, line) in &findings {
        println!("{line}");
    }
    let not_ready = findings.iter().any(|(r, _)| *r == pfcswitch::nic::Readiness::NotReady);
    Ok(if not_ready { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// `thresholds`: per lossless (port, PG), the PAUSE, Xon and first-drop packets.
fn thresholds(sel: PgSelection, json: bool) -> Outcome {
    let PgSelection { config, port, pg, frame_size } = sel;
    let (cfg, plan) = load(&config)?;
    let names: Vec<String> = cfg.ports.iter().map(|p| p.name.clone()).collect();
    let rows = pfcswitch::thresholds::compute(&plan, &names, frame_size, port.as_deref(), pg)
        .map_err(|e| Fail::Input(e.to_string()))?;
    if json {
        let v: Vec<_> = rows.iter().map(|r| r.to_json()).collect();
        println!("{}", serde_json::to_string_pretty(&v).expect("json"));
        return Ok(ExitCode::SUCCESS);
    }
    let policy = match plan.mmu.headroom_policy {
        pfcswitch::mmu::HeadroomPolicy::SharedPool { size } => {
            format!("shared_pool, a {size}-byte pool every PG draws on, each up to its xoff")
        }
        pfcswitch::mmu::HeadroomPolicy::Dsh => {
            "dsh: queue PAUSE at T − xoff, port PAUSE at Nq·T, one insurance xoff per port".to_string()
        }
        _ => "static, each PG its own xoff".to_string(),
    };
    print!("{}", pfcswitch::thresholds::render(&rows, &policy));
    Ok(ExitCode::SUCCESS)
}

/// `probe`: what `thresholds` computes, checked on a running switch; 1 on a mismatch.
fn probe(sel: PgSelection, headroom_policy: Option<String>) -> Outcome {
    let PgSelection { config, port, pg, frame_size } = sel;
    let bin = std::env::current_exe().map_err(|e| Fail::Input(format!("probe: cannot find this binary: {e}")))?;
    let opts = pfcswitch::probe::Options { config, policy: headroom_policy, frame: frame_size, port, pg, bin };
    let (policy, rows) = pfcswitch::probe::probe(&opts).map_err(|e| Fail::Input(format!("probe: {e}")))?;
    print!("{}", pfcswitch::probe::render(&policy, frame_size, &rows));
    Ok(if rows.iter().all(|r| r.ok()) { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// `ecn`: the WRED/ECN profiles, their bindings, and the ECN-vs-PFC warnings.
fn ecn(config: &Path) -> Outcome {
    let (cfg, plan) = load(config)?;
    print!("{}", pfcswitch::show::render_ecn(&cfg));
    for w in plan.warnings.iter().filter(|w| w.contains("(Kmin)") || w.contains("(Kmax)")) {
        println!("warning: {w}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `headroom`: every term of a lossless PG's headroom on one link, and the total.
fn headroom(args: HeadroomArgs) -> Outcome {
    let HeadroomArgs { speed, cable, mtu, sw_response_ns, tx_inflight, json } = args;
    fn flag(flag: &'static str) -> impl Fn(pfcswitch::units::UnitError) -> Fail {
        move |e| Fail::Input(format!("{flag}: {e}"))
    }
    let tx_inflight_bytes =
        tx_inflight.as_deref().map(pfcswitch::units::parse_bytes).transpose().map_err(flag("--tx-inflight"))?;
    let inputs = pfcswitch::headroom::HeadroomInputs {
        speed_bps: pfcswitch::units::parse_speed(&speed).map_err(flag("--speed"))?,
        cable_m: pfcswitch::units::parse_length_m(&cable).map_err(flag("--cable"))?,
        frame: pfcswitch::headroom::max_frame(mtu),
        sw_response_ns: sw_response_ns.unwrap_or(pfcswitch::headroom::DEFAULT_SW_RESPONSE_NS),
        tx_inflight_bytes: tx_inflight_bytes.unwrap_or(0),
    };
    let b = pfcswitch::headroom::compute(&inputs);
    if json {
        println!("{}", serde_json::to_string_pretty(&b.to_json()).expect("json"));
    } else {
        print!("{}", b.render_text());
    }
    Ok(ExitCode::SUCCESS)
}

/// `run`: everything the command line can get wrong is found before EAL starts; then the
/// switch runs until a signal or `--duration`, prints its summary, writes `--stats-json`,
/// and exits 1 if a packet or an mbuf is unaccounted for.
fn run(args: RunArgs) -> Outcome {
    let RunArgs {
        config,
        config_db,
        ports,
        strict,
        duration,
        stats_json,
        stats_interval,
        timeline,
        timeline_interval_us,
    } = args;
    let duration = duration.as_deref().map(|d| cli_duration("--duration", d)).transpose()?.filter(|d| !d.is_zero());
    let stats_interval = Some(cli_duration("--stats-interval", &stats_interval)?).filter(|d| !d.is_zero());
    // Sampling more rarely than once a year is no timeline (and TSC ticks overflow).
    if timeline_interval_us.saturating_mul(1000) > pfcswitch::config::CLI_MAX_NS {
        return Err(Fail::Input(format!(
            "--timeline-interval-us: '{timeline_interval_us}' is out of range 0..=31536000000000 (365 days)"
        )));
    }
    for (flag, path) in [("--stats-json", &stats_json), ("--timeline", &timeline)] {
        if let Some(p) = path {
            check_writable(p).map_err(|e| Fail::Input(format!("{flag}: cannot write {}: {e}", p.display())))?;
        }
    }
    // The file converted from CONFIG_DB lives as long as the switch runs.
    struct Generated(Option<PathBuf>);
    impl Drop for Generated {
        fn drop(&mut self) {
            if let Some(p) = &self.0 {
                let _ = std::fs::remove_file(p);
            }
        }
    }
    let mut generated = Generated(None);
    let shown = match &config {
        Some(c) => c.display().to_string(),
        None => config_db.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", "),
    };
    let config = match config {
        Some(c) => c,
        None => {
            // The converted file is what the switch runs (and what live changes edit).
            let imp = sonic(&config_db, &SonicSource { ports, strict }, |l| log::warn!("{l}"))?;
            let path = std::env::temp_dir().join(format!("pfcswitch-sonic-{}.toml", std::process::id()));
            // A new file only the switch's user reads: the configuration is code (devargs),
            // and the temporary directory is everyone's.
            use std::io::Write;
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
                .and_then(|mut f| f.write_all(imp.text.as_bytes()))
                .map_err(|e| Fail::Runtime(format!("pfcswitch: cannot write {}: {e}", path.display())))?;
            log::info!("running the configuration imported from CONFIG_DB, written to {}", path.display());
            generated.0 = Some(path.clone());
            path
        }
    };
    let (cfg, plan) = load(&config)?;
    for w in cfg.warnings.iter().chain(&plan.warnings) {
        log::warn!("{w}");
    }
    // Representors are ports too; past the limit EAL would refuse them one by one.
    if cfg.ports.len() > pfcswitch::dpdk::MAX_PORTS {
        return Err(Fail::Input(format!(
            "{}: port: {} ports (with representors), more than this DPDK build probes (RTE_MAX_ETHPORTS = {})",
            shown,
            cfg.ports.len(),
            pfcswitch::dpdk::MAX_PORTS
        )));
    }
    // EAL reuses a runtime directory that exists: it must be this user's alone.
    let rundir = pfcswitch::dpdk::telemetry::runtime_dir(&cfg.file_prefix());
    pfcswitch::dpdk::telemetry::check_private_dir(&rundir).map_err(|e| Fail::Input(format!("pfcswitch: {e}")))?;
    let spec = dataplane::SwitchSpec::from_config(&cfg, plan);
    let signal_err = |e: std::io::Error| Fail::Runtime(format!("pfcswitch: cannot install signal handler: {e}"));
    let tx_enable_all = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGUSR1, tx_enable_all.clone()).map_err(signal_err)?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).map_err(signal_err)?;
    }
    let opts = RunOptions {
        duration,
        stats_interval,
        stop,
        tx_enable_all,
        timeline: timeline.map(|p| (p, Duration::from_micros(timeline_interval_us.max(1)))),
    };
    let report = dataplane::run(&spec, &opts).map_err(|e| match e {
        // The config does not match the hardware: a config error, found late.
        dataplane::DataplaneError::Speed(_) | dataplane::DataplaneError::Netns(_) => {
            Fail::Input(format!("pfcswitch: {e}"))
        }
        _ => Fail::Runtime(format!("pfcswitch: {e}")),
    })?;
    print_summary(&report);
    if let Some(path) = stats_json {
        let text = serde_json::to_string_pretty(&report.to_json()).expect("json");
        std::fs::write(&path, text + "\n")
            .map_err(|e| Fail::Runtime(format!("pfcswitch: cannot write {}: {e}", path.display())))?;
    }
    let audit = report.audit();
    for line in &audit.lines {
        eprintln!("pfcswitch: {line}");
    }
    Ok(if audit.ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// A panic anywhere ends the process (release builds are `panic = "abort"`; unwinding
/// would leave lcores spinning and mbufs in flight): first one line that names the lcore —
/// EAL's threads have no Rust name — and where, then abort, in every build.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let lcore = pfcswitch::dpdk::current_lcore();
        let who = if lcore == u32::MAX {
            format!("thread '{}'", std::thread::current().name().unwrap_or("?"))
        } else if lcore == pfcswitch::dpdk::main_lcore() {
            format!("control lcore {lcore}")
        } else {
            format!("worker lcore {lcore}")
        };
        let p = info.payload();
        let msg = p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned());
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        eprintln!("pfcswitch: {who} panicked{at}: {}", msg.as_deref().unwrap_or("(no message)"));
        std::process::abort();
    }));
}

/// A command-line duration, or one line naming the flag (exit 2).
fn cli_duration(flag: &str, text: &str) -> Result<Duration, Fail> {
    pfcswitch::config::parse_cli_duration_ns(text)
        .map(Duration::from_nanos)
        .map_err(|e| Fail::Input(format!("{flag}: {e}")))
}

/// Can `path` be written? Opens it for writing without truncating; a file this check
/// created is removed again, so a failed run leaves nothing behind.
fn check_writable(path: &Path) -> std::io::Result<()> {
    let existed = path.exists();
    std::fs::OpenOptions::new().write(true).create(true).truncate(false).open(path)?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

fn print_summary(r: &dataplane::RunReport) {
    let secs = r.elapsed.as_secs_f64().max(1e-9);
    println!("pfcswitch stopped after {:.2}s", secs);
    println!(
        "{:<12} {:>14} {:>14} {:>10} {:>10} {:>12} {:>10} {:>10}",
        "Port", "RX_OK", "TX_OK", "RX_Mpps", "TX_Mpps", "DROPS", "IMISSED", "RX_NOMBUF"
    );
    for p in &r.ports {
        println!(
            "{:<12} {:>14} {:>14} {:>10.3} {:>10.3} {:>12} {:>10} {:>10}",
            p.name,
            p.totals.rx_packets,
            p.totals.tx_packets,
            p.totals.rx_packets as f64 / secs / 1e6,
            p.totals.tx_packets as f64 / secs / 1e6,
            p.totals.drops_total(),
            p.pmd.imissed,
            p.pmd.rx_nombuf
        );
        for reason in pfcswitch::counters::DropReason::ALL {
            let n = p.totals.drop_count(reason);
            if n > 0 {
                println!("{:<12}   drop {:<24} {:>12}", "", reason.as_str(), n);
            }
        }
    }
    let t = r.totals();
    println!(
        "conservation: entered {} = tx {} + consumed {} + dropped {}: {}",
        t.entered(),
        t.ports.iter().map(|p| p.tx_packets).sum::<u64>(),
        t.ports.iter().map(|p| p.mac_control_rx + p.lldp_rx).sum::<u64>(),
        t.ports.iter().map(|p| p.drops_total()).sum::<u64>(),
        if t.entered() == t.left() { "ok" } else { "MISMATCH" }
    );
    println!("mbufs: {} in pools, {} not returned after stop", r.mbufs_total, r.mbufs_in_use_after_stop);
    let mut any_pfc = false;
    for p in &r.ports {
        let tx: u64 = p.pfc.iter().map(|s| s.tx_pkts()).sum();
        let rx: u64 = p.pfc.iter().map(|s| s.rx_pkts()).sum();
        if tx + rx > 0 {
            if !any_pfc {
                println!(
                    "{:<12} {:>6} {:>10} {:>10} {:>10} {:>10}",
                    "Port", "Prio", "TxPause", "TxResume", "RxPause", "RxResume"
                );
                any_pfc = true;
            }
            for (i, s) in p.pfc.iter().enumerate() {
                if s.tx_pkts() + s.rx_pkts() > 0 {
                    println!(
                        "{:<12} {:>6} {:>10} {:>10} {:>10} {:>10}",
                        p.name,
                        format!("PFC{i}"),
                        s.tx_pause,
                        s.tx_resume,
                        s.rx_pause,
                        s.rx_resume
                    );
                }
            }
        }
    }
    print!("{}", r.latency_table());
    if let Some((n, p50, p99, max)) = r.pfc_reaction_ns() {
        println!("PFC reaction (Xoff crossing -> PAUSE handed to tx_burst): n={n} p50={p50}ns p99={p99}ns max={max}ns");
    }
}
