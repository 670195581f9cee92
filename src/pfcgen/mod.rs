//! `pfcgen`: a traffic generator that obeys PFC, on the switch's own parts (the PFC
//! receive state machine [`crate::pfc::PfcRx`] and its quanta→TSC timers, the wire
//! codecs, the EAL/port layer). Reference: `docs/pfcgen.md`.
//!
//! Data flows one way: [`spec`] (file + command line → ports and streams) → [`engine`]
//! (per port: receive PFC and pfcgen frames, then build and send what [`pacer`] says is
//! due and PFC allows, frames from [`frame`] carrying a [`payload`] header) → [`rxstats`]
//! (loss, reordering, duplicates, latency, CE per stream) → [`live`] lines and the JSON
//! summary of [`run`]. RoCEv2 streams carry a BTH and ICRC ([`roce`]); a sink answers
//! their CE marks with CNPs, and a sender's [`dcqcn`] reaction point sets its rate from
//! the CNPs it gets. Everything but `engine` and `run` is pure and tested without EAL.

pub mod dcqcn;
pub mod frame;
pub mod live;
pub mod pacer;
pub mod payload;
pub mod roce;
pub mod rxstats;
pub mod spec;

#[cfg(feature = "dpdk")]
pub mod engine;
#[cfg(feature = "dpdk")]
pub mod run;
