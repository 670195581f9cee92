//! Every `show` view, one declaration each ([`VIEWS`]): the words that name it, the
//! telemetry command behind it ([`super::commands`]), how it is read and how it is drawn.
//! A new view is a variant of [`View`], a row here, its renderer, and (for a new command)
//! a [`super::commands::Command`] with its handler in `dataplane::telemetry`.

use serde_json::Value;

use super::commands::{self, Command, Scope};
use super::lldp::{render_dcbx, render_lldp_neighbors};
use super::render::{
    render_buffer_pool, render_conservation, render_headroom_pool, render_latency, render_mac, render_pfc_counters,
    render_pfcwd, render_pg_watermark, render_port_counters, render_queue_counters, render_queue_watermark,
    render_queue_wred_counters,
};
use super::routing::{render_neighbours, render_routes, render_routing};
use super::table::ports;

/// What `show`/`clear` can display. The order is [`VIEWS`]'s (a unit test holds them
/// together).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    PfcCounters,
    QueueCounters,
    QueueWredCounters,
    /// SONiC's `show queue watermark unicast`: each egress queue's peak, bytes.
    QueueWatermark,
    PgWatermarkShared,
    PgWatermarkHeadroom,
    BufferPool,
    PfcwdStats,
    Latency,
    PortCounters,
    Conservation,
    /// SONiC's `show headroom-pool watermark`: the shared headroom pool (or DSH's
    /// insurance headroom) and its use.
    HeadroomPool,
    /// `show ip route`: the installed IPv4 routes, one line per next hop.
    Ipv4Routes,
    /// `show ipv6 route`.
    Ipv6Routes,
    /// `show arp`: the router's IPv4 neighbours.
    Arp,
    /// `show ndp`: the router's IPv6 neighbours.
    Ndp,
    /// SONiC's `show mac`: the learned MACs per VLAN.
    Mac,
    /// `show lldp neighbors` (lldpctl's layout): each port's peer.
    LldpNeighbors,
    /// `show dcbx`: per port the PFC, ETS and Application TLVs sent and the peer's.
    Dcbx,
    /// `show routing`: the routing control thread's health.
    Routing,
}

/// How a view is read and drawn.
#[derive(Clone, Copy)]
pub enum Fetch {
    /// The port names first, then the command once per port (switch-wide commands: once),
    /// merged ([`super::fetch`]).
    Ports {
        render: fn(&Value) -> String,
        /// Counters, which `clear` snapshots (as opposed to gauges and watermarks).
        clearable: bool,
        /// Per-port objects that nest (LLDP TLVs): DPDK telemetry carries them flattened
        /// to `a/b/0` keys, [`super::fetch`] nests them again.
        nested: bool,
    },
    /// Rows, page by page ([`super::fetch_rows`]); `family` is the command's first parameter.
    Rows { family: &'static str, render: fn(&[String]) -> String },
    /// One reply, drawn whole; an error object in it is the user's error (no router).
    Status { render: fn(&Value) -> String },
}

/// One view.
pub struct ViewDef {
    pub view: View,
    /// The words after `show` that name it (SONiC's spelling first).
    pub words: &'static [&'static [&'static str]],
    /// How the list of views names it ("": not listed, another row names it).
    pub usage: &'static str,
    pub command: &'static Command,
    pub fetch: Fetch,
}

const fn counters(render: fn(&Value) -> String) -> Fetch {
    Fetch::Ports { render, clearable: true, nested: false }
}

const fn gauges(render: fn(&Value) -> String) -> Fetch {
    Fetch::Ports { render, clearable: false, nested: false }
}

/// The views, in [`View`]'s order; the list an unknown view's error prints is in this order.
pub const VIEWS: [ViewDef; 20] = [
    ViewDef {
        view: View::PfcCounters,
        words: &[&["pfc", "counters"]],
        usage: "pfc counters",
        command: &commands::PFC_COUNTERS,
        fetch: counters(|v| render_pfc_counters(&ports(v))),
    },
    ViewDef {
        view: View::QueueCounters,
        words: &[&["queue", "counters"]],
        usage: "queue counters",
        command: &commands::QUEUE_COUNTERS,
        fetch: counters(|v| render_queue_counters(&ports(v))),
    },
    ViewDef {
        view: View::QueueWredCounters,
        words: &[&["queue", "wredcounters"]],
        usage: "queue wredcounters",
        command: &commands::QUEUE_COUNTERS,
        fetch: counters(|v| render_queue_wred_counters(&ports(v))),
    },
    ViewDef {
        view: View::QueueWatermark,
        words: &[&["queue", "watermark"], &["queue", "watermark", "unicast"]],
        usage: "queue watermark",
        command: &commands::QUEUE_COUNTERS,
        fetch: gauges(|v| render_queue_watermark(&ports(v))),
    },
    ViewDef {
        view: View::PgWatermarkShared,
        words: &[&["priority-group", "watermark", "shared"]],
        usage: "priority-group watermark shared|headroom",
        command: &commands::PG_WATERMARK,
        fetch: gauges(|v| render_pg_watermark(&ports(v), "Ingress shared pool occupancy per PG:", "shared_watermark")),
    },
    ViewDef {
        view: View::PgWatermarkHeadroom,
        words: &[&["priority-group", "watermark", "headroom"]],
        usage: "",
        command: &commands::PG_WATERMARK,
        fetch: gauges(|v| render_pg_watermark(&ports(v), "Ingress headroom per PG:", "headroom_watermark")),
    },
    ViewDef {
        view: View::BufferPool,
        words: &[&["buffer", "pool"], &["buffer_pool"], &["buffer", "pool", "watermark"]],
        usage: "buffer pool",
        command: &commands::BUFFER_POOL,
        fetch: gauges(|v| render_buffer_pool(&ports(v))),
    },
    ViewDef {
        view: View::PfcwdStats,
        words: &[&["pfcwd", "stats"]],
        usage: "pfcwd stats",
        command: &commands::PFCWD,
        fetch: counters(|v| render_pfcwd(&ports(v))),
    },
    ViewDef {
        view: View::Latency,
        words: &[&["latency"]],
        usage: "latency",
        command: &commands::LATENCY,
        fetch: gauges(|v| render_latency(&ports(v))),
    },
    ViewDef {
        view: View::PortCounters,
        words: &[&["counters"], &["interfaces", "counters"]],
        usage: "counters",
        command: &commands::PORT_COUNTERS,
        fetch: counters(|v| render_port_counters(&ports(v))),
    },
    ViewDef {
        view: View::Conservation,
        words: &[&["conservation"]],
        usage: "conservation",
        command: &commands::CONSERVATION,
        // A balance with a gauge (in flight) in it: a difference of two would not balance.
        fetch: gauges(|v| render_conservation(&ports(v))),
    },
    ViewDef {
        view: View::HeadroomPool,
        words: &[&["headroom-pool", "watermark"], &["headroom-pool"]],
        usage: "headroom-pool watermark",
        command: &commands::BUFFER_POOL,
        fetch: gauges(|v| render_headroom_pool(&ports(v))),
    },
    ViewDef {
        view: View::Ipv4Routes,
        words: &[&["ip", "route"]],
        usage: "ip route",
        command: &commands::ROUTES,
        fetch: Fetch::Rows { family: "v4", render: render_routes },
    },
    ViewDef {
        view: View::Ipv6Routes,
        words: &[&["ipv6", "route"]],
        usage: "ipv6 route",
        command: &commands::ROUTES,
        fetch: Fetch::Rows { family: "v6", render: render_routes },
    },
    ViewDef {
        view: View::Arp,
        words: &[&["arp"]],
        usage: "arp",
        command: &commands::NEIGHBOURS,
        fetch: Fetch::Rows { family: "v4", render: render_neighbours },
    },
    ViewDef {
        view: View::Ndp,
        words: &[&["ndp"]],
        usage: "ndp",
        command: &commands::NEIGHBOURS,
        fetch: Fetch::Rows { family: "v6", render: render_neighbours },
    },
    ViewDef {
        view: View::Mac,
        words: &[&["mac"], &["mac", "address-table"]],
        usage: "mac",
        command: &commands::MAC,
        fetch: gauges(render_mac),
    },
    ViewDef {
        view: View::LldpNeighbors,
        words: &[&["lldp", "neighbors"], &["lldp", "neighbor"], &["lldp", "table"]],
        usage: "lldp neighbors",
        command: &commands::LLDP,
        fetch: Fetch::Ports { render: |v| render_lldp_neighbors(&ports(v)), clearable: false, nested: true },
    },
    ViewDef {
        view: View::Dcbx,
        words: &[&["dcbx"]],
        usage: "dcbx",
        command: &commands::LLDP,
        fetch: Fetch::Ports { render: |v| render_dcbx(&ports(v)), clearable: false, nested: true },
    },
    ViewDef {
        view: View::Routing,
        words: &[&["routing"]],
        usage: "",
        command: &commands::ROUTING,
        fetch: Fetch::Status { render: render_routing },
    },
];

impl View {
    /// Parse the words after `show`/`clear` (SONiC spelling).
    pub fn parse(words: &[String]) -> Result<View, String> {
        VIEWS
            .iter()
            .find(|d| d.words.iter().any(|w| w.iter().copied().eq(words.iter().map(String::as_str))))
            .map(|d| d.view)
            .ok_or_else(|| View::unknown(words))
    }

    /// The error for words that name no view (or no view `clear` takes).
    pub fn unknown(words: &[String]) -> String {
        let names: Vec<&str> = VIEWS.iter().map(|d| d.usage).filter(|u| !u.is_empty()).collect();
        format!("unknown view '{}': expected one of: {}", words.join(" "), names.join(" | "))
    }

    /// This view's row of [`VIEWS`].
    pub fn def(self) -> &'static ViewDef {
        &VIEWS[self as usize]
    }

    /// The telemetry command behind the view.
    pub fn command(self) -> &'static str {
        self.def().command.name
    }

    /// Whether the command answers per port (and takes a port name).
    pub fn per_port(self) -> bool {
        self.def().command.scope == Scope::PerPort
    }

    /// Replies whose per-port objects nest ([`Fetch::Ports`]).
    pub fn nested(self) -> bool {
        matches!(self.def().fetch, Fetch::Ports { nested: true, .. })
    }

    /// Counters (cleared by snapshot) as opposed to gauges and watermarks.
    pub fn clearable(self) -> bool {
        matches!(self.def().fetch, Fetch::Ports { clearable: true, .. })
    }
}

/// The human table for a view: its reply (a view of [`Fetch::Rows`] takes its rows as an
/// array of strings).
pub fn render(view: View, v: &Value) -> String {
    match view.def().fetch {
        Fetch::Ports { render, .. } | Fetch::Status { render } => render(v),
        Fetch::Rows { render, .. } => {
            let rows: Vec<String> =
                v.as_array().into_iter().flatten().filter_map(|r| r.as_str().map(String::from)).collect();
            render(&rows)
        }
    }
}
