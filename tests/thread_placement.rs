//! Nothing beside the lcores on their CPUs (docs/failure-behaviour.md): in a running routed
//! switch, read every thread's CPUs and scheduling policy from /proc/<pid>/task. The
//! threads that are not lcores (routing, I/O, DPDK's telemetry, interrupt and
//! multi-process threads) must be on CPUs no lcore uses, or — where no CPU is free of
//! lcores — at nice 19. Two runs: both lcores on their own CPU (none free on a 2-CPU
//! machine), and both lcores on CPU 0 (CPU 1 free). Needs root (a network namespace for the
//! router's representor) and two CPUs; skipped otherwise.

mod common;
use common::*;

use std::time::Duration;

const SCHED_OTHER: u32 = 0;

struct Thread {
    tid: u32,
    name: String,
    policy: u32,
    nice: i64,
    cpus: Vec<usize>,
}

fn cpu_list(s: &str) -> Vec<usize> {
    let mut v = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => v.extend(a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap()),
            None => v.push(part.parse().unwrap()),
        }
    }
    v
}

/// Every thread of `pid`: name, policy (field 41 of stat), nice (field 19) and allowed CPUs.
fn threads(pid: u32) -> Vec<Thread> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let e = e.unwrap();
        let tid: u32 = e.file_name().to_str().unwrap().parse().unwrap();
        let (Ok(stat), Ok(status)) =
            (std::fs::read_to_string(e.path().join("stat")), std::fs::read_to_string(e.path().join("status")))
        else {
            continue;
        };
        let (open, close) = (stat.find('(').unwrap(), stat.rfind(')').unwrap());
        let name = stat[open + 1..close].to_string();
        // After the name: field 3 (state) onwards; policy is field 41.
        let policy: u32 = stat[close + 1..].split_whitespace().nth(41 - 3).unwrap().parse().unwrap();
        let nice: i64 = stat[close + 1..].split_whitespace().nth(19 - 3).unwrap().parse().unwrap();
        let cpus = cpu_list(status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap());
        v.push(Thread { tid, name, policy, nice, cpus });
    }
    v
}

/// Run a routed switch with EAL's `--lcores` = `lcores`, check its threads, stop it.
/// Returns (lcore CPUs, the other threads' names).
fn check(tag: &str, lcores: &str) -> (Vec<usize>, Vec<String>) {
    let d = TestDir::new(&format!("threads-{tag}"));
    let ns = Netns::add(&format!("pfcswth{tag}{}", std::process::id() % 100_000));
    // The routing tables need ~170 MiB beyond the default 512 MB.
    let cfg = SwitchConfig::new(&d.prefix(), lcores)
        .memory_mb(1024)
        .port(Port::new("Ethernet0", "net_null0"))
        .port(Port::new("Ethernet4", "net_null1"))
        .toml(&format!("[control_plane]\nnetns = \"{}\"\n[interface]\nEthernet0 = [\"10.9.0.0/31\"]", ns.0))
        .one_worker()
        .write(&d.join("t.toml"));
    let json = d.join("stats.json");
    let mut sw = RunningSwitch::spawn(&cfg, &json, &["--duration", "60"]);
    sw.wait_forwarding(Duration::from_secs(60));
    let pid = sw.pid();
    let all = threads(pid);
    // DPDK 22.11.0 names worker lcores `lcore-worker-<n>`, later 22.11 releases `rte-worker-<n>`.
    let lcore = |t: &Thread| t.tid == pid || t.name.starts_with("lcore-worker-") || t.name.starts_with("rte-worker-");
    let mut lcore_cpus: Vec<usize> = all.iter().filter(|t| lcore(t)).flat_map(|t| t.cpus.clone()).collect();
    lcore_cpus.sort_unstable();
    lcore_cpus.dedup();
    // The switch's CPUs before EAL pinned its main thread: the test's own (inherited).
    let allowed = cpu_list(
        std::fs::read_to_string("/proc/thread-self/status")
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap(),
    );
    let free = allowed.iter().any(|c| !lcore_cpus.contains(c));
    let others: Vec<&Thread> = all.iter().filter(|t| !lcore(t)).collect();
    let table: String = all
        .iter()
        .map(|t| format!("  {} {:16} policy {} nice {} cpus {:?}\n", t.tid, t.name, t.policy, t.nice, t.cpus))
        .collect();
    eprintln!("thread_placement {tag}: lcores {lcores}, lcore CPUs {lcore_cpus:?}\n{table}");
    for name in ["pfcsw-route", "pfcsw-io"] {
        assert!(others.iter().any(|t| t.name == name), "no {name} thread:\n{table}");
    }
    for t in &others {
        let on_lcore_cpu = t.cpus.iter().any(|c| lcore_cpus.contains(c));
        if free {
            assert!(!on_lcore_cpu && t.policy == SCHED_OTHER, "{} on an lcore's CPU:\n{table}", t.name);
        } else {
            assert!(t.policy == SCHED_OTHER && t.nice == 19, "{} beside the lcores, not at nice 19:\n{table}", t.name);
        }
    }
    // The routing thread's health, as `show routing` prints it (and in JSON).
    let prefix = d.prefix();
    let shown = std::process::Command::new(BIN).args(["show", "--prefix", &prefix, "routing"]).output().unwrap();
    let text = String::from_utf8_lossy(&shown.stdout).to_string();
    assert!(shown.status.success(), "show routing: {}", show(&shown));
    for line in ["Thread alive", "Synced with the kernel", "FIB out of sync", "Routes refused (FIB full)"] {
        assert!(text.lines().any(|l| l.starts_with(line)), "no `{line}` in\n{text}");
    }
    let j = std::process::Command::new(BIN).args(["show", "--prefix", &prefix, "--json", "routing"]).output().unwrap();
    let j: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&j)));
    // Booleans come as 0/1 over DPDK's telemetry.
    let (one, zero) = (serde_json::Value::from(1), serde_json::Value::from(0));
    assert_eq!((&j["alive"], &j["synced"], &j["fib_out_of_sync"]), (&one, &one, &zero), "{j}");
    assert!(text.lines().any(|l| l.starts_with("Synced with the kernel") && l.trim_end().ends_with("yes")), "{text}");
    let out = sw.stop();
    assert!(out.contains("threads: "), "{out}");
    (lcore_cpus, others.iter().map(|t| t.name.clone()).collect())
}

#[test]
fn non_lcore_threads_leave_the_lcores_cpus() {
    if !is_root() {
        eprintln!("SKIP: needs root for a network namespace");
        return;
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        eprintln!("SKIP: needs two CPUs");
        return;
    }
    // Each lcore on its own CPU: on this 2-CPU machine none is free (nice 19).
    let (lcpus, _) = check("own", "0@0,1@1");
    assert_eq!(lcpus, vec![0, 1]);
    // Both lcores on CPU 0: the others on the rest.
    let (lcpus, _) = check("shared", "0@0,1@0");
    assert_eq!(lcpus, vec![0]);
}
