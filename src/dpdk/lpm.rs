//! DPDK's longest-prefix-match tables, each behind a safe owning type: `rte_lpm` (IPv4
//! DIR-24-8, with DPDK's RCU integration), `rte_lpm6`, `rte_fib` (IPv4 DIR-24-8) and
//! `rte_fib6` (IPv6 trie). Lookups take `&self` and are lock-free; changes take `&mut self`
//! (one writer). What a concurrent reader may see while a change is made is each table's
//! own business, and [`super::fib`] decides how each is used safely.
//!
//! Values stored are the router's 20-bit targets ([`crate::route::Target`]); every table
//! here reports a miss as `None`.

use std::ffi::CString;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
use std::sync::Arc;

use super::{sys, DpdkError, Qsbr};

/// Largest value a table here stores (rte_lpm6 keeps 21 bits; the others more).
pub const MAX_VALUE: u32 = (1 << 21) - 1;
/// Largest value [`Fib4`] and [`Fib6`] store (2-byte entries keep one bit for themselves).
pub const FIB_MAX_VALUE: u32 = (1 << 15) - 1;
/// Most addresses one bulk call of these wrappers takes (the rest are done in chunks).
pub const BULK_MAX: usize = 64;

fn unique_name(kind: &str) -> Result<CString, DpdkError> {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    CString::new(format!("pfcsw_{kind}_{n}")).map_err(|_| DpdkError::msg(kind, "name"))
}

fn check_value(op: &str, v: u32) -> Result<(), DpdkError> {
    if v == 0 || v > MAX_VALUE {
        return Err(DpdkError::msg(op, format!("value {v} outside 1..={MAX_VALUE}")));
    }
    Ok(())
}

/// IPv4 `rte_lpm` (DIR-24-8: a 2^24-entry first level of 4 bytes, 64 MiB, plus tbl8
/// groups for prefixes longer than /24).
pub struct Lpm4 {
    raw: NonNull<sys::rte_lpm>,
    /// Keeps the QSBR variable alive while the table's defer queue points at it.
    _qsbr: Option<Arc<Qsbr>>,
}

// SAFETY: lookups are read-only and lock-free; changes need `&mut self` (one writer) or go
// through `fib::RouteWriter`, the one writer of a shared table.
unsafe impl Send for Lpm4 {}
unsafe impl Sync for Lpm4 {}

impl Lpm4 {
    /// A table for `max_rules` prefixes and `tbl8` groups (one per /24 holding longer
    /// prefixes). With `qsbr`, a tbl8 group a delete frees is reused only after a grace
    /// period of that variable (DPDK's `rte_lpm_rcu_qsbr_add`, defer-queue mode).
    pub fn new(max_rules: u32, tbl8: u32, qsbr: Option<Arc<Qsbr>>) -> Result<Lpm4, DpdkError> {
        let name = unique_name("lpm4")?;
        let cfg = sys::rte_lpm_config { max_rules, number_tbl8s: tbl8, flags: 0 };
        // SAFETY: valid name and config; DPDK copies both.
        let p = unsafe { sys::rte_lpm_create(name.as_ptr(), sys::SOCKET_ID_ANY, &cfg) };
        let raw = NonNull::new(p).ok_or_else(|| DpdkError::from_errno("rte_lpm_create"))?;
        let lpm = Lpm4 { raw, _qsbr: qsbr.clone() };
        if let Some(q) = qsbr {
            let mut rcu = sys::rte_lpm_rcu_config {
                v: q.as_ptr(),
                mode: sys::rte_lpm_qsbr_mode_RTE_LPM_QSBR_MODE_DQ,
                dq_size: 0,
                reclaim_thd: 0,
                reclaim_max: 0,
            };
            // SAFETY: valid table and QSBR variable (kept alive by `_qsbr`).
            let ret = unsafe { sys::rte_lpm_rcu_qsbr_add(lpm.raw.as_ptr(), &mut rcu) };
            if ret != 0 {
                return Err(DpdkError::from_errno("rte_lpm_rcu_qsbr_add"));
            }
        }
        Ok(lpm)
    }

    /// Add `addr/len` (1..=32) → `value`, or replace its value.
    pub fn add(&mut self, addr: u32, len: u8, value: u32) -> Result<(), DpdkError> {
        self.add_shared(addr, len, value)
    }

    /// Remove `addr/len`; `Ok(false)` if it was not there.
    pub fn delete(&mut self, addr: u32, len: u8) -> Result<bool, DpdkError> {
        self.delete_shared(addr, len)
    }

    /// `add` through a shared reference: only for the single writer of `fib`.
    pub(super) fn add_shared(&self, addr: u32, len: u8, value: u32) -> Result<(), DpdkError> {
        check_value("rte_lpm_add", value)?;
        // SAFETY: valid table; the caller is the only writer.
        let ret = unsafe { sys::rte_lpm_add(self.raw.as_ptr(), addr, len, value) };
        if ret != 0 {
            return Err(DpdkError::from_ret(format!("rte_lpm_add({addr:#x}/{len})"), ret));
        }
        Ok(())
    }

    pub(super) fn delete_shared(&self, addr: u32, len: u8) -> Result<bool, DpdkError> {
        // SAFETY: valid table; the caller is the only writer.
        let ret = unsafe { sys::rte_lpm_delete(self.raw.as_ptr(), addr, len) };
        match ret {
            0 => Ok(true),
            r if r == -libc::EINVAL && (1..=32).contains(&len) => Ok(false),
            r => Err(DpdkError::from_ret(format!("rte_lpm_delete({addr:#x}/{len})"), r)),
        }
    }

    /// The value of the longest prefix covering `addr`.
    #[inline]
    pub fn lookup(&self, addr: u32) -> Option<u32> {
        let mut v = 0u32;
        // SAFETY: valid table, out-pointer on the stack; read-only.
        let ret = unsafe { sys::rte_lpm_lookup(self.raw.as_ptr(), addr, &mut v) };
        (ret == 0).then_some(v)
    }

    /// Look up `addrs` at once; `out[i]` is the value or 0 (no route). `out` must be at
    /// least as long as `addrs`.
    #[inline]
    pub fn lookup_bulk(&self, addrs: &[u32], out: &mut [u32]) {
        let n = addrs.len().min(out.len());
        let mut i = 0;
        while i < n {
            let k = (n - i).min(BULK_MAX);
            // SAFETY: `k` addresses in and `k` slots out, both in bounds.
            unsafe {
                sys::rte_lpm_lookup_bulk_func(
                    self.raw.as_ptr(),
                    addrs.as_ptr().add(i),
                    out.as_mut_ptr().add(i),
                    k as u32,
                );
            }
            for o in &mut out[i..i + k] {
                *o = if *o & sys::RTE_LPM_LOOKUP_SUCCESS != 0 { *o & 0x00ff_ffff } else { 0 };
            }
            i += k;
        }
    }
}

impl Drop for Lpm4 {
    fn drop(&mut self) {
        // SAFETY: no reader is left (the table is dropped with its last Arc).
        unsafe { sys::rte_lpm_free(self.raw.as_ptr()) }
    }
}

/// IPv4 `rte_fib` (DIR-24-8 with 2-byte entries: values up to 2^15 − 1, a 32 MiB first
/// level). In DPDK 22.11 it has no RCU integration: a freed tbl8 group can be reused at once.
pub struct Fib4 {
    raw: NonNull<sys::rte_fib>,
}

// SAFETY: as for Lpm4.
unsafe impl Send for Fib4 {}
unsafe impl Sync for Fib4 {}

impl Fib4 {
    /// A table for `max_routes` prefixes and `tbl8` groups.
    pub fn new(max_routes: u32, tbl8: u32) -> Result<Fib4, DpdkError> {
        let name = unique_name("fib4")?;
        let mut conf = sys::rte_fib_conf {
            type_: sys::rte_fib_type_RTE_FIB_DIR24_8,
            default_nh: 0,
            max_routes: max_routes as i32,
            rib_ext_sz: 0,
            ..Default::default()
        };
        conf.__bindgen_anon_1.dir24_8.nh_sz = sys::rte_fib_dir24_8_nh_sz_RTE_FIB_DIR24_8_2B;
        conf.__bindgen_anon_1.dir24_8.num_tbl8 = tbl8;
        // SAFETY: valid name and config; DPDK copies both.
        let p = unsafe { sys::rte_fib_create(name.as_ptr(), sys::SOCKET_ID_ANY, &mut conf) };
        let raw = NonNull::new(p).ok_or_else(|| DpdkError::from_errno("rte_fib_create"))?;
        Ok(Fib4 { raw })
    }

    /// Add `addr/len` (0..=32) → `value` (≤ [`FIB_MAX_VALUE`]), or replace its value.
    pub fn add(&mut self, addr: u32, len: u8, value: u32) -> Result<(), DpdkError> {
        self.add_shared(addr, len, value)
    }

    /// Remove `addr/len`; `Ok(false)` if it was not there.
    pub fn delete(&mut self, addr: u32, len: u8) -> Result<bool, DpdkError> {
        self.delete_shared(addr, len)
    }

    pub(super) fn add_shared(&self, addr: u32, len: u8, value: u32) -> Result<(), DpdkError> {
        if value == 0 || value > FIB_MAX_VALUE {
            return Err(DpdkError::msg("rte_fib_add", format!("value {value} outside 1..={FIB_MAX_VALUE}")));
        }
        // SAFETY: valid table; the caller is the only writer.
        let ret = unsafe { sys::rte_fib_add(self.raw.as_ptr(), addr, len, u64::from(value)) };
        if ret != 0 {
            return Err(DpdkError::from_ret(format!("rte_fib_add({addr:#x}/{len})"), ret));
        }
        Ok(())
    }

    pub(super) fn delete_shared(&self, addr: u32, len: u8) -> Result<bool, DpdkError> {
        // SAFETY: valid table; the caller is the only writer.
        let ret = unsafe { sys::rte_fib_delete(self.raw.as_ptr(), addr, len) };
        match ret {
            0 => Ok(true),
            r if r == -libc::ENOENT => Ok(false),
            r => Err(DpdkError::from_ret(format!("rte_fib_delete({addr:#x}/{len})"), r)),
        }
    }

    /// Look up `addrs`; `out[i]` is the value or 0.
    #[inline]
    pub fn lookup_bulk(&self, addrs: &[u32], out: &mut [u32]) {
        let n = addrs.len().min(out.len());
        // Per burst: neither zeroed nor copied (the router's hot path).
        let mut nh = std::mem::MaybeUninit::<[u64; BULK_MAX]>::uninit();
        let mut i = 0;
        while i < n {
            let k = (n - i).min(BULK_MAX);
            // SAFETY: `k` addresses in (the API takes `uint32_t *` but only reads them:
            // dir24_8's lookup) and `k` slots out, which a successful lookup has written
            // before we read them.
            let got = unsafe {
                let nhp = nh.as_mut_ptr().cast::<u64>();
                let ret = sys::rte_fib_lookup_bulk(self.raw.as_ptr(), addrs.as_ptr().add(i).cast_mut(), nhp, k as i32);
                (ret == 0).then(|| std::slice::from_raw_parts(nhp, k))
            };
            match got {
                Some(got) => out[i..i + k].iter_mut().zip(got).for_each(|(o, v)| *o = *v as u32),
                None => out[i..i + k].fill(0),
            }
            i += k;
        }
    }

    /// One address (a bulk call of one, without the burst arrays).
    #[inline]
    pub fn lookup(&self, addr: u32) -> Option<u32> {
        let mut ip = addr;
        let mut nh = 0u64;
        // SAFETY: one address in, one slot out, both on the stack.
        unsafe { sys::rte_fib_lookup_bulk(self.raw.as_ptr(), &mut ip, &mut nh, 1) };
        (nh != 0).then_some(nh as u32)
    }
}

impl Drop for Fib4 {
    fn drop(&mut self) {
        // SAFETY: no reader is left.
        unsafe { sys::rte_fib_free(self.raw.as_ptr()) }
    }
}

/// IPv6 `rte_lpm6` (a 2^24-entry first level, then one tbl8 per further byte).
pub struct Lpm6 {
    raw: NonNull<sys::rte_lpm6>,
}

// SAFETY: as for Lpm4.
unsafe impl Send for Lpm6 {}
unsafe impl Sync for Lpm6 {}

impl Lpm6 {
    /// A table for `max_rules` prefixes and `tbl8` groups.
    pub fn new(max_rules: u32, tbl8: u32) -> Result<Lpm6, DpdkError> {
        let name = unique_name("lpm6")?;
        let cfg = sys::rte_lpm6_config { max_rules, number_tbl8s: tbl8, flags: 0 };
        // SAFETY: valid name and config.
        let p = unsafe { sys::rte_lpm6_create(name.as_ptr(), sys::SOCKET_ID_ANY, &cfg) };
        let raw = NonNull::new(p).ok_or_else(|| DpdkError::from_errno("rte_lpm6_create"))?;
        Ok(Lpm6 { raw })
    }

    /// Add `addr/len` (1..=128) → `value`, or replace its value.
    pub fn add(&mut self, addr: &[u8; 16], len: u8, value: u32) -> Result<(), DpdkError> {
        check_value("rte_lpm6_add", value)?;
        // SAFETY: valid table, 16-byte address; one writer (`&mut self`).
        let ret = unsafe { sys::rte_lpm6_add(self.raw.as_ptr(), addr.as_ptr(), len, value) };
        if ret != 0 {
            return Err(DpdkError::from_ret(format!("rte_lpm6_add(/{len})"), ret));
        }
        Ok(())
    }

    /// Remove `addr/len`; `Ok(false)` if it was not there.
    pub fn delete(&mut self, addr: &[u8; 16], len: u8) -> Result<bool, DpdkError> {
        // SAFETY: valid table, 16-byte address; one writer.
        let ret = unsafe { sys::rte_lpm6_delete(self.raw.as_ptr(), addr.as_ptr(), len) };
        match ret {
            0 => Ok(true),
            r if r == -libc::EINVAL || r == -libc::ENOENT => Ok(false),
            r => Err(DpdkError::from_ret(format!("rte_lpm6_delete(/{len})"), r)),
        }
    }

    /// One address.
    #[inline]
    pub fn lookup(&self, addr: &[u8; 16]) -> Option<u32> {
        let mut v = 0u32;
        // SAFETY: valid table, 16-byte address, out-pointer on the stack.
        let ret = unsafe { sys::rte_lpm6_lookup(self.raw.as_ptr(), addr.as_ptr(), &mut v) };
        (ret == 0).then_some(v)
    }

    /// Look up `addrs`; `out[i]` is the value or 0.
    #[inline]
    pub fn lookup_bulk(&self, addrs: &[[u8; 16]], out: &mut [u32]) {
        let n = addrs.len().min(out.len());
        let mut ips = [[0u8; 16]; BULK_MAX];
        let mut nh = [0i32; BULK_MAX];
        let mut i = 0;
        while i < n {
            let k = (n - i).min(BULK_MAX);
            ips[..k].copy_from_slice(&addrs[i..i + k]);
            // SAFETY: `k` entries in and out, on the stack.
            unsafe { sys::rte_lpm6_lookup_bulk_func(self.raw.as_ptr(), ips.as_mut_ptr(), nh.as_mut_ptr(), k as u32) };
            for (o, v) in out[i..i + k].iter_mut().zip(&nh[..k]) {
                *o = if *v < 0 { 0 } else { *v as u32 };
            }
            i += k;
        }
    }
}

impl Drop for Lpm6 {
    fn drop(&mut self) {
        // SAFETY: no reader is left.
        unsafe { sys::rte_lpm6_free(self.raw.as_ptr()) }
    }
}

/// IPv6 `rte_fib6` (trie with 2-byte entries: values up to 2^15 − 1, a 32 MiB first
/// level; 4-byte entries for more than [`FIB6_2B_MAX_TBL8`] tbl8 groups). In DPDK 22.11 it has no RCU integration, and its trie does not give back every
/// tbl8 group a delete frees: `Fib6::rebuild` replaces the whole table with an empty one.
pub struct Fib6 {
    /// Swapped by [`Fib6::rebuild`] only while no reader uses this table.
    raw: AtomicPtr<sys::rte_fib6>,
    max_routes: u32,
    tbl8: u32,
}

// SAFETY: as for Lpm4.
unsafe impl Send for Fib6 {}
unsafe impl Sync for Fib6 {}

/// The most tbl8 groups 2-byte trie entries can index (DPDK's `get_max_nh`); a bigger pool
/// takes 4-byte entries (a 64 MiB first level and 1 KiB per group instead of 32 MiB and
/// 512 B).
pub const FIB6_2B_MAX_TBL8: u32 = (1 << 15) - 1;

fn fib6_create(max_routes: u32, tbl8: u32) -> Result<NonNull<sys::rte_fib6>, DpdkError> {
    let name = unique_name("fib6")?;
    let mut conf = sys::rte_fib6_conf {
        type_: sys::rte_fib6_type_RTE_FIB6_TRIE,
        default_nh: 0,
        max_routes: max_routes as i32,
        rib_ext_sz: 0,
        ..Default::default()
    };
    conf.__bindgen_anon_1.trie.nh_sz = if tbl8 > FIB6_2B_MAX_TBL8 {
        sys::rte_fib_trie_nh_sz_RTE_FIB6_TRIE_4B
    } else {
        sys::rte_fib_trie_nh_sz_RTE_FIB6_TRIE_2B
    };
    conf.__bindgen_anon_1.trie.num_tbl8 = tbl8;
    // SAFETY: valid name and config.
    let p = unsafe { sys::rte_fib6_create(name.as_ptr(), sys::SOCKET_ID_ANY, &mut conf) };
    NonNull::new(p).ok_or_else(|| DpdkError::from_errno("rte_fib6_create"))
}

impl Fib6 {
    /// A table for `max_routes` prefixes and `tbl8` groups.
    pub fn new(max_routes: u32, tbl8: u32) -> Result<Fib6, DpdkError> {
        let raw = fib6_create(max_routes, tbl8)?;
        Ok(Fib6 { raw: AtomicPtr::new(raw.as_ptr()), max_routes, tbl8 })
    }

    #[inline]
    fn raw(&self) -> *mut sys::rte_fib6 {
        self.raw.load(Ordering::Acquire)
    }

    /// Replace the table with an empty one of the same size (every tbl8 group free again);
    /// the new one is created before the old one is freed, so a failure leaves the table as
    /// it was (it needs room for a third table for a moment).
    ///
    /// # Safety
    /// No lookup may run on this table, nor start before this returns (the standby copy,
    /// past a grace period), and no other writer.
    pub(super) unsafe fn rebuild(&self) -> Result<(), DpdkError> {
        let new = fib6_create(self.max_routes, self.tbl8)?;
        let old = self.raw.swap(new.as_ptr(), Ordering::AcqRel);
        // SAFETY: the caller guarantees nobody uses the old table any more.
        unsafe { sys::rte_fib6_free(old) };
        Ok(())
    }

    /// Add `addr/len` (0..=128) → `value` (≤ [`FIB_MAX_VALUE`]), or replace its value.
    pub fn add(&mut self, addr: &[u8; 16], len: u8, value: u32) -> Result<(), DpdkError> {
        self.add_shared(addr, len, value)
    }

    /// Remove `addr/len`; `Ok(false)` if it was not there.
    pub fn delete(&mut self, addr: &[u8; 16], len: u8) -> Result<bool, DpdkError> {
        self.delete_shared(addr, len)
    }

    pub(super) fn add_shared(&self, addr: &[u8; 16], len: u8, value: u32) -> Result<(), DpdkError> {
        if value == 0 || value > FIB_MAX_VALUE {
            return Err(DpdkError::msg("rte_fib6_add", format!("value {value} outside 1..={FIB_MAX_VALUE}")));
        }
        // SAFETY: valid table, 16-byte address; the caller is the only writer of this copy.
        let ret = unsafe { sys::rte_fib6_add(self.raw(), addr.as_ptr(), len, u64::from(value)) };
        if ret != 0 {
            return Err(DpdkError::from_ret(format!("rte_fib6_add(/{len})"), ret));
        }
        Ok(())
    }

    pub(super) fn delete_shared(&self, addr: &[u8; 16], len: u8) -> Result<bool, DpdkError> {
        // SAFETY: as for add_shared.
        let ret = unsafe { sys::rte_fib6_delete(self.raw(), addr.as_ptr(), len) };
        match ret {
            0 => Ok(true),
            r if r == -libc::ENOENT => Ok(false),
            r => Err(DpdkError::from_ret(format!("rte_fib6_delete(/{len})"), r)),
        }
    }

    /// Look up `addrs`; `out[i]` is the value or 0.
    #[inline]
    pub fn lookup_bulk(&self, addrs: &[[u8; 16]], out: &mut [u32]) {
        let n = addrs.len().min(out.len());
        let mut ips = [[0u8; 16]; BULK_MAX];
        let mut nh = [0u64; BULK_MAX];
        let mut i = 0;
        while i < n {
            let k = (n - i).min(BULK_MAX);
            ips[..k].copy_from_slice(&addrs[i..i + k]);
            // SAFETY: `k` entries in and out, on the stack.
            unsafe { sys::rte_fib6_lookup_bulk(self.raw(), ips.as_mut_ptr(), nh.as_mut_ptr(), k as i32) };
            for (o, v) in out[i..i + k].iter_mut().zip(&nh[..k]) {
                *o = *v as u32;
            }
            i += k;
        }
    }

    /// One address (a bulk call of one, without the burst arrays).
    #[inline]
    pub fn lookup(&self, addr: &[u8; 16]) -> Option<u32> {
        let mut ip = [*addr];
        let mut nh = 0u64;
        // SAFETY: one address in, one slot out, both on the stack.
        unsafe { sys::rte_fib6_lookup_bulk(self.raw(), ip.as_mut_ptr(), &mut nh, 1) };
        (nh != 0).then_some(nh as u32)
    }
}

impl Drop for Fib6 {
    fn drop(&mut self) {
        // SAFETY: no reader is left.
        unsafe { sys::rte_fib6_free(self.raw()) }
    }
}
