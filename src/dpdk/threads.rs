//! Where the threads that are not lcores run (docs/failure-behaviour.md, "Nothing beside
//! the lcores"): the routing control thread, the I/O thread, DPDK's telemetry, interrupt
//! and multi-process threads. They are born on the main lcore's CPU (the switch's threads
//! are spawned by the main thread, which EAL pinned; DPDK puts its control threads there
//! when no CPU is free), where they would take the control lcore's time. So once
//! everything is started they move: to the CPUs the process may use that no lcore uses,
//! or — where there is none — to every allowed CPU at nice 19, the lowest priority of the
//! normal class (a polling lcore keeps ~98.5 % of its CPU; see [`NICE`]).
//!
//! Lcore threads are the main thread (the main lcore: the control loop runs there) and the
//! worker lcores, each asked its thread id ([`lcore_thread_id`]) rather than recognised by
//! name (DPDK 22.11.0 names them `lcore-worker-<n>`, 22.11.11 `rte-worker-<n>`). A
//! telemetry client thread created later inherits the placement of the listener that
//! creates it.

use std::io;

use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;

/// The nice value of the threads that are not lcores where no CPU is free of lcores: the
/// lowest priority that still gets a share of a busy CPU. `SCHED_IDLE` (tried first) never
/// runs while an lcore polls: telemetry took seconds to answer and a `show` waiting for a
/// queue to drain timed out (tests/live_config.rs); at nice 19 a polling lcore keeps ~98.5 %
/// of its CPU (CFS weights 1024 : 15).
pub const NICE: i32 = 19;

/// Where the threads that are not lcores go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// Their CPUs.
    pub cpus: Vec<usize>,
    /// No CPU is free of lcores: they run at nice [`NICE`].
    pub idle: bool,
}

/// The placement for a process allowed on `allowed` whose lcores run on `lcores`.
pub fn placement(allowed: &[usize], lcores: &[usize]) -> Placement {
    let free: Vec<usize> = allowed.iter().copied().filter(|c| !lcores.contains(c)).collect();
    if free.is_empty() {
        Placement { cpus: allowed.to_vec(), idle: true }
    } else {
        Placement { cpus: free, idle: false }
    }
}

fn err(e: nix::errno::Errno) -> io::Error {
    io::Error::from_raw_os_error(e as i32)
}

/// The CPUs the calling thread may run on (call before EAL pins it).
pub fn current_affinity() -> io::Result<Vec<usize>> {
    let set = sched_getaffinity(Pid::from_raw(0)).map_err(err)?;
    Ok((0..CpuSet::count()).filter(|&c| set.is_set(c).unwrap_or(false)).collect())
}

/// "0-2,5" (a `Cpus_allowed_list`) → [0, 1, 2, 5].
pub fn parse_cpu_list(s: &str) -> Vec<usize> {
    let mut v = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.trim().parse::<usize>(), b.trim().parse::<usize>()) {
                    v.extend(a..=b);
                }
            }
            None => v.extend(part.trim().parse::<usize>().ok()),
        }
    }
    v
}

/// A thread of this process as /proc shows it.
#[derive(Debug, Clone)]
struct Task {
    tid: i32,
    name: String,
    cpus: Vec<usize>,
}

fn tasks() -> io::Result<Vec<Task>> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc/self/task")? {
        let e = e?;
        let Some(tid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        // A thread that ended meanwhile: skipped.
        let (Ok(name), Ok(status)) =
            (std::fs::read_to_string(e.path().join("comm")), std::fs::read_to_string(e.path().join("status")))
        else {
            continue;
        };
        let cpus = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).map(parse_cpu_list);
        v.push(Task { tid, name: name.trim().to_string(), cpus: cpus.unwrap_or_default() });
    }
    Ok(v)
}

/// The thread id of worker lcore `lcore` (idle, not the main lcore): a closure run there
/// reports it.
pub fn lcore_thread_id(lcore: u32) -> Result<i32, super::DpdkError> {
    let tid = std::sync::Arc::new(std::sync::atomic::AtomicI32::new(0));
    let t = tid.clone();
    super::launch_on(lcore, move || t.store(nix::unistd::gettid().as_raw(), std::sync::atomic::Ordering::Release))?
        .wait();
    Ok(tid.load(std::sync::atomic::Ordering::Acquire))
}

/// Move every thread of the process that is not an lcore (`lcore_tids`, and the main
/// thread) as [`placement`] says for `allowed` (the process's CPUs before EAL) and the
/// lcores' CPUs. Returns the placement and the names of the threads moved.
pub fn place_non_lcore_threads(allowed: &[usize], lcore_tids: &[i32]) -> io::Result<(Placement, Vec<String>)> {
    let pid = std::process::id() as i32;
    let is_lcore = |tid: i32| tid == pid || lcore_tids.contains(&tid);
    let all = tasks()?;
    let mut lcore_cpus: Vec<usize> =
        all.iter().filter(|t| is_lcore(t.tid)).flat_map(|t| t.cpus.iter().copied()).collect();
    lcore_cpus.sort_unstable();
    lcore_cpus.dedup();
    let p = placement(allowed, &lcore_cpus);
    let mut set = CpuSet::new();
    for &c in &p.cpus {
        set.set(c).map_err(err)?;
    }
    let mut moved = Vec::new();
    for t in all.iter().filter(|t| !is_lcore(t.tid)) {
        let who = Pid::from_raw(t.tid);
        match sched_setaffinity(who, &set) {
            Ok(()) => {}
            // It ended meanwhile.
            Err(nix::errno::Errno::ESRCH) => continue,
            Err(e) => return Err(err(e)),
        }
        if p.idle {
            // SAFETY: a plain syscall on a thread id of this process (Linux: a thread's nice).
            let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, t.tid as libc::id_t, NICE) };
            if rc != 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() != Some(libc::ESRCH) {
                    return Err(e);
                }
            }
        }
        moved.push(t.name.clone());
    }
    Ok((p, moved))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_cpus_or_every_cpu_at_idle() {
        assert_eq!(placement(&[0, 1, 2, 3], &[0, 1]), Placement { cpus: vec![2, 3], idle: false });
        assert_eq!(placement(&[0, 1], &[0, 1]), Placement { cpus: vec![0, 1], idle: true });
        assert_eq!(placement(&[0, 1], &[0]), Placement { cpus: vec![1], idle: false });
        assert_eq!(parse_cpu_list("0-2,5\n"), vec![0, 1, 2, 5]);
        assert_eq!(parse_cpu_list("3"), vec![3]);
    }
}
