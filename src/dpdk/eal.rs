use std::ffi::CString;
use std::os::raw::{c_char, c_int};
use std::sync::atomic::{AtomicBool, Ordering};

use super::{sys, DpdkError};

static EAL_UP: AtomicBool = AtomicBool::new(false);

/// The initialised Environment Abstraction Layer. One per process; dropping it runs
/// `rte_eal_cleanup` (after every port, mempool and lcore user is gone).
pub struct Eal {
    _private: (),
}

impl Eal {
    /// `rte_eal_init` with `args` (`args[0]` is the program name, as in `argv`).
    pub fn init(args: &[String]) -> Result<Eal, DpdkError> {
        if EAL_UP.swap(true, Ordering::SeqCst) {
            return Err(DpdkError::msg("rte_eal_init", "EAL already initialised in this process"));
        }
        let cargs: Vec<CString> = args
            .iter()
            .map(|a| {
                CString::new(a.as_str())
                    .map_err(|_| DpdkError::msg("rte_eal_init", format!("argument contains NUL: {a:?}")))
            })
            .collect::<Result<_, _>>()?;
        // EAL may permute argv; give it an owned array of pointers that outlives the call.
        // The strings are leaked on purpose: EAL keeps pointers into argv (e.g. for
        // telemetry and logging) for the life of the process.
        let mut ptrs: Vec<*mut c_char> = cargs.into_iter().map(|c| c.into_raw()).collect();
        ptrs.push(std::ptr::null_mut());
        let argc = (ptrs.len() - 1) as c_int;
        let argv = Box::leak(ptrs.into_boxed_slice());
        // SAFETY: argv is a valid, NULL-terminated array of NUL-terminated strings that
        // lives forever.
        let ret = unsafe { sys::rte_eal_init(argc, argv.as_mut_ptr()) };
        if ret < 0 {
            EAL_UP.store(false, Ordering::SeqCst);
            return Err(DpdkError::from_errno("rte_eal_init"));
        }
        Ok(Eal { _private: () })
    }

    /// DPDK's version string, e.g. "DPDK 22.11.11".
    pub fn version() -> String {
        // SAFETY: returns a static string.
        unsafe { std::ffi::CStr::from_ptr(sys::rte_version()).to_string_lossy().into_owned() }
    }

    /// Number of ethdev ports EAL probed.
    pub fn port_count(&self) -> u16 {
        // SAFETY: plain getter after init.
        unsafe { sys::rte_eth_dev_count_avail() }
    }

    /// Number of enabled lcores.
    pub fn lcore_count(&self) -> u32 {
        // SAFETY: plain getter after init.
        unsafe { sys::rte_lcore_count() }
    }

    /// Bytes allocated from DPDK's heaps (every socket): what the tables, mempools and rings
    /// hold; a table that leaks shows here.
    pub fn heap_allocated_bytes(&self) -> u64 {
        heap_allocated_bytes()
    }

    /// Whether `lcore` is enabled in this EAL (given by `--lcores`/`-l`).
    pub fn lcore_enabled(&self, lcore: u32) -> bool {
        // SAFETY: bounds-checked by DPDK.
        unsafe { sys::rte_lcore_is_enabled(lcore) != 0 }
    }
}

impl Drop for Eal {
    fn drop(&mut self) {
        // EAL 22.11 leaves its runtime directory (`/var/run/dpdk/<prefix>`, ~10 MB of
        // fbarray files) behind, and the default prefix is per process: without this every
        // run would leave one more in /run. Only the primary owns it; read the path before
        // cleanup releases EAL's configuration.
        // SAFETY: plain getters after init; the returned string is EAL's static buffer.
        let runtime = unsafe {
            (sys::rte_eal_process_type() == sys::rte_proc_type_t_RTE_PROC_PRIMARY)
                .then(|| std::ffi::CStr::from_ptr(sys::rte_eal_get_runtime_dir()).to_string_lossy().into_owned())
        };
        // SAFETY: every DPDK object owned by Rust must already be dropped (callers drop the
        // Eal last).
        unsafe {
            sys::rte_eal_cleanup();
        }
        if let Some(dir) = runtime.filter(|d| !d.is_empty()) {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Bytes allocated from DPDK's heaps (every socket), once EAL runs: before and after a
/// table's creation, what the table took (`rte_malloc` and its mempools come from here).
pub fn heap_allocated_bytes() -> u64 {
    (0..sys::RTE_MAX_NUMA_NODES as i32)
        .filter_map(|socket| {
            let mut st = sys::rte_malloc_socket_stats::default();
            // SAFETY: writes one stats struct on the stack; a socket without a heap fails.
            let ret = unsafe { sys::rte_malloc_get_socket_stats(socket, &mut st) };
            (ret == 0).then_some(st.heap_allocsz_bytes as u64)
        })
        .sum()
}

/// Let `dpdk-dumpcap`/`dpdk-pdump` (secondary processes) capture from this one's ports.
/// Needs shared (hugepage) memory: call only when EAL runs with hugepages.
pub fn pdump_init() -> Result<(), DpdkError> {
    // SAFETY: plain call after EAL init.
    let ret = unsafe { sys::rte_pdump_init() };
    if ret != 0 {
        return Err(DpdkError::from_errno("rte_pdump_init"));
    }
    Ok(())
}
