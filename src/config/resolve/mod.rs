//! Validation and resolution: raw TOML → [`Config`]. Every error names its field.

use super::duration::parse_duration_ns;
use super::error::{join, FResult, FieldError};
use super::raw::*;
use super::types::*;
use crate::units::{format_speed, parse_bytes, parse_length_m, parse_speed};
use std::collections::{BTreeSet, HashMap};
use toml::{Table, Value};

mod buffer;
mod eal;
mod lcores;
mod ports;
mod qos;
mod routing;
mod switch;
mod vlan;
mod wred;

use buffer::resolve_buffer;
pub use eal::parse_lcore_set;
use eal::{check_eal, check_memory, warn_devargs};
use lcores::resolve_lcores;
pub use ports::{parse_bdf, parse_devargs, VDEV_PREFIXES};
use ports::{port_by_name, resolve_ports};
use qos::{parse_binding_key, resolve_qos};
use switch::{compute_mbufs, resolve_lldp, resolve_pfcwd, resolve_switch};

/// Defaults, documented in the module docs.
pub mod defaults {
    pub const FDB_AGING_TIME: u32 = 600;
    pub const FDB_SIZE: usize = 65536;
    pub const BURST_SIZE: u16 = 32;
    pub const RX_RING_SIZE: u16 = 1024;
    pub const TX_RING_SIZE: u16 = 1024;
    pub const CABLE_LENGTH: &str = "5m";
    pub const MTU: u16 = 9100;
    pub const PFC_ENABLE: [u8; 2] = [3, 4];
    pub const TOTAL_SIZE: u64 = 12 << 20;
    /// Cell size when `[buffer]` is absent altogether.
    pub const CELL_SIZE: u32 = 256;
    /// `speed = "auto"` before the link reports its speed (check-config, planning): 100G,
    /// so that nothing is sized for less than the link may turn out to be.
    pub const AUTO_SPEED_BPS: u64 = 100_000_000_000;
    pub const LOSSLESS_PRIVATE: u64 = 4096;
    pub const LOSSLESS_DYNAMIC_TH: i8 = 0;
    pub const LOSSY_DYNAMIC_TH: i8 = 3;
    /// `lcores.control_nap`: ~1 % of a CPU in wake-ups; a RESUME after a quiet spell waits
    /// at most this long (workers send the PAUSE and refresh it meanwhile).
    pub const CONTROL_NAP_NS: u64 = 10_000_000;
}

struct Ctx<'a> {
    origin: &'a str,
    warnings: Vec<String>,
}

impl Ctx<'_> {
    fn warn(&mut self, path: &str, msg: impl AsRef<str>) {
        self.warnings.push(format!("{}: {}: {}", self.origin, path, super::error::one_line(msg.as_ref())));
    }
}

fn in_range(v: i64, lo: i64, hi: i64, path: &str) -> FResult<i64> {
    if v < lo || v > hi {
        Err(FieldError::new(path, format!("{v} is out of range {lo}..={hi}")))
    } else {
        Ok(v)
    }
}

fn pow2_in(v: i64, lo: i64, hi: i64, path: &str) -> FResult<i64> {
    in_range(v, lo, hi, path)?;
    if (v as u64).is_power_of_two() {
        Ok(v)
    } else {
        Err(FieldError::new(path, format!("{v} is not a power of two")))
    }
}

fn speed(h: &Human, path: &str) -> FResult<u64> {
    parse_speed(&h.text()).map_err(|e| FieldError::new(path, e.to_string()))
}

fn bytes(h: &Human, path: &str) -> FResult<u64> {
    if let Human::Int(i) = h {
        if *i < 0 {
            return Err(FieldError::new(path, format!("{i} is negative")));
        }
    }
    parse_bytes(&h.text()).map_err(|e| FieldError::new(path, e.to_string()))
}

fn fmt_bytes(b: u64) -> String {
    if b >= 1 << 20 && b & 1023 == 0 {
        format!("{:.2} MiB ({b} B)", b as f64 / (1u64 << 20) as f64)
    } else {
        format!("{b} B")
    }
}

/// Entry point: the parsed document → validated config.
pub(crate) fn resolve(top: &Table, origin: &str) -> FResult<Config> {
    let mut ctx = Ctx { origin, warnings: Vec::new() };
    for k in top.keys() {
        if !SECTIONS.contains(&k.as_str()) {
            return Err(FieldError::new(
                join("", k),
                format!("unknown section, expected one of {}", SECTIONS.join(", ")),
            ));
        }
    }
    let eal: RawEal = match top.get("eal") {
        Some(v) => {
            expect_table(v, "eal")?;
            de(v, "eal")?
        }
        None => RawEal { args: Vec::new(), file_prefix: None, allow_eal_plugins: None },
    };
    let sw: RawSwitch = match top.get("switch") {
        Some(v) => {
            expect_table(v, "switch")?;
            de(v, "switch")?
        }
        None => RawSwitch::default(),
    };
    let mut switch = resolve_switch(&sw)?;
    let mut ports = resolve_ports(top.get("port"), &mut ctx)?;
    let mut qos = match top.get("qos") {
        Some(v) => {
            expect_table(v, "qos")?;
            resolve_qos(&de::<RawQos>(v, "qos")?)?
        }
        None => QosConfig::default(),
    };
    let qos_table = top.get("qos").and_then(|v| v.as_table()).cloned().unwrap_or_default();
    (qos.wred_profiles, qos.queue_wred) = wred::resolve(&qos_table, &ports)?;
    let pfcwd = match top.get("pfcwd") {
        Some(v) => {
            expect_table(v, "pfcwd")?;
            Some(resolve_pfcwd(&de::<RawPfcwd>(v, "pfcwd")?)?)
        }
        None => None,
    };
    let lldp = match top.get("lldp") {
        Some(v) => {
            expect_table(v, "lldp")?;
            resolve_lldp(&de::<RawLldp>(v, "lldp")?)?
        }
        None => LldpConfig::default(),
    };
    let mut lcores = resolve_lcores(top.get("lcores"), &mut ports)?;
    // The router first (its errors name `[[port]]`s), then its representors become ports
    // that everything after (buffer, EAL arguments, mbufs) counts like any other.
    let mut routing = routing::resolve_routing(top, &sw, &ports)?;
    // VLAN members are `[[port]]`s: resolved before the representors join the ports.
    let vlans = vlan::resolve_vlans(top, &ports, &routing)?;
    routing.vlan_interfaces = vlans
        .vlans
        .iter()
        .filter_map(|v| {
            let addrs = v.interface.clone()?;
            Some(VlanInterface { name: v.name.clone(), vid: v.vid, addrs })
        })
        .collect();
    routing::add_representors(&mut ports, &mut lcores, &routing, &vlans)?;
    routing::check_namespace(&routing, &mut ctx)?;
    let buffer = resolve_buffer(top.get("buffer"), &ports, &qos, &mut ctx)?;
    check_eal(&eal, &ports, &lcores, top.contains_key("lcores"))?;
    warn_devargs(&ports, &mut ctx);
    compute_mbufs(&mut switch, &sw, &ports, &lcores, &buffer, &mut ctx)?;
    check_memory(&eal.args, &routing, &switch, &ports)?;
    Ok(Config {
        origin: origin.to_string(),
        eal: EalConfig { args: eal.args, file_prefix: eal.file_prefix },
        switch,
        ports,
        lcores,
        buffer,
        qos,
        pfcwd,
        routing,
        vlans,
        lldp,
        warnings: ctx.warnings,
    })
}
