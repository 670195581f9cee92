//! Kernel representors: each router interface gets a kernel netdev named like its port
//! (`Ethernet0`), with the port's MAC and MTU and the `[interface]` addresses, in the
//! switch's namespace. It is a `net_tap` vdev the switch adds to the EAL arguments itself:
//! what the dataplane punts is sent on the tap's DPDK port and arrives in the kernel as if
//! received on `Ethernet0`; what the kernel sends on `Ethernet0` (ARP, ND, ICMP, BGP) is
//! received on the tap's DPDK port and goes out the real port. (virtio-user with vhost-net
//! would copy in a kernel thread instead of in the lcore's syscalls; it needs
//! `/dev/vhost-net`, which containers and this CI machine lack, and the punt path is
//! rate-limited anyway: docs/routing.md.)

use super::netlink::RtNetlink;
use super::KernelError;
use crate::config::Config;
use crate::route::IfAddr;
use crate::wire::MacAddr;

/// The representor of one router interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Representor {
    /// The `[[port]]` index it represents; for a VLAN interface, its own port index.
    pub port: usize,
    /// The port whose MAC it takes: its port's, or for a VLAN interface the first port's
    /// (the switch's router MAC).
    pub mac_port: usize,
    /// Its kernel netdev name (= the port's name).
    pub ifname: String,
    /// Its DPDK device name (`net_tap_rep<port>`): look its port id up with it.
    pub vdev: String,
    /// The `--vdev` argument that creates it.
    pub devargs: String,
    /// Addresses to set on it at start.
    pub addrs: Vec<IfAddr>,
}

/// The representors `cfg` needs, in port order (none without `[interface]`).
pub fn representors(cfg: &Config) -> Vec<Representor> {
    let ports = cfg.routing.interfaces.iter().map(|i| {
        let ifname = cfg.ports[i.port].name.clone();
        let vdev = format!("net_tap_rep{}", i.port);
        Representor {
            port: i.port,
            mac_port: i.port,
            devargs: format!("{vdev},iface={ifname}"),
            ifname,
            vdev,
            addrs: i.addrs.clone(),
        }
    });
    // VLAN interfaces: their representor is a port of its own (`Vlan1000`).
    let vlans = cfg.ports.iter().filter_map(|p| {
        let vid = p.vlan_interface_of?;
        let vi = cfg.routing.vlan_interfaces.iter().find(|v| v.vid == vid)?;
        let crate::config::PortDevice::Vdev { name, .. } = &p.device else { return None };
        Some(Representor {
            port: p.index,
            mac_port: 0,
            ifname: vi.name.clone(),
            vdev: name.clone(),
            devargs: p.devargs.clone(),
            addrs: vi.addrs.clone(),
        })
    });
    ports.chain(vlans).collect()
}

/// EAL arguments adding every representor (`--vdev=<devargs>`), to append after the ports'
/// (the ports keep their DPDK port ids).
pub fn eal_args(reps: &[Representor]) -> Vec<String> {
    reps.iter().map(|r| format!("--vdev={}", r.devargs)).collect()
}

/// Give representor `ifname` its port's MAC and MTU, bring it up, and add `addrs` (each
/// already present is fine). Call after the tap's DPDK port started. Returns its ifindex.
pub fn configure(
    nl: &mut RtNetlink,
    ifname: &str,
    mac: MacAddr,
    mtu: u16,
    addrs: &[IfAddr],
) -> Result<u32, KernelError> {
    let ifindex =
        nl.link_index(ifname)?.ok_or_else(|| KernelError::Netlink(format!("representor {ifname} not found")))?;
    nl.set_link(ifindex, Some(mac), Some(u32::from(mtu)))?;
    // The representor follows its port's link (admin down while the link is down): IPv6
    // addresses must survive that, as IPv4's do.
    let keep = format!("/proc/sys/net/ipv6/conf/{ifname}/keep_addr_on_down");
    if std::path::Path::new(&keep).exists() {
        std::fs::write(&keep, "1").map_err(|e| KernelError::Netlink(format!("{keep}: {e}")))?;
    }
    for a in addrs {
        nl.add_address(ifindex, *a)?;
    }
    Ok(ifindex)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_tap_per_router_interface() {
        let cfg = crate::config::from_str(
            r#"
[[port]]
name = "Ethernet0"
devargs = "net_null0"
speed = "100G"
[[port]]
name = "Ethernet4"
devargs = "net_null1"
speed = "100G"
[control_plane]
netns = "leaf1"
[interface]
Ethernet4 = ["10.0.0.2/31"]
"#,
            "t.toml",
        )
        .unwrap();
        let r = representors(&cfg);
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].port, r[0].vdev.as_str(), r[0].ifname.as_str()), (1, "net_tap_rep1", "Ethernet4"));
        assert_eq!(eal_args(&r), vec!["--vdev=net_tap_rep1,iface=Ethernet4".to_string()]);
        assert_eq!(r[0].addrs[0].to_string(), "10.0.0.2/31");
    }
}
