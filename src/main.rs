//! The `pfcswitch` command: run the switch, validate configurations, size headroom.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};

use pfcswitch::dataplane::{self, RunOptions};


#[derive(Parser)]
#[command(name = "pfcswitch", version, about = "A DPDK software ToR switch with a lossless Ethernet class (PFC, shared-buffer MMU)")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Start EAL, the ports and the lcores, and forward until SIGINT/SIGTERM or --duration.
    Run {
        /// Configuration file (TOML), e.g. dpdk-config/null.toml
        #[arg(long, short)]
        config: PathBuf,
        /// Stop after this many seconds.
        #[arg(long)]
        duration: Option<f64>,
        /// Write the counters as JSON here at stop.
        #[arg(long)]
        stats_json: Option<PathBuf>,
        /// Print a live counters line every SECS seconds (0 = off).
        #[arg(long, default_value_t = 0.0)]
        stats_interval: f64,
    },
    /// Validate a configuration: exit 0 if valid, else one line naming the field, exit 2.
    CheckConfig {
        file: PathBuf,
    },
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).format_timestamp_millis().init();
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::CheckConfig { file } => match pfcswitch::config::load(&file) {
            Ok(_) => {
                println!("{}: ok", file.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(2)
            }
        },
        Cmd::Run { config, duration, stats_json, stats_interval } => {
            let cfg = match pfcswitch::config::load(&config) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("{e}");
                    return ExitCode::from(2);
                }
            };
            for w in &cfg.warnings {
                log::warn!("{}: {w}", config.display());
            }
            let spec = dataplane::SwitchSpec::from_config(&cfg);
            let stop = Arc::new(AtomicBool::new(false));
            for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
                if let Err(e) = signal_hook::flag::register(sig, stop.clone()) {
                    eprintln!("pfcswitch: cannot install signal handler: {e}");
                    return ExitCode::FAILURE;
                }
            }
            let opts = RunOptions {
                duration: duration.filter(|d| *d > 0.0).map(Duration::from_secs_f64),
                stats_interval: Some(stats_interval).filter(|s| *s > 0.0).map(Duration::from_secs_f64),
                stop,
            };
            let report = match dataplane::run(&spec, &opts) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("pfcswitch: {e}");
                    return ExitCode::FAILURE;
                }
            };
            print_summary(&report);
            if let Some(path) = stats_json {
                let text = serde_json::to_string_pretty(&report.to_json()).expect("json");
                if let Err(e) = std::fs::write(&path, text + "\n") {
                    eprintln!("pfcswitch: cannot write {}: {e}", path.display());
                    return ExitCode::FAILURE;
                }
            }
            let t = report.totals();
            let mut ok = true;
            if t.entered() != t.left() {
                eprintln!(
                    "pfcswitch: CONSERVATION MISMATCH: entered {} (rx + flood copies) != left {} (tx + consumed + drops)",
                    t.entered(),
                    t.left()
                );
                ok = false;
            }
            if report.mbufs_in_use_after_stop != 0 {
                eprintln!("pfcswitch: MBUF LEAK: {} of {} mbufs not returned to the pool", report.mbufs_in_use_after_stop, report.mbufs_total);
                ok = false;
            }
            if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

fn print_summary(r: &dataplane::RunReport) {
    let secs = r.elapsed.as_secs_f64().max(1e-9);
    println!("pfcswitch stopped after {:.2}s", secs);
    println!("{:<12} {:>14} {:>14} {:>10} {:>10} {:>12} {:>10} {:>10}", "Port", "RX_OK", "TX_OK", "RX_Mpps", "TX_Mpps", "DROPS", "IMISSED", "RX_NOMBUF");
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
        t.ports.iter().map(|p| p.mac_control_rx).sum::<u64>(),
        t.ports.iter().map(|p| p.drops_total()).sum::<u64>(),
        if t.entered() == t.left() { "ok" } else { "MISMATCH" }
    );
    println!("mbufs: {} in pool, {} not returned after stop", r.mbufs_total, r.mbufs_in_use_after_stop);
}
