//! DPDK's RCU in its quiescent-state-based form (`rte_rcu_qsbr`): each reader (a worker
//! lcore) reports a quiescent state once per loop iteration, when it holds no pointer into a
//! routing table; the one writer (the control thread) starts a grace period after unlinking
//! something and may reuse it once every online reader has reported since.

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

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

    /// Block (spinning) until the grace period of `token` has passed. Control thread only.
    pub fn wait(&self, token: u64) {
        // SAFETY: writer-side call on a valid variable; `true` = wait.
        unsafe { sys::rte_rcu_qsbr_check(self.as_ptr(), token, true) };
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
