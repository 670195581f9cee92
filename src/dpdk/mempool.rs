use std::ffi::CString;
use std::ptr::NonNull;

use super::{sys, DpdkError, Mbuf, MbufBurst};

/// A packet-mbuf pool (`rte_pktmbuf_pool_create`). Thread-safe per DPDK; freed on drop
/// (drop it only after every mbuf has been returned and the ports are stopped).
pub struct Mempool {
    raw: NonNull<sys::rte_mempool>,
    size: u32,
}

// SAFETY: rte_mempool get/put are multi-thread safe (per-lcore caches + ring).
unsafe impl Send for Mempool {}
unsafe impl Sync for Mempool {}

impl Mempool {
    /// `n` mbufs with `data_room` bytes each (including RTE_PKTMBUF_HEADROOM), per-lcore
    /// cache of `cache` mbufs, on `socket` (-1 = any).
    pub fn new(name: &str, n: u32, cache: u32, data_room: u16, socket: i32) -> Result<Mempool, DpdkError> {
        let cname = CString::new(name).map_err(|_| DpdkError::msg("mempool", "name contains NUL"))?;
        // SAFETY: valid C string; DPDK copies the name.
        let p = unsafe { sys::rte_pktmbuf_pool_create(cname.as_ptr(), n, cache, 0, data_room, socket) };
        match NonNull::new(p) {
            Some(raw) => Ok(Mempool { raw, size: n }),
            None => {
                Err(DpdkError::from_errno(format!("rte_pktmbuf_pool_create({name}, n={n}, data_room={data_room})")))
            }
        }
    }

    pub(crate) fn as_ptr(&self) -> *mut sys::rte_mempool {
        self.raw.as_ptr()
    }

    /// Total mbufs in the pool.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// Mbufs currently in the pool (including per-lcore caches).
    pub fn avail_count(&self) -> u32 {
        // SAFETY: read-only walk of the pool's counters.
        unsafe { sys::rte_mempool_avail_count(self.raw.as_ptr()) }
    }

    /// Mbufs currently taken out of the pool.
    pub fn in_use_count(&self) -> u32 {
        // SAFETY: read-only walk of the pool's counters.
        unsafe { sys::rte_mempool_in_use_count(self.raw.as_ptr()) }
    }

    /// Allocate one mbuf (reset, empty).
    pub fn alloc(&self) -> Option<Mbuf> {
        // SAFETY: the pool is valid; a non-null return is a fresh mbuf we now own.
        let m = unsafe { sys::rte_pktmbuf_alloc(self.raw.as_ptr()) };
        NonNull::new(m).map(Mbuf::from_nonnull)
    }
}

impl Mempool {
    /// Append `n` fresh mbufs to `out` in one `rte_pktmbuf_alloc_bulk` (all or none:
    /// false if the pool has fewer or `out` has no room for `n`).
    #[inline]
    pub fn alloc_bulk(&self, out: &mut MbufBurst, n: usize) -> bool {
        if n == 0 || n > out.room() {
            return n == 0;
        }
        if out.has_holes() {
            out.compact();
        }
        let start = out.len();
        // SAFETY: the `n` slots from `start` are empty (None == NULL) and inside the
        // burst; on success DPDK writes `n` owned mbuf pointers there, on failure nothing.
        let ret = unsafe { sys::rte_pktmbuf_alloc_bulk(self.raw.as_ptr(), out.raw_slots(start), n as u32) };
        if ret != 0 {
            return false;
        }
        out.set_len(start + n);
        true
    }
}

impl Drop for Mempool {
    fn drop(&mut self) {
        // SAFETY: the pool is no longer referenced by any port or mbuf (caller's contract,
        // upheld by the dataplane's shutdown order).
        unsafe { sys::rte_mempool_free(self.raw.as_ptr()) }
    }
}
