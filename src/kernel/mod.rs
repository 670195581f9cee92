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

/// Let the kernel of the current network namespace forward what the dataplane punts to it
/// (`neighbour_miss`, routes through non-port interfaces) and keep quiet about it: IPv4 and
/// IPv6 forwarding on, ICMP redirects off (a punted packet often leaves by the port it came
/// in on), reverse-path filtering off (the representors see asymmetric paths). The values
/// before are kept in `saved`, to be restored at stop.
pub fn enable_forwarding(saved: &mut Sysctls) -> Result<(), KernelError> {
    for (path, v) in [
        ("/proc/sys/net/ipv4/ip_forward", "1"),
        ("/proc/sys/net/ipv6/conf/all/forwarding", "1"),
        ("/proc/sys/net/ipv4/conf/all/send_redirects", "0"),
        ("/proc/sys/net/ipv4/conf/default/send_redirects", "0"),
        ("/proc/sys/net/ipv4/conf/all/rp_filter", "0"),
        ("/proc/sys/net/ipv4/conf/default/rp_filter", "0"),
    ] {
        saved.set(path, v)?;
    }
    Ok(())
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
