use std::ffi::CStr;

use super::sys;

/// A DPDK call that failed, with the operation, DPDK's error code and its text.
#[derive(Debug, thiserror::Error)]
#[error("{op}: {msg} (code {code})")]
pub struct DpdkError {
    pub op: String,
    pub code: i32,
    pub msg: String,
}

extern "C" {
    fn pfcsw_rte_errno() -> i32;
}

impl DpdkError {
    /// Build from a negative-errno style return value.
    pub(crate) fn from_ret(op: impl Into<String>, ret: i32) -> Self {
        let code = ret.abs();
        DpdkError { op: op.into(), code, msg: strerror(code) }
    }
    /// Build from the current lcore's `rte_errno`.
    pub(crate) fn from_errno(op: impl Into<String>) -> Self {
        // SAFETY: reads a thread-local int.
        let code = unsafe { pfcsw_rte_errno() };
        DpdkError { op: op.into(), code, msg: strerror(code) }
    }
    pub(crate) fn msg(op: impl Into<String>, msg: impl Into<String>) -> Self {
        DpdkError { op: op.into(), code: 0, msg: msg.into() }
    }
}

fn strerror(code: i32) -> String {
    // SAFETY: rte_strerror returns a pointer to a static or thread-local NUL-terminated string.
    unsafe {
        let p = sys::rte_strerror(code);
        if p.is_null() {
            return format!("error {code}");
        }
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}
