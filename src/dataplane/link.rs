//! Where a port's link state comes from: the PMD (`rte_eth_link_get_nowait`) for NICs and
//! vdevs, the kernel for af_packet and af_xdp ports (their PMDs report "up" whatever the
//! interface does: the kernel's carrier is the truth), nowhere for net_tap (read in the
//! switch's namespace, its interface usually lives in another one).

use crate::dpdk;

/// How one port's link is read.
#[derive(Debug, Clone)]
pub enum LinkSource {
    /// Not watched: counts as up.
    None,
    /// The PMD's link status of this DPDK port.
    Pmd(u16),
    /// The kernel interface's carrier (`/sys/class/net/<iface>/carrier`).
    Kernel(String),
}

/// A link reading: up, and the speed it reports (Mb/s; 0 or u32::MAX when unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    pub up: bool,
    pub speed_mbps: u32,
}

impl LinkSource {
    /// The source for a port with devargs `devargs` and DPDK id `id`.
    pub fn for_port(devargs: &str, id: u16) -> LinkSource {
        let driver = devargs.split(',').next().unwrap_or("");
        if driver.starts_with("net_tap") {
            LinkSource::None
        } else if let Some(iface) = kernel_iface(devargs) {
            LinkSource::Kernel(iface.to_string())
        } else {
            LinkSource::Pmd(id)
        }
    }

    /// Reads the link now (for the kernel: two small sysfs reads, never on an lcore's
    /// per-packet path).
    pub fn read(&self) -> Link {
        match self {
            LinkSource::None => Link { up: true, speed_mbps: u32::MAX },
            LinkSource::Pmd(id) => {
                let l = dpdk::link_of(*id);
                Link { up: l.up, speed_mbps: l.speed_mbps }
            }
            LinkSource::Kernel(iface) => {
                let up = kernel_up(iface);
                Link { up, speed_mbps: if up { kernel_speed_mbps(iface).unwrap_or(u32::MAX) } else { 0 } }
            }
        }
    }

    /// Whether the link is up now (for the kernel: one small sysfs read of the carrier, which
    /// takes no lock; the speed, read by [`LinkSource::read`] at start and when a link comes
    /// up, takes the kernel's `rtnl` lock, which a route storm holds for long stretches).
    pub fn is_up(&self) -> bool {
        match self {
            LinkSource::None => true,
            LinkSource::Pmd(id) => dpdk::link_of(*id).up,
            LinkSource::Kernel(iface) => kernel_up(iface),
        }
    }

    /// True for a kernel interface (read less often than a PMD's).
    pub fn is_kernel(&self) -> bool {
        matches!(self, LinkSource::Kernel(_))
    }
}

/// The kernel interface of an af_packet / af_xdp port (`iface=` in its devargs).
pub fn kernel_iface(devargs: &str) -> Option<&str> {
    let driver = devargs.split(',').next()?;
    if !(driver.starts_with("net_af_packet") || driver.starts_with("net_af_xdp")) {
        return None;
    }
    devargs.split(',').skip(1).find_map(|kv| kv.strip_prefix("iface="))
}

/// Kernel interface `iface` is up with carrier (`/sys/class/net/<iface>/carrier` is "1";
/// reading it fails while the interface is administratively down). The carrier, not the
/// operstate: the kernel sets the carrier at once (a veth whose peer goes down loses it in
/// the same call), while the operstate follows through the linkwatch work queue, which a
/// loaded machine runs tens to hundreds of milliseconds later.
fn kernel_up(iface: &str) -> bool {
    std::fs::read_to_string(format!("/sys/class/net/{iface}/carrier")).is_ok_and(|c| c.trim() == "1")
}

/// The negotiated speed of kernel interface `iface` (`/sys/class/net/<iface>/speed`, Mb/s;
/// None when unknown, e.g. -1 on a link that is down).
fn kernel_speed_mbps(iface: &str) -> Option<u32> {
    let text = std::fs::read_to_string(format!("/sys/class/net/{iface}/speed")).ok()?;
    text.trim().parse::<i64>().ok().filter(|&s| s > 0).and_then(|s| u32::try_from(s).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources() {
        assert!(matches!(LinkSource::for_port("net_tap0,iface=x", 0), LinkSource::None));
        assert!(matches!(LinkSource::for_port("net_af_packet0,iface=v1", 1), LinkSource::Kernel(i) if i == "v1"));
        assert!(
            matches!(LinkSource::for_port("net_af_xdp0,iface=v2,start_queue=0", 1), LinkSource::Kernel(i) if i == "v2")
        );
        assert!(matches!(LinkSource::for_port("net_null0", 3), LinkSource::Pmd(3)));
        assert!(matches!(LinkSource::for_port("0000:3b:00.0", 4), LinkSource::Pmd(4)));
        // A kernel interface that does not exist reads as down.
        assert!(!LinkSource::Kernel("pfcsw-no-such-if".into()).read().up);
        assert!(!LinkSource::Kernel("pfcsw-no-such-if".into()).is_up());
        assert!(LinkSource::Kernel("lo".into()).read().up);
        assert!(LinkSource::Kernel("lo".into()).is_up());
    }
}
