//! Bounded updates of one atomic counter: the MMU's segment limits and high-water marks
//! without locks.

use std::sync::atomic::{AtomicU64, Ordering::*};

/// Adds `b` to `c` only if the result stays ≤ `max`.
#[inline]
pub(super) fn try_add_upto(c: &AtomicU64, b: u64, max: u64) -> bool {
    c.fetch_update(Relaxed, Relaxed, |v| v.checked_add(b).filter(|n| *n <= max)).is_ok()
}

/// Takes up to `want` from `c`, returns what was taken.
#[inline]
pub(super) fn take_upto(c: &AtomicU64, want: u64) -> u64 {
    match c.fetch_update(Relaxed, Relaxed, |v| (v != 0).then(|| v - v.min(want))) {
        Ok(prev) => prev.min(want),
        Err(_) => 0,
    }
}

/// Raises a high-water mark; a plain load first keeps the common case write-free.
#[inline]
pub(super) fn raise(wm: &AtomicU64, v: u64) {
    if wm.load(Relaxed) < v {
        wm.fetch_max(v, Relaxed);
    }
}
