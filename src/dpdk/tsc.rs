use super::sys;

/// The CPU time-stamp counter (the clock of the whole dataplane; pure code takes it as
/// `now_tsc`). Inlined: DPDK's `rte_rdtsc` is `static inline`, reachable from Rust only
/// through a wrapper call.
#[inline(always)]
pub fn rdtsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC reads a register; no memory is touched.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // SAFETY: reads the CPU cycle counter; no memory is touched.
        unsafe { sys::rte_rdtsc() }
    }
}

/// TSC ticks per second as calibrated by EAL (valid after `Eal::init`).
pub fn tsc_hz() -> u64 {
    // SAFETY: plain getter.
    unsafe { sys::rte_get_tsc_hz() }
}
