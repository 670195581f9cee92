//! `pfcswitch show ...` / `clear ...`: SONiC-style tables from a running instance's
//! telemetry (the same `/pfcswitch/...` commands `dpdk-telemetry.py` reads). Pure logic
//! over JSON: what to ask ([`fetch`], given a function that sends one command), `clear`
//! snapshots, and formatting; the socket is in `dpdk::telemetry`.
//!
//! [`views::VIEWS`] declares each view once (words, command, reading, renderer);
//! [`commands`] declares each telemetry command once, for the switch and its readers.

mod clear;
pub mod commands;
mod ecn;
mod lldp;
mod reading;
mod render;
mod routing;
mod table;
mod views;

pub use clear::{
    fdb_clear_command, read_snapshot, since_clear, snapshot_path, subtract, watermark_clear_command, write_snapshot,
    Instance, Snapshot,
};
pub use ecn::render_ecn;
pub use reading::{fetch, fetch_rows, unflatten, Reading, ShowError, FLAT_SEP};
pub use table::table;
pub use views::{render, Fetch, View, ViewDef, VIEWS};

#[cfg(test)]
mod tests;
