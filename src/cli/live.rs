//! The subcommands that talk to a running switch over its DPDK telemetry socket: `show`,
//! `clear`, `config` (and `config reload`), `exporter`. Part of the `pfcswitch` binary
//! (src/main.rs), not of the library.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use super::{BufferCmd, ConfigCmd, Fail, InterfaceCmd, Outcome};

/// Where the packaged service's EAL puts its runtime directories: its systemd
/// `RuntimeDirectory` (docs/package.md), seen from a shell without `RUNTIME_DIRECTORY`.
const SERVICE_RUNTIME: &str = "/run/pfcswitch/dpdk";

/// The running instance's telemetry socket: by prefix, or the only pfcswitch one; looked
/// for where EAL puts it for this process and where the packaged service's EAL does.
pub(super) fn find_socket(prefix: Option<String>) -> Result<PathBuf, String> {
    use pfcswitch::dpdk::telemetry::socket_path;
    let service = Path::new(SERVICE_RUNTIME);
    if let Some(p) = prefix {
        let own = socket_path(&p);
        let packaged = service.join(&p).join("dpdk_telemetry.v2");
        return Ok(if !own.exists() && packaged.exists() { packaged } else { own });
    }
    let base = socket_path("x");
    let dir = base.parent().and_then(|d| d.parent()).map(|d| d.to_path_buf()).unwrap_or_default();
    let mut dirs = vec![dir.clone()];
    if dir != service {
        dirs.push(service.to_path_buf());
    }
    let mut found = Vec::new();
    for d in &dirs {
        for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let sock = e.path().join("dpdk_telemetry.v2");
            if name.starts_with("pfcswitch") && sock.exists() {
                found.push((name, sock));
            }
        }
    }
    match found.len() {
        1 => Ok(found.remove(0).1),
        0 => Err(format!("no running pfcswitch instance found under {} (use --prefix)", dir.display())),
        _ => Err(format!(
            "several instances running ({}): choose one with --prefix",
            found.iter().map(|f| f.0.as_str()).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// `show ip route` / `ipv6 route` / `arp` / `ndp`: the router's tables, page by page.
fn show_rows(prefix: Option<String>, json: bool, view: pfcswitch::show::View) -> Outcome {
    let sock = find_socket(prefix).map_err(|e| Fail::Runtime(format!("pfcswitch: {e}")))?;
    let rows = pfcswitch::dpdk::telemetry::Client::connect(&sock)
        .map_err(|e| e.to_string())
        .and_then(|mut c| pfcswitch::show::fetch_rows(view, &mut |cmd| c.query(cmd)).map_err(|e| e.to_string()))
        .map_err(|e| Fail::Runtime(format!("pfcswitch: {e}")))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&rows).expect("json"));
    } else {
        print!("{}", pfcswitch::show::render(view, &serde_json::json!(rows)));
    }
    Ok(ExitCode::SUCCESS)
}

/// `show routing`: one switch-wide reply (the routing control thread's health).
fn show_status(prefix: Option<String>, json: bool, view: pfcswitch::show::View) -> Outcome {
    let sock = find_socket(prefix).map_err(|e| Fail::Runtime(format!("pfcswitch: {e}")))?;
    let v = pfcswitch::dpdk::telemetry::Client::connect(&sock)
        .and_then(|mut c| c.query(view.command()))
        .map_err(|e| Fail::Runtime(format!("pfcswitch: {e}")))?;
    if let Some(e) = v.get("error").and_then(serde_json::Value::as_str) {
        return Err(Fail::Input(format!("pfcswitch: {e}")));
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&v).expect("json"));
    } else {
        print!("{}", pfcswitch::show::render(view, &v));
    }
    Ok(ExitCode::SUCCESS)
}

/// `clear watermarks`: the running switch's MMU watermarks start again from now.
fn clear_watermarks(prefix: Option<String>, cmd: &str) -> Outcome {
    let sock = find_socket(prefix).map_err(|e| Fail::Runtime(format!("pfcswitch: {e}")))?;
    let reply = pfcswitch::dpdk::telemetry::Client::connect(&sock)
        .and_then(|mut c| c.query(cmd))
        .map_err(|e| Fail::Runtime(format!("pfcswitch: {e}")))?;
    match (reply.get("reset"), reply.get("error")) {
        (Some(_), _) => {
            println!("Watermarks reset (queues, priority groups, pools)");
            Ok(ExitCode::SUCCESS)
        }
        (_, Some(e)) => Err(Fail::Input(format!("pfcswitch: {}", e.as_str().unwrap_or_default()))),
        _ => Err(Fail::Runtime(format!("pfcswitch: unexpected reply {reply}"))),
    }
}

/// `clear fdb ...`: the running switch removes the entries (a telemetry action).
fn clear_fdb(prefix: Option<String>, cmd: &str) -> Outcome {
    let sock = find_socket(prefix).map_err(|e| Fail::Runtime(format!("pfcswitch: {e}")))?;
    let reply = pfcswitch::dpdk::telemetry::Client::connect(&sock)
        .and_then(|mut c| c.query(cmd))
        .map_err(|e| Fail::Runtime(format!("pfcswitch: {e}")))?;
    match (reply.get("removed"), reply.get("error")) {
        (Some(n), _) => {
            println!("Removed {n} FDB entries");
            Ok(ExitCode::SUCCESS)
        }
        (_, Some(e)) => Err(Fail::Input(format!("pfcswitch: {}", e.as_str().unwrap_or_default()))),
        _ => Err(Fail::Runtime(format!("pfcswitch: unexpected reply {reply}"))),
    }
}

/// `show` (and `clear`, which stores what `show` would print as the new zero): read the
/// running instance's telemetry socket and print its tables.
pub(super) fn show(prefix: Option<String>, json: bool, what: &[String], clear: bool) -> Outcome {
    use pfcswitch::show::{self, render, Fetch, Instance, Snapshot, View};
    if let (true, Some(cmd)) = (clear, show::fdb_clear_command(what)) {
        return clear_fdb(prefix, &cmd.map_err(|e| Fail::Input(format!("pfcswitch: {e}")))?);
    }
    if let (true, Some(cmd)) = (clear, show::watermark_clear_command(what)) {
        return clear_watermarks(prefix, cmd);
    }
    let view = View::parse(what).map_err(|e| Fail::Input(format!("pfcswitch: {e}")))?;
    match view.def().fetch {
        Fetch::Ports { .. } => {}
        // `clear` takes counters only: the router's views are not views to it.
        _ if clear => return Err(Fail::Input(format!("pfcswitch: {}", View::unknown(what)))),
        Fetch::Rows { .. } => return show_rows(prefix, json, view),
        Fetch::Status { .. } => return show_status(prefix, json, view),
    }
    if clear && !view.clearable() {
        return Err(Fail::Input(format!(
            "pfcswitch: {} shows gauges and watermarks, nothing to clear",
            what.join(" ")
        )));
    }
    let sock = find_socket(prefix).map_err(|e| Fail::Runtime(format!("pfcswitch: {e}")))?;
    // One port per command: DPDK 22.11 truncates replies above 16 KB.
    let (pid, reading) = pfcswitch::dpdk::telemetry::Client::connect(&sock)
        .map_err(|e| e.to_string())
        .and_then(|mut c| show::fetch(view, &mut |cmd| c.query(cmd)).map(|r| (c.pid, r)).map_err(|e| e.to_string()))
        .map_err(|e| Fail::Runtime(format!("pfcswitch: {e}")))?;
    let instance = Instance { pid, start_time_ns: reading.start_time_ns };
    // The instance's own runtime directory (EAL's, 0700), where its socket is.
    let snap_path = show::snapshot_path(sock.parent().unwrap_or(Path::new(".")), view);
    if clear {
        show::write_snapshot(&snap_path, &Snapshot { instance, data: reading.value })
            .map_err(|e| Fail::Runtime(format!("pfcswitch: cannot write {}: {e}", snap_path.display())))?;
        println!("Cleared {} (snapshot {})", what.join(" "), snap_path.display());
        return Ok(ExitCode::SUCCESS);
    }
    let shown = show::since_clear(view, reading.value, show::read_snapshot(&snap_path).as_ref(), &instance);
    if json {
        println!("{}", serde_json::to_string_pretty(&shown).expect("json"));
    } else {
        print!("{}", render(view, &shown));
    }
    Ok(ExitCode::SUCCESS)
}

/// `config`: one change through `/pfcswitch/config` (or `save`: the running text).
pub(super) fn live_config(prefix: Option<String>, what: ConfigCmd) -> Outcome {
    use pfcswitch::reconfig::{join_pieces, Change, Target, COMMAND};
    let (change, save) = match what {
        ConfigCmd::Buffer { what: BufferCmd::Profile { name, dynamic_th, static_th, size, xoff, xon, xon_offset } } => {
            let sets = [
                ("dynamic_th", dynamic_th),
                ("static_th", static_th),
                ("size", size),
                ("xoff", xoff),
                ("xon", xon),
                ("xon_offset", xon_offset),
            ];
            (Some(change_of(Target::Profile(name), sets)?), None)
        }
        ConfigCmd::Interface { what: InterfaceCmd::CableLength { port, length } } => {
            (Some(Change::new(Target::Port(port), &[("cable_length", &length)])), None)
        }
        ConfigCmd::Wred {
            name,
            green_min_threshold,
            green_max_threshold,
            green_drop_probability,
            ecn,
            wred_green_enable,
        } => {
            let sets = [
                ("green_min_threshold", green_min_threshold),
                ("green_max_threshold", green_max_threshold),
                ("green_drop_probability", green_drop_probability),
                ("ecn", ecn),
                ("wred_green_enable", wred_green_enable),
            ];
            (Some(change_of(Target::Wred(name), sets)?), None)
        }
        ConfigCmd::Pfcwd { action, detection_time, restoration_time, poll_interval } => {
            let sets = [
                ("action", action),
                ("detection_time", detection_time),
                ("restoration_time", restoration_time),
                ("poll_interval", poll_interval),
            ];
            (Some(change_of(Target::Pfcwd, sets)?), None)
        }
        ConfigCmd::Pfc { port, enable } => {
            let list = if enable.trim().is_empty() { "none".to_string() } else { enable.replace(',', ":") };
            (Some(Change::new(Target::Port(port), &[("pfc_enable", &list)])), None)
        }
        ConfigCmd::Save { file, format } => {
            if format != "toml" && format != "sonic" {
                return Err(Fail::Input(format!("--format: '{format}' is not toml or sonic")));
            }
            (None, Some((file, format)))
        }
        ConfigCmd::Reload { file } => return reload(prefix, &file),
    };
    let sock = find_socket(prefix).map_err(|e| Fail::Runtime(format!("pfcswitch: {e}")))?;
    let mut c =
        pfcswitch::dpdk::telemetry::Client::connect(&sock).map_err(|e| Fail::Runtime(format!("pfcswitch: {e}")))?;
    c.set_timeout(CONFIG_TIMEOUT);
    let cmd = match &change {
        Some(ch) => format!("{COMMAND},{}", ch.to_param()),
        None => "/pfcswitch/running_config".to_string(),
    };
    let v = c.query(&cmd).map_err(|e| no_answer(e, change.is_some()))?;
    let strings = |k: &str| -> Option<Vec<String>> {
        v.get(k)?.as_array().map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect())
    };
    if let Some(e) = v.get("error") {
        let whole = strings("error_pieces").and_then(|p| join_pieces(&p).ok());
        let line = whole.unwrap_or_else(|| e.as_str().unwrap_or_default().to_string());
        return Err(Fail::Input(format!("pfcswitch: {line}")));
    }
    if let Some((file, format)) = save {
        let mut text = strings("pieces")
            .ok_or_else(|| Fail::Runtime("pfcswitch: no running configuration in the reply".into()))
            .and_then(|p| {
                join_pieces(&p).map_err(|e| Fail::Runtime(format!("pfcswitch: running configuration: {e}")))
            })?;
        if format == "sonic" {
            let cfg = pfcswitch::config::from_str(&text, "running configuration")
                .map_err(|e| Fail::Runtime(format!("pfcswitch: {e}")))?;
            let (db, notes) = pfcswitch::sonic::export::config_db(&cfg);
            for n in notes {
                eprintln!("not saved: {n}");
            }
            text = serde_json::to_string_pretty(&db).expect("json") + "\n";
        }
        std::fs::write(&file, text)
            .map_err(|e| Fail::Runtime(format!("pfcswitch: cannot write {}: {e}", file.display())))?;
        println!("running configuration written to {}", file.display());
    } else {
        match (v["applied"].as_str(), v["status"].as_str()) {
            (Some(what), Some(status)) => println!("{what}: {status}"),
            _ => return Err(Fail::Runtime(format!("pfcswitch: unexpected reply {v}"))),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// How long `config` waits for the switch's answer: the switch gives its control lcore
/// 10 s to install a change, and its telemetry thread (nice 19 where no CPU is free of
/// lcores) may start late on a busy machine.
const CONFIG_TIMEOUT: Duration = Duration::from_secs(30);

/// A failed exchange; a change without an answer may still have been applied, which the
/// message says (never retried: the operator decides from the running configuration).
fn no_answer(e: pfcswitch::dpdk::telemetry::ClientError, sent_change: bool) -> Fail {
    use pfcswitch::dpdk::telemetry::ClientError;
    match e {
        ClientError::NoAnswer { .. } if sent_change => Fail::Runtime(format!(
            "pfcswitch: {e}; the change may still be applied: `pfcswitch config save FILE` shows the running configuration"
        )),
        e => Fail::Runtime(format!("pfcswitch: {e}")),
    }
}

/// `config reload FILE`: the live changes from the running configuration to FILE, sent one
/// by one; nothing is sent when FILE differs in what cannot change live.
fn reload(prefix: Option<String>, file: &Path) -> Outcome {
    use pfcswitch::reconfig::{join_pieces, COMMAND};
    let origin = file.display().to_string();
    let text =
        std::fs::read_to_string(file).map_err(|e| Fail::Input(format!("pfcswitch: {origin}: cannot read: {e}")))?;
    let sock = find_socket(prefix).map_err(|e| Fail::Runtime(format!("pfcswitch: {e}")))?;
    let mut c =
        pfcswitch::dpdk::telemetry::Client::connect(&sock).map_err(|e| Fail::Runtime(format!("pfcswitch: {e}")))?;
    c.set_timeout(CONFIG_TIMEOUT);
    let strings = |v: &serde_json::Value, k: &str| -> Option<Vec<String>> {
        v.get(k)?.as_array().map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect())
    };
    let v = c.query("/pfcswitch/running_config").map_err(|e| Fail::Runtime(format!("pfcswitch: {e}")))?;
    let running = strings(&v, "pieces")
        .and_then(|p| join_pieces(&p).ok())
        .ok_or_else(|| Fail::Runtime("pfcswitch: no running configuration in the reply".into()))?;
    let changes = pfcswitch::reload::reload_changes(&running, &text, &origin)
        .map_err(|e| Fail::Input(format!("pfcswitch: {e}")))?;
    if changes.is_empty() {
        println!("{origin}: nothing to change");
    }
    for ch in changes {
        let v = c.query(&format!("{COMMAND},{}", ch.to_param())).map_err(|e| no_answer(e, true))?;
        if let Some(e) = v.get("error") {
            let whole = strings(&v, "error_pieces").and_then(|p| join_pieces(&p).ok());
            return Err(Fail::Input(format!("pfcswitch: {}", whole.unwrap_or_else(|| e.to_string()))));
        }
        match (v["applied"].as_str(), v["status"].as_str()) {
            (Some(what), Some(status)) => println!("{what}: {status}"),
            _ => return Err(Fail::Runtime(format!("pfcswitch: unexpected reply {v}"))),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The options given, as one change (no value may hold a comma: the change travels as
/// one comma-separated telemetry parameter).
fn change_of<const N: usize>(
    target: pfcswitch::reconfig::Target,
    sets: [(&str, Option<String>); N],
) -> Result<pfcswitch::reconfig::Change, Fail> {
    let given: Vec<(&str, &str)> = sets.iter().filter_map(|(k, v)| v.as_deref().map(|v| (*k, v))).collect();
    if given.is_empty() {
        return Err(Fail::Input("pfcswitch config: nothing to change (give at least one option)".into()));
    }
    if let Some((k, _)) = given.iter().find(|(_, v)| v.contains(',')) {
        return Err(Fail::Input(format!("pfcswitch config: --{}: a value cannot contain ','", k.replace('_', "-"))));
    }
    Ok(pfcswitch::reconfig::Change::new(target, &given))
}

/// `exporter`: an HTTP server whose `/metrics` page is the switch's telemetry in the
/// Prometheus text format, read afresh at every scrape (a restarted switch is found again;
/// one that cannot be read gives `pfcswitch_up 0`). Serves until killed, bounded in what a
/// client can cost ([`pfcswitch::http`]: one thread, connection cap, head size, timeouts).
pub(super) fn exporter(prefix: Option<String>, listen: &str) -> Outcome {
    use pfcswitch::http::{serve, Limits, Response};
    let addr: std::net::SocketAddr =
        listen.parse().map_err(|e| Fail::Input(format!("--listen: '{listen}' is not an address:port ({e})")))?;
    let listener = std::net::TcpListener::bind(addr)
        .map_err(|e| Fail::Runtime(format!("pfcswitch exporter: cannot listen on {addr}: {e}")))?;
    log::info!("exporter: serving http://{addr}/metrics");
    let mut handler = |path: &str| match path {
        "/metrics" => {
            let page = find_socket(prefix.clone())
                .and_then(|sock| {
                    let mut c = pfcswitch::dpdk::telemetry::Client::connect(&sock).map_err(|e| e.to_string())?;
                    pfcswitch::exporter::gather(&mut |cmd| c.query(cmd)).map_err(|e| e.to_string())
                })
                .unwrap_or_else(|e| {
                    log::warn!("exporter: {e}");
                    pfcswitch::exporter::down()
                });
            Response::new(200, pfcswitch::exporter::CONTENT_TYPE, page)
        }
        "/" => {
            Response::new(200, "text/html", "<html><body><a href=\"/metrics\">pfcswitch metrics</a></body></html>\n")
        }
        _ => Response::new(404, "text/plain", "not found\n"),
    };
    let never = std::sync::atomic::AtomicBool::new(false);
    serve(listener, Limits::default(), &never, &mut handler)
        .map_err(|e| Fail::Runtime(format!("pfcswitch exporter: {e}")))?;
    Ok(ExitCode::SUCCESS)
}
