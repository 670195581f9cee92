//! Configuration: one TOML file, validated completely before the EAL starts.
//!
//! [`load`] / [`from_str`] return a resolved [`Config`] (speeds in bit/s, lengths in
//! metres, sizes in bytes, names resolved to indices) or a [`ConfigError`] whose `Display`
//! is one line: `<file>: <field path>: <what is wrong>`, e.g.
//! `dpdk-config/bad.toml: port[1].speed: unknown unit 'X' in '100X' (expected ...)`;
//! for TOML syntax errors `<file>: line 7, column 3: <message>`. Unknown fields are errors.
//! Non-fatal findings are returned in [`Config::warnings`].
//!
//! Names follow SONiC CONFIG_DB where the concept exists (`fdb_aging_time`,
//! `cable_length`, `pfc_enable`, `BUFFER_POOL`/`BUFFER_PROFILE`/`BUFFER_PG`/`BUFFER_QUEUE`,
//! `DSCP_TO_TC_MAP`, …). Sizes accept `4096`, `"64KiB"`, `"12MiB"` (K/M/G are binary);
//! speeds `"100G"`, `"25G"`, `"10M"` or a bare number of Mb/s (`100000`, as SONiC);
//! lengths `"5m"`, `"1.5km"` or a bare number of metres.
//!
//! # Schema
//!
//! ```toml
//! [eal]                         # optional
//! args = ["--no-huge", "-m", "512", "--no-pci", "--lcores=0@0,1@1"]
//! file_prefix = "pfcswitch"     # optional; default "pfcswitch-<pid>"; selects the
//!                               # runtime dir /var/run/dpdk/<prefix>/ and telemetry socket
//!
//! [switch]                      # optional; defaults shown
//! fdb_aging_time = 600          # seconds (SONiC SWITCH|fdb_aging_time), 0 = never, ≤ 1000000
//! fdb_size = 65536              # FDB entries, power of two, 16..=2^24
//! fdb_move_limit = 5            # a MAC moving between ports more than this many times
//! fdb_move_window = 10          # within this many seconds is held on its port for
//! fdb_move_hold = 60            # this many seconds (0..=255 moves, 0 = never held)
//! burst_size = 32               # rx/tx burst, 1..=256, ≤ rx_ring_size
//! rx_ring_size = 1024           # RX descriptors per queue, power of two, 32..=32768
//! tx_ring_size = 1024           # TX descriptors (one TX queue per port), same range
//! mbuf_count = 0                # 0 = computed (below); else explicit
//! sw_response = "10us"          # this switch's PFC reaction delay (Xoff crossing → PFC
//!                               # frame handed to tx_burst), the software-response term
//!                               # of the headroom calculator; a duration with a unit
//!                               # ("10us", "2.5µs", "800ns", "1ms"), 0..=1s. Measure it
//!                               # with the `pfc_reaction` p99 of the stats JSON.
//! flood_lossless = true         # false: lossless-class frames to unknown unicast MACs
//!                               # are dropped (drops.lossless_unknown_unicast), not flooded
//! ecmp_seed = 12345             # ECMP hash seed 0..=2^32-1; default: derived from the
//!                               # first port's MAC (switches of a fabric differ)
//!
//! [[port]]                      # at least one; [[port]] index i = position in the file
//! name = "Ethernet0"            # required, unique, no whitespace, ':' or '|'
//! devargs = "net_null0"         # required: a vdev ("net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap",
//!                               # "net_tap0,iface=sw0", "net_memif0,role=server,socket=/run/x.sock";
//!                               # drivers net_null, net_ring, net_pcap, net_tap, net_memif,
//!                               # net_af_packet, net_af_xdp, net_vhost, net_virtio_user, eth_*)
//!                               # or a PCI address "0000:3b:00.0" / "3b:00.0" (optionally
//!                               # followed by ",key=value" driver arguments); unique device
//! speed = "100G"                # required: PFC quanta, headroom, default shaper; "auto"
//!                               # (PCI, af_packet, af_xdp only): the link's speed at start
//!                               # (planned as 100G until then)
//! speed_mismatch = "refuse"     # a real link at another speed: "refuse" (default) to start,
//!                               # or "warn" and keep `speed`
//! cable_length = "5m"           # default "5m"
//! mtu = 9100                    # 68..=9216, default 9100
//! admin_status = "up"           # "up" (default) | "down"
//! trust = "dscp"                # "dscp" (default) | "pcp" (alias "dot1p")
//! default_tc = 0                # TC of frames with nothing to trust (SAI QOS_DEFAULT_TC), 0..=7
//! pfc_enable = [3, 4]           # PFC priorities (SONiC PORT_QOS_MAP|pfc_enable); default [3, 4];
//!                               # [] disables PFC on the port
//! tx_enable = true              # false: queues fill, nothing is sent (test knob; warned)
//! shaper_rate = "10G"           # port shaper ≤ speed; default: speed for nominal vdevs, none
//!                               # for PCI, af_packet, af_xdp (their link paces them)
//! tx_inflight_limit = "auto"    # bytes the device's TX ring may hold ahead of a PFC frame,
//!                               # drained at `speed`; "auto" (default): 4 µs at line rate,
//!                               # ≥ burst_size max frames, on real links; none on vdevs; "off"
//! control_tx_queue = "auto"     # PFC frames on TX queue 1: true | false | "auto" (PCI only)
//! mac = "02:00:00:00:00:01"     # optional unicast MAC override (set on the device too)
//! pause_8023x = "ignore"        # "obey" | "ignore"; default: ignore where pfc_enable is
//!                               # non-empty (802.1Qbb: PAUSE and PFC exclusive), else obey
//!
//! [lcores]                      # optional: default control 0, one worker on lcore 1 polling
//!                               # queue 0 of every port and owning every TX
//! control = 0                   # control lcore = DPDK main lcore (default 0)
//! control_idle = "sleep"        # "sleep" (default): µs naps while no PG is paused;
//!                               # "poll": busy-poll (a dedicated, isolated CPU)
//! control_nap = "10ms"          # one nap (1us..10ms; default 10ms): bounds how late a
//!                               # RESUME can be after a quiet spell, and a link seen down
//! worker_idle = "poll"          # "poll" (default): busy-poll; "adaptive": nap 20us..1ms
//!                               # when idle (nothing queued, no PG paused), for switches
//!                               # sharing CPUs; full polling again at the first packet
//! [[lcores.worker]]             # at least one when [lcores] is written
//! lcore = 1                     # < 128, not the control lcore, unique
//! rx = ["Ethernet0:0", "Ethernet4:0"]   # "<port>:<queue>": each polled by exactly one worker;
//!                                       # a port's queues are 0..n-1 without gaps
//! tx = ["Ethernet0", "Ethernet4"]       # ports whose TX this lcore owns; exactly one owner each
//!
//! [buffer]                      # optional (defaults below)
//! total_size = "12MiB"          # default 12MiB
//! cell_size = 256               # 0/absent = count bytes; else 32..=16384
//! headroom_policy = "static"    # "static" (default): each lossless PG owns its xoff;
//!                               # "shared_pool": one headroom pool (the ingress pool's
//!                               # `xoff`, or Σ PG xoff / over_subscribe_ratio), each PG
//!                               # capped by its xoff; "dsh": Dynamic and Shared
//!                               # Headroom (queue PAUSE at T − xoff, port PAUSE at Nq·T,
//!                               # one insurance xoff per port)
//! over_subscribe_ratio = 2      # shared_pool without a pool xoff (SONiC's formula)
//! [buffer.pool.ingress_lossless_pool]   # BUFFER_POOL; sizes add up to ≤ total_size
//! size = "8MiB"
//! type = "ingress"              # "ingress" | "egress"
//! mode = "dynamic"              # "dynamic" (default) | "static"
//! xoff = "1MiB"                 # shared_pool only: the shared headroom pool, inside size
//! [buffer.profile.pg_lossless_profile]  # BUFFER_PROFILE
//! pool = "ingress_lossless_pool"
//! size = 4096                   # private (reserved) bytes, default 0, ≤ pool size
//! xon = 4608                    # optional, ingress pools only
//! xoff = 38000                  # optional, ingress only: headroom; absent = computed
//!                               # from speed/cable/MTU by the headroom module
//! xon_offset = 2496             # optional, ingress only
//! dynamic_th = -2               # α = 2^dynamic_th, -8..=7; OR static_th = <bytes>;
//!                               # exactly one of the two
//! [buffer.pg]                   # BUFFER_PG: "<port>|<pg>" or "<port>|<a>-<b>" = ingress profile
//! "Ethernet0|3-4" = "pg_lossless_profile"
//! [buffer.queue]                # BUFFER_QUEUE: same keys, egress profiles
//! "Ethernet0|0-2" = "queue_lossy_profile"
//!
//! [interface]                   # router interfaces (SONiC INTERFACE|Ethernet0|10.0.0.0/31):
//! "Ethernet0" = ["10.0.0.0/31", "fc00::/127"]   # frames to the port's MAC are routed; the
//!                               # port gets a kernel representor named like it with these
//!                               # addresses (docs/routing.md)
//! [control_plane]               # required with router interfaces: netns or allow_root_namespace
//! netns = "leaf1"               # enter this network namespace (`ip netns add leaf1`) before
//!                               # EAL starts: representors, rtnetlink, af_packet live there
//! allow_root_namespace = false  # true: route in the namespace the switch starts in (the
//!                               # host's kernel forwards punts; warned about at start)
//! accept_martian_sources = []   # router interfaces that route IPv4 martian sources
//!                               # (RFC 1812 5.3.7 relaxed; default none: docs/routing.md)
//! max_neighbours = 16384        # ARP/ND neighbours mirrored (IPv4 + IPv6), 1..=16384; the
//! max_neighbours_per_interface = 16384   # rest are punted (docs/routing.md "Neighbours, bounded")
//! max_ipv4_routes = 131072      # the IPv4 FIB's size (routes + neighbours), 1024..=2^24;
//!                               # 262144 for a ToR's 128k routes (needs -m 1024)
//! max_ipv6_routes = 65536       # the IPv6 FIB's size, 1024..=2^18, its tbl8 pool sized for
//!                               # that many /48s (3 KiB each, twice; docs/routing.md)
//!
//! [vlan.Vlan1000]               # VLAN|Vlan1000: the name is Vlan<1..4094>
//! vlanid = 1000                 # optional; must match the name
//! [vlan_member]                 # VLAN_MEMBER|Vlan1000|Ethernet0; a port has at most one
//! "Vlan1000|Ethernet0" = { tagging_mode = "untagged" }   # untagged VLAN; a port in no VLAN
//! "Vlan1000|Ethernet8" = { tagging_mode = "tagged" }     # bridges as before (docs/switching.md)
//! [vlan_interface]              # VLAN_INTERFACE|Vlan1000|192.168.0.1/21: a router interface
//! Vlan1000 = ["192.168.0.1/21"] # on the VLAN, kernel representor `Vlan1000` (docs/switching.md)
//!
//! [qos]                         # optional; entries are merged over the SONiC defaults
//! dscp_to_tc = { "46" = 5 }     # DSCP_TO_TC_MAP; default 3→3, 4→4, 8→0, 46→5, 48→6, others→1
//! dot1p_to_tc = { "0" = 0 }     # DOT1P_TO_TC_MAP; default identity
//! tc_to_pg = { "3" = 3 }        # TC_TO_PRIORITY_GROUP_MAP; default 3→3, 4→4, others→0
//! tc_to_queue = { "3" = 3 }     # TC_TO_QUEUE_MAP; default identity
//! tc_to_dot1p = { "3" = 3 }     # TC_TO_DOT1P_MAP: PCP out of tagged VLAN members; identity
//! [qos.scheduler]               # SCHEDULER per TC: default TC7 STRICT, TC3/4 DWRR 15,
//! "3" = { type = "DWRR", weight = 50 }  # others DWRR 14; weight 1..=100
//! "7" = { type = "STRICT" }
//!
//! [lldp]                        # optional (SONiC LLDP|GLOBAL): LLDP + DCBX, docs/lldp-dcbx.md
//! enabled = true                # default false
//! hello_time = 30               # seconds between frames, 1..=3600
//! multiplier = 4                # TTL = hello_time × multiplier, 1..=100
//! system_name = "tor1"          # default: the host name
//! roce_priority = 3             # Application TLV: UDP 4791 → this priority (0..=7)
//! ```
//! (Map keys and values may also be strings of digits, as in CONFIG_DB.)
//!
//! # Generated buffer configuration
//!
//! When `[buffer]` is absent (total 12 MiB, 256-byte cells), or written without any
//! `pool`, `profile`, `pg` or `queue` table (its `total_size`/`cell_size` are used), the
//! SONiC-like layout is generated:
//!
//! * pools `ingress_lossless_pool` (ingress, dynamic, total − ⌊total/3⌋ = 8 MiB) and
//!   `egress_lossy_pool` (egress, dynamic, ⌊total/3⌋ = 4 MiB);
//! * profiles `pg_lossless_profile` (ingress pool, private 4096 B, xon/xoff computed,
//!   dynamic_th 0), `ingress_lossy_profile` (ingress pool, 0 B, dynamic_th 3),
//!   `queue_lossy_profile` (egress pool, 0 B, dynamic_th 3);
//! * per port: PG n = `pg_lossless_profile` for every n in `pfc_enable`, other PGs that some
//!   TC maps to (`tc_to_pg`) = `ingress_lossy_profile`; queue n = `queue_lossy_profile` for
//!   every n not in `pfc_enable`. Lossless queues get no egress profile (`None`): they are
//!   bounded by ingress accounting and PFC, like SONiC's `egress_lossless_profile` whose
//!   static threshold is the whole pool.
//!
//! With an explicit layout a PFC-enabled priority without a PG profile is a warning.
//!
//! # mbuf_count
//!
//! When 0/absent, the sum of
//! * `⌈total_size / max(cell_size, 64)⌉`: a full buffer of minimum-size packets, one mbuf
//!   each;
//! * `Σ ports (rx_queues × rx_ring_size + tx_ring_size)`: full rings;
//! * `workers × burst_size × 2`: bursts in flight;
//! * `(workers + 1) × 1.5 ×` [`MBUF_CACHE_SIZE`]: per-lcore mempool caches.
//!
//! An explicit value below the last three is an error, below the total a warning.
//!
//! # EAL arguments and port ids
//!
//! [`Config::eal_args`] appends `--file-prefix`, `--main-lcore=<control>` and, in port
//! order, `--vdev=<devargs>` / `-a <pci devargs>`; the devices must not also appear in
//! `eal.args`, `--no-pci` is rejected with PCI ports, and if `eal.args` enables lcores
//! (`-l`, `--lcores`, `-c`) every configured lcore must be among them. With vdev ports
//! only, DPDK port id i is `[[port]]` index i; PCI ports are probed first and in address
//! order, so map ports by [`PortConfig::dpdk_name`].
//!
//! Relative file names in devargs (`rx_pcap=in0.pcap`) are relative to the current
//! directory of the pfcswitch process, as DPDK opens them.

mod duration;
mod error;
mod raw;
mod resolve;
mod types;

pub use duration::{parse_cli_duration_ns, parse_duration_ns, DurationError, CLI_MAX_NS};
pub use error::ConfigError;
pub use resolve::{defaults, parse_bdf, parse_devargs, parse_lcore_set, VDEV_PREFIXES};
pub use types::*;

use std::path::Path;

/// Read and validate a configuration file. The path as given (`Path::display`) is the
/// file name in error messages.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::Io { file: error::one_line(&file), msg: error::one_line(&e.to_string()) })?;
    let mut cfg = from_str(&text, &file)?;
    // The config is code (EAL arguments, devargs that name files): whoever can write it
    // runs code as the switch's user.
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = std::fs::metadata(path) {
        let mode = meta.permissions().mode();
        if mode & 0o022 != 0 {
            cfg.warnings.push(format!(
                "{file}: writable by {} (mode {:o}): whoever writes the config runs code as the switch's user",
                if mode & 0o002 != 0 { "everyone" } else { "its group" },
                mode & 0o777
            ));
        }
    }
    Ok(cfg)
}

/// Validate configuration text; `origin` names it in errors (a file name, or e.g.
/// `"<inline>"`).
pub fn from_str(text: &str, origin: &str) -> Result<Config, ConfigError> {
    let table: toml::Table = toml::from_str(text).map_err(|e| {
        let (line, column) = match e.span() {
            Some(s) => line_col(text, s.start),
            None => (1, 1),
        };
        ConfigError::Syntax {
            file: error::one_line(origin),
            line,
            column,
            msg: error::one_line(
                &e.message().lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; "),
            ),
        }
    })?;
    resolve::resolve(&table, origin).map_err(|e| e.with_file(origin))
}

/// 1-based line and column (in characters) of byte offset `at`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let at = at.min(text.len());
    let before = &text[..text.floor_char_boundary_compat(at)];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

trait FloorCharBoundary {
    fn floor_char_boundary_compat(&self, i: usize) -> usize;
}
impl FloorCharBoundary for str {
    fn floor_char_boundary_compat(&self, mut i: usize) -> usize {
        while i > 0 && !self.is_char_boundary(i) {
            i -= 1;
        }
        i
    }
}

#[cfg(test)]
mod tests;
