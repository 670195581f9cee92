//! pfcswitch: a DPDK software top-of-rack switch with a lossless Ethernet class.
//!
//! Data flows one way: `wire` (parse) → `classify` → `fdb` (forward) → `mmu` (admit) →
//! egress queues → `sched` → transmit. `pfc` turns MMU edges into frames and received
//! frames into pause deadlines. Everything here is safe Rust; the only `unsafe` code is in
//! `dpdk` (FFI), and the pure engine builds and tests without DPDK
//! (`cargo test --no-default-features --lib`).

#![deny(unsafe_code)]

pub mod units;
pub mod wire;
pub mod classify;
pub mod fdb;
pub mod mmu;
pub mod headroom;
pub mod pfc;
pub mod config;
pub mod sched;
pub mod plan;
pub mod pfcwd;
pub mod show;
pub mod counters;

#[cfg(feature = "dpdk")]
#[allow(unsafe_code)]
pub mod dpdk;
#[cfg(feature = "dpdk")]
pub mod dataplane;
