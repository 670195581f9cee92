//! The only place with `unsafe`: safe types over DPDK's C API (EAL, lcores, TSC, mempool,
//! mbufs, ethdev ports, telemetry, routing tables and RCU). Everything above this module is safe Rust.
//!
//! Soundness rules this layer enforces with types:
//! * one EAL per process ([`Eal`] is a singleton guard);
//! * an RX or TX queue is used by one lcore at a time: queues are owned tokens
//!   ([`RxQueue`], [`TxQueue`]) that are `Send` but not `Clone`;
//! * an mbuf has exactly one owner ([`Mbuf`] frees itself on drop).

mod eal;
mod error;
pub mod fib;
mod lcore;
pub mod lpm;
mod mbuf;
mod mempool;
mod port;
mod qsbr;
pub(crate) mod sys;
mod tap_mtu;
pub mod telemetry;
pub mod threads;
mod tsc;

pub use eal::{heap_allocated_bytes, pdump_init, Eal};
pub use error::DpdkError;
pub use lcore::{current_lcore, launch_on, main_lcore, set_timer_slack_ns, LcoreHandle};
pub use mbuf::{Drain, HeldMbuf, Mbuf, MbufBurst, BURST_CAP};
pub use mempool::Mempool;
pub use port::{
    dev_info, lcore_socket, link_of, max_queues, set_link, stats_of, DevInfo, FlowCtrlOutcome, LinkStatus, Port,
    PortStats, RxQueue, TxQueue,
};
pub use qsbr::{Qsbr, QsbrReader};
pub use tap_mtu::{mtu_of, raise_tap_mtu};
pub use tsc::{rdtsc, tsc_hz};

/// The most ethdev ports this DPDK build probes (`RTE_MAX_ETHPORTS`; 32 as Debian builds it).
pub const MAX_PORTS: usize = sys::RTE_MAX_ETHPORTS as usize;
