//! `[control_plane]`, `[interface]` and `[switch] ecmp_seed`: the router (docs/routing.md).

use super::*;
use crate::route::IfAddr;

/// Linux interface names: 1..=15 bytes, no '/', ':' or whitespace, not "." or "..".
fn valid_ifname(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 15
        && n != "."
        && n != ".."
        && !n.chars().any(|c| c == '/' || c == ':' || c.is_whitespace() || c.is_control())
}

/// An interface's addresses: an array of `"<address>/<prefix length>"`, each a unicast
/// address not already in `seen` (which maps it to where it was set).
pub(super) fn addr_list(val: &Value, path: &str, seen: &mut HashMap<std::net::IpAddr, String>) -> FResult<Vec<IfAddr>> {
    let list = match val {
        Value::Array(a) => a,
        Value::String(_) => {
            return Err(FieldError::new(path, "expected an array of addresses, e.g. [\"10.0.0.0/31\"]"))
        }
        _ => return Err(FieldError::new(path, "expected an array of \"<address>/<prefix length>\" strings")),
    };
    let mut addrs = Vec::new();
    for (i, a) in list.iter().enumerate() {
        let ipath = format!("{path}[{i}]");
        let Value::String(s) = a else {
            return Err(FieldError::new(&ipath, "expected a string \"<address>/<prefix length>\""));
        };
        let ia: IfAddr = s.parse().map_err(|e: String| FieldError::new(&ipath, e))?;
        let bad = match ia.addr {
            std::net::IpAddr::V4(v) => v.is_unspecified() || v.is_multicast() || v.is_broadcast() || v.is_loopback(),
            std::net::IpAddr::V6(v) => v.is_unspecified() || v.is_multicast() || v.is_loopback(),
        };
        if bad {
            return Err(FieldError::new(&ipath, format!("{s} is not a unicast interface address")));
        }
        if let Some(prev) = seen.insert(ia.addr, ipath.clone()) {
            return Err(FieldError::new(&ipath, format!("{} is already configured at {prev}", ia.addr)));
        }
        addrs.push(ia);
    }
    Ok(addrs)
}

pub(super) fn resolve_routing(top: &Table, sw: &RawSwitch, ports: &[PortConfig]) -> FResult<RoutingConfig> {
    let ecmp_seed = match sw.ecmp_seed {
        Some(IntLike(v)) => Some(in_range(v, 0, i64::from(u32::MAX), "switch.ecmp_seed")? as u32),
        None => None,
    };
    let cp: RawControlPlane = match top.get("control_plane") {
        Some(v) => {
            expect_table(v, "control_plane")?;
            de(v, "control_plane")?
        }
        None => RawControlPlane::default(),
    };
    if let Some(ns) = &cp.netns {
        if ns.is_empty() || ns.len() > 255 || ns == "." || ns == ".." || ns.contains('/') || ns.contains('\0') {
            return Err(FieldError::new(
                "control_plane.netns",
                format!("'{ns}' is not a network namespace name (as in `ip netns add NAME`)"),
            ));
        }
    }
    let mut interfaces: Vec<RouterInterface> = Vec::new();
    let mut seen: HashMap<std::net::IpAddr, String> = HashMap::new();
    if let Some(v) = top.get("interface") {
        let t = expect_table(v, "interface")?;
        for (name, val) in t {
            let path = join("interface", name);
            let port = port_by_name(ports, name, &path)?;
            if !valid_ifname(name) {
                return Err(FieldError::new(
                    &path,
                    "a router interface's port name must be a Linux interface name (1..=15 bytes, no '/', ':' or spaces): its kernel representor takes it",
                ));
            }
            if let Some(other) = ports.iter().find(|p| p.devargs.split(',').any(|kv| kv == format!("iface={name}"))) {
                return Err(FieldError::new(
                    &path,
                    format!("port {} already uses a kernel interface named '{name}' (its devargs): the representor needs that name", other.name),
                ));
            }
            let addrs = addr_list(val, &path, &mut seen)?;
            interfaces.push(RouterInterface { port, addrs, accept_martian_sources: false });
        }
    }
    interfaces.sort_by_key(|i| i.port);
    for (k, name) in cp.accept_martian_sources.iter().flatten().enumerate() {
        let path = format!("control_plane.accept_martian_sources[{k}]");
        match interfaces.iter_mut().find(|i| ports[i.port].name == *name) {
            Some(i) => i.accept_martian_sources = true,
            None => return Err(FieldError::new(&path, format!("'{name}' is not a router interface ([interface])"))),
        }
    }
    // (A VLAN interface also uses it: those are resolved with the VLANs.)
    if cp.netns.is_some() && interfaces.is_empty() && !top.contains_key("vlan_interface") {
        return Err(FieldError::new(
            "control_plane.netns",
            "set, but no [interface] makes a port a router interface (nothing would use the namespace)",
        ));
    }
    let mut copp = CoppConfig::default();
    if let Some(v) = &cp.copp {
        expect_table(v, "control_plane.copp")?;
        let c: RawCopp = de(v, "control_plane.copp")?;
        let rate = |v: &Option<IntLike>, key: &str, dflt: u32| -> FResult<u32> {
            match v {
                Some(IntLike(n)) => Ok(in_range(*n, 0, 10_000_000, &format!("control_plane.copp.{key}"))? as u32),
                None => Ok(dflt),
            }
        };
        copp = CoppConfig {
            arp_nd: rate(&c.arp_nd, "arp_nd", copp.arp_nd)?,
            bgp_bfd: rate(&c.bgp_bfd, "bgp_bfd", copp.bgp_bfd)?,
            ip2me: rate(&c.ip2me, "ip2me", copp.ip2me)?,
            ttl_error: rate(&c.ttl_error, "ttl_error", copp.ttl_error)?,
            neigh_miss: rate(&c.neigh_miss, "neigh_miss", copp.neigh_miss)?,
            mtu: rate(&c.mtu, "mtu", copp.mtu)?,
            default: rate(&c.default, "default", copp.default)?,
        };
    }
    let dflt = crate::route::NeighbourLimits::default();
    let limit = |v: &Option<IntLike>, key: &str| -> FResult<u32> {
        match v {
            // Every mirrored neighbour is a next hop: 16 Ki leave 12 Ki next hops for gateways.
            Some(IntLike(n)) => Ok(in_range(*n, 1, i64::from(dflt.total), &format!("control_plane.{key}"))? as u32),
            None => Ok(dflt.total),
        }
    };
    let neighbours = crate::route::NeighbourLimits {
        total: limit(&cp.max_neighbours, "max_neighbours")?,
        per_interface: limit(&cp.max_neighbours_per_interface, "max_neighbours_per_interface")?,
    };
    let max_ipv4_routes = match &cp.max_ipv4_routes {
        Some(IntLike(n)) => Some(in_range(*n, 1024, 1 << 24, "control_plane.max_ipv4_routes")? as u32),
        None => None,
    };
    let allow_root_namespace = cp.allow_root_namespace.unwrap_or(false);
    if allow_root_namespace && cp.netns.is_some() {
        return Err(FieldError::new(
            "control_plane.allow_root_namespace",
            "set together with netns: the switch routes in netns; remove one of them",
        ));
    }
    let max_ipv6_routes = match &cp.max_ipv6_routes {
        Some(IntLike(n)) => Some(in_range(*n, 1024, 1 << 18, "control_plane.max_ipv6_routes")? as u32),
        None => None,
    };
    Ok(RoutingConfig {
        netns: cp.netns,
        allow_root_namespace,
        ecmp_seed,
        interfaces,
        copp,
        neighbours,
        max_ipv4_routes,
        max_ipv6_routes,
        vlan_interfaces: Vec::new(),
    })
}

/// Routing needs a namespace of its own, or the operator's explicit consent to route in the
/// one the switch starts in: there the switch's kernel is the host's, which forwards what
/// the dataplane punts onto whatever network the host is on (the management network) and
/// whose forwarding sysctls the switch changes (docs/routing.md, "Namespace").
pub(super) fn check_namespace(routing: &RoutingConfig, ctx: &mut Ctx) -> FResult<()> {
    if !routing.enabled() {
        return Ok(());
    }
    match (&routing.netns, routing.allow_root_namespace) {
        (Some(_), _) => Ok(()),
        (None, true) => {
            ctx.warn(
                "control_plane.allow_root_namespace",
                "routing in the namespace the switch starts in (the host's, usually): its kernel is the control plane, \
                 takes the punted traffic and gets the switch's forwarding sysctls; a dedicated [control_plane] netns is recommended",
            );
            Ok(())
        }
        (None, false) => Err(FieldError::new(
            "control_plane.netns",
            "required with router interfaces ([interface], [vlan_interface]): name a namespace made with `ip netns add NAME`, \
             or set control_plane.allow_root_namespace = true to route in the namespace the switch starts in",
        )),
    }
}

/// Append a representor port per router interface (after every `[[port]]`, so the
/// configured ports keep their indices and DPDK port ids): a `net_tap` named like the
/// port, its MTU and speed, no PFC (punted and kernel traffic is lossy), polled and
/// transmitted by the worker that owns the port's TX.
pub(super) fn add_representors(
    ports: &mut Vec<PortConfig>,
    lcores: &mut LcoreConfig,
    routing: &RoutingConfig,
    vlans: &VlanConfig,
) -> FResult<()> {
    for ri in &routing.interfaces {
        let p = &ports[ri.port];
        let name = representor_port_name(&p.name);
        if let Some(q) = ports.iter().find(|q| q.name == name) {
            return Err(FieldError::new(
                format!("port[{}].name", q.index),
                format!("'{name}' is the name of {}'s kernel representor port: rename it", p.name),
            ));
        }
        let vdev = format!("net_tap_rep{}", ri.port);
        let index = ports.len();
        let owner = lcores.workers.iter().position(|w| w.tx.contains(&ri.port)).unwrap_or(0);
        let rep = PortConfig {
            index,
            name,
            devargs: format!("{vdev},iface={}", p.name),
            device: PortDevice::Vdev { driver: "net_tap".into(), name: vdev },
            speed_bps: p.speed_bps,
            speed_auto: false,
            speed_mismatch_warn: false,
            cable_length_m: p.cable_length_m,
            mtu: p.mtu,
            admin_up: true,
            trust: Trust::Dscp,
            default_tc: p.default_tc,
            pfc_enable: Vec::new(),
            pfc_mask: 0,
            tx_enable: true,
            obey_8023x: false,
            shaper_bps: None,
            mac: None,
            rx_queues: 1,
            tx_lcore: lcores.workers.get(owner).map_or(u32::MAX, |w| w.lcore),
            tx_inflight: TxInflight::Off,
            control_tx_queue: ControlTxQueue::Off,
            representor_of: Some(ri.port),
            vlan_interface_of: None,
        };
        ports.push(rep);
        if let Some(w) = lcores.workers.get_mut(owner) {
            w.rx.push(RxQueueRef { port: index, queue: 0 });
            w.tx.push(index);
        }
    }
    add_vlan_representors(ports, lcores, routing, vlans)
}

/// Append a representor port per VLAN interface, after the ports' representors: a
/// `net_tap` named like the VLAN (`Vlan1000`), the smallest MTU and the largest speed of
/// its members, no PFC; polled and transmitted by the worker that owns its first member's
/// TX (worker 0 without members).
fn add_vlan_representors(
    ports: &mut Vec<PortConfig>,
    lcores: &mut LcoreConfig,
    routing: &RoutingConfig,
    vlans: &VlanConfig,
) -> FResult<()> {
    for vi in &routing.vlan_interfaces {
        let path = join("vlan_interface", &vi.name);
        if let Some(q) = ports.iter().find(|q| q.name == vi.name) {
            return Err(FieldError::new(
                &path,
                format!(
                    "port {} is named '{}': the VLAN interface's kernel representor needs that name",
                    q.name, vi.name
                ),
            ));
        }
        if let Some(q) = ports.iter().find(|p| p.devargs.split(',').any(|kv| kv == format!("iface={}", vi.name))) {
            return Err(FieldError::new(
                &path,
                format!("port {} already uses a kernel interface named '{}' (its devargs)", q.name, vi.name),
            ));
        }
        let members: Vec<usize> = vlans
            .vlans
            .iter()
            .find(|v| v.vid == vi.vid)
            .map(|v| v.members.iter().map(|m| m.port).collect())
            .unwrap_or_default();
        let mtu = members.iter().map(|&m| ports[m].mtu).min().unwrap_or(1500);
        let speed_bps = members.iter().map(|&m| ports[m].speed_bps).max().unwrap_or(10_000_000_000);
        let cable_length_m = members.first().map_or(5.0, |&m| ports[m].cable_length_m);
        let default_tc = members.first().map_or(0, |&m| ports[m].default_tc);
        let owner = members.first().and_then(|&m| lcores.workers.iter().position(|w| w.tx.contains(&m))).unwrap_or(0);
        let vdev = format!("net_tap_vlan{}", vi.vid);
        let index = ports.len();
        ports.push(PortConfig {
            index,
            name: vi.name.clone(),
            devargs: format!("{vdev},iface={}", vi.name),
            device: PortDevice::Vdev { driver: "net_tap".into(), name: vdev },
            speed_bps,
            speed_auto: false,
            speed_mismatch_warn: false,
            cable_length_m,
            mtu,
            admin_up: true,
            trust: Trust::Dscp,
            default_tc,
            pfc_enable: Vec::new(),
            pfc_mask: 0,
            tx_enable: true,
            obey_8023x: false,
            shaper_bps: None,
            mac: None,
            rx_queues: 1,
            tx_lcore: lcores.workers.get(owner).map_or(u32::MAX, |w| w.lcore),
            tx_inflight: TxInflight::Off,
            control_tx_queue: ControlTxQueue::Off,
            representor_of: None,
            vlan_interface_of: Some(vi.vid),
        });
        if let Some(w) = lcores.workers.get_mut(owner) {
            w.rx.push(RxQueueRef { port: index, queue: 0 });
            w.tx.push(index);
        }
    }
    Ok(())
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
"#;

    /// Routing in the namespace the switch starts in, allowed.
    const ROOT: &str = "[control_plane]\nallow_root_namespace = true\n";

    fn cfg(extra: &str) -> Result<crate::config::Config, String> {
        from_str(&format!("{BASE}\n{extra}"), "t.toml").map_err(|e| e.to_string())
    }

    #[test]
    fn router_interfaces_resolve() {
        let c = cfg(
            "[switch]\necmp_seed = 7\n[control_plane]\nnetns = \"leaf1\"\n[interface]\nEthernet4 = [\"10.0.0.2/31\", \"fc00::2/127\"]\nEthernet0 = [\"10.0.0.0/31\"]\n",
        )
        .unwrap();
        let r = &c.routing;
        assert_eq!((r.netns.as_deref(), r.ecmp_seed), (Some("leaf1"), Some(7)));
        assert_eq!(r.interfaces.iter().map(|i| i.port).collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(r.interfaces[1].addrs[1].to_string(), "fc00::2/127");
        assert!(r.is_routed(1) && r.enabled());
        // Without [interface] nothing routes, and the defaults hold.
        let c = cfg("").unwrap();
        assert_eq!(c.routing, crate::config::RoutingConfig::default());
        let c = cfg("[control_plane]\nmax_neighbours = 4000\nmax_neighbours_per_interface = 500\n").unwrap();
        assert_eq!(c.routing.neighbours, crate::route::NeighbourLimits { total: 4000, per_interface: 500 });
        assert_eq!(c.routing.max_ipv4_routes, None);
        let big = cfg("[control_plane]\nmax_ipv4_routes = 262144\n").unwrap();
        assert_eq!(big.routing.max_ipv4_routes, Some(262_144));
        assert_eq!(big.routing.max_ipv6_routes, None);
        let v6 = cfg("[control_plane]\nmax_ipv6_routes = 32768\n").unwrap();
        assert_eq!(v6.routing.max_ipv6_routes, Some(32_768));
        // An interface with no address still routes (addresses may come from `ip addr`).
        assert!(cfg(&format!("{ROOT}[interface]\nEthernet0 = []\n")).unwrap().routing.is_routed(0));
    }

    #[test]
    fn one_line_errors_name_the_field() {
        let cases = [
            ("[interface]\nEthernet9 = [\"10.0.0.0/31\"]\n", "t.toml: interface.Ethernet9: unknown port 'Ethernet9'"),
            ("[interface]\nEthernet0 = [\"10.0.0.0/33\"]\n", "t.toml: interface.Ethernet0[0]: prefix length 33"),
            ("[interface]\nEthernet0 = [\"10.0.0.x/31\"]\n", "t.toml: interface.Ethernet0[0]: '10.0.0.x' is not"),
            ("[interface]\nEthernet0 = \"10.0.0.0/31\"\n", "t.toml: interface.Ethernet0: expected an array"),
            (
                "[interface]\nEthernet0 = [\"224.0.0.1/24\"]\n",
                "t.toml: interface.Ethernet0[0]: 224.0.0.1/24 is not a unicast",
            ),
            (
                "[interface]\nEthernet0 = [\"10.0.0.0/31\"]\nEthernet4 = [\"10.0.0.0/31\"]\n",
                "t.toml: interface.Ethernet4[0]: 10.0.0.0 is already configured at interface.Ethernet0[0]",
            ),
            ("[switch]\necmp_seed = -1\n", "t.toml: switch.ecmp_seed: -1 is out of range"),
            (
                "[control_plane]\nmax_ipv4_routes = 10\n",
                "t.toml: control_plane.max_ipv4_routes: 10 is out of range 1024..=16777216",
            ),
            (
                "[control_plane]\nmax_ipv6_routes = 1000000\n",
                "t.toml: control_plane.max_ipv6_routes: 1000000 is out of range 1024..=262144",
            ),
            (
                "[control_plane]\nmax_neighbours = 0\n",
                "t.toml: control_plane.max_neighbours: 0 is out of range 1..=16384",
            ),
            (
                "[control_plane]\nmax_neighbours_per_interface = 20000\n",
                "t.toml: control_plane.max_neighbours_per_interface: 20000 is out of range",
            ),
            ("[control_plane]\nnetns = \"a/b\"\n[interface]\nEthernet0 = []\n", "t.toml: control_plane.netns: 'a/b'"),
            ("[control_plane]\nnetns = \"leaf1\"\n", "t.toml: control_plane.netns: set, but no [interface]"),
            (
                "[control_plane]\nnetns = \"x\"\nvrf = 1\n[interface]\nEthernet0 = []\n",
                "t.toml: control_plane.vrf: unknown field",
            ),
        ];
        for (extra, want) in cases {
            let e = cfg(extra).unwrap_err();
            assert!(!e.contains('\n') && e.starts_with(want), "{extra:?}\n got: {e}\nwant: {want}");
        }
    }

    #[test]
    fn representors_are_ports_after_the_configured_ones() {
        let c = cfg(&format!("{ROOT}[interface]\nEthernet4 = [\"10.0.0.2/31\"]\n")).unwrap();
        assert_eq!(c.ports.len(), 3);
        assert_eq!(c.switch_ports().len(), 2);
        let r = &c.ports[2];
        assert_eq!(
            (r.name.as_str(), r.devargs.as_str(), r.representor_of),
            ("cpu/Ethernet4", "net_tap_rep1,iface=Ethernet4", Some(1))
        );
        assert_eq!((r.pfc_mask, r.mtu, r.rx_queues), (0, c.ports[1].mtu, 1));
        // Polled and transmitted by the worker that owns Ethernet4's TX; on the EAL line
        // after the configured ports (which keep DPDK port ids 0 and 1).
        let w = &c.lcores.workers[0];
        assert!(w.tx.contains(&2) && w.rx.iter().any(|q| q.port == 2 && q.queue == 0));
        let args = c.eal_args("t");
        let vdevs: Vec<&String> = args.iter().filter(|a| a.starts_with("--vdev=")).collect();
        assert_eq!(vdevs.last().map(|s| s.as_str()), Some("--vdev=net_tap_rep1,iface=Ethernet4"));
        // COPP: defaults, overrides, one-line errors.
        assert_eq!(c.routing.copp, crate::config::CoppConfig::default());
        let c = cfg(&format!("{ROOT}[control_plane.copp]\nip2me = 100\n[interface]\nEthernet0 = []\n")).unwrap();
        assert_eq!((c.routing.copp.ip2me, c.routing.copp.arp_nd, c.routing.copp.bgp_bfd), (100, 600, 6000));
        let e = cfg("[control_plane.copp]\nip2me = -1\n").unwrap_err();
        assert!(e.starts_with("t.toml: control_plane.copp.ip2me: -1 is out of range"), "{e}");
        let e = cfg("[control_plane.copp]\nto_us = 1\n").unwrap_err();
        assert!(e.contains("control_plane.copp") && e.contains("to_us"), "{e}");
        let clash = BASE.replace("\"Ethernet0\"", "\"cpu/Ethernet4\"");
        let e = from_str(&format!("{clash}\n[interface]\nEthernet4 = []\n"), "t.toml").unwrap_err().to_string();
        assert!(e.starts_with("t.toml: port[0].name: 'cpu/Ethernet4' is the name of Ethernet4's kernel"), "{e}");
        let e = cfg("[control_plane.copp]\nbgp = 1\n").unwrap_err();
        assert!(e.starts_with("t.toml: control_plane.copp.bgp: unknown field"), "{e}");
    }

    #[test]
    fn representor_names_must_be_free_and_valid() {
        let long = BASE.replace("Ethernet4", "Ethernet4567890123");
        let e = from_str(&format!("{long}\n[interface]\nEthernet4567890123 = []\n"), "t.toml").unwrap_err().to_string();
        assert!(e.starts_with("t.toml: interface.Ethernet4567890123: a router interface's port name"), "{e}");
        let tap = BASE.replace("net_null1", "net_tap0,iface=Ethernet0");
        let e = from_str(&format!("{tap}\n[interface]\nEthernet0 = []\n"), "t.toml").unwrap_err().to_string();
        assert!(e.starts_with("t.toml: interface.Ethernet0: port Ethernet4 already uses"), "{e}");
    }

    #[test]
    fn routing_needs_a_namespace_or_consent() {
        for extra in ["[interface]\nEthernet0 = []\n", "[vlan.Vlan10]\n[vlan_interface]\nVlan10 = []\n"] {
            let e = cfg(extra).unwrap_err();
            assert!(
                !e.contains('\n') && e.starts_with("t.toml: control_plane.netns: required with router interfaces"),
                "{e}"
            );
            let c = cfg(&format!("{ROOT}{extra}")).unwrap();
            assert!(c.routing.allow_root_namespace && c.routing.netns.is_none());
            assert!(
                c.warnings.iter().any(|w| w.starts_with("t.toml: control_plane.allow_root_namespace: routing in")),
                "{:?}",
                c.warnings
            );
            let c = cfg(&format!("[control_plane]\nnetns = \"leaf1\"\n{extra}")).unwrap();
            assert!(c.warnings.is_empty() && !c.routing.allow_root_namespace, "{:?}", c.warnings);
        }
        let e = cfg("[control_plane]\nnetns = \"leaf1\"\nallow_root_namespace = true\n[interface]\nEthernet0 = []\n")
            .unwrap_err();
        assert!(e.starts_with("t.toml: control_plane.allow_root_namespace: set together with netns"), "{e}");
        // Nothing routes: nothing asked.
        assert!(cfg("").unwrap().warnings.is_empty());
    }

    #[test]
    fn eal_memory_must_hold_the_routing_tables() {
        let eal = |m: &str, extra: &str| {
            cfg(&format!(
                "[eal]\nargs = [\"--no-huge\", {m}, \"--no-pci\"]\n[switch]\nmbuf_count = 16383\n\
                 [control_plane]\nnetns = \"leaf1\"\n{extra}[interface]\nEthernet0 = []\n"
            ))
        };
        // Like the clos fabric's switches: -m 512, few mbufs, the default tables.
        assert!(cfg("[eal]\nargs = [\"-m\", \"512\"]\n[switch]\nmbuf_count = 8192\n[control_plane]\nnetns = \"x\"\n[interface]\nEthernet0 = []\n").is_ok());
        assert!(eal("\"-m\", \"1024\"", "max_ipv4_routes = 262144\n").is_ok());
        let e = eal("\"-m\", \"512\"", "max_ipv4_routes = 262144\n").unwrap_err();
        assert!(
            !e.contains('\n')
                && e.starts_with("t.toml: eal.args[1]: 512 MiB of EAL memory cannot hold the routing tables"),
            "{e}"
        );
        let e = eal("\"--socket-mem=256,128\"", "").unwrap_err();
        assert!(e.starts_with("t.toml: eal.args[1]: 384 MiB of EAL memory"), "{e}");
        // Not given (EAL takes what it finds), or nothing routes: not checked.
        assert!(eal("\"-l\", \"0-1\"", "max_ipv4_routes = 262144\n").is_ok());
        assert!(cfg("[eal]\nargs = [\"-m\", \"64\"]\n[switch]\nmbuf_count = 16383\n").is_ok());
    }
}
