//! The kernel as control plane (docs/routing.md): rtnetlink on a control thread, never an
//! lcore.
//!
//! * [`netns`]: enter the switch's network namespace (`[control_plane] netns`);
//! * [`netlink`]: a blocking rtnetlink socket: dumps, events, and the few requests the
//!   switch makes (set a representor's MAC/MTU/up, add its addresses);
//! * [`decode`]: rtnetlink messages → [`crate::route::KernelEvent`];
//! * [`nexthop`]: nexthop object messages (RTM_*NEXTHOP), read from their bytes;
//! * [`sync`]: the control thread: subscribe, dump, then apply events in batches through
//!   the one writer ([`crate::route::Rib`]);
//! * [`representor`]: the kernel netdev of each router interface (a `net_tap` vdev named
//!   like the port);
//! * [`sysctl`]: sysctls written with their previous values, restored at stop.

pub mod decode;
pub mod netlink;
pub mod netns;
pub mod nexthop;
pub mod representor;
pub mod sync;
pub mod sysctl;

pub use sysctl::Sysctls;

/// What went wrong talking to the kernel.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    #[error("network namespace '{name}': {msg}")]
    Netns { name: String, msg: String },
    #[error("rtnetlink: {0}")]
    Netlink(String),
    #[error("rtnetlink {op}: {err}")]
    Request { op: String, err: std::io::Error },
    #[error("sysctl {path}: {err}")]
    Sysctl { path: String, err: std::io::Error },
}

/// How far the switch's forwarding settings reach beyond its representors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForwardingScope {
    /// IPv6 forwarding is on for the representors only (`force_forwarding`, Linux ≥ 6.17);
    /// false: `net.ipv6.conf.all.forwarding`, every interface of the namespace.
    pub ipv6_per_representor: bool,
}

/// Let the kernel forward what the dataplane punts to it on the representors `reps` (the
/// kernel netdevs of the router interfaces: `neighbour_miss` is forwarded by the kernel while
/// it resolves the neighbour) and keep quiet about it, touching as little of the namespace as
/// Linux allows (docs/routing.md, "Kernel settings"):
///
/// * per representor: IPv4 `forwarding` (Linux decides on the packet's ingress device),
///   `send_redirects` and `rp_filter` off (a punted packet often leaves by the port it came
///   in on; the representors see asymmetric paths), IPv6 `forwarding` (router behaviour on
///   that link) and, where the kernel has it, `force_forwarding`;
/// * namespace-wide, only where Linux combines the device's value with `all`: `all.rp_filter`
///   (the effective value is the larger) and `all.send_redirects` (either one on sends) set
///   to 0 if they are not, and `net.ipv6.conf.all.forwarding` when the kernel has no
///   `force_forwarding` (before 6.17, IPv6 forwards only with `all.forwarding` on).
///
/// `net.ipv4.ip_forward` and the `default` values are not touched. The values before are
/// kept in `saved`, to be restored at stop; `root` is `/proc/sys` (a directory in tests).
pub fn enable_forwarding(saved: &mut Sysctls, root: &str, reps: &[String]) -> Result<ForwardingScope, KernelError> {
    let mut ipv6_per_representor = !reps.is_empty();
    for rep in reps {
        for (key, v) in [("forwarding", "1"), ("send_redirects", "0"), ("rp_filter", "0")] {
            saved.set(&format!("{root}/net/ipv4/conf/{rep}/{key}"), v)?;
        }
        // Absent where IPv6 is off on the netdev (an MTU below 1280).
        saved.set_if_present(&format!("{root}/net/ipv6/conf/{rep}/forwarding"), "1")?;
        ipv6_per_representor &= saved.set_if_present(&format!("{root}/net/ipv6/conf/{rep}/force_forwarding"), "1")?;
    }
    saved.set(&format!("{root}/net/ipv4/conf/all/send_redirects"), "0")?;
    saved.set(&format!("{root}/net/ipv4/conf/all/rp_filter"), "0")?;
    if !ipv6_per_representor {
        saved.set(&format!("{root}/net/ipv6/conf/all/forwarding"), "1")?;
    }
    Ok(ForwardingScope { ipv6_per_representor })
}

/// Size the kernel's neighbour tables (IPv4 ARP and IPv6 ND) for `max` neighbours: raise
/// (never lower) `gc_thresh3` (the hard cap) to `max`, `gc_thresh2` (above it, entries are
/// collected after 5 s) to `max / 2`, `gc_thresh1` (below it, none are) to `max / 8` — the
/// kernel defaults' proportions (128/512/1024). These tables are one per host, shared by
/// every network namespace, and their thresholds exist only in the initial namespace:
/// `Ok(false)` when they are not visible here (inside a namespace).
pub fn neighbour_thresholds(saved: &mut Sysctls, max: u32) -> Result<bool, KernelError> {
    let max = u64::from(max);
    for family in ["ipv4", "ipv6"] {
        for (name, v) in [("gc_thresh3", max), ("gc_thresh2", max / 2), ("gc_thresh1", max / 8)] {
            if !saved.raise(&format!("/proc/sys/net/{family}/neigh/default/{name}"), v)? {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `/proc/sys` stand-in with a host's values; `force`: the kernel has IPv6
    /// `force_forwarding`.
    fn tree(tag: &str, force: bool) -> String {
        let root = std::env::temp_dir().join(format!("pfcsw-fwd-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let mut files = vec![("net/ipv4/ip_forward", "0"), ("net/ipv6/conf/all/forwarding", "0")];
        files.push(("net/ipv6/conf/Ethernet0/forwarding", "0"));
        if force {
            files.push(("net/ipv6/conf/Ethernet0/force_forwarding", "0"));
        }
        for dev in ["all", "default", "Ethernet0"] {
            for (k, v) in [("forwarding", "0"), ("send_redirects", "1"), ("rp_filter", "2")] {
                let p = root.join(format!("net/ipv4/conf/{dev}"));
                std::fs::create_dir_all(&p).unwrap();
                std::fs::write(p.join(k), v).unwrap();
            }
        }
        for (f, v) in files {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, v).unwrap();
        }
        root.to_str().unwrap().to_string()
    }

    #[test]
    fn forwarding_per_representor_and_only_the_combined_values_namespace_wide() {
        for force in [true, false] {
            let root = tree(if force { "force" } else { "old" }, force);
            let read = |k: &str| std::fs::read_to_string(format!("{root}/net/{k}")).unwrap().trim().to_string();
            let mut s = Sysctls::default();
            let scope = enable_forwarding(&mut s, &root, &["Ethernet0".to_string()]).unwrap();
            assert_eq!(scope.ipv6_per_representor, force);
            let rep: Vec<String> = ["forwarding", "send_redirects", "rp_filter"]
                .iter()
                .map(|k| read(&format!("ipv4/conf/Ethernet0/{k}")))
                .collect();
            assert_eq!(rep, ["1", "0", "0"]);
            assert_eq!(read("ipv6/conf/Ethernet0/forwarding"), "1");
            // Untouched: ip_forward, `all.forwarding` (IPv4), every `default`.
            assert_eq!((read("ipv4/ip_forward"), read("ipv4/conf/all/forwarding")), ("0".into(), "0".into()));
            assert_eq!(
                (read("ipv4/conf/default/send_redirects"), read("ipv4/conf/default/rp_filter")),
                ("1".into(), "2".into())
            );
            // Combined with the device's by Linux: `all` must agree.
            assert_eq!(
                (read("ipv4/conf/all/send_redirects"), read("ipv4/conf/all/rp_filter")),
                ("0".into(), "0".into())
            );
            if force {
                assert_eq!(
                    (read("ipv6/conf/Ethernet0/force_forwarding"), read("ipv6/conf/all/forwarding")),
                    ("1".into(), "0".into())
                );
            } else {
                assert_eq!(
                    read("ipv6/conf/all/forwarding"),
                    "1",
                    "no force_forwarding: IPv6 forwarding is namespace-wide"
                );
            }
            assert!(s.restore().is_empty());
            assert_eq!(
                (read("ipv4/conf/all/rp_filter"), read("ipv4/conf/Ethernet0/forwarding")),
                ("2".into(), "0".into())
            );
            assert_eq!(read("ipv6/conf/all/forwarding"), "0");
            std::fs::remove_dir_all(&root).unwrap();
        }
    }
}
