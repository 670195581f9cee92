//! The `/pfcswitch/...` telemetry commands, each declared once: its name, its help and
//! what it answers for. `dataplane::telemetry` registers each with its handler, `show`'s
//! views ([`super::views::VIEWS`]) and the exporter ask by the same declaration, so a
//! command string is written in one place.

/// What a command answers for (its handler in `dataplane::telemetry` is of the same kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// One object per port; the optional parameter names one port.
    PerPort,
    /// The whole switch, no parameter.
    Switch,
    /// Parameters of its own (a page of a table, a test knob, a live change).
    Action,
}

/// One telemetry command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Command {
    /// `/pfcswitch/...`: DPDK 22.11 refuses a name of 56 bytes or more.
    pub name: &'static str,
    /// DPDK 22.11 refuses a help of 128 bytes or more.
    pub help: &'static str,
    pub scope: Scope,
}

const fn cmd(name: &'static str, help: &'static str, scope: Scope) -> Command {
    Command { name, help, scope }
}

/// Port names (and this instance's pid and start time): `show` asks it first.
pub const PORTS: Command =
    cmd("/pfcswitch/ports", "Port names (for the per-port commands' parameter), pid and start time", Scope::Switch);
pub const PFCWD: Command = cmd(
    "/pfcswitch/pfcwd",
    "PFC watchdog per port and priority: status, storms detected/restored, drops. Param: port",
    Scope::PerPort,
);
pub const PFC_COUNTERS: Command = cmd(
    "/pfcswitch/pfc_counters",
    "PFC frames per port and priority (SAI PFC_n_RX/TX_PKTS, durations, ON2OFF). Param: port",
    Scope::PerPort,
);
pub const QUEUE_COUNTERS: Command = cmd(
    "/pfcswitch/queue_counters",
    "Per egress queue packets, bytes, drops, depth, watermark (bytes). Param: port",
    Scope::PerPort,
);
pub const PG_WATERMARK: Command = cmd(
    "/pfcswitch/pg_watermark",
    "Per ingress PG shared/headroom watermarks, headroom (xoff), occupancy, lossless drops. Param: port",
    Scope::PerPort,
);
pub const BUFFER_POOL: Command =
    cmd("/pfcswitch/buffer_pool", "Buffer pools: occupancy, watermarks, current DT threshold", Scope::Switch);
pub const LATENCY: Command =
    cmd("/pfcswitch/latency", "RX to tx_burst latency per port and TC (ns). Param: port", Scope::PerPort);
pub const PORT_COUNTERS: Command = cmd(
    "/pfcswitch/port_counters",
    "Per port packets, bytes, drops by reason, lossless loss. Param: port",
    Scope::PerPort,
);
pub const CONSERVATION: Command = cmd(
    "/pfcswitch/conservation",
    "Per ingress port and TC: rx + flood copies = tx + dropped + in flight. Param: port",
    Scope::PerPort,
);
pub const LLDP: Command = cmd(
    "/pfcswitch/lldp",
    "LLDP/DCBX per port: the TLVs sent, the peer's, PFC mismatch, counters. Param: port",
    Scope::PerPort,
);
pub const FDB: Command = cmd(
    "/pfcswitch/fdb",
    "FDB entries (one table for every worker), capacity, MAC moves, flaps, refusals",
    Scope::Switch,
);
pub const ROUTES: Command = cmd(
    "/pfcswitch/routes",
    "Installed routes, one row per next hop: prefix|code|metric|via|iface|mac|weight. Params: v4|v6,offset",
    Scope::Action,
);
pub const NEIGHBOURS: Command = cmd(
    "/pfcswitch/neighbours",
    "Neighbours of the router interfaces: address|mac|iface. Params: v4|v6,offset",
    Scope::Action,
);
pub const ROUTING: Command = cmd(
    "/pfcswitch/routing",
    "Routing thread health: alive, synced, resyncs, last batch age, routes refused, FIB out of sync; writer counters",
    Scope::Action,
);
pub const MAC: Command = cmd(
    "/pfcswitch/mac",
    "Learned MACs as [vlan, mac, port] (SONiC show mac; VLAN 0 = ports in no VLAN). Param: VID",
    Scope::Action,
);
pub const FDB_CLEAR: Command = cmd("/pfcswitch/fdb_clear", "Remove learned MACs. Param: all | VID", Scope::Action);
pub const WATERMARK_CLEAR: Command = cmd(
    "/pfcswitch/watermark_clear",
    "Reset every MMU watermark (queues, PGs, pools) to the current occupancy",
    Scope::Action,
);
pub const TX_RELEASE: Command = cmd(
    "/pfcswitch/tx_release",
    "Test knob: let N more data packets leave a port with tx_enable = false. Params: port,N",
    Scope::Action,
);
pub const CONFIG: Command = cmd(
    crate::reconfig::COMMAND,
    "Live change, validated like the file. Params: <profile|wred|port|pfcwd>,<name>,<key>=<value>[,<key>=<value>...]",
    Scope::Action,
);
pub const RUNNING_CONFIG: Command =
    cmd("/pfcswitch/running_config", "The running configuration (TOML), in %-escaped pieces", Scope::Switch);
