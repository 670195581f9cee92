//! Start and stop the router (docs/routing.md, "How phase 2 calls it"): after EAL and the
//! ports, the kernel settings, the representors' MAC, MTU and addresses, the DPDK tables,
//! QSBR, the next-hop tables and the control thread that mirrors the kernel into them;
//! then one [`Router`] per worker. At stop the control thread is joined.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::dpdk::fib::{route_tables, RouteLookup, RouteWriter, TableSizes};
use crate::dpdk::Qsbr;
use crate::kernel::netlink::RtNetlink;
use crate::kernel::sync::{SyncStatus, SyncThread};
use crate::kernel::{self, representor};
use crate::route::{NextHopTables, PuntLimiter, Rib, RouterPort};
use crate::wire::MacAddr;

use super::router::Router;
use super::spec::SwitchSpec;
use super::DataplaneError;

/// How long start-up waits for the kernel's first full dump to be in the tables.
const SYNC_TIMEOUT: Duration = Duration::from_secs(30);

/// [`Routing::memory`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TableMemory {
    pub fib4_bytes: u64,
    pub fib6_bytes: u64,
    pub nexthops_bytes: u64,
    pub groups_bytes: u64,
}

/// The running router's shared parts.
pub struct Routing {
    qsbr: Arc<Qsbr>,
    lookup: RouteLookup,
    tables: Arc<NextHopTables>,
    pub seed: u32,
    pub status: Arc<SyncStatus>,
    stop: Arc<AtomicBool>,
    thread: Option<SyncThread<RouteWriter, Qsbr>>,
    ports: Vec<RouterPort>,
    ip_mtu: Vec<u16>,
    rep_of: Vec<Option<u16>>,
    vlan_of: Vec<u16>,
    /// Switch port names (`show ip route` names next hops' ports with them).
    pub names: Vec<String>,
    rates: [u32; 7],
    workers: u32,
    /// The sysctls [`kernel::enable_forwarding`] changed, restored at stop.
    sysctls: kernel::Sysctls,
}

/// `p` with the source addresses of its own ICMP errors: the first configured IPv4 and
/// the first configured non-link-local IPv6 address of the interface.
fn with_sources(mut p: RouterPort, addrs: &[crate::route::IfAddr]) -> RouterPort {
    use std::net::IpAddr;
    p.src4 = addrs.iter().find_map(|a| match a.addr {
        IpAddr::V4(v) => Some(v.octets()),
        IpAddr::V6(_) => None,
    });
    p.src6 = addrs.iter().find_map(|a| match a.addr {
        IpAddr::V6(v) if v.segments()[0] & 0xffc0 != 0xfe80 => Some(v.octets()),
        _ => None,
    });
    p
}

/// The representors configured in the kernel (MAC, MTU, addresses) and the forwarding
/// sysctls set; returns the sysctls' previous values, written back at stop (some are the
/// host's without a netns).
fn configure_kernel(spec: &SwitchSpec, macs: &[MacAddr]) -> Result<kernel::Sysctls, DataplaneError> {
    let mut nl = RtNetlink::open().map_err(err)?;
    let reps = representor::representors(&spec.config);
    for r in &reps {
        let mtu = spec.ports[r.port].mtu.min(u32::from(u16::MAX)) as u16;
        representor::configure(&mut nl, &r.ifname, macs[r.mac_port], mtu, &r.addrs).map_err(err)?;
        log::info!(
            "router interface {}: representor {} (kernel netdev {}), mac {}, mtu {mtu}, addresses [{}]",
            r.ifname,
            match spec.ports[r.port].vlan_interface_of {
                // A VLAN interface's representor port is named like the VLAN.
                Some(_) => r.ifname.clone(),
                None => super::super::config::representor_port_name(&r.ifname),
            },
            r.ifname,
            macs[r.mac_port],
            r.addrs.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", ")
        );
    }
    let mut sysctls = kernel::Sysctls::default();
    let rep_names: Vec<String> = reps.iter().map(|r| r.ifname.clone()).collect();
    let scope = kernel::enable_forwarding(&mut sysctls, "/proc/sys", &rep_names).map_err(err)?;
    for (path, old) in sysctls.changed() {
        // Not "…forwarding: …": tests wait for the line "forwarding:".
        log::info!("sysctl {path} was {old}, restored at stop");
    }
    if !scope.ipv6_per_representor {
        log::info!(
            "IPv6 forwarding is namespace-wide (net.ipv6.conf.all.forwarding): this kernel has no per-interface \
             force_forwarding (Linux 6.17)"
        );
    }
    Ok(sysctls)
}

/// The FIBs' sizes: the defaults, or `[control_plane] max_ipv4_routes` / `max_ipv6_routes`.
fn table_sizes(cfg: &crate::config::RoutingConfig) -> TableSizes {
    let mut sizes = TableSizes::default();
    if let Some(n) = cfg.max_ipv4_routes {
        sizes.v4_routes = n;
    }
    if let Some(n) = cfg.max_ipv6_routes {
        sizes = sizes.with_ipv6_routes(n);
    }
    sizes
}

fn err(e: impl std::fmt::Display) -> DataplaneError {
    DataplaneError::Routing(e.to_string())
}

impl Routing {
    /// Start routing for `spec` (None without a router interface). `macs[i]`: port i's MAC
    /// as started. Returns once the kernel's routes, addresses and neighbours are in the
    /// tables (every worker's QSBR reader is offline until it runs).
    pub fn start(spec: &SwitchSpec, macs: &[MacAddr]) -> Result<Option<Routing>, DataplaneError> {
        let cfg = &spec.config.routing;
        if !cfg.enabled() {
            return Ok(None);
        }
        let t0 = Instant::now();
        let nswitch = spec.switch_ports();
        let sysctls = configure_kernel(spec, macs)?;
        let workers = spec.workers.len().max(1) as u32;
        let qsbr = Qsbr::new(workers).map_err(err)?;
        let (lookup, writer) = route_tables(table_sizes(cfg), qsbr.clone()).map_err(err)?;
        let tables = Arc::new(NextHopTables::new());
        // Kernel interface names by port index: the switch ports and the VLAN interfaces
        // (`Vlan1000`: a next hop there is on its representor's port index). A port's
        // representor (`cpu/Ethernet0`) is never a kernel name.
        let names: Vec<String> = spec.ports.iter().map(|p| p.name.clone()).collect();
        let vlan_of: Vec<u16> = spec.ports.iter().map(|p| p.vlan_interface_of.unwrap_or(0)).collect();
        let seed = cfg.ecmp_seed.unwrap_or_else(|| crate::route::seed_from_mac(macs[0]));
        let mut rib = Rib::new(writer, tables.clone(), qsbr.clone(), names.clone());
        rib.set_neighbour_limits(cfg.neighbours);
        let stop = Arc::new(AtomicBool::new(false));
        // Already in the namespace (entered before EAL): the thread inherits it.
        let (thread, status) = kernel::sync::spawn(None, rib, stop.clone()).map_err(err)?;
        let mut routing = Routing {
            qsbr,
            lookup,
            tables,
            seed,
            status,
            stop,
            thread: Some(thread),
            sysctls,
            ports: (0..spec.ports.len())
                .map(|i| match vlan_of[i] {
                    0 if i < nswitch && cfg.is_routed(i) => {
                        let addrs = cfg.interfaces.iter().find(|x| x.port == i).map(|x| x.addrs.as_slice());
                        let p = RouterPort {
                            accept_martian_v4: cfg.accepts_martian_sources(i),
                            ..RouterPort::port(macs[i])
                        };
                        with_sources(p, addrs.unwrap_or(&[]))
                    }
                    0 => RouterPort::NONE,
                    // A VLAN interface routes what its members receive to the router MAC.
                    vid => {
                        let addrs = cfg.vlan_interfaces.iter().find(|v| v.vid == vid).map(|v| v.addrs.as_slice());
                        with_sources(RouterPort::vlan(macs[0]), addrs.unwrap_or(&[]))
                    }
                })
                .collect(),
            ip_mtu: spec.ports.iter().map(|p| p.mtu.min(u32::from(u16::MAX)) as u16).collect(),
            rep_of: (0..spec.ports.len())
                .map(|i| match vlan_of[i] {
                    0 => spec.ports.iter().position(|p| p.representor_of == Some(i)).map(|r| r as u16),
                    _ => Some(i as u16),
                })
                .collect(),
            vlan_of,
            names,
            rates: cfg.copp.rates(),
            workers,
        };
        while !routing.status.synced.load(Ordering::Acquire) {
            let failed = routing.status.error.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if let Some(e) = failed {
                routing.stop();
                return Err(err(format!("routing control thread: {e}")));
            }
            if t0.elapsed() > SYNC_TIMEOUT {
                routing.stop();
                return Err(err(format!("the kernel's routes were not loaded within {SYNC_TIMEOUT:?}")));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let st = routing.status.stats.lock().unwrap_or_else(|p| p.into_inner()).clone();
        log::info!(
            "routing: kernel tables loaded in {:.1} ms ({} events, {} LPM writes, {} errors), ECMP seed {:#010x}",
            t0.elapsed().as_secs_f64() * 1e3,
            st.events,
            st.lpm_writes,
            st.errors,
            seed
        );
        Ok(Some(routing))
    }

    /// The router's tables' memory in bytes, each allocated whole at start: both copies
    /// of the IPv4 and of the IPv6 FIB (DPDK's heap across their creation; a neighbour's
    /// host route is in them), the next hops (one per neighbour or gateway) and the ECMP
    /// groups. The control thread's model of the kernel (the Rib's maps) is not in it.
    pub fn memory(&self) -> TableMemory {
        let fib = self.lookup.memory();
        let (nexthops, groups) = self.tables.bytes();
        TableMemory {
            fib4_bytes: fib.v4_bytes,
            fib6_bytes: fib.v6_bytes,
            nexthops_bytes: nexthops as u64,
            groups_bytes: groups as u64,
        }
    }

    /// Worker `index`'s router: its QSBR reader (offline until the worker runs), the
    /// tables, and its share of the punt rates.
    pub fn worker(&self, index: usize, tsc_hz: u64, now: u64) -> Result<Router, DataplaneError> {
        let reader = self.qsbr.reader(index as u32).map_err(err)?;
        reader.offline();
        Ok(Router::new(
            self.lookup.clone(),
            self.tables.clone(),
            self.seed,
            reader,
            self.ports.clone(),
            self.ip_mtu.clone(),
            self.rep_of.clone(),
            &self.vlan_of,
            PuntLimiter::new(self.rates, self.workers, self.ports.len(), tsc_hz, now),
        ))
    }

    /// Stop the control thread and wait for it (workers stopped first: their readers are
    /// offline, so a grace period in progress ends).
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            if t.join().is_err() {
                log::error!("routing control thread panicked");
            }
        }
        self.sysctls.restore();
    }
}

impl Drop for Routing {
    fn drop(&mut self) {
        self.stop();
    }
}
