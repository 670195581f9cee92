//! The port map (`--ports`): how SONiC port names land on this machine's DPDK devices,
//! the way `port_config.ini` maps names to lanes on an ASIC switch.
//!
//! TOML: a top-level `Ethernet0 = "<devargs>"` per port, or `Ethernet0 = { devargs = "…",
//! <any [[port]] field> }` to add pfcswitch's own port settings; the sections pfcswitch has
//! and CONFIG_DB has not (`[eal]`, `[switch]`, `[lcores]`, `[control_plane]`, `[lldp]`)
//! are copied into the generated configuration as written. A map that names no port (only
//! sections) leaves every port on `net_null<i>`; one that names some must name all.
//!
//! CSV (a file not ending in `.toml`): one `name,devargs` per line (the devargs may
//! themselves contain commas), `#` comments and blank lines ignored.

use super::error::{one_line, SonicError};
use std::collections::BTreeMap;
use toml::{Table, Value};

/// Sections of the pfcswitch configuration a port map may carry.
pub const SECTIONS: &[&str] = &["eal", "switch", "lcores", "control_plane", "lldp"];

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PortMap {
    /// The map's file name, for errors.
    pub file: String,
    /// SONiC port name → `[[port]]` fields (at least `devargs`).
    pub ports: BTreeMap<String, Table>,
    /// `[eal]`, `[switch]`, … as written.
    pub sections: Table,
}

impl PortMap {
    pub fn load(path: &std::path::Path) -> Result<PortMap, SonicError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| SonicError::Io { file: one_line(&file), msg: one_line(&e.to_string()) })?;
        if path.extension().is_some_and(|e| e == "toml") {
            PortMap::from_toml(&text, &file)
        } else {
            PortMap::from_csv(&text, &file)
        }
    }

    pub fn from_toml(text: &str, file: &str) -> Result<PortMap, SonicError> {
        let bad = |msg: String| SonicError::PortMap { file: one_line(file), msg: one_line(&msg) };
        let top: Table = toml::from_str(text).map_err(|e| bad(e.message().to_string()))?;
        let mut map = PortMap { file: file.to_string(), ..PortMap::default() };
        for (k, v) in top {
            match v {
                Value::String(devargs) => {
                    let mut t = Table::new();
                    t.insert("devargs".into(), Value::String(devargs));
                    map.ports.insert(k, t);
                }
                Value::Table(t) if SECTIONS.contains(&k.as_str()) => {
                    map.sections.insert(k, Value::Table(t));
                }
                Value::Table(t) => {
                    if !matches!(t.get("devargs"), Some(Value::String(_))) {
                        return Err(bad(format!("{k}.devargs: missing (a port needs its devargs)")));
                    }
                    for f in ["name", "speed", "mtu", "admin_status", "cable_length", "pfc_enable"] {
                        if t.contains_key(f) {
                            return Err(bad(format!("{k}.{f}: comes from CONFIG_DB, not from the port map")));
                        }
                    }
                    map.ports.insert(k, t);
                }
                other => {
                    return Err(bad(format!(
                        "{k}: expected \"<devargs>\", a table of port fields, or one of the sections {}; found {}",
                        SECTIONS.join(", "),
                        other.type_str()
                    )))
                }
            }
        }
        Ok(map)
    }

    pub fn from_csv(text: &str, file: &str) -> Result<PortMap, SonicError> {
        let mut map = PortMap { file: file.to_string(), ..PortMap::default() };
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |msg: &str| SonicError::PortMap { file: one_line(file), msg: format!("line {}: {msg}", i + 1) };
            let (name, devargs) = line.split_once(',').ok_or_else(|| bad("expected 'name,devargs'"))?;
            let (name, devargs) = (name.trim(), devargs.trim());
            if name.is_empty() || devargs.is_empty() {
                return Err(bad("expected 'name,devargs'"));
            }
            let mut t = Table::new();
            t.insert("devargs".into(), Value::String(devargs.to_string()));
            if map.ports.insert(name.to_string(), t).is_some() {
                return Err(bad(&format!("'{name}' is mapped twice")));
            }
        }
        Ok(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_and_csv() {
        let m = PortMap::from_toml(
            "Ethernet0 = \"0000:3b:00.0\"\nEthernet4 = { devargs = \"net_tap0,iface=sw0\", tx_inflight_limit = \"off\" }\n[eal]\nargs = [\"--no-pci\"]\n",
            "m.toml",
        )
        .unwrap();
        assert_eq!(m.ports["Ethernet0"]["devargs"].as_str(), Some("0000:3b:00.0"));
        assert_eq!(m.ports["Ethernet4"]["tx_inflight_limit"].as_str(), Some("off"));
        assert!(m.sections.contains_key("eal"));
        let e = PortMap::from_toml("Ethernet0 = { speed = \"1G\", devargs = \"x\" }", "m.toml").unwrap_err();
        assert_eq!(e.to_string(), "m.toml: Ethernet0.speed: comes from CONFIG_DB, not from the port map");

        let m =
            PortMap::from_csv("# name,devargs\nEthernet0,net_pcap0,rx_pcap=a.pcap\n\nEthernet4, net_null1\n", "m.csv")
                .unwrap();
        assert_eq!(m.ports["Ethernet0"]["devargs"].as_str(), Some("net_pcap0,rx_pcap=a.pcap"));
        assert_eq!(m.ports["Ethernet4"]["devargs"].as_str(), Some("net_null1"));
        let e = PortMap::from_csv("Ethernet0\n", "m.csv").unwrap_err();
        assert_eq!(e.to_string(), "m.csv: line 1: expected 'name,devargs'");
    }
}
