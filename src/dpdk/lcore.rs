use std::os::raw::{c_int, c_void};

use super::{sys, DpdkError};

type Job = Box<dyn FnOnce() + Send + 'static>;

/// The C entry point `rte_eal_remote_launch` runs on the worker lcore.
///
/// # Safety
/// `arg` must be a `Box<Job>` leaked by [`launch_on`], passed here exactly once.
unsafe extern "C" fn trampoline(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the Box<Job> leaked by `launch_on`, consumed exactly once here.
    let job: Box<Job> = unsafe { Box::from_raw(arg as *mut Job) };
    // A panic never unwinds into C: release builds abort (`panic = "abort"`), and Rust
    // aborts a panic that reaches an `extern "C"` frame in any build. The binary's panic
    // hook names the lcore first.
    job();
    0
}

/// A closure running on a worker lcore; `wait` joins it.
#[must_use = "join the lcore with wait()"]
pub struct LcoreHandle {
    lcore: u32,
    joined: bool,
}

impl LcoreHandle {
    pub fn lcore(&self) -> u32 {
        self.lcore
    }
    /// Wait for the closure to return (a panic aborts the process, it never returns here).
    pub fn wait(mut self) {
        self.joined = true;
        // SAFETY: waits on an lcore we launched.
        unsafe {
            sys::rte_eal_wait_lcore(self.lcore);
        }
    }
}

impl Drop for LcoreHandle {
    fn drop(&mut self) {
        if !self.joined {
            // SAFETY: as in wait(); never leave a running closure behind.
            unsafe {
                sys::rte_eal_wait_lcore(self.lcore);
            }
        }
    }
}

/// Run `f` on worker lcore `lcore` (`rte_eal_remote_launch`). The lcore must be enabled,
/// not the main lcore, and idle.
pub fn launch_on<F>(lcore: u32, f: F) -> Result<LcoreHandle, DpdkError>
where
    F: FnOnce() + Send + 'static,
{
    let job: Box<Job> = Box::new(Box::new(f));
    let arg = Box::into_raw(job) as *mut c_void;
    // SAFETY: trampoline takes ownership of `arg` only if the launch succeeds.
    let ret = unsafe { sys::rte_eal_remote_launch(Some(trampoline), arg, lcore) };
    if ret != 0 {
        // SAFETY: launch failed, so the trampoline never ran; reclaim the box.
        drop(unsafe { Box::from_raw(arg as *mut Job) });
        return Err(DpdkError::from_ret(format!("rte_eal_remote_launch(lcore {lcore})"), ret));
    }
    Ok(LcoreHandle { lcore, joined: false })
}

/// The lcore id of the calling thread (`u32::MAX` on a non-EAL thread).
#[inline]
pub fn current_lcore() -> u32 {
    // SAFETY: reads a thread-local.
    unsafe { sys::rte_lcore_id() }
}

/// The main lcore (the one that called `rte_eal_init`).
pub fn main_lcore() -> u32 {
    // SAFETY: plain getter.
    unsafe { sys::rte_get_main_lcore() }
}

/// Let this thread's sleeps end within `ns` of their deadline (Linux timer slack; the
/// default 50 µs would turn every short nap of the control lcore into ~60 µs).
pub fn set_timer_slack_ns(ns: u64) {
    // SAFETY: prctl(PR_SET_TIMERSLACK) takes an integer and touches no memory of ours.
    let _ = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
}
