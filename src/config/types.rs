//! The validated, resolved configuration: plain numbers and indices, no strings to parse.

use serde::Serialize;

use crate::wire::NUM_TC;
use crate::wred::WredProfile;

/// Highest lcore id + 1 accepted (DPDK `RTE_MAX_LCORE` of the Debian build).
pub const MAX_LCORE: u32 = 128;
/// Per-lcore mempool cache size assumed when computing `mbuf_count`.
pub const MBUF_CACHE_SIZE: u32 = 256;
/// Largest `switch.burst_size`: the dataplane's burst arrays hold this many packets
/// (`dpdk::BURST_CAP`), so the config refuses more instead of the dataplane clamping.
pub const MAX_BURST_SIZE: u16 = 256;

/// The whole configuration, validated. Build it with [`super::load`] or
/// [`super::from_str`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Config {
    /// Where it was read from (file path or the `origin` given to `from_str`).
    pub origin: String,
    pub eal: EalConfig,
    pub switch: SwitchConfig,
    /// `[[port]]` in file order; `ports[i].index == i`.
    pub ports: Vec<PortConfig>,
    pub lcores: LcoreConfig,
    pub buffer: BufferConfig,
    pub qos: QosConfig,
    /// PFC watchdog on every port's lossless priorities; None = off.
    #[serde(skip)]
    pub pfcwd: Option<crate::pfcwd::PfcwdConfig>,
    /// `[control_plane]`, `[interface]` and `[switch] ecmp_seed`: the router.
    pub routing: RoutingConfig,
    /// `[vlan]`, `[vlan_member]`, `[vlan_interface]`: 802.1Q VLANs (docs/switching.md).
    pub vlans: VlanConfig,
    /// `[lldp]`: LLDP with the DCBX TLVs (off unless `enabled = true`).
    pub lldp: LldpConfig,
    /// Non-fatal findings, each one line `<file>: <path>: <text>` (print them in
    /// `check-config` and at start-up).
    pub warnings: Vec<String>,
}

/// `[eal]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EalConfig {
    /// Extra EAL arguments, as written.
    pub args: Vec<String>,
    /// `file_prefix`; `None` = `pfcswitch-<pid>` (see [`Config::file_prefix`]).
    pub file_prefix: Option<String>,
}

/// `[switch]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SwitchConfig {
    /// Seconds; 0 = never age (SONiC `SWITCH|fdb_aging_time`, default 600).
    pub fdb_aging_time: u32,
    /// FDB entries (power of two).
    pub fdb_size: usize,
    /// `fdb_move_limit`, `fdb_move_window`, `fdb_move_hold`: when a MAC that moves
    /// between ports is held on its port (docs/switching.md, "MAC moves").
    pub fdb_move_damping: crate::fdb::MoveDamping,
    pub burst_size: u16,
    /// RX descriptors per queue.
    pub rx_ring_size: u16,
    /// TX descriptors per port (one TX queue per port, owned by one worker).
    pub tx_ring_size: u16,
    /// Mbufs in the packet mempool: the explicit `mbuf_count`, or computed (see
    /// [`SwitchConfig::mbuf_count_computed`]).
    pub mbuf_count: u32,
    /// True when `mbuf_count` was computed from the buffer and ring configuration.
    pub mbuf_count_computed: bool,
    /// The fewest mbufs that fill the RX/TX rings, bursts and lcore caches: an explicit
    /// `mbuf_count` below it is refused.
    pub mbuf_floor: u64,
    /// This switch's PFC reaction delay in ns, the software-response term of the
    /// headroom calculator (`[switch] sw_response`, default
    /// [`crate::headroom::DEFAULT_SW_RESPONSE_NS`]).
    pub sw_response_ns: u64,
    /// `switch.flood_lossless`: flood lossless-class frames to unknown unicast
    /// destinations (default true); false drops them (`drops.lossless_unknown_unicast`),
    /// a known cause of PFC deadlock in looped fabrics.
    pub flood_lossless: bool,
}

/// QoS trust mode of a port: the classifier's own type (one definition).
pub use crate::classify::Trust;

/// What DPDK device a port is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum PortDevice {
    /// A virtual device, passed as `--vdev=<devargs>`. `name` is the device name (devargs
    /// up to the first comma, e.g. `net_pcap0`), `driver` the matched driver prefix
    /// (`net_pcap`).
    Vdev { driver: String, name: String },
    /// A PCI device, passed as `-a <devargs>`. `bdf` is normalised to `dddd:bb:dd.f`
    /// in lower case.
    Pci { bdf: String },
}

/// One `[[port]]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PortConfig {
    /// Position in `[[port]]` (0-based).
    pub index: usize,
    pub name: String,
    /// As written (vdev spec or PCI address with optional `,key=value` arguments).
    pub devargs: String,
    pub device: PortDevice,
    /// The speed in force: as configured, or (`speed = "auto"`) a placeholder the link's
    /// speed replaces at start.
    pub speed_bps: u64,
    /// `speed = "auto"`: take the link's negotiated speed at start.
    pub speed_auto: bool,
    /// `speed_mismatch = "warn"`: a link at another speed is warned about, the config wins
    /// (default: refuse to start).
    pub speed_mismatch_warn: bool,
    pub cable_length_m: f64,
    pub mtu: u16,
    pub admin_up: bool,
    pub trust: Trust,
    pub default_tc: u8,
    /// Priorities with PFC, ascending, no duplicates.
    pub pfc_enable: Vec<u8>,
    /// The same as a bit mask (bit n = priority n), like the PFC class-enable vector.
    pub pfc_mask: u8,
    pub tx_enable: bool,
    /// Obey received 802.3x PAUSE (`pause_8023x`; default: only on ports without PFC).
    pub obey_8023x: bool,
    /// Port shaper rate. Default: the port speed for vdevs, none (the NIC is the limit)
    /// for PCI ports.
    pub shaper_bps: Option<u64>,
    /// MAC override (unicast, non-zero).
    pub mac: Option<[u8; 6]>,
    /// RX queues to configure: queues 0..rx_queues are each polled by one worker.
    pub rx_queues: u16,
    /// The worker lcore that owns this port's TX (data on queue 0, control frames on
    /// queue 1 when it has one).
    pub tx_lcore: u32,
    /// `tx_inflight_limit`: bytes the port may have handed to the device and not yet on
    /// the wire.
    pub tx_inflight: TxInflight,
    /// `control_tx_queue`: PFC frames on a TX queue of their own.
    pub control_tx_queue: ControlTxQueue,
    /// Not a `[[port]]` but the kernel representor of router interface `ports[i]` (a
    /// `net_tap` the switch adds after the configured ports: docs/routing.md). Punted
    /// frames leave through it, what the kernel sends arrives on it.
    pub representor_of: Option<usize>,
    /// Not a `[[port]]` but the kernel representor of the VLAN interface of this VID
    /// (`Vlan1000`, a `net_tap` added after the configured ports: docs/switching.md). It
    /// is a router interface itself: punts from the VLAN's members leave through it, what
    /// the kernel sends on it is bridged in the VLAN.
    pub vlan_interface_of: Option<u16>,
}

/// `[[port]] tx_inflight_limit`: how much data may sit in the device's TX ring ahead of a
/// PFC frame (Linux's byte queue limits, with the ring drained at the link speed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TxInflight {
    /// Ports with a real link (PCI, af_packet, af_xdp): a few µs at line rate, at least a
    /// burst of maximum frames. Nominal vdevs: unlimited (the device is the wire).
    Auto,
    /// No limit: the TX ring takes what it can (the ring's depth is the limit).
    Off,
    Bytes(u64),
}

/// `[[port]] control_tx_queue`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ControlTxQueue {
    /// On for PCI NICs that have a second TX queue (both queues feed one wire); off on
    /// vdevs, whose queues are separate rings or sockets a peer may not read.
    Auto,
    On,
    Off,
}

/// Vdevs on a kernel interface: their link and its speed are real.
pub fn is_kernel_link(driver: &str) -> bool {
    driver == "net_af_packet" || driver == "net_af_xdp"
}

impl PortConfig {
    /// The name DPDK gives the device (`rte_eth_dev_get_port_by_name`): the vdev name or
    /// the normalised PCI address.
    /// The device has a physical or kernel link whose speed is real (PCI NICs,
    /// af_packet, af_xdp), not a nominal figure (net_null, net_ring, net_pcap, net_memif,
    /// net_tap...).
    pub fn has_real_link(&self) -> bool {
        match &self.device {
            PortDevice::Pci { .. } => true,
            PortDevice::Vdev { driver, .. } => is_kernel_link(driver),
        }
    }

    pub fn dpdk_name(&self) -> &str {
        match &self.device {
            PortDevice::Vdev { name, .. } => name,
            PortDevice::Pci { bdf } => bdf,
        }
    }

    /// True if priority `p` has PFC enabled.
    pub fn pfc_enabled(&self, p: u8) -> bool {
        p < 8 && self.pfc_mask & (1 << p) != 0
    }

    pub fn is_pci(&self) -> bool {
        matches!(self.device, PortDevice::Pci { .. })
    }
}

/// An RX queue polled by a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RxQueueRef {
    /// Index into [`Config::ports`].
    pub port: usize,
    pub queue: u16,
}

/// `[[lcores.worker]]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkerConfig {
    pub lcore: u32,
    pub rx: Vec<RxQueueRef>,
    /// Ports (indices) whose TX queue this lcore owns and schedules.
    pub tx: Vec<usize>,
}

/// `[lcores]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LcoreConfig {
    /// Control lcore = DPDK main lcore.
    pub control: u32,
    /// What the control lcore does when it has nothing to do.
    pub control_idle: ControlIdle,
    /// `lcores.control_nap`: how long one nap lasts (ns) with `control_idle = "sleep"`.
    pub control_nap_ns: u64,
    /// `lcores.worker_idle`: what a worker does when it has nothing to do.
    pub worker_idle: WorkerIdle,
    pub workers: Vec<WorkerConfig>,
}

/// `lcores.worker_idle`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkerIdle {
    /// Busy-poll always (the default: a dedicated server's CPUs).
    Poll,
    /// After a run of empty polls, with nothing queued and no PG paused, sleep in growing
    /// steps (20 µs up to 1 ms); full polling again at the first packet. For several
    /// instances sharing CPUs (a fabric on one machine); costs latency after idle.
    Adaptive,
}

/// `lcores.control_idle`: how the control lcore waits while no PG is paused and no PFC
/// work is pending. PAUSE frames are sent by the worker that sees the Xoff crossing, so
/// sleeping does not slow the reaction; it only gives the CPU back (a small machine, or
/// a generator sharing the control lcore's CPU).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ControlIdle {
    /// Sleep a few microseconds between polls (the default).
    Sleep,
    /// Busy-poll like a DPDK lcore (for a dedicated, isolated CPU).
    Poll,
}

/// `headroom_policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HeadroomPolicy {
    /// Independent static headroom per (port, PG) (the classic SONiC model).
    Static,
    /// One shared headroom pool inside the ingress lossless pool (SAI
    /// `SAI_BUFFER_POOL_ATTR_XOFF_SIZE`): its size is the pool's `xoff`, or Σ(PG xoff) /
    /// `over_subscribe_ratio`; a profile's `xoff` caps what one PG may take.
    #[serde(rename = "shared_pool")]
    SharedPool { xoff: Option<u64>, over_subscribe_ratio: Option<u32> },
    /// Dynamic and Shared Headroom (Shan et al., ICDCS'23): no per-PG headroom; queue-level
    /// PAUSE at T − xoff into the shared segment, port-level PAUSE at Nq·T into one
    /// insurance headroom per port (its largest lossless xoff).
    #[serde(rename = "dsh")]
    Dsh,
}

impl HeadroomPolicy {
    /// The `headroom_policy` value.
    pub fn name(&self) -> &'static str {
        match self {
            HeadroomPolicy::Static => "static",
            HeadroomPolicy::SharedPool { .. } => "shared_pool",
            HeadroomPolicy::Dsh => "dsh",
        }
    }
}

/// Pool direction (SONiC `BUFFER_POOL|type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PoolType {
    Ingress,
    Egress,
}

/// Pool threshold mode (SONiC `BUFFER_POOL|mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PoolMode {
    Dynamic,
    Static,
}

/// `[buffer.pool.<name>]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PoolConfig {
    pub name: String,
    /// Bytes.
    pub size: u64,
    pub kind: PoolType,
    pub mode: PoolMode,
    /// Ingress lossless pool: the shared headroom pool inside it (`headroom_policy =
    /// "shared_pool"`).
    pub xoff: Option<u64>,
}

/// Shared-buffer threshold of a profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Threshold {
    /// `dynamic_th`: α = 2^dynamic_th, −8..=7.
    Dynamic(i8),
    /// `static_th`: bytes.
    Static(u64),
}

impl Threshold {
    /// α for a dynamic threshold.
    pub fn alpha(&self) -> Option<f64> {
        match self {
            Threshold::Dynamic(th) => Some(2f64.powi(*th as i32)),
            Threshold::Static(_) => None,
        }
    }
}

/// `[buffer.profile.<name>]` (sizes in bytes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProfileConfig {
    pub name: String,
    /// Index into [`BufferConfig::pools`].
    pub pool: usize,
    /// Private (reserved) bytes.
    pub size: u64,
    pub xon: Option<u64>,
    /// Headroom; `None` on an ingress profile = computed from speed/cable/MTU.
    pub xoff: Option<u64>,
    pub xon_offset: Option<u64>,
    pub threshold: Threshold,
}

/// `[buffer]`, resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BufferConfig {
    /// Bytes.
    pub total_size: u64,
    /// Accounting cell in bytes; 0 = count bytes.
    pub cell_size: u32,
    pub headroom_policy: HeadroomPolicy,
    pub pools: Vec<PoolConfig>,
    pub profiles: Vec<ProfileConfig>,
    /// `pg_profile[port][pg]`: profile index (an ingress-pool profile) or `None` = this
    /// (port, PG) is not accounted in any ingress pool.
    pub pg_profile: Vec<[Option<usize>; NUM_TC]>,
    /// `queue_profile[port][queue]`: profile index (an egress-pool profile) or `None` =
    /// not accounted in any egress pool (lossless queues by default: they are bounded by
    /// ingress accounting and PFC).
    pub queue_profile: Vec<[Option<usize>; NUM_TC]>,
    /// True when pools/profiles/PG/queue bindings were generated (no `[buffer.pool]`,
    /// `[buffer.profile]`, `[buffer.pg]` or `[buffer.queue]` in the file).
    pub generated: bool,
}

impl BufferConfig {
    pub fn pool_index(&self, name: &str) -> Option<usize> {
        self.pools.iter().position(|p| p.name == name)
    }
    pub fn profile_index(&self, name: &str) -> Option<usize> {
        self.profiles.iter().position(|p| p.name == name)
    }
}

/// ETS scheduler of one traffic class (SONiC `SCHEDULER|type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Scheduler {
    /// Strict priority (higher TC first among strict TCs), served before DWRR.
    Strict,
    /// Deficit weighted round robin with weight 1..=100.
    Dwrr(u8),
}

/// `[qos]`, resolved to arrays (SONiC defaults merged under the file's entries).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QosConfig {
    #[serde(serialize_with = "ser_slice")]
    pub dscp_to_tc: [u8; 64],
    pub dot1p_to_tc: [u8; NUM_TC],
    pub tc_to_pg: [u8; NUM_TC],
    pub tc_to_queue: [u8; NUM_TC],
    /// `[qos.tc_to_dot1p]` (SONiC `TC_TO_DOT1P_MAP`): the PCP a frame of each TC carries
    /// out of a tagged VLAN member. Default identity.
    pub tc_to_dot1p: [u8; NUM_TC],
    pub scheduler: [Scheduler; NUM_TC],
    /// `[qos.wred_profile.<NAME>]`.
    pub wred_profiles: Vec<WredProfileConfig>,
    /// Per port, per egress queue: the WRED profile bound by `[qos.queue]`.
    pub queue_wred: Vec<[Option<usize>; NUM_TC]>,
    /// `[qos] wred_seed`: a fixed PRNG seed for WRED/ECN (tests); None = from the TSC.
    pub wred_seed: Option<u64>,
}

/// SONiC's `ecn` field: which colours are marked instead of dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EcnMode {
    EcnNone,
    EcnGreen,
    EcnYellow,
    EcnRed,
    EcnGreenYellow,
    EcnGreenRed,
    EcnYellowRed,
    EcnAll,
}

impl EcnMode {
    /// SONiC's names, for parsing and printing.
    pub(crate) const ALL: [(&'static str, EcnMode); 8] = [
        ("ecn_none", EcnMode::EcnNone),
        ("ecn_green", EcnMode::EcnGreen),
        ("ecn_yellow", EcnMode::EcnYellow),
        ("ecn_red", EcnMode::EcnRed),
        ("ecn_green_yellow", EcnMode::EcnGreenYellow),
        ("ecn_green_red", EcnMode::EcnGreenRed),
        ("ecn_yellow_red", EcnMode::EcnYellowRed),
        ("ecn_all", EcnMode::EcnAll),
    ];

    pub fn as_str(self) -> &'static str {
        Self::ALL.iter().find(|(_, m)| *m == self).map_or("ecn_none", |(s, _)| s)
    }

    /// Green packets (all of them, without a policer) are ECN-marked.
    pub fn marks_green(self) -> bool {
        matches!(self, EcnMode::EcnGreen | EcnMode::EcnGreenYellow | EcnMode::EcnGreenRed | EcnMode::EcnAll)
    }
}

/// One colour's thresholds as written (bytes, percent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WredColour {
    pub enabled: bool,
    pub min_threshold: Option<u64>,
    pub max_threshold: Option<u64>,
    pub drop_probability: u8,
}

/// A resolved `[qos.wred_profile.<NAME>]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WredProfileConfig {
    pub name: String,
    pub ecn: EcnMode,
    pub green: WredColour,
    pub yellow: WredColour,
    pub red: WredColour,
}

impl WredProfileConfig {
    /// What the dataplane runs: the green colour. None if the profile neither marks nor
    /// drops green packets (it then does nothing without a policer).
    pub fn engine(&self) -> Option<WredProfile> {
        let mark = self.ecn.marks_green();
        if !mark && !self.green.enabled {
            return None;
        }
        Some(WredProfile {
            min_bytes: self.green.min_threshold?,
            max_bytes: self.green.max_threshold?,
            probability_pct: self.green.drop_probability,
            mark,
            drop: self.green.enabled,
        })
    }
}

fn ser_slice<S: serde::Serializer>(v: &[u8; 64], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter())
}

impl Default for QosConfig {
    /// SONiC defaults (`AZURE`, one home: [`crate::classify`]): DSCP 3→3, 4→4, 5→2, 8→0,
    /// 46→5, 48→6, every other DSCP → 1; dot1p identity; TC 3→PG 3, 4→PG 4, 7→PG 7,
    /// others → PG 0; TC→queue identity;
    /// scheduler: TC 7 strict, TCs 3 and 4 DWRR weight 15, others DWRR weight 14
    /// (SONiC `scheduler.1`/`scheduler.0`).
    fn default() -> QosConfig {
        let dscp_to_tc = crate::classify::SONIC_DSCP_TO_TC;
        let identity = crate::classify::IDENTITY_8;
        let tc_to_pg = crate::classify::SONIC_TC_TO_PG;
        let mut scheduler = [Scheduler::Dwrr(14); NUM_TC];
        scheduler[3] = Scheduler::Dwrr(15);
        scheduler[4] = Scheduler::Dwrr(15);
        scheduler[7] = Scheduler::Strict;
        QosConfig {
            dscp_to_tc,
            dot1p_to_tc: identity,
            tc_to_pg,
            tc_to_queue: identity,
            tc_to_dot1p: identity,
            scheduler,
            wred_profiles: Vec::new(),
            queue_wred: Vec::new(),
            wred_seed: None,
        }
    }
}

impl Config {
    /// Index of the port called `name`.
    pub fn port_index(&self, name: &str) -> Option<usize> {
        self.ports.iter().position(|p| p.name == name)
    }

    /// The EAL file prefix: `eal.file_prefix`, a `--file-prefix` in `eal.args`, or
    /// `pfcswitch-<pid>`. The telemetry socket lives under `/var/run/dpdk/<prefix>/`.
    pub fn file_prefix(&self) -> String {
        if let Some(p) = &self.eal.file_prefix {
            return p.clone();
        }
        let mut it = self.eal.args.iter();
        while let Some(a) = it.next() {
            if let Some(v) = a.strip_prefix("--file-prefix=") {
                return v.to_string();
            }
            if a == "--file-prefix" {
                if let Some(v) = it.next() {
                    return v.clone();
                }
            }
        }
        format!("pfcswitch-{}", std::process::id())
    }

    /// The full EAL argument vector: `program`, then `eal.args`, then
    /// `--file-prefix=<prefix>` (unless `eal.args` has one), `--main-lcore=<control>`
    /// (unless `eal.args` has one), then, in `[[port]]` order, `--vdev=<devargs>` for each
    /// vdev port and `-a <devargs>` for each PCI port.
    ///
    /// Port ids: vdevs are probed in command-line order, so with vdev ports only, DPDK
    /// port id `i` is `[[port]]` index `i`. PCI devices are probed before vdevs and in
    /// PCI-address order, so with PCI ports the dataplane must map ports by
    /// [`PortConfig::dpdk_name`] (`rte_eth_dev_get_port_by_name`), never by position.
    pub fn eal_args(&self, program: &str) -> Vec<String> {
        let mut v = vec![program.to_string()];
        v.extend(self.eal.args.iter().cloned());
        let has = |opt: &str| self.eal.args.iter().any(|a| a == opt || a.starts_with(&format!("{opt}=")));
        if !has("--file-prefix") {
            v.push(format!("--file-prefix={}", self.file_prefix()));
        }
        if !has("--main-lcore") && !has("--master-lcore") {
            v.push(format!("--main-lcore={}", self.lcores.control));
        }
        for p in &self.ports {
            match p.device {
                PortDevice::Vdev { .. } => v.push(format!("--vdev={}", p.devargs)),
                PortDevice::Pci { .. } => {
                    v.push("-a".to_string());
                    v.push(p.devargs.clone());
                }
            }
        }
        v
    }

    /// Every lcore used (control first, then workers in file order).
    pub fn all_lcores(&self) -> Vec<u32> {
        let mut v = vec![self.lcores.control];
        v.extend(self.lcores.workers.iter().map(|w| w.lcore));
        v
    }
}

/// The router's configuration (docs/routing.md).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct RoutingConfig {
    /// `[control_plane] netns`: the network namespace the switch enters before EAL starts
    /// (its kernel representors, rtnetlink socket and af_packet interfaces live there);
    /// `None` = the namespace it was started in.
    pub netns: Option<String>,
    /// `[control_plane] allow_root_namespace`: route without `netns`, in the namespace the
    /// switch was started in (the host's, usually), with a warning. Without it, routing
    /// requires `netns`.
    pub allow_root_namespace: bool,
    /// `[switch] ecmp_seed`; `None` = derived from the first port's MAC at start
    /// ([`crate::route::seed_from_mac`]).
    pub ecmp_seed: Option<u32>,
    /// `[interface]` (SONiC `INTERFACE|Ethernet0|10.0.0.0/31`): router interfaces by port
    /// index, in port order, each with its addresses. A port listed here routes frames sent
    /// to its MAC and has a kernel representor named like it.
    pub interfaces: Vec<RouterInterface>,
    /// `[control_plane.copp]`: punt rate limits per class.
    pub copp: CoppConfig,
    /// `[control_plane] max_neighbours`, `max_neighbours_per_interface`: the kernel
    /// neighbours mirrored into the FIB (a flood from spoofed sources cannot fill it).
    pub neighbours: crate::route::NeighbourLimits,
    /// `[control_plane] max_ipv4_routes`: the IPv4 FIB's size (routes and neighbours' host
    /// routes together), allocated at start (None: 128 Ki, which fits `-m 512`; a ToR with
    /// 128 Ki routes and 16 Ki neighbours wants 256 Ki and `-m 1024`).
    pub max_ipv4_routes: Option<u32>,
    /// `[control_plane] max_ipv6_routes`: the IPv6 FIB's size, its tbl8 pool sized for that
    /// many /48s (None: 64 Ki prefixes over 32 767 groups, ~10 900 /48s, which fits
    /// `-m 512`; docs/routing.md "IPv6 table size").
    pub max_ipv6_routes: Option<u32>,
    /// `[vlan_interface]` (SONiC `VLAN_INTERFACE|Vlan1000|192.168.0.1/21`): the VLANs that
    /// route, with their addresses (filled in once the VLANs are resolved).
    pub vlan_interfaces: Vec<VlanInterface>,
}

/// A VLAN interface: a router interface on a VLAN, with a kernel representor named like it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VlanInterface {
    /// `Vlan<vid>`.
    pub name: String,
    pub vid: u16,
    pub addrs: Vec<crate::route::IfAddr>,
}

/// Control-plane policing (SONiC's COPP): packets per second of each trap group per
/// ingress port (each worker lcore polices its share). 0 punts nothing of the group.
/// Defaults are SONiC's `copp_cfg.json` CIRs (docs/routing.md, "CoPP").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CoppConfig {
    /// ARP and IPv6 neighbour discovery (SONiC `queue4_group2`, 600).
    pub arp_nd: u32,
    /// BGP and BFD to the switch (SONiC `queue4_group1`, 6000).
    pub bgp_bfd: u32,
    /// Anything else to the switch's addresses, link-scope multicast (SONiC `queue1_group1`
    /// ip2me, 6000).
    pub ip2me: u32,
    /// TTL expired (SONiC `default`, 600).
    pub ttl_error: u32,
    /// Unresolved neighbour (600).
    pub neigh_miss: u32,
    /// Larger than the egress MTU (600).
    pub mtu: u32,
    /// No route, IPv4 options, the rest (SONiC `default`, 600).
    pub default: u32,
}

impl CoppConfig {
    /// The rates in [`crate::route::TrapGroup::ALL`] order.
    pub fn rates(&self) -> [u32; 7] {
        [self.arp_nd, self.bgp_bfd, self.ip2me, self.ttl_error, self.neigh_miss, self.mtu, self.default]
    }
}

impl Default for CoppConfig {
    fn default() -> CoppConfig {
        CoppConfig { arp_nd: 600, bgp_bfd: 6000, ip2me: 6000, ttl_error: 600, neigh_miss: 600, mtu: 600, default: 600 }
    }
}

/// One router interface: a port and the addresses set on its representor at start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RouterInterface {
    /// `[[port]]` index.
    pub port: usize,
    pub addrs: Vec<crate::route::IfAddr>,
    /// Listed in `[control_plane] accept_martian_sources`: IPv4 packets from martian
    /// sources (0/8, 127/8, 224/4, 240/4) received here are routed, not dropped.
    pub accept_martian_sources: bool,
}

impl RoutingConfig {
    /// True when any port is a router interface.
    pub fn enabled(&self) -> bool {
        !self.interfaces.is_empty() || !self.vlan_interfaces.is_empty()
    }

    /// Is port `index` a router interface?
    pub fn is_routed(&self, index: usize) -> bool {
        self.interfaces.iter().any(|i| i.port == index)
    }

    /// Does router interface `index` route IPv4 martian sources?
    pub fn accepts_martian_sources(&self, index: usize) -> bool {
        self.interfaces.iter().any(|i| i.port == index && i.accept_martian_sources)
    }
}

/// The name of the representor port of switch port `port` in counters, telemetry and
/// `show`: `cpu/Ethernet0` (DPDK telemetry takes letters, digits, '_' and '/' in a key; the
/// kernel netdev itself is named like the port).
pub fn representor_port_name(port: &str) -> String {
    format!("cpu/{port}")
}

impl Config {
    /// The `[[port]]`s, without the representors the switch adds after them.
    pub fn switch_ports(&self) -> &[PortConfig] {
        let n = self.ports.iter().take_while(|p| p.representor_of.is_none() && p.vlan_interface_of.is_none()).count();
        &self.ports[..n]
    }
}

/// The VLANs (SONiC `VLAN`, `VLAN_MEMBER`, `VLAN_INTERFACE`; docs/switching.md). Empty:
/// every port bridges as one VLAN-unaware domain (tags are carried through untouched).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct VlanConfig {
    /// `[vlan.<name>]`, sorted by VID.
    pub vlans: Vec<VlanDef>,
}

/// One VLAN: `[vlan.Vlan1000]`, its `[vlan_member]` rows and `[vlan_interface]` addresses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VlanDef {
    /// `Vlan<vid>` (SONiC's naming rule).
    pub name: String,
    /// 1..=4094.
    pub vid: u16,
    /// Members in port order.
    pub members: Vec<VlanMember>,
    /// `[vlan_interface] Vlan1000 = [...]`; `None` = no VLAN interface.
    pub interface: Option<Vec<crate::route::IfAddr>>,
}

/// One `[vlan_member]` row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct VlanMember {
    /// `[[port]]` index.
    pub port: usize,
    /// `tagging_mode = "tagged"`: frames leave with the VLAN's tag; else untagged.
    pub tagged: bool,
}

impl VlanConfig {
    /// True when any VLAN is configured.
    pub fn enabled(&self) -> bool {
        !self.vlans.is_empty()
    }
}

/// `[lldp]` (SONiC `LLDP|GLOBAL`): LLDP frames with the IEEE DCBX TLVs (ETS, PFC,
/// Application priority) sent from every port, the peers' kept per port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LldpConfig {
    /// Send LLDP and keep what peers send (default off: see docs/lldp-dcbx.md).
    pub enabled: bool,
    /// Seconds between two LLDP frames of a port (SONiC `hello_time`, default 30).
    pub hello_time_s: u32,
    /// TTL = hello_time × multiplier (SONiC `multiplier`, default 4: 120 s).
    pub multiplier: u32,
    /// The System Name TLV (default: the host name).
    pub system_name: Option<String>,
    /// Application priority TLV: UDP port 4791 (RoCEv2) → this priority.
    pub roce_priority: Option<u8>,
}

impl Default for LldpConfig {
    fn default() -> Self {
        LldpConfig { enabled: false, hello_time_s: 30, multiplier: 4, system_name: None, roce_priority: None }
    }
}

impl LldpConfig {
    /// The TTL our frames carry, seconds (at most 65535).
    pub fn ttl(&self) -> u16 {
        (u64::from(self.hello_time_s) * u64::from(self.multiplier)).min(65535) as u16
    }
}
