//! The one writer: the kernel's routes, addresses and neighbours (as [`KernelEvent`]s) in,
//! LPM entries, next hops and ECMP groups out. Runs on the control thread; allocates
//! freely; never blocks a worker.
//!
//! What a prefix points at, in order of precedence: one of the switch's addresses
//! ([`Target::Local`]); the kernel's route of lowest metric for exactly that prefix (main
//! table: gateways → a next hop or an ECMP group, a connected subnet → [`Target::Glean`],
//! blackhole, unreachable/prohibit → [`Target::Kernel`], only through interfaces that are
//! not ports → [`Target::NonPort`]); a resolved neighbour's host
//! route (/32, /128) → its next hop.
//!
//! Reuse is what could expose a stale entry, so nothing is reused early: a next-hop or
//! group id no prefix uses any more is freed only after [`LpmWriter::commit`] made the
//! change visible and a grace period ([`Grace`]) then passed.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::net::IpAddr;
use std::sync::Arc;

use super::nexthop_objects::{NextHopKind, NextHopObjects, NhPath, NhTarget};
use super::prefix::{Prefix, Prefix4, Prefix6};
use super::tables::{NextHop, NextHopTables, MAX_PORT};
use super::target::{Target, MAX_GROUPS, MAX_NEXTHOPS, MAX_PATHS};
use crate::wire::MacAddr;

/// RCU grace periods as the writer uses them (DPDK's QSBR in the switch).
pub trait Grace {
    /// Start a grace period.
    fn start(&self) -> u64;
    /// Has it passed (every reader reported a quiescent state since)? Never blocks.
    fn passed(&self, token: u64) -> bool;
    /// Block until it has.
    fn wait(&self, token: u64);
}

/// No concurrent readers (tests, tools): every grace period has passed.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoReaders;

impl Grace for NoReaders {
    fn start(&self) -> u64 {
        0
    }
    fn passed(&self, _: u64) -> bool {
        true
    }
    fn wait(&self, _: u64) {}
}

/// The LPM tables as the writer sees them (DPDK's in the switch, [`SoftLpm`] in tests).
/// Values are [`Target::encode`]d; a /0 is the default route.
pub trait LpmWriter {
    fn set4(&mut self, p: Prefix4, value: u32) -> Result<(), String>;
    fn del4(&mut self, p: Prefix4) -> Result<(), String>;
    fn set6(&mut self, p: Prefix6, value: u32) -> Result<(), String>;
    fn del6(&mut self, p: Prefix6) -> Result<(), String>;
    /// End of a batch: every change made so far becomes visible to readers when this
    /// returns (a double-buffered table flips here).
    fn commit(&mut self) -> Result<(), String>;
    /// Table copies rebuilt to take back what the table lost (`rte_fib6`'s tbl8 groups).
    fn rebuilds(&self) -> u64 {
        0
    }
}

/// A kernel route's type, as far as forwarding cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RouteKind {
    /// RTN_UNICAST: through its paths.
    Unicast,
    /// RTN_LOCAL: to the host.
    Local,
    /// RTN_BLACKHOLE: dropped.
    Blackhole,
    /// RTN_UNREACHABLE, RTN_PROHIBIT, RTN_THROW: the kernel answers.
    Unreachable,
}

/// One path of a route: the interface and, unless the subnet is connected, the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Path {
    pub ifindex: u32,
    pub gateway: Option<IpAddr>,
    /// Relative weight (the kernel's rtnh_hops + 1), ≥ 1.
    pub weight: u16,
}

impl From<NhPath> for Path {
    fn from(p: NhPath) -> Path {
        Path { ifindex: p.ifindex, gateway: p.gateway, weight: p.weight }
    }
}

/// A route of the kernel's main table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelRoute {
    pub prefix: Prefix,
    /// RTA_PRIORITY: the lowest metric of a prefix is the one in force.
    pub metric: u32,
    pub kind: RouteKind,
    /// The paths the message spells out (with nexthop objects: what the kernel expands
    /// while `nexthop_compat_mode` is 1, else none).
    pub paths: Vec<Path>,
    /// RTA_NH_ID: the kernel nexthop object the route goes through; when the writer knows
    /// it, it is what the route forwards to.
    pub nh_id: Option<u32>,
}

/// What the kernel says, decoded from rtnetlink (see [`crate::kernel`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelEvent {
    /// An interface exists (new or changed); a switch port's representor has its name.
    /// `carrier`: up with a carrier (IFF_UP, and IFF_RUNNING or IFF_LOWER_UP); without it
    /// the kernel flushes the nexthop objects through the interface, without a message.
    Link { ifindex: u32, name: String, carrier: bool },
    /// An interface is gone.
    LinkGone { ifindex: u32 },
    /// An address was added to or removed from an interface.
    Addr { add: bool, ifindex: u32, addr: IpAddr, len: u8 },
    /// A route was added (`append`: another path of an existing IPv6 route, NLM_F_APPEND)
    /// or removed.
    Route { add: bool, append: bool, route: KernelRoute },
    /// A neighbour entry: its MAC when resolved, `None` while incomplete or failed.
    Neigh { add: bool, ifindex: u32, addr: IpAddr, mac: Option<MacAddr> },
    /// A kernel nexthop object was added or replaced (RTM_NEWNEXTHOP).
    NextHop { id: u32, kind: NextHopKind },
    /// A kernel nexthop object was deleted (RTM_DELNEXTHOP): the kernel deletes the routes
    /// through it, without a message for them.
    NextHopGone { id: u32 },
}

/// What a prefix should point at, in the writer's terms (compared before anything is
/// rewritten, so an unchanged route costs no table write).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Want {
    Special(Target),
    Nh(u16, IpAddr),
    /// Members (port, gateway), already expanded by weight and ordered.
    Group(Vec<(u16, IpAddr)>),
}

/// An ECMP group's members as the writer knows them: (port, gateway), expanded by weight.
type GroupKey = Vec<(u16, IpAddr)>;

#[derive(Debug)]
struct Slot<K> {
    key: Option<K>,
    refs: u32,
}

/// Id allocation with deferred reuse.
#[derive(Debug)]
struct Ids {
    max: usize,
    next: usize,
    free: Vec<u16>,
    /// Released in the current batch: queued behind a grace period at commit.
    released: Vec<u16>,
    pending: VecDeque<(u64, u16)>,
}

impl Ids {
    fn new(max: usize) -> Ids {
        Ids { max, next: 0, free: Vec::new(), released: Vec::new(), pending: VecDeque::new() }
    }

    fn alloc(&mut self, grace: &dyn Grace) -> Option<u16> {
        while let Some(&(t, id)) = self.pending.front() {
            if !grace.passed(t) {
                break;
            }
            self.pending.pop_front();
            self.free.push(id);
        }
        if let Some(id) = self.free.pop() {
            return Some(id);
        }
        if self.next < self.max {
            self.next += 1;
            return Some((self.next - 1) as u16);
        }
        let (t, id) = self.pending.pop_front()?;
        grace.wait(t);
        Some(id)
    }

    fn after_commit(&mut self, grace: &dyn Grace) {
        if !self.released.is_empty() {
            let t = grace.start();
            self.pending.extend(self.released.drain(..).map(|id| (t, id)));
        }
    }
}

/// Counters of the writer (the control thread's, read by `show` and the stats JSON).
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RibStats {
    pub events: u64,
    pub lpm_writes: u64,
    /// Prefixes the tables refused (full), each counted once until it is installed: the
    /// prefix keeps its previous entry or none, and is retried ([`Rib::retry_refused`]).
    pub errors: u64,
    pub last_error: Option<String>,
    /// Prefixes refused now, waiting for room (the FIB is not the kernel's while > 0).
    pub refused: u64,
    /// Refused prefixes installed on a later try.
    pub retried_ok: u64,
    /// IPv6 table copies rebuilt to take back the tbl8 groups `rte_fib6` lost.
    pub fib_rebuilds: u64,
    /// Neighbours the kernel reported beyond [`NeighbourLimits`] (not mirrored: their
    /// packets are punted `neighbour_miss` and the kernel forwards them).
    pub neighbours_refused: u64,
}

/// How many kernel neighbours the router mirrors (each is a host route in the FIB and a
/// next hop), IPv4 and IPv6 together: a flood of ARP/ND from spoofed sources cannot fill the FIB
/// (`[control_plane] max_neighbours`, `max_neighbours_per_interface`; docs/routing.md
/// "Neighbours, bounded"). A next hop's gateway is always mirrored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct NeighbourLimits {
    /// All router interfaces together.
    pub total: u32,
    /// One router interface.
    pub per_interface: u32,
}

impl Default for NeighbourLimits {
    /// 16 Ki (a Trident3 ToR's validated neighbour table), on any one interface too (a
    /// server VLAN holds most of them).
    fn default() -> Self {
        NeighbourLimits { total: 16_384, per_interface: 16_384 }
    }
}

/// How a prefix got into the dataplane's table (`show ip route` codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum RouteOrigin {
    /// `C`: a connected subnet (punted `neighbour_miss` until a neighbour resolves).
    Connected,
    /// `L`: one of the switch's own addresses (punted `to_us`).
    Local,
    /// `K`: a kernel route (`ip route`, FRR, BIRD...), through next hops or special.
    Kernel,
    /// `N`: the host route of a resolved neighbour.
    Neighbour,
}

impl RouteOrigin {
    /// The one-letter code of `show ip route`.
    pub fn code(self) -> char {
        match self {
            RouteOrigin::Connected => 'C',
            RouteOrigin::Local => 'L',
            RouteOrigin::Kernel => 'K',
            RouteOrigin::Neighbour => 'N',
        }
    }
}

/// One installed prefix as `show ip route` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteRow {
    pub prefix: Prefix,
    pub origin: RouteOrigin,
    /// The kernel route's metric (None for addresses and neighbours).
    pub metric: Option<u32>,
    /// What the LPM entry points at.
    pub target: Target,
    /// Next hops (distinct ECMP members with their weight): port, gateway, neighbour MAC
    /// if resolved, weight. Empty for a special target.
    pub nexthops: Vec<(u16, IpAddr, Option<MacAddr>, u16)>,
    /// For a connected subnet: the port.
    pub port: Option<u16>,
}

/// A neighbour as `show arp` / `show ndp` list it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct NeighRow {
    pub addr: IpAddr,
    pub port: u16,
    /// None while the kernel resolves it (or after it failed).
    pub mac: Option<MacAddr>,
}

/// What the writer has installed, for `show` (taken on the control thread).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RibView {
    pub routes: Vec<RouteRow>,
    pub neighbours: Vec<NeighRow>,
    pub stats: RibStats,
}

/// The writer's model of the kernel and of what it installed.
pub struct Rib<L: LpmWriter, G: Grace> {
    lpm: L,
    grace: Arc<G>,
    tables: Arc<NextHopTables>,
    port_names: Vec<String>,
    ifindex_port: HashMap<u32, u16>,
    routes: HashMap<Prefix, BTreeMap<u32, KernelRoute>>,
    /// The kernel's nexthop objects, and the prefixes with a route through each.
    nexthops: NextHopObjects,
    nh_users: HashMap<u32, HashSet<Prefix>>,
    locals: HashMap<IpAddr, u32>,
    /// Neighbours by address, then port: `None` = known but unresolved.
    neighbours: HashMap<IpAddr, BTreeMap<u16, Option<MacAddr>>>,
    neighbour_limits: NeighbourLimits,
    /// Entries of `neighbours` per port, and in all.
    neighbours_per_port: HashMap<u16, u32>,
    neighbours_total: u32,
    installed: HashMap<Prefix, (Want, Target)>,
    nh_by_key: HashMap<(u16, IpAddr), u16>,
    nh: Vec<Slot<(u16, IpAddr)>>,
    nh_ids: Ids,
    group_by_key: HashMap<GroupKey, u16>,
    groups: Vec<Slot<(GroupKey, Vec<u16>)>>,
    group_ids: Ids,
    stats: RibStats,
    /// Prefixes whose change the tables refused: retried after a batch that freed room and
    /// on the control thread's timer.
    refused: BTreeSet<Prefix>,
    /// Something was deleted or released in this batch (room for the refused).
    freed: bool,
}

impl<L: LpmWriter, G: Grace> Rib<L, G> {
    /// A writer for the switch's ports (`port_names[i]` = port index `i`: its kernel
    /// representor has that name) over `lpm`, `tables`, with grace periods of `grace`.
    pub fn new(lpm: L, tables: Arc<NextHopTables>, grace: Arc<G>, port_names: Vec<String>) -> Rib<L, G> {
        Rib {
            lpm,
            grace,
            tables,
            port_names,
            ifindex_port: HashMap::new(),
            routes: HashMap::new(),
            nexthops: NextHopObjects::default(),
            nh_users: HashMap::new(),
            locals: HashMap::new(),
            neighbours: HashMap::new(),
            neighbour_limits: NeighbourLimits::default(),
            neighbours_per_port: HashMap::new(),
            neighbours_total: 0,
            installed: HashMap::new(),
            nh_by_key: HashMap::new(),
            nh: (0..MAX_NEXTHOPS).map(|_| Slot { key: None, refs: 0 }).collect(),
            nh_ids: Ids::new(MAX_NEXTHOPS),
            group_by_key: HashMap::new(),
            groups: (0..MAX_GROUPS).map(|_| Slot { key: None, refs: 0 }).collect(),
            group_ids: Ids::new(MAX_GROUPS),
            stats: RibStats::default(),
            refused: BTreeSet::new(),
            freed: false,
        }
    }

    /// Bound the neighbours mirrored from now on (those beyond are refused and counted).
    pub fn set_neighbour_limits(&mut self, limits: NeighbourLimits) {
        self.neighbour_limits = limits;
    }

    /// Neighbours mirrored now.
    pub fn neighbour_count(&self) -> u32 {
        self.neighbours_total
    }

    /// Is there room for a new neighbour `addr` on `port`? Always for a next hop's gateway.
    fn neighbour_room(&self, port: u16, addr: IpAddr) -> bool {
        let here = self.neighbours_per_port.get(&port).copied().unwrap_or(0);
        let l = self.neighbour_limits;
        self.nh_by_key.contains_key(&(port, addr)) || (here < l.per_interface && self.neighbours_total < l.total)
    }

    fn count_neighbour(&mut self, port: u16, add: bool) {
        let n = self.neighbours_per_port.entry(port).or_default();
        if add {
            *n += 1;
            self.neighbours_total += 1;
        } else {
            *n = n.saturating_sub(1);
            self.neighbours_total = self.neighbours_total.saturating_sub(1);
        }
    }

    /// The writer's counters.
    pub fn stats(&self) -> &RibStats {
        &self.stats
    }

    /// The LPM tables (to read them back in tests).
    pub fn lpm(&self) -> &L {
        &self.lpm
    }

    /// Port index of a kernel interface (the representor of that port).
    pub fn port_of(&self, ifindex: u32) -> Option<u16> {
        self.ifindex_port.get(&ifindex).copied()
    }

    /// Every installed prefix and its target, sorted (for `show ip route` and tests).
    pub fn installed(&self) -> Vec<(Prefix, Target)> {
        let mut v: Vec<(Prefix, Target)> = self.installed.iter().map(|(p, (_, t))| (*p, *t)).collect();
        v.sort();
        v
    }

    /// Next hops in use: (id, port, gateway, neighbour MAC if resolved).
    pub fn next_hops(&self) -> Vec<(u16, u16, IpAddr, Option<MacAddr>)> {
        let mut v: Vec<_> = self
            .nh_by_key
            .iter()
            .map(|(&(port, gw), &id)| (id, port, gw, self.tables.next_hop(id).and_then(|n| n.mac)))
            .collect();
        v.sort();
        v
    }

    /// Everything installed, sorted, with its origin and next hops (for `show ip route`,
    /// `show arp`, `show ndp`).
    pub fn view(&self) -> RibView {
        let mut routes = Vec::with_capacity(self.installed.len());
        for (p, (want, target)) in &self.installed {
            let route = self.routes.get(p).and_then(|m| m.iter().next());
            let origin = match (want, route) {
                (Want::Special(Target::Local), _) => RouteOrigin::Local,
                (Want::Special(Target::Glean), _) => RouteOrigin::Connected,
                (_, Some(_)) => RouteOrigin::Kernel,
                (_, None) => RouteOrigin::Neighbour,
            };
            let hop = |port: u16, gw: IpAddr, weight: u16| (port, gw, self.neighbour_mac(port, gw), weight);
            let nexthops = match want {
                Want::Special(_) => Vec::new(),
                Want::Nh(port, gw) => vec![hop(*port, *gw, 1)],
                Want::Group(members) => {
                    let mut v: Vec<(u16, IpAddr, Option<MacAddr>, u16)> = Vec::new();
                    for &(port, gw) in members {
                        match v.iter_mut().find(|h| (h.0, h.1) == (port, gw)) {
                            Some(h) => h.3 += 1,
                            None => v.push(hop(port, gw, 1)),
                        }
                    }
                    v
                }
            };
            let port = route.and_then(|(_, r)| self.first_path(r)).and_then(|path| self.port_of(path.ifindex));
            routes.push(RouteRow {
                prefix: *p,
                origin,
                metric: route
                    .filter(|_| origin == RouteOrigin::Kernel || origin == RouteOrigin::Connected)
                    .map(|(m, _)| *m),
                target: *target,
                nexthops,
                port: if origin == RouteOrigin::Connected { port } else { None },
            });
        }
        routes.sort_by_key(|r| r.prefix);
        let mut neighbours: Vec<NeighRow> = self
            .neighbours
            .iter()
            .flat_map(|(addr, m)| m.iter().map(|(&port, &mac)| NeighRow { addr: *addr, port, mac }))
            .collect();
        neighbours.sort();
        RibView { routes, neighbours, stats: self.stats.clone() }
    }

    /// Apply a batch of events, then make it visible ([`LpmWriter::commit`]) and queue what
    /// it freed behind a grace period. Errors (a full table) are counted, not returned: the
    /// writer carries on with the rest, as the kernel does not wait for it.
    pub fn apply(&mut self, events: impl IntoIterator<Item = KernelEvent>) {
        self.apply_with(events, false)
    }

    fn apply_with(&mut self, events: impl IntoIterator<Item = KernelEvent>, mut all: bool) {
        let mut dirty: Vec<Prefix> = Vec::new();
        for ev in events {
            self.stats.events += 1;
            match ev {
                KernelEvent::Link { ifindex, name, carrier } => {
                    if !carrier {
                        self.nexthops_flushed(ifindex, &mut dirty);
                    }
                    let port = self.port_names.iter().position(|n| *n == name).map(|p| p as u16);
                    let before = self.ifindex_port.get(&ifindex).copied();
                    match port {
                        Some(p) if p <= MAX_PORT => {
                            self.ifindex_port.insert(ifindex, p);
                        }
                        _ => {
                            self.ifindex_port.remove(&ifindex);
                        }
                    }
                    all |= before != self.ifindex_port.get(&ifindex).copied();
                }
                KernelEvent::LinkGone { ifindex } => {
                    self.nexthops_flushed(ifindex, &mut dirty);
                    all |= self.ifindex_port.remove(&ifindex).is_some();
                }
                KernelEvent::Addr { add, addr, .. } => {
                    let n = self.locals.entry(addr).or_insert(0);
                    if add {
                        *n += 1;
                    } else {
                        *n = n.saturating_sub(1);
                        if *n == 0 {
                            self.locals.remove(&addr);
                        }
                    }
                    dirty.push(Prefix::host(addr));
                }
                KernelEvent::Route { add, append, route } => {
                    self.route_event(add, append, route, &mut dirty);
                }
                KernelEvent::Neigh { add, ifindex, addr, mac } => {
                    let Some(port) = self.port_of(ifindex) else { continue };
                    if add {
                        let known = self.neighbours.get(&addr).is_some_and(|m| m.contains_key(&port));
                        if !known {
                            if !self.neighbour_room(port, addr) {
                                self.stats.neighbours_refused += 1;
                                continue;
                            }
                            self.count_neighbour(port, true);
                        }
                        self.neighbours.entry(addr).or_default().insert(port, mac);
                    } else if let Some(m) = self.neighbours.get_mut(&addr) {
                        let removed = m.remove(&port).is_some();
                        if m.is_empty() {
                            self.neighbours.remove(&addr);
                        }
                        if removed {
                            self.count_neighbour(port, false);
                        }
                    }
                    if let Some(&id) = self.nh_by_key.get(&(port, addr)) {
                        let mac = self.neighbour_mac(port, addr);
                        self.tables.set_next_hop(id, Some(NextHop { port, mac }));
                    }
                    dirty.push(Prefix::host(addr));
                }
                KernelEvent::NextHop { id, kind } => {
                    let mut changed = BTreeSet::new();
                    self.nexthops.set(id, kind, &mut changed);
                    self.users_dirty(&changed, &mut dirty);
                }
                KernelEvent::NextHopGone { id } => self.nexthop_gone(id, &mut dirty),
            }
        }
        if all {
            dirty.extend(self.routes.keys().copied());
            dirty.extend(self.installed.keys().copied());
            dirty.extend(self.neighbours.keys().map(|a| Prefix::host(*a)));
        }
        dirty.sort();
        dirty.dedup();
        for p in dirty {
            self.refresh(p);
        }
        // Room was made: the refused get their turn in the same commit.
        if self.freed && !self.refused.is_empty() {
            self.retry();
        }
        self.commit();
    }

    fn commit(&mut self) {
        if let Err(e) = self.lpm.commit() {
            self.error(e);
        }
        self.freed = false;
        self.nh_ids.after_commit(&*self.grace);
        self.group_ids.after_commit(&*self.grace);
        self.stats.refused = self.refused.len() as u64;
        self.stats.fib_rebuilds = self.lpm.rebuilds();
    }

    fn retry(&mut self) {
        let refused: Vec<Prefix> = self.refused.iter().copied().collect();
        for p in refused {
            self.refresh(p);
        }
    }

    /// Prefixes refused now (waiting for room in the tables).
    pub fn refused(&self) -> usize {
        self.refused.len()
    }

    /// Try the refused prefixes again and commit (the control thread's timer: room can
    /// come from a grace period ending, which frees next-hop and group ids, not only from
    /// a batch). Returns how many are still refused.
    pub fn retry_refused(&mut self) -> usize {
        if !self.refused.is_empty() {
            self.retry();
            self.commit();
        }
        self.refused.len()
    }

    /// Start over from a full dump of the kernel (`events`): forget what the kernel said so
    /// far, apply the dump, and bring every prefix installed before or after in line (what
    /// the dump no longer has is withdrawn). Used at start and after lost events.
    pub fn resync(&mut self, events: impl IntoIterator<Item = KernelEvent>) {
        self.routes.clear();
        self.nexthops.clear();
        self.nh_users.clear();
        self.locals.clear();
        self.neighbours.clear();
        self.neighbours_per_port.clear();
        self.neighbours_total = 0;
        self.ifindex_port.clear();
        self.apply_with(events, true);
    }

    /// Every prefix with a route through one of `ids` is to be refreshed.
    fn users_dirty(&self, ids: &BTreeSet<u32>, dirty: &mut Vec<Prefix>) {
        for id in ids {
            dirty.extend(self.nh_users.get(id).into_iter().flatten().copied());
        }
    }

    /// The kernel flushes the nexthop objects through an interface that is down, without
    /// carrier or gone (no message says so): the same here.
    fn nexthops_flushed(&mut self, ifindex: u32, dirty: &mut Vec<Prefix>) {
        for id in self.nexthops.through(ifindex) {
            self.nexthop_gone(id, dirty);
        }
    }

    /// A nexthop object is gone: as the kernel does, the routes through it (or through a
    /// group it left empty) are deleted, and groups that lost it change.
    fn nexthop_gone(&mut self, id: u32, dirty: &mut Vec<Prefix>) {
        let (mut changed, mut gone) = (BTreeSet::new(), BTreeSet::new());
        self.nexthops.remove(id, &mut changed, &mut gone);
        self.users_dirty(&changed, dirty);
        for g in gone {
            for p in self.nh_users.remove(&g).unwrap_or_default() {
                dirty.push(p);
                let Some(by_metric) = self.routes.get_mut(&p) else { continue };
                by_metric.retain(|_, r| r.nh_id != Some(g));
                if by_metric.is_empty() {
                    self.routes.remove(&p);
                }
            }
        }
    }

    fn route_event(&mut self, add: bool, append: bool, route: KernelRoute, dirty: &mut Vec<Prefix>) {
        let p = route.prefix;
        dirty.push(p);
        let ids_of = |m: Option<&BTreeMap<u32, KernelRoute>>| -> Vec<u32> {
            let mut v: Vec<u32> = m.into_iter().flat_map(|m| m.values().filter_map(|r| r.nh_id)).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let before = ids_of(self.routes.get(&p));
        self.route_change(add, append, route);
        let after = ids_of(self.routes.get(&p));
        for id in before.iter().filter(|i| !after.contains(i)) {
            if let Some(u) = self.nh_users.get_mut(id) {
                u.remove(&p);
                if u.is_empty() {
                    self.nh_users.remove(id);
                }
            }
        }
        for id in after.iter().filter(|i| !before.contains(i)) {
            self.nh_users.entry(*id).or_default().insert(p);
        }
    }

    fn route_change(&mut self, add: bool, append: bool, route: KernelRoute) {
        let p = route.prefix;
        let by_metric = self.routes.entry(p).or_default();
        if add {
            match by_metric.get_mut(&route.metric) {
                Some(r) if append && r.kind == RouteKind::Unicast && route.kind == RouteKind::Unicast => {
                    for path in route.paths {
                        if !r.paths.contains(&path) {
                            r.paths.push(path);
                        }
                    }
                }
                _ => {
                    by_metric.insert(route.metric, route);
                }
            }
        } else if let Some(r) = by_metric.get_mut(&route.metric) {
            // An IPv6 multipath route loses one path at a time (the message names it);
            // anything else goes whole.
            let named: Vec<&Path> = route.paths.iter().filter(|x| x.gateway.is_some()).collect();
            let keep: Vec<Path> = r
                .paths
                .iter()
                .filter(|x| !named.iter().any(|n| n.ifindex == x.ifindex && n.gateway == x.gateway))
                .copied()
                .collect();
            if !named.is_empty() && !keep.is_empty() && keep.len() < r.paths.len() {
                r.paths = keep;
            } else {
                by_metric.remove(&route.metric);
            }
        }
        if by_metric.is_empty() {
            self.routes.remove(&p);
        }
    }

    /// A route's first path, through its nexthop object if it has one.
    fn first_path(&self, r: &KernelRoute) -> Option<Path> {
        match r.nh_id.and_then(|id| self.nexthops.resolve(id)) {
            Some(NhTarget::Paths(p)) => p.first().copied().map(Path::from),
            Some(_) => None,
            None => r.paths.first().copied(),
        }
    }

    /// Kernel nexthop objects mirrored now.
    pub fn nexthop_objects(&self) -> usize {
        self.nexthops.len()
    }

    fn neighbour_mac(&self, port: u16, addr: IpAddr) -> Option<MacAddr> {
        self.neighbours.get(&addr).and_then(|m| m.get(&port).copied().flatten())
    }

    /// Counted, not logged: one refusal per route on a full table would be a line per
    /// route (the control thread logs a rate-limited summary from the counters).
    fn error(&mut self, e: String) {
        self.stats.errors += 1;
        self.stats.last_error = Some(e);
    }

    /// `p`'s change was refused: kept for a retry, counted the first time.
    fn refuse(&mut self, p: Prefix, e: String) {
        if self.refused.insert(p) {
            self.error(format!("{p}: {e}"));
        } else {
            self.stats.last_error = Some(format!("{p}: {e}"));
        }
    }

    /// What `p` should point at now.
    fn want(&self, p: Prefix) -> Option<Want> {
        let host = p.prefix_len() == if matches!(p, Prefix::V4(_)) { 32 } else { 128 };
        if host && self.locals.contains_key(&p.addr()) {
            return Some(Want::Special(Target::Local));
        }
        if let Some(r) = self.routes.get(&p).and_then(|m| m.values().next()) {
            return Some(self.want_route(r));
        }
        if host {
            if let Some((&port, _)) = self.neighbours.get(&p.addr())?.iter().find(|(_, m)| m.is_some()) {
                return Some(Want::Nh(port, p.addr()));
            }
        }
        None
    }

    fn want_route(&self, r: &KernelRoute) -> Want {
        match r.kind {
            RouteKind::Local => return Want::Special(Target::Local),
            RouteKind::Blackhole => return Want::Special(Target::Blackhole),
            RouteKind::Unreachable => return Want::Special(Target::Kernel),
            RouteKind::Unicast => {}
        }
        let resolved;
        let paths = match r.nh_id.and_then(|id| self.nexthops.resolve(id)) {
            Some(NhTarget::Paths(p)) => {
                resolved = p.into_iter().map(Path::from).collect::<Vec<Path>>();
                &resolved
            }
            Some(NhTarget::Blackhole) => return Want::Special(Target::Blackhole),
            Some(NhTarget::Kernel) => return Want::Special(Target::Kernel),
            // No object (or an unknown one): what the message spells out.
            None => &r.paths,
        };
        let mut members: Vec<(u16, IpAddr, u16)> = Vec::new();
        // Paths through interfaces that are not ports (management, dummy, lo) are left out:
        // the dataplane cannot send there, and the kernel would forward off the fabric.
        for path in paths {
            let Some(port) = self.port_of(path.ifindex) else { continue };
            match path.gateway {
                Some(gw) => members.push((port, gw, path.weight.max(1))),
                None => return Want::Special(Target::Glean),
            }
        }
        members.sort();
        members.dedup_by(|a, b| (a.0, a.1) == (b.0, b.1));
        members.truncate(MAX_PATHS);
        match members.as_slice() {
            [] if paths.is_empty() => Want::Special(Target::Kernel),
            [] => Want::Special(Target::NonPort),
            [(port, gw, _)] => Want::Nh(*port, *gw),
            many => {
                let total: usize = many.iter().map(|m| usize::from(m.2)).sum();
                let expanded: Vec<(u16, IpAddr)> = if total <= MAX_PATHS {
                    many.iter().flat_map(|m| std::iter::repeat_n((m.0, m.1), usize::from(m.2))).collect()
                } else {
                    many.iter().map(|m| (m.0, m.1)).collect()
                };
                Want::Group(expanded)
            }
        }
    }

    fn refresh(&mut self, p: Prefix) {
        let want = self.want(p);
        let old = self.installed.get(&p).cloned();
        if want.as_ref() == old.as_ref().map(|o| &o.0) {
            self.installed_as_wanted(p);
            return;
        }
        let new = match want {
            Some(w) => match self.acquire(&w) {
                Ok(t) => Some((w, t)),
                Err(e) => {
                    self.refuse(p, e);
                    return;
                }
            },
            None => None,
        };
        let res = match (&new, p) {
            (Some((_, t)), Prefix::V4(q)) => self.lpm.set4(q, t.encode()),
            (Some((_, t)), Prefix::V6(q)) => self.lpm.set6(q, t.encode()),
            (None, Prefix::V4(q)) => self.lpm.del4(q),
            (None, Prefix::V6(q)) => self.lpm.del6(q),
        };
        self.stats.lpm_writes += 1;
        if let Err(e) = res {
            // The table kept what it had: give back what was taken for the new entry.
            if let Some((_, t)) = new {
                self.release(t);
            }
            self.refuse(p, e);
            return;
        }
        match new {
            Some(n) => {
                self.installed.insert(p, n);
            }
            None => {
                self.installed.remove(&p);
                self.freed = true;
            }
        }
        // A replaced entry frees no table room; its ids come back after a grace period
        // (the timer's retry).
        if let Some((_, t)) = old {
            self.release(t);
        }
        self.installed_as_wanted(p);
    }

    /// `p` is as the kernel wants it: no longer refused.
    fn installed_as_wanted(&mut self, p: Prefix) {
        if self.refused.remove(&p) && self.installed.contains_key(&p) {
            self.stats.retried_ok += 1;
        }
    }

    fn acquire(&mut self, w: &Want) -> Result<Target, String> {
        match w {
            Want::Special(t) => Ok(*t),
            Want::Nh(port, gw) => self.acquire_nh(*port, *gw).map(Target::NextHop),
            Want::Group(members) => {
                if let Some(&id) = self.group_by_key.get(members) {
                    self.groups[usize::from(id)].refs += 1;
                    return Ok(Target::Group(id));
                }
                let mut ids = Vec::with_capacity(members.len());
                for &(port, gw) in members {
                    match self.acquire_nh(port, gw) {
                        Ok(id) => ids.push(id),
                        Err(e) => {
                            for id in ids {
                                self.release_nh(id);
                            }
                            return Err(e);
                        }
                    }
                }
                let Some(id) = self.group_ids.alloc(&*self.grace) else {
                    for id in ids {
                        self.release_nh(id);
                    }
                    return Err(format!("ECMP group table full ({MAX_GROUPS})"));
                };
                self.tables.set_group(id, &ids);
                self.groups[usize::from(id)] = Slot { key: Some((members.clone(), ids)), refs: 1 };
                self.group_by_key.insert(members.clone(), id);
                Ok(Target::Group(id))
            }
        }
    }

    fn acquire_nh(&mut self, port: u16, gw: IpAddr) -> Result<u16, String> {
        if let Some(&id) = self.nh_by_key.get(&(port, gw)) {
            self.nh[usize::from(id)].refs += 1;
            return Ok(id);
        }
        let id = self.nh_ids.alloc(&*self.grace).ok_or_else(|| format!("next-hop table full ({MAX_NEXTHOPS})"))?;
        let mac = self.neighbour_mac(port, gw);
        self.tables.set_next_hop(id, Some(NextHop { port, mac }));
        self.nh[usize::from(id)] = Slot { key: Some((port, gw)), refs: 1 };
        self.nh_by_key.insert((port, gw), id);
        Ok(id)
    }

    fn release(&mut self, t: Target) {
        match t {
            Target::NextHop(id) => self.release_nh(id),
            Target::Group(id) => {
                let slot = &mut self.groups[usize::from(id)];
                slot.refs = slot.refs.saturating_sub(1);
                if slot.refs == 0 {
                    if let Some((key, members)) = slot.key.take() {
                        self.group_by_key.remove(&key);
                        for m in members {
                            self.release_nh(m);
                        }
                    }
                    self.group_ids.released.push(id);
                }
            }
            _ => {}
        }
    }

    fn release_nh(&mut self, id: u16) {
        let slot = &mut self.nh[usize::from(id)];
        slot.refs = slot.refs.saturating_sub(1);
        if slot.refs == 0 {
            if let Some(key) = slot.key.take() {
                self.nh_by_key.remove(&key);
            }
            // The slot keeps its value: a reader that read this id before the change
            // still forwards correctly; it is rewritten only after a grace period.
            self.nh_ids.released.push(id);
        }
    }
}

/// A plain software LPM (a map per prefix), for tests and as the reference the DPDK
/// tables are checked against. Not for the fast path.
#[derive(Debug, Default, Clone)]
pub struct SoftLpm {
    pub v4: BTreeMap<Prefix4, u32>,
    pub v6: BTreeMap<Prefix6, u32>,
    pub commits: u64,
}

impl SoftLpm {
    /// Longest match of an IPv4 address (host order), or [`super::NO_ROUTE`].
    pub fn lookup4(&self, a: u32) -> u32 {
        (0..=32u8).rev().find_map(|l| self.v4.get(&Prefix4::new(a.into(), l)).copied()).unwrap_or(super::NO_ROUTE)
    }
    /// Longest match of an IPv6 address.
    pub fn lookup6(&self, a: [u8; 16]) -> u32 {
        (0..=128u8).rev().find_map(|l| self.v6.get(&Prefix6::new(a.into(), l)).copied()).unwrap_or(super::NO_ROUTE)
    }
}

impl LpmWriter for SoftLpm {
    fn set4(&mut self, p: Prefix4, value: u32) -> Result<(), String> {
        self.v4.insert(p, value);
        Ok(())
    }
    fn del4(&mut self, p: Prefix4) -> Result<(), String> {
        self.v4.remove(&p);
        Ok(())
    }
    fn set6(&mut self, p: Prefix6, value: u32) -> Result<(), String> {
        self.v6.insert(p, value);
        Ok(())
    }
    fn del6(&mut self, p: Prefix6) -> Result<(), String> {
        self.v6.remove(&p);
        Ok(())
    }
    fn commit(&mut self) -> Result<(), String> {
        self.commits += 1;
        Ok(())
    }
}
