//! The kernel as control plane (docs/routing.md): rtnetlink on a control thread, never an
//! lcore.
//!
//! * [`netns`]: enter the switch's network namespace (`[control_plane] netns`);
//! * [`netlink`]: a blocking rtnetlink socket: dumps, events, and the few requests the
//!   switch makes (set a representor's MAC/MTU/up, add its addresses);
//! * [`decode`]: rtnetlink messages → [`crate::route::KernelEvent`];
//! * [`sync`]: the control thread: subscribe, dump, then apply events in batches through
//!   the one writer ([`crate::route::Rib`]);
//! * [`representor`]: the kernel netdev of each router interface (a `net_tap` vdev named
//!   like the port).

pub mod decode;
pub mod netlink;
pub mod netns;
pub mod representor;
pub mod sync;

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
/// in on), reverse-path filtering off (the representors see asymmetric paths).
pub fn enable_forwarding() -> Result<(), KernelError> {
    for (path, v) in [
        ("/proc/sys/net/ipv4/ip_forward", "1"),
        ("/proc/sys/net/ipv6/conf/all/forwarding", "1"),
        ("/proc/sys/net/ipv4/conf/all/send_redirects", "0"),
        ("/proc/sys/net/ipv4/conf/default/send_redirects", "0"),
        ("/proc/sys/net/ipv4/conf/all/rp_filter", "0"),
        ("/proc/sys/net/ipv4/conf/default/rp_filter", "0"),
    ] {
        std::fs::write(path, v).map_err(|err| KernelError::Sysctl { path: path.to_string(), err })?;
    }
    Ok(())
}
