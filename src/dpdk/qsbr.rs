//! DPDK's RCU in its quiescent-state-based form (`rte_rcu_qsbr`): each reader (a worker
//! lcore) reports a quiescent state once per loop iteration, when it holds no pointer into a
//! routing table; the one writer (the control thread) starts a grace period after unlinking
//! something and may reuse it once every online reader has reported since.

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{sys, DpdkError};

/// Alignment of the QSBR variable: DPDK requires a cache line; two, to stay clear of the
/// adjacent-line prefetcher.
const ALIGN: usize = 128;

/// A QSBR variable for up to `max_readers` readers (thread ids `0..max_readers`).
pub struct Qsbr {
    raw: NonNull<sys::rte_rcu_qsbr>,
    layout: Layout,
    max_readers: u32,
    /// Which reader ids are taken (registration only, never per packet).
    taken: Mutex<Vec<bool>>,
}

// SAFETY: rte_rcu_qsbr is designed for concurrent use: each reader writes only its own
// counter (ids are handed out once, see `reader`), the writer reads all of them.
unsafe impl Send for Qsbr {}
unsafe impl Sync for Qsbr {}

impl Qsbr {
    /// A QSBR variable for reader ids `0..max_readers` (1..=1024).
    pub fn new(max_readers: u32) -> Result<Arc<Qsbr>, DpdkError> {
        if max_readers == 0 || max_readers > 1024 {
            return Err(DpdkError::msg("rte_rcu_qsbr_init", format!("{max_readers} readers (1..=1024)")));
        }
        // SAFETY: pure size computation.
        let size = unsafe { sys::rte_rcu_qsbr_get_memsize(max_readers) };
        let layout = Layout::from_size_align(size, ALIGN)
            .map_err(|e| DpdkError::msg("rte_rcu_qsbr_get_memsize", e.to_string()))?;
        // SAFETY: non-zero size (DPDK's struct is never empty).
        let p = unsafe { std::alloc::alloc_zeroed(layout) } as *mut sys::rte_rcu_qsbr;
        let raw = NonNull::new(p).ok_or_else(|| DpdkError::msg("rte_rcu_qsbr", "out of memory"))?;
        // SAFETY: `raw` points to `size` zeroed, suitably aligned bytes.
        let ret = unsafe { sys::rte_rcu_qsbr_init(raw.as_ptr(), max_readers) };
        if ret != 0 {
            // SAFETY: allocated above with this layout.
            unsafe { std::alloc::dealloc(p as *mut u8, layout) };
            return Err(DpdkError::from_errno("rte_rcu_qsbr_init"));
        }
        Ok(Arc::new(Qsbr { raw, layout, max_readers, taken: Mutex::new(vec![false; max_readers as usize]) }))
    }

    pub(crate) fn as_ptr(&self) -> *mut sys::rte_rcu_qsbr {
        self.raw.as_ptr()
    }

    /// Register reader `id` and put it online. Each id once at a time; the token is the only
    /// way to report for it.
    pub fn reader(self: &Arc<Self>, id: u32) -> Result<QsbrReader, DpdkError> {
        if id >= self.max_readers {
            return Err(DpdkError::msg("rte_rcu_qsbr_thread_register", format!("id {id} >= {}", self.max_readers)));
        }
        {
            let mut taken = self.taken.lock().unwrap_or_else(|e| e.into_inner());
            if taken[id as usize] {
                return Err(DpdkError::msg("rte_rcu_qsbr_thread_register", format!("reader {id} already registered")));
            }
            taken[id as usize] = true;
        }
        // SAFETY: valid variable, id in range and owned by the token made below.
        let ret = unsafe { sys::rte_rcu_qsbr_thread_register(self.as_ptr(), id) };
        if ret != 0 {
            self.taken.lock().unwrap_or_else(|e| e.into_inner())[id as usize] = false;
            return Err(DpdkError::from_errno("rte_rcu_qsbr_thread_register"));
        }
        // SAFETY: registered just above.
        unsafe { sys::rte_rcu_qsbr_thread_online(self.as_ptr(), id) };
        Ok(QsbrReader { qs: self.clone(), id, _not_sync: std::marker::PhantomData })
    }

    /// Start a grace period: the token to pass to [`Qsbr::passed`] / [`Qsbr::wait`].
    pub fn start(&self) -> u64 {
        // SAFETY: writer-side call on a valid variable.
        unsafe { sys::rte_rcu_qsbr_start(self.as_ptr()) }
    }

    /// Has every online reader reported a quiescent state since `token` was taken? Never
    /// blocks.
    pub fn passed(&self, token: u64) -> bool {
        // SAFETY: writer-side call on a valid variable.
        unsafe { sys::rte_rcu_qsbr_check(self.as_ptr(), token, false) == 1 }
    }

    /// Block until the grace period of `token` has passed. Control thread only. It polls
    /// and sleeps between polls (10 µs, doubling up to 250 µs) instead of DPDK's spin: the
    /// writer may share a CPU with an lcore, and a spinning writer would take its time.
    pub fn wait(&self, token: u64) {
        let mut pause = Duration::from_micros(10);
        while !self.passed(token) {
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_micros(250));
        }
    }

    /// Start a grace period and wait for it.
    pub fn synchronize(&self) {
        self.wait(self.start());
    }
}

impl crate::route::Grace for Qsbr {
    fn start(&self) -> u64 {
        Qsbr::start(self)
    }
    fn passed(&self, token: u64) -> bool {
        Qsbr::passed(self, token)
    }
    fn wait(&self, token: u64) {
        Qsbr::wait(self, token)
    }
}

impl Drop for Qsbr {
    fn drop(&mut self) {
        // SAFETY: no reader token is alive (each holds an Arc), and the tables that pointed
        // here (rte_lpm's defer queue) were freed first: they hold an Arc too.
        unsafe { std::alloc::dealloc(self.raw.as_ptr() as *mut u8, self.layout) };
    }
}

/// One reader's right to report: `Send`, not `Clone` or `Sync` (each id is one thread's).
/// Offline and unregistered on drop.
pub struct QsbrReader {
    qs: Arc<Qsbr>,
    id: u32,
    _not_sync: std::marker::PhantomData<std::cell::Cell<()>>,
}

impl QsbrReader {
    /// The reader id.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Report a quiescent state: this thread holds nothing read from the tables. Call once
    /// per loop iteration (a store and a fence: a few ns).
    #[inline]
    pub fn quiescent(&self) {
        // SAFETY: registered and online id owned by this token.
        unsafe { sys::rte_rcu_qsbr_quiescent(self.qs.as_ptr(), self.id) }
    }

    /// Go offline (before a nap): grace periods stop waiting for this reader.
    pub fn offline(&self) {
        // SAFETY: registered id owned by this token.
        unsafe { sys::rte_rcu_qsbr_thread_offline(self.qs.as_ptr(), self.id) }
    }

    /// Back online after [`QsbrReader::offline`], before the next table read.
    pub fn online(&self) {
        // SAFETY: registered id owned by this token.
        unsafe { sys::rte_rcu_qsbr_thread_online(self.qs.as_ptr(), self.id) }
    }
}

impl Drop for QsbrReader {
    fn drop(&mut self) {
        // SAFETY: registered id owned by this token; it is never used again.
        unsafe {
            sys::rte_rcu_qsbr_thread_offline(self.qs.as_ptr(), self.id);
            sys::rte_rcu_qsbr_thread_unregister(self.qs.as_ptr(), self.id);
        }
        self.qs.taken.lock().unwrap_or_else(|e| e.into_inner())[self.id as usize] = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// CPU time of the calling thread.
    fn thread_cpu() -> Duration {
        let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: getrusage writes one rusage into the buffer we own.
        let ru = unsafe {
            libc::getrusage(libc::RUSAGE_THREAD, ru.as_mut_ptr());
            ru.assume_init()
        };
        let t = |v: libc::timeval| Duration::new(v.tv_sec as u64, v.tv_usec as u32 * 1000);
        t(ru.ru_utime) + t(ru.ru_stime)
    }

    /// A writer waiting for a reader that reports late sleeps rather than spins: it must
    /// not take the CPU of the lcores it shares a CPU with.
    #[test]
    fn a_grace_period_wait_yields_the_cpu() {
        let q = Qsbr::new(1).unwrap();
        let reader = q.reader(0).unwrap();
        let token = q.start();
        let waiter = {
            let q = q.clone();
            std::thread::spawn(move || {
                let (t0, c0) = (Instant::now(), thread_cpu());
                q.wait(token);
                (t0.elapsed(), thread_cpu() - c0)
            })
        };
        std::thread::sleep(Duration::from_millis(300));
        reader.quiescent();
        let (wall, cpu) = waiter.join().unwrap();
        assert!(wall >= Duration::from_millis(250), "the wait ended before the reader reported: {wall:?}");
        assert!(cpu < wall / 4, "waited {wall:?} using {cpu:?} of CPU");
    }
}
