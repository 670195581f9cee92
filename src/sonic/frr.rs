//! `import sonic --frr DIR`: FRR's `bgpd.conf` and `zebra.conf` from DEVICE_METADATA
//! (`hostname`, `bgp_asn`), LOOPBACK_INTERFACE (router-id, announced loopback),
//! VLAN_INTERFACE (announced server subnets, as a SONiC ToR does), BGP_NEIGHBOR and, of
//! frrcfgd's tables, BGP_GLOBALS (`network_import_check`) and BGP_GLOBALS_AF_NETWORK, in the
//! shape SONiC's templates and bgpcfgd give (eBGP, `no bgp default ipv4-unicast`, each
//! neighbour activated in its address family, multipath-relax). Pure: text in, text out.

use super::error::{At, BResult, Bad, SonicError};
use super::load::Db;
use std::net::IpAddr;

/// The two files, and what of the tables they could not say (one line each).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frr {
    pub bgpd: String,
    pub zebra: String,
    pub notes: Vec<String>,
}

/// ECMP width SONiC's templates allow (`maximum-paths`); FRR caps it at its build's limit.
const MAXIMUM_PATHS: u32 = 64;

struct Neighbor {
    addr: IpAddr,
    asn: u32,
    name: Option<String>,
    timers: Option<(u32, u32)>,
    shutdown: bool,
}

fn asn(v: &str, at: &At) -> BResult<u32> {
    v.trim()
        .parse::<u32>()
        .ok()
        .filter(|&a| a > 0)
        .ok_or_else(|| Bad::new(at.clone(), format!("'{v}' is not an AS number 1..=4294967295")))
}

/// `addr/len` → (address, prefix length).
fn prefix(p: &str, at: &At) -> BResult<(IpAddr, u8)> {
    let (a, l) = p.split_once('/').ok_or_else(|| Bad::new(at.clone(), format!("'{p}' is not <address>/<length>")))?;
    let addr: IpAddr = a.parse().map_err(|_| Bad::new(at.clone(), format!("'{a}' is not an IP address")))?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let len = l
        .parse::<u8>()
        .ok()
        .filter(|&l| l <= max)
        .ok_or_else(|| Bad::new(at.clone(), format!("'/{l}' is not a prefix length 0..={max}")))?;
    Ok((addr, len))
}

/// The network of `addr/len` (`192.168.0.1/21` → `192.168.0.0/21`).
fn network(addr: IpAddr, len: u8) -> String {
    match addr {
        IpAddr::V4(a) => {
            let m = if len == 0 { 0 } else { u32::MAX << (32 - len) };
            format!("{}/{len}", std::net::Ipv4Addr::from(u32::from(a) & m))
        }
        IpAddr::V6(a) => {
            let m = if len == 0 { 0 } else { u128::MAX << (128 - len) };
            format!("{}/{len}", std::net::Ipv6Addr::from(u128::from(a) & m))
        }
    }
}

pub fn frr(db: &Db) -> Result<Frr, SonicError> {
    build(db).map_err(|b| db.error(b))
}

fn build(db: &Db) -> BResult<Frr> {
    let mut notes = Vec::new();
    let hostname = db.get("DEVICE_METADATA", "localhost", "hostname").unwrap_or("sonic").to_string();
    let asn_at = At::field("DEVICE_METADATA", "localhost", "bgp_asn");
    let local_asn = match db.get("DEVICE_METADATA", "localhost", "bgp_asn") {
        Some(v) => Some(asn(v, &asn_at)?),
        None => None,
    };
    let mut neighbors = Vec::new();
    for key in db.keys("BGP_NEIGHBOR") {
        let kat = At::key("BGP_NEIGHBOR", key);
        let (vrf, ip) = key.split_once('|').unwrap_or(("default", key));
        if vrf != "default" {
            notes.push(format!("BGP_NEIGHBOR|{key}: VRF '{vrf}' not supported, left out"));
            continue;
        }
        let addr: IpAddr = ip.parse().map_err(|_| Bad::new(kat.clone(), format!("'{ip}' is not an IP address")))?;
        let f = |n: &str| db.entry("BGP_NEIGHBOR", key).and_then(|e| e.fields.get(n)).map(|v| v.value.as_str());
        let aat = At::field("BGP_NEIGHBOR", key, "asn");
        let peer_asn = asn(f("asn").ok_or_else(|| Bad::new(aat.clone(), "missing field"))?, &aat)?;
        let timers = match (f("keepalive"), f("holdtime")) {
            (None, None) => None,
            (k, h) => {
                let num = |v: Option<&str>, n: &str| -> BResult<u32> {
                    let at = At::field("BGP_NEIGHBOR", key, n);
                    v.ok_or_else(|| Bad::new(at.clone(), "missing field (keepalive and holdtime go together)"))?
                        .parse::<u32>()
                        .ok()
                        .filter(|&x| x <= 65535)
                        .ok_or_else(|| Bad::new(at, "not a number of seconds 0..=65535"))
                };
                Some((num(k, "keepalive")?, num(h, "holdtime")?))
            }
        };
        let shutdown = match f("admin_status") {
            None | Some("up") => false,
            Some("down") => true,
            Some(o) => {
                return Err(Bad::new(
                    At::field("BGP_NEIGHBOR", key, "admin_status"),
                    format!("'{o}' is not up or down"),
                ))
            }
        };
        neighbors.push(Neighbor { addr, asn: peer_asn, name: f("name").map(str::to_string), timers, shutdown });
    }
    neighbors.sort_by_key(|n| n.addr);
    let local_asn = match local_asn {
        Some(a) => Some(a),
        None if !neighbors.is_empty() => {
            return Err(Bad::new(asn_at, "missing field (BGP_NEIGHBOR needs the switch's AS number)"));
        }
        None => None,
    };
    // Loopback0: router-id (its IPv4 address) and announced.
    let mut lo4 = None;
    let mut lo6 = None;
    for key in db.keys("LOOPBACK_INTERFACE") {
        let Some((name, p)) = key.split_once('|') else { continue };
        let (addr, len) = prefix(p, &At::key("LOOPBACK_INTERFACE", key))?;
        if name != "Loopback0" {
            notes.push(format!("LOOPBACK_INTERFACE|{key}: only Loopback0 is announced, left out"));
            continue;
        }
        match addr {
            IpAddr::V4(_) if lo4.is_none() => lo4 = Some((addr, len)),
            IpAddr::V6(_) if lo6.is_none() => lo6 = Some((addr, len)),
            _ => notes.push(format!("LOOPBACK_INTERFACE|{key}: a second address of its family, left out")),
        }
    }
    let import_check = globals(db, &mut notes)?;
    let af_networks = [networks(db, "ipv4_unicast", &mut notes)?, networks(db, "ipv6_unicast", &mut notes)?];
    let mut vlan_nets: Vec<(IpAddr, String)> = Vec::new();
    for key in db.keys("VLAN_INTERFACE") {
        let Some((_, p)) = key.split_once('|') else { continue };
        let (addr, len) = prefix(p, &At::key("VLAN_INTERFACE", key))?;
        vlan_nets.push((addr, network(addr, len)));
    }

    let mut z = String::new();
    let header = format!("! Generated by `pfcswitch import sonic --frr` from {}\n", db.files.join(", "));
    z.push_str(&header);
    z.push_str(&format!("hostname {hostname}\nlog syslog informational\n!\n"));
    if let Some((a, _)) = lo4 {
        z.push_str(&format!("router-id {a}\n!\n"));
    }

    let mut b = header.clone();
    b.push_str(&format!("hostname {hostname}\nlog syslog informational\n!\n"));
    let Some(local_asn) = local_asn else {
        notes.push("DEVICE_METADATA|localhost|bgp_asn: absent, no BGP instance".into());
        return Ok(Frr { bgpd: b, zebra: z, notes });
    };
    b.push_str(&format!("router bgp {local_asn}\n"));
    b.push_str("  bgp log-neighbor-changes\n  no bgp default ipv4-unicast\n  no bgp ebgp-requires-policy\n");
    b.push_str("  bgp bestpath as-path multipath-relax\n");
    if !import_check {
        b.push_str("  no bgp network import-check\n");
    }
    if let Some((a, _)) = lo4 {
        b.push_str(&format!("  bgp router-id {a}\n"));
    }
    for n in &neighbors {
        b.push_str(&format!("  neighbor {} remote-as {}\n", n.addr, n.asn));
        if let Some(name) = &n.name {
            b.push_str(&format!("  neighbor {} description {name}\n", n.addr));
        }
        if let Some((k, h)) = n.timers {
            b.push_str(&format!("  neighbor {} timers {k} {h}\n", n.addr));
        }
        if n.shutdown {
            b.push_str(&format!("  neighbor {} shutdown\n", n.addr));
        }
    }
    for (family, v4) in [("ipv4", true), ("ipv6", false)] {
        b.push_str(&format!("  !\n  address-family {family} unicast\n"));
        let lo = if v4 { lo4 } else { lo6 };
        if let Some((a, l)) = lo {
            b.push_str(&format!("    network {}\n", network(a, l)));
        }
        for (a, net) in &vlan_nets {
            if a.is_ipv4() == v4 {
                b.push_str(&format!("    network {net}\n"));
            }
        }
        for net in &af_networks[usize::from(!v4)] {
            b.push_str(&format!("    network {net}\n"));
        }
        for n in neighbors.iter().filter(|n| n.addr.is_ipv4() == v4) {
            b.push_str(&format!("    neighbor {} activate\n", n.addr));
        }
        b.push_str(&format!("    maximum-paths {MAXIMUM_PATHS}\n  exit-address-family\n"));
    }
    b.push_str("!\n");
    Ok(Frr { bgpd: b, zebra: z, notes })
}

/// `BGP_GLOBALS|default` (SONiC's frrcfgd schema, sonic-bgp-global): `network_import_check`
/// ("false": announce a `network` without a matching route in the RIB, as a ToR announcing
/// its hosts' aggregate does). Whether the check is on (FRR's default); other fields and
/// VRFs: one note each.
fn globals(db: &Db, notes: &mut Vec<String>) -> BResult<bool> {
    let mut check = true;
    for key in db.keys("BGP_GLOBALS") {
        if key != "default" {
            notes.push(format!("BGP_GLOBALS|{key}: VRF '{key}' not supported, left out"));
            continue;
        }
        let Some(e) = db.entry("BGP_GLOBALS", key) else { continue };
        for (field, v) in &e.fields {
            match field.as_str() {
                "network_import_check" => {
                    check = match v.value.as_str() {
                        "true" => true,
                        "false" => false,
                        o => {
                            return Err(Bad::new(
                                At::field("BGP_GLOBALS", key, field),
                                format!("'{o}' is not true or false"),
                            ))
                        }
                    }
                }
                _ => notes.push(format!("BGP_GLOBALS|{key}|{field}: not supported, left out")),
            }
        }
    }
    Ok(check)
}

/// `BGP_GLOBALS_AF_NETWORK|default|<afi_safi>|<prefix>` (sonic-bgp-global): a `network`
/// of that family, sorted; other VRFs and fields (`policy`, `backdoor`): one note each.
fn networks(db: &Db, family: &str, notes: &mut Vec<String>) -> BResult<Vec<String>> {
    let mut out = Vec::new();
    for key in db.keys("BGP_GLOBALS_AF_NETWORK") {
        let at = At::key("BGP_GLOBALS_AF_NETWORK", key);
        let mut parts = key.splitn(3, '|');
        let (Some(vrf), Some(af), Some(p)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(Bad::new(at, "key is not <vrf>|<afi_safi>|<prefix>"));
        };
        if !matches!(af, "ipv4_unicast" | "ipv6_unicast") {
            return Err(Bad::new(at, format!("'{af}' is not ipv4_unicast or ipv6_unicast")));
        }
        let (addr, len) = prefix(p, &at)?;
        if addr.is_ipv4() != (af == "ipv4_unicast") {
            return Err(Bad::new(at, format!("'{p}' is not an address of {af}")));
        }
        if af != family {
            continue;
        }
        if vrf != "default" {
            notes.push(format!("BGP_GLOBALS_AF_NETWORK|{key}: VRF '{vrf}' not supported, left out"));
            continue;
        }
        if let Some(e) = db.entry("BGP_GLOBALS_AF_NETWORK", key) {
            for field in e.fields.keys() {
                notes.push(format!("BGP_GLOBALS_AF_NETWORK|{key}|{field}: not supported, left out"));
            }
        }
        out.push(network(addr, len));
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(text: &str) -> Db {
        Db::from_texts(&[("c.json".into(), text.into())]).unwrap()
    }

    #[test]
    fn bgpd_and_zebra_from_the_tables() {
        let d = db(r#"{
            "DEVICE_METADATA": {"localhost": {"hostname": "tor1", "bgp_asn": "65100"}},
            "LOOPBACK_INTERFACE": {"Loopback0": {}, "Loopback0|10.1.0.32/32": {}, "Loopback0|FC00:1::32/128": {}},
            "VLAN_INTERFACE": {"Vlan1000|192.168.0.1/21": {}},
            "BGP_NEIGHBOR": {"10.0.0.57": {"asn": "64600", "name": "ARISTA01T1", "keepalive": "3", "holdtime": "10"},
                             "fc00::72": {"asn": "64600", "admin_status": "down"},
                             "default|10.0.0.59": {"asn": "64600"}}
        }"#);
        let f = frr(&d).unwrap();
        for l in [
            "router bgp 65100",
            "  bgp router-id 10.1.0.32",
            "  neighbor 10.0.0.57 remote-as 64600",
            "  neighbor 10.0.0.57 description ARISTA01T1",
            "  neighbor 10.0.0.57 timers 3 10",
            "  neighbor fc00::72 shutdown",
            "    network 10.1.0.32/32",
            "    network 192.168.0.0/21",
            "    network fc00:1::32/128",
            "    neighbor 10.0.0.59 activate",
            "    neighbor fc00::72 activate",
        ] {
            assert!(f.bgpd.lines().any(|x| x == l), "no '{l}' in\n{}", f.bgpd);
        }
        // IPv6 neighbours are activated in the IPv6 family only.
        let v4 = f.bgpd.split("address-family ipv6").next().unwrap();
        assert!(!v4.contains("fc00::72 activate"));
        assert!(f.zebra.contains("router-id 10.1.0.32"));
        assert!(f.notes.is_empty(), "{:?}", f.notes);
    }

    #[test]
    fn networks_and_import_check_from_bgp_globals() {
        let d = db(r#"{
            "DEVICE_METADATA": {"localhost": {"bgp_asn": "65104"}},
            "BGP_GLOBALS": {"default": {"network_import_check": "false"}},
            "BGP_GLOBALS_AF_NETWORK": {"default|ipv4_unicast|198.18.4.7/24": {},
                                       "default|ipv6_unicast|fc00:4::/64": {},
                                       "Vrf1|ipv4_unicast|10.9.0.0/16": {}}
        }"#);
        let f = frr(&d).unwrap();
        let v4 = f.bgpd.split("address-family ipv6").next().unwrap();
        assert!(f.bgpd.lines().any(|l| l == "  no bgp network import-check"), "{}", f.bgpd);
        assert!(v4.lines().any(|l| l == "    network 198.18.4.0/24"), "{}", f.bgpd);
        assert!(!v4.contains("fc00:4::/64") && f.bgpd.contains("    network fc00:4::/64"), "{}", f.bgpd);
        assert!(!f.bgpd.contains("10.9.0.0"));
        assert_eq!(
            f.notes,
            ["BGP_GLOBALS_AF_NETWORK|Vrf1|ipv4_unicast|10.9.0.0/16: VRF 'Vrf1' not supported, left out"]
        );
        // Without BGP_GLOBALS the check stays on (FRR's default).
        let f = frr(&db(r#"{"DEVICE_METADATA": {"localhost": {"bgp_asn": "1"}}}"#)).unwrap();
        assert!(!f.bgpd.contains("import-check"));
    }

    #[test]
    fn errors_name_the_field() {
        for (text, want) in [
            (
                r#"{"BGP_NEIGHBOR": {"10.0.0.1": {"asn": "1"}}}"#,
                "c.json: DEVICE_METADATA|localhost|bgp_asn: missing field",
            ),
            (
                r#"{"DEVICE_METADATA": {"localhost": {"bgp_asn": "x"}}}"#,
                "c.json: DEVICE_METADATA|localhost|bgp_asn: 'x' is not",
            ),
            (
                r#"{"DEVICE_METADATA": {"localhost": {"bgp_asn": "1"}}, "BGP_NEIGHBOR": {"10.0.0.1": {}}}"#,
                "c.json: BGP_NEIGHBOR|10.0.0.1|asn: missing field",
            ),
            (
                r#"{"DEVICE_METADATA": {"localhost": {"bgp_asn": "1"}}, "BGP_NEIGHBOR": {"10.0.0.300": {"asn": "2"}}}"#,
                "c.json: BGP_NEIGHBOR|10.0.0.300: '10.0.0.300' is not an IP address",
            ),
            (
                r#"{"DEVICE_METADATA": {"localhost": {"bgp_asn": "1"}}, "BGP_NEIGHBOR": {"10.0.0.1": {"asn": "2", "holdtime": "9"}}}"#,
                "c.json: BGP_NEIGHBOR|10.0.0.1|keepalive: missing field",
            ),
            (
                r#"{"BGP_GLOBALS": {"default": {"network_import_check": "no"}}}"#,
                "c.json: BGP_GLOBALS|default|network_import_check: 'no' is not true or false",
            ),
            (
                r#"{"BGP_GLOBALS_AF_NETWORK": {"default|l2vpn_evpn|10.0.0.0/8": {}}}"#,
                "c.json: BGP_GLOBALS_AF_NETWORK|default|l2vpn_evpn|10.0.0.0/8: 'l2vpn_evpn' is not",
            ),
            (
                r#"{"BGP_GLOBALS_AF_NETWORK": {"default|ipv4_unicast|fc00::/64": {}}}"#,
                "c.json: BGP_GLOBALS_AF_NETWORK|default|ipv4_unicast|fc00::/64: 'fc00::/64' is not an address",
            ),
            (
                r#"{"LOOPBACK_INTERFACE": {"Loopback0|10.1.0.1/40": {}}}"#,
                "c.json: LOOPBACK_INTERFACE|Loopback0|10.1.0.1/40: '/40' is not",
            ),
        ] {
            let e = frr(&db(text)).unwrap_err().to_string();
            assert!(e.starts_with(want), "'{e}' does not start with '{want}'");
        }
    }
}
