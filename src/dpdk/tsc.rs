use super::sys;

/// The CPU time-stamp counter (the clock of the whole dataplane; pure code takes it as
/// `now_tsc`).
#[inline(always)]
pub fn rdtsc() -> u64 {
    // SAFETY: reads the TSC; no memory is touched.
    unsafe { sys::rte_rdtsc() }
}

/// TSC ticks per second as calibrated by EAL (valid after `Eal::init`).
pub fn tsc_hz() -> u64 {
    // SAFETY: plain getter.
    unsafe { sys::rte_get_tsc_hz() }
}
