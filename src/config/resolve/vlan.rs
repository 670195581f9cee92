//! `[vlan]`, `[vlan_member]` and `[vlan_interface]`: SONiC's `VLAN`, `VLAN_MEMBER` and
//! `VLAN_INTERFACE` tables (docs/switching.md).

use super::*;

/// The most ports a VLAN's member set holds (a `u64` bitmap per VLAN on the fast path).
pub const MAX_VLAN_PORTS: usize = 64;

/// `Vlan<N>` → N (1..=4094), as SONiC names VLANs.
fn vid_of_name(name: &str, path: &str) -> FResult<u16> {
    let n = name
        .strip_prefix("Vlan")
        .and_then(|d| (!d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())).then(|| d.parse::<i64>().ok()))
        .flatten()
        .ok_or_else(|| {
            FieldError::new(path, format!("'{name}' is not a VLAN name: expected Vlan<1..4094>, e.g. Vlan1000"))
        })?;
    Ok(in_range(n, 1, 4094, path)? as u16)
}

pub(super) fn resolve_vlans(top: &Table, ports: &[PortConfig], routing: &RoutingConfig) -> FResult<VlanConfig> {
    let mut vlans: Vec<VlanDef> = Vec::new();
    if let Some(v) = top.get("vlan") {
        for (name, val) in expect_table(v, "vlan")? {
            let path = join("vlan", name);
            let vid = vid_of_name(name, &path)?;
            expect_table(val, &path)?;
            let raw: RawVlan = de(val, &path)?;
            if let Some(IntLike(id)) = raw.vlanid {
                if id != i64::from(vid) {
                    return Err(FieldError::new(
                        join(&path, "vlanid"),
                        format!("{id} does not match the VLAN's name {name} (SONiC: VLAN|Vlan<vlanid>)"),
                    ));
                }
            }
            vlans.push(VlanDef { name: name.clone(), vid, members: Vec::new(), interface: None });
        }
    }
    vlans.sort_by_key(|v| v.vid);
    if !vlans.is_empty() && ports.len() > MAX_VLAN_PORTS {
        return Err(FieldError::new(
            "vlan",
            format!("VLANs need at most {MAX_VLAN_PORTS} ports, the switch has {}", ports.len()),
        ));
    }
    let find = |vlans: &[VlanDef], name: &str| vlans.iter().position(|v| v.name == name);
    // Per port: the untagged VLAN's member key, to name it in the error.
    let mut untagged: Vec<Option<String>> = vec![None; ports.len()];
    if let Some(v) = top.get("vlan_member") {
        for (key, val) in expect_table(v, "vlan_member")? {
            let path = join("vlan_member", key);
            let Some((vname, pname)) = key.split_once('|') else {
                return Err(FieldError::new(&path, "expected a key \"<vlan>|<port>\", e.g. \"Vlan1000|Ethernet0\""));
            };
            let vi = find(&vlans, vname).ok_or_else(|| {
                FieldError::new(&path, format!("unknown VLAN '{vname}' (declare it as [vlan.{vname}])"))
            })?;
            let port = port_by_name(ports, pname, &path)?;
            if routing.is_routed(port) {
                return Err(FieldError::new(
                    &path,
                    format!("{pname} is a router interface ([interface]): a routed port is in no VLAN"),
                ));
            }
            expect_table(val, &path)?;
            let raw: RawVlanMember = de(val, &path)?;
            let tagged = raw.tagging_mode == RawTaggingMode::Tagged;
            if !tagged {
                if let Some(prev) = &untagged[port] {
                    return Err(FieldError::new(
                        join(&path, "tagging_mode"),
                        format!(
                            "{pname} is already an untagged member at {prev} (a port has at most one untagged VLAN)"
                        ),
                    ));
                }
                untagged[port] = Some(path.clone());
            }
            if port >= MAX_VLAN_PORTS {
                return Err(FieldError::new(
                    &path,
                    format!("only the first {MAX_VLAN_PORTS} ports can be VLAN members"),
                ));
            }
            vlans[vi].members.push(VlanMember { port, tagged });
        }
    }
    for v in &mut vlans {
        v.members.sort_by_key(|m| m.port);
    }
    if let Some(v) = top.get("vlan_interface") {
        // An address may be configured once, on a port or on a VLAN.
        let mut seen: HashMap<std::net::IpAddr, String> = HashMap::new();
        for ri in &routing.interfaces {
            for (i, a) in ri.addrs.iter().enumerate() {
                seen.insert(a.addr, format!("interface.{}[{i}]", ports[ri.port].name));
            }
        }
        for (name, val) in expect_table(v, "vlan_interface")? {
            let path = join("vlan_interface", name);
            let vi = find(&vlans, name).ok_or_else(|| {
                FieldError::new(&path, format!("unknown VLAN '{name}' (declare it as [vlan.{name}])"))
            })?;
            vlans[vi].interface = Some(routing::addr_list(val, &path, &mut seen)?);
        }
    }
    Ok(VlanConfig { vlans })
}

#[cfg(test)]
mod tests {
    use crate::config::from_str;

    const BASE: &str = r#"
[[port]]
name = "Ethernet0"
devargs = "net_null0"
speed = "100G"

[[port]]
name = "Ethernet4"
devargs = "net_null1"
speed = "100G"

[[port]]
name = "Ethernet8"
devargs = "net_null2"
speed = "100G"
"#;

    fn cfg(extra: &str) -> Result<crate::config::Config, String> {
        from_str(&format!("{BASE}\n{extra}"), "t.toml").map_err(|e| e.to_string())
    }

    const T0: &str = r#"
[control_plane]
netns = "t0"
[vlan.Vlan1000]
vlanid = 1000
[vlan.Vlan20]
[vlan_member]
"Vlan1000|Ethernet4" = { tagging_mode = "untagged" }
"Vlan1000|Ethernet0" = { tagging_mode = "untagged" }
"Vlan20|Ethernet0" = { tagging_mode = "tagged" }
[vlan_interface]
Vlan1000 = ["192.168.0.1/21"]
"#;

    #[test]
    fn vlans_resolve() {
        let c = cfg(T0).unwrap();
        let v = &c.vlans.vlans;
        assert_eq!(
            v.iter().map(|v| (v.name.as_str(), v.vid)).collect::<Vec<_>>(),
            [("Vlan20", 20), ("Vlan1000", 1000)]
        );
        let m = |i: usize| v[i].members.iter().map(|m| (m.port, m.tagged)).collect::<Vec<_>>();
        assert_eq!(m(1), [(0, false), (1, false)]);
        assert_eq!(m(0), [(0, true)]);
        assert_eq!(v[1].interface.as_ref().unwrap()[0].to_string(), "192.168.0.1/21");
        assert!(v[0].interface.is_none());
        // Vlan1000 routes: a router interface with a `net_tap` representor named like it,
        // after the ports, not a switch port.
        assert_eq!(c.routing.vlan_interfaces.len(), 1);
        assert!(c.routing.enabled() && c.warnings.iter().all(|w| !w.contains("vlan_interface")));
        let rep = c.ports.last().unwrap();
        assert_eq!(
            (rep.name.as_str(), rep.devargs.as_str(), rep.vlan_interface_of, rep.pfc_mask),
            ("Vlan1000", "net_tap_vlan1000,iface=Vlan1000", Some(1000), 0)
        );
        assert_eq!(c.switch_ports().len(), c.ports.len() - 1);
        assert!(c.ports[..c.ports.len() - 1].iter().all(|p| p.vlan_interface_of.is_none()));
        // SONiC's CONFIG_DB writes the VID as a string.
        assert_eq!(cfg("[vlan.Vlan7]\nvlanid = \"7\"\n").unwrap().vlans.vlans[0].vid, 7);
        // No VLAN tables: VLAN-unaware, as before.
        assert!(!cfg("").unwrap().vlans.enabled());
        // tc_to_dot1p: identity unless set.
        assert_eq!(cfg("").unwrap().qos.tc_to_dot1p, [0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(cfg("[qos.tc_to_dot1p]\n3 = 5\n").unwrap().qos.tc_to_dot1p[3], 5);
    }

    #[test]
    fn one_line_errors_name_the_field() {
        let cases = [
            ("[vlan.Vlan0]\n", "t.toml: vlan.Vlan0: 0 is out of range 1..=4094"),
            ("[vlan.Vlan4095]\n", "t.toml: vlan.Vlan4095: 4095 is out of range 1..=4094"),
            ("[vlan.Blue]\n", "t.toml: vlan.Blue: 'Blue' is not a VLAN name"),
            ("[vlan.Vlan10]\nvlanid = 11\n", "t.toml: vlan.Vlan10.vlanid: 11 does not match"),
            ("[vlan.Vlan10]\nmtu = 1500\n", "t.toml: vlan.Vlan10.mtu: unknown field"),
            ("[vlan]\nVlan10 = 1\n", "t.toml: vlan.Vlan10: expected a table"),
            (
                "[vlan.Vlan10]\n[vlan_member]\n\"Vlan10|Ethernet0\" = { tagging_mode = \"trunk\" }\n",
                "t.toml: vlan_member.\"Vlan10|Ethernet0\".tagging_mode: unknown variant",
            ),
            (
                "[vlan.Vlan10]\n[vlan_member]\n\"Vlan10|Ethernet0\" = {}\n",
                "t.toml: vlan_member.\"Vlan10|Ethernet0\".tagging_mode: missing field",
            ),
            (
                "[vlan.Vlan10]\n[vlan_member]\n\"Vlan11|Ethernet0\" = { tagging_mode = \"tagged\" }\n",
                "t.toml: vlan_member.\"Vlan11|Ethernet0\": unknown VLAN 'Vlan11'",
            ),
            (
                "[vlan.Vlan10]\n[vlan_member]\n\"Vlan10|Ethernet9\" = { tagging_mode = \"tagged\" }\n",
                "t.toml: vlan_member.\"Vlan10|Ethernet9\": unknown port 'Ethernet9'",
            ),
            (
                "[vlan.Vlan10]\n[vlan_member]\nEthernet0 = { tagging_mode = \"tagged\" }\n",
                "t.toml: vlan_member.Ethernet0: expected a key \"<vlan>|<port>\"",
            ),
            (
                "[vlan.Vlan10]\n[vlan.Vlan11]\n[vlan_member]\n\"Vlan10|Ethernet0\" = { tagging_mode = \"untagged\" }\n\"Vlan11|Ethernet0\" = { tagging_mode = \"untagged\" }\n",
                "t.toml: vlan_member.\"Vlan11|Ethernet0\".tagging_mode: Ethernet0 is already an untagged member at vlan_member.\"Vlan10|Ethernet0\"",
            ),
            (
                "[interface]\nEthernet0 = []\n[vlan.Vlan10]\n[vlan_member]\n\"Vlan10|Ethernet0\" = { tagging_mode = \"tagged\" }\n",
                "t.toml: vlan_member.\"Vlan10|Ethernet0\": Ethernet0 is a router interface",
            ),
            ("[vlan_interface]\nVlan10 = []\n", "t.toml: vlan_interface.Vlan10: unknown VLAN 'Vlan10'"),
            (
                "[vlan.Vlan10]\n[vlan_interface]\nVlan10 = [\"10.0.0.1/33\"]\n",
                "t.toml: vlan_interface.Vlan10[0]: prefix length 33",
            ),
            (
                "[interface]\nEthernet8 = [\"10.0.0.1/24\"]\n[vlan.Vlan10]\n[vlan_interface]\nVlan10 = [\"10.0.0.1/24\"]\n",
                "t.toml: vlan_interface.Vlan10[0]: 10.0.0.1 is already configured at interface.Ethernet8[0]",
            ),
            ("[qos.tc_to_dot1p]\n3 = 8\n", "t.toml: qos.tc_to_dot1p.3: 8 is out of range"),
        ];
        for (extra, want) in cases {
            let e = cfg(extra).unwrap_err();
            assert!(!e.contains('\n') && e.starts_with(want), "{extra:?}\n got: {e}\nwant: {want}");
        }
    }
}
