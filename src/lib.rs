//! pfcswitch: a DPDK software top-of-rack switch with a lossless Ethernet class.
//!
//! Data flows one way: `wire` (parse) → `classify` → `fdb` (forward) → `mmu` (admit) →
//! egress queues → `sched` → transmit. `pfc` turns MMU edges into frames and received
//! frames into pause deadlines. Everything here is safe Rust; the only `unsafe` code is in
//! `dpdk` (FFI), and the pure engine builds and tests without DPDK
//! (`cargo test --no-default-features --lib`).

#![deny(unsafe_code)]

pub mod classify;
pub mod config;
pub mod counters;
pub mod exporter;
pub mod fdb;
pub mod headroom;
pub mod http;
pub mod kernel;
pub mod lldp;
pub mod mmu;
pub mod nic;
pub mod pending;
pub mod pfc;
pub mod pfcgen;
pub mod pfcwd;
pub mod plan;
pub mod reconfig;
pub mod reload;
pub mod route;
pub mod sched;
pub mod show;
pub mod sonic;
pub mod tcq;
pub mod thresholds;
pub mod units;
pub mod vlan;
pub mod wire;
pub mod wred;

#[cfg(feature = "dpdk")]
pub mod dataplane;
#[cfg(feature = "dpdk")]
#[allow(unsafe_code)]
pub mod dpdk;
#[cfg(feature = "dpdk")]
pub mod probe;
