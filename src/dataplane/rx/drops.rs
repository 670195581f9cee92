//! How the forwarding decision's drops are counted.

use crate::classify::Class;
use crate::counters::{DropReason, DropSite, LcoreCounters};
use crate::route::RouteDrop;

use super::super::shared::Shared;

/// The counter a router drop is counted under.
pub fn route_drop(why: RouteDrop) -> DropReason {
    match why {
        RouteDrop::Blackhole => DropReason::RouteBlackhole,
        RouteDrop::NonPort => DropReason::RouteNonPort,
        RouteDrop::Malformed => DropReason::RouteMalformed,
        RouteDrop::NotRouterMac => DropReason::NotRouterMac,
        RouteDrop::NotRouted => DropReason::NotRouted,
        RouteDrop::Tagged => DropReason::VlanNotMember,
        RouteDrop::BadChecksum => DropReason::RouteBadChecksum,
        RouteDrop::MartianSource => DropReason::RouteMartianSource,
        RouteDrop::MartianDestination => DropReason::RouteMartianDestination,
    }
}

/// A classified packet the forwarding decision drops (no egress): received and dropped in
/// its TC's balance on the ingress port, under `why`.
#[inline]
pub fn count_forwarding_drop(c: &LcoreCounters, in_port: usize, tc: u8, why: DropReason) {
    c.ports[in_port].tc_rx[tc as usize & 7].inc();
    c.count_drop(DropSite::classified(in_port, tc), why, 1);
}

/// A packet received on a port whose priority the watchdog has stormed: counted in the
/// watchdog's `rx_ok`, or with action `drop` dropped (`rx_dropped`, `drops.pfc_watchdog`),
/// as SONiC drops what a storming peer keeps sending. Returns true if dropped.
#[cold]
pub fn watchdog_rx_drops(shared: &Shared, in_port: usize, class: Class, c: &LcoreCounters) -> bool {
    let Some(wd) = &shared.ports[in_port].pfcwd else { return false };
    if wd.drop_mask() & (1 << class.priority) != 0 {
        wd.count_rx_dropped(class.priority, 1);
        count_forwarding_drop(c, in_port, class.tc, DropReason::PfcWatchdog);
        true
    } else {
        wd.count_rx_ok(class.priority, 1);
        false
    }
}
