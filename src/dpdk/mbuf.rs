use std::ptr::NonNull;

use super::sys;

/// One packet buffer, owned: freed back to its mempool on drop. Single-segment (the
/// switch configures no scatter; the mempool's data room covers the MTU).
#[repr(transparent)]
pub struct Mbuf(NonNull<sys::rte_mbuf>);

// SAFETY: an mbuf has one owner at a time; moving ownership between lcores is how DPDK
// pipelines work (rte_pktmbuf_free from any lcore is allowed).
unsafe impl Send for Mbuf {}

impl Mbuf {
    pub(crate) fn from_nonnull(p: NonNull<sys::rte_mbuf>) -> Mbuf {
        Mbuf(p)
    }

    #[inline(always)]
    fn raw(&self) -> &sys::rte_mbuf {
        // SAFETY: we own a valid mbuf.
        unsafe { self.0.as_ref() }
    }

    /// Bytes of packet data in this (first and only) segment.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.raw().data_len as usize
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of the whole packet, every segment (`pkt_len`).
    #[inline(always)]
    pub fn pkt_len(&self) -> u32 {
        self.raw().pkt_len
    }

    /// Segments in the chain (`nb_segs`); 1 for the frames the switch handles.
    #[inline(always)]
    pub fn segments(&self) -> u16 {
        self.raw().nb_segs
    }

    /// Packet data (`rte_pktmbuf_mtod`: buf_addr + data_off, data_len bytes).
    #[inline(always)]
    pub fn data(&self) -> &[u8] {
        let m = self.raw();
        // SAFETY: DPDK guarantees buf_addr + data_off .. + data_len is inside the buffer.
        unsafe { std::slice::from_raw_parts((m.buf_addr as *const u8).add(m.data_off as usize), m.data_len as usize) }
    }

    /// Packet data, writable (we are the only owner; refcnt is 1 for mbufs from rx/alloc).
    #[inline(always)]
    pub fn data_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in data(); &mut self gives exclusive access.
        unsafe {
            let m = self.0.as_mut();
            std::slice::from_raw_parts_mut((m.buf_addr as *mut u8).add(m.data_off as usize), m.data_len as usize)
        }
    }

    /// The port the packet was received on (set by the PMD).
    #[inline(always)]
    pub fn port(&self) -> u16 {
        self.raw().port
    }

    /// Grow the packet by `n` bytes at the tail; returns the new bytes, or None if there
    /// is no room.
    pub fn append(&mut self, n: u16) -> Option<&mut [u8]> {
        // SAFETY: rte_pktmbuf_append checks tailroom and returns NULL if short.
        let p = unsafe { sys::rte_pktmbuf_append(self.0.as_ptr(), n) } as *mut u8;
        if p.is_null() {
            return None;
        }
        // SAFETY: DPDK returned a pointer to n writable bytes inside our buffer.
        Some(unsafe { std::slice::from_raw_parts_mut(p, n as usize) })
    }

    /// Make a fresh, empty single-segment mbuf hold `len` bytes of data (`data_len` and
    /// `pkt_len`), without the call `append` costs; false (unchanged) if the mbuf is not
    /// empty or its tailroom is shorter. The bytes are whatever the buffer held: write
    /// them all.
    #[inline(always)]
    pub fn set_len(&mut self, len: u16) -> bool {
        // SAFETY: we own the mbuf exclusively (&mut self).
        let m = unsafe { self.0.as_mut() };
        if m.data_len != 0 || m.nb_segs != 1 || u32::from(m.data_off) + u32::from(len) > u32::from(m.buf_len) {
            return false;
        }
        m.data_len = len;
        m.pkt_len = u32::from(len);
        true
    }

    /// Grow the packet by `n` bytes at the front (`rte_pktmbuf_prepend` on a single
    /// segment: field updates only); returns the whole data, the new bytes first, or None
    /// (unchanged) without that much headroom.
    #[inline(always)]
    pub fn prepend(&mut self, n: u16) -> Option<&mut [u8]> {
        {
            // SAFETY: we own the mbuf exclusively (&mut self).
            let m = unsafe { self.0.as_mut() };
            if m.nb_segs != 1 || m.data_off < n {
                return None;
            }
            m.data_off -= n;
            m.data_len += n;
            m.pkt_len += u32::from(n);
        }
        Some(self.data_mut())
    }

    /// Remove `n` bytes from the front (`rte_pktmbuf_adj` on a single segment); false
    /// (unchanged) if the packet is shorter.
    #[inline(always)]
    pub fn adj(&mut self, n: u16) -> bool {
        // SAFETY: we own the mbuf exclusively (&mut self).
        let m = unsafe { self.0.as_mut() };
        if m.nb_segs != 1 || m.data_len < n {
            return false;
        }
        m.data_off += n;
        m.data_len -= n;
        m.pkt_len -= u32::from(n);
        true
    }

    /// Remove `n` bytes from the tail (`rte_pktmbuf_trim` on a single segment); false
    /// (unchanged) if the packet is shorter.
    pub fn trim(&mut self, n: u16) -> bool {
        // SAFETY: we own the mbuf exclusively (&mut self).
        let m = unsafe { self.0.as_mut() };
        if m.nb_segs != 1 || m.data_len < n {
            return false;
        }
        m.data_len -= n;
        m.pkt_len -= u32::from(n);
        true
    }

    /// Hint the CPU to fetch the first cache line of packet data.
    #[inline(always)]
    pub fn prefetch_data(&self) {
        #[cfg(target_arch = "x86_64")]
        {
            let m = self.raw();
            let p = (m.buf_addr as *const u8).wrapping_add(m.data_off as usize);
            // SAFETY: prefetch never faults.
            unsafe { std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0) }
        }
    }

    pub(crate) fn into_raw(self) -> *mut sys::rte_mbuf {
        let p = self.0.as_ptr();
        std::mem::forget(self);
        p
    }
}

impl Mbuf {
    /// A second reference to this packet, which does nothing but keep its buffer out of
    /// the mempool until dropped (`rte_mbuf_refcnt_update` + 1). What a PMD that frees
    /// lazily does to a sent packet: the test knob `PFCSW_TEST_LAZY_TX_FREE` uses it.
    pub fn hold(&self) -> HeldMbuf {
        // SAFETY: we own a valid mbuf; the new reference is released by HeldMbuf's drop.
        unsafe { sys::rte_mbuf_refcnt_update(self.0.as_ptr(), 1) };
        HeldMbuf(self.0)
    }
}

/// A reference that keeps a sent packet's buffer allocated ([`Mbuf::hold`]); it gives no
/// access to the data (the owner may have handed the packet on).
pub struct HeldMbuf(NonNull<sys::rte_mbuf>);

// SAFETY: as for Mbuf: dropping a reference from any lcore is allowed.
unsafe impl Send for HeldMbuf {}

impl Drop for HeldMbuf {
    fn drop(&mut self) {
        // SAFETY: we own one reference; rte_pktmbuf_free drops it (and frees the buffer
        // when it was the last).
        unsafe { sys::rte_pktmbuf_free(self.0.as_ptr()) }
    }
}

impl Drop for Mbuf {
    fn drop(&mut self) {
        // SAFETY: we own the mbuf; return it to its pool.
        unsafe { sys::rte_pktmbuf_free(self.0.as_ptr()) }
    }
}

/// Largest burst the switch handles at once: the config's limit on `switch.burst_size`.
pub const BURST_CAP: usize = crate::config::MAX_BURST_SIZE as usize;

/// A fixed-capacity vector of owned mbufs, laid out like DPDK's `struct rte_mbuf *pkts[]`
/// so rx/tx bursts read and write it directly. No allocation after construction.
pub struct MbufBurst {
    len: usize,
    /// Some slot below `len` is empty (`take`): compacted before the burst reaches a PMD,
    /// which must never see a NULL mbuf.
    holes: bool,
    // Option<Mbuf> has the layout of a nullable pointer (guaranteed niche of NonNull).
    slots: Box<[Option<Mbuf>; BURST_CAP]>,
}

impl Default for MbufBurst {
    fn default() -> Self {
        Self::new()
    }
}

impl MbufBurst {
    pub fn new() -> MbufBurst {
        MbufBurst { len: 0, holes: false, slots: Box::new([const { None }; BURST_CAP]) }
    }

    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    #[inline(always)]
    pub fn is_full(&self) -> bool {
        self.len == BURST_CAP
    }
    #[inline(always)]
    pub fn room(&self) -> usize {
        BURST_CAP - self.len
    }

    /// Append an mbuf; gives it back when full.
    #[inline(always)]
    pub fn push(&mut self, m: Mbuf) -> Result<(), Mbuf> {
        if self.len == BURST_CAP {
            return Err(m);
        }
        // Slots from `len` on are empty: nothing to drop there (`forget` spares the check).
        std::mem::forget(self.slots[self.len].replace(m));
        self.len += 1;
        Ok(())
    }

    /// Take the last mbuf out (the burst stays compact).
    #[inline(always)]
    pub fn pop(&mut self) -> Option<Mbuf> {
        while self.len > 0 {
            self.len -= 1;
            if let Some(m) = self.slots[self.len].take() {
                return Some(m);
            }
        }
        self.holes = false;
        None
    }

    /// Insert an mbuf at position `i` (≤ len), shifting the ones after it; gives it back
    /// when full. For frames that must leave before what is already queued.
    pub fn insert(&mut self, i: usize, m: Mbuf) -> Result<(), Mbuf> {
        if self.len == BURST_CAP || i > self.len {
            return Err(m);
        }
        if self.holes {
            self.compact();
        }
        for r in (i..self.len).rev() {
            self.slots[r + 1] = self.slots[r].take();
        }
        self.slots[i] = Some(m);
        self.len += 1;
        Ok(())
    }

    /// Put `m` back into slot `i` (< len), emptied by a `take`; gives it back if the
    /// slot is out of range or full. A stage replaces a packet with another this way (an
    /// ICMP error in place of the packet it answers).
    pub fn put(&mut self, i: usize, m: Mbuf) -> Result<(), Mbuf> {
        match self.slots.get_mut(i) {
            Some(s) if i < self.len && s.is_none() => {
                *s = Some(m);
                Ok(())
            }
            _ => Err(m),
        }
    }

    /// The i-th mbuf (None if i >= len or already taken).
    #[inline(always)]
    pub fn get(&self, i: usize) -> Option<&Mbuf> {
        if i < self.len {
            self.slots[i].as_ref()
        } else {
            None
        }
    }

    #[inline(always)]
    pub fn get_mut(&mut self, i: usize) -> Option<&mut Mbuf> {
        if i < self.len {
            self.slots[i].as_mut()
        } else {
            None
        }
    }

    /// Take the i-th mbuf out, leaving a hole (remembered: the burst is compacted before
    /// it is handed to a PMD).
    #[inline(always)]
    pub fn take(&mut self, i: usize) -> Option<Mbuf> {
        if i < self.len {
            self.holes = true;
            self.slots[i].take()
        } else {
            None
        }
    }

    /// Whether `take` left holes that `compact` has not removed yet.
    #[inline(always)]
    pub fn has_holes(&self) -> bool {
        self.holes
    }

    /// Drop every mbuf still held (freeing it) and empty the burst.
    pub fn clear(&mut self) {
        for s in &mut self.slots[..self.len] {
            *s = None;
        }
        self.len = 0;
        self.holes = false;
    }

    /// Remove holes left by `take`, keeping order.
    pub fn compact(&mut self) {
        let mut w = 0;
        for r in 0..self.len {
            if self.slots[r].is_some() {
                if r != w {
                    self.slots[w] = self.slots[r].take();
                }
                w += 1;
            }
        }
        self.len = w;
        self.holes = false;
    }

    /// Remove the first `n` mbufs whose ownership passed to DPDK (tx_burst), shifting the
    /// rest to the front.
    pub(crate) fn consume_front(&mut self, n: usize) {
        let n = n.min(self.len);
        for s in &mut self.slots[..n] {
            // Ownership went to the driver: forget without freeing.
            if let Some(m) = s.take() {
                let _ = m.into_raw();
            }
        }
        if n > 0 {
            for r in n..self.len {
                self.slots[r - n] = self.slots[r].take();
            }
            self.len -= n;
        }
    }

    /// The first `len` slots as a PMD reads them: compacted first, so every one holds an
    /// mbuf (never NULL). For tx_burst.
    pub(crate) fn raw_for_tx(&mut self) -> (*mut *mut sys::rte_mbuf, usize) {
        if self.holes {
            self.compact();
        }
        (self.raw_slots(0), self.len)
    }

    /// Raw pointer to the slot array at `from`, for rx/tx burst.
    pub(crate) fn raw_slots(&mut self, from: usize) -> *mut *mut sys::rte_mbuf {
        // SAFETY of the cast: Option<Mbuf> is a nullable pointer to rte_mbuf.
        self.slots[from..].as_mut_ptr() as *mut *mut sys::rte_mbuf
    }

    pub(crate) fn set_len(&mut self, len: usize) {
        debug_assert!(len <= BURST_CAP);
        self.len = len;
    }

    /// Iterate over the held mbufs (skipping holes).
    pub fn iter(&self) -> impl Iterator<Item = &Mbuf> {
        self.slots[..self.len].iter().filter_map(|s| s.as_ref())
    }

    /// Move every held mbuf out, in order. The burst is empty afterwards even if the
    /// iterator is dropped early: the mbufs it did not yield are freed then.
    pub fn drain(&mut self) -> Drain<'_> {
        Drain { next: 0, burst: self }
    }
}

/// The iterator of [`MbufBurst::drain`].
pub struct Drain<'a> {
    burst: &'a mut MbufBurst,
    next: usize,
}

impl Iterator for Drain<'_> {
    type Item = Mbuf;
    fn next(&mut self) -> Option<Mbuf> {
        while self.next < self.burst.len {
            let i = self.next;
            self.next += 1;
            if let Some(m) = self.burst.slots[i].take() {
                return Some(m);
            }
        }
        None
    }
}

impl Drop for Drain<'_> {
    fn drop(&mut self) {
        self.burst.clear();
    }
}

impl Drop for MbufBurst {
    fn drop(&mut self) {
        self.clear();
    }
}

const _: () = assert!(std::mem::size_of::<Option<Mbuf>>() == std::mem::size_of::<*mut sys::rte_mbuf>());
