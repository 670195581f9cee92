//! The kernel's nexthop objects (`ip nexthop`, what FRR's zebra programs by default): id →
//! a gateway and device, a blackhole, or a group of (id, weight). A route that carries
//! `RTA_NH_ID` is resolved through this table, so a change of an object is a change of every
//! route using it (with `net.ipv4.nexthop_compat_mode = 0` the kernel sends no route
//! message for it). Removal follows the kernel: an object leaves every group it is in, and a
//! group left empty goes too (docs/routing.md, "Nexthop objects").

use std::collections::{BTreeSet, HashMap};
use std::net::IpAddr;

/// What a nexthop object is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NextHopKind {
    /// Through an interface, via a gateway unless the destination is on the link
    /// (`ip nexthop add id 1 dev Ethernet0`).
    Via { ifindex: u32, gateway: Option<IpAddr> },
    /// `ip nexthop add id 2 blackhole`.
    Blackhole,
    /// Members (ids of single nexthops: the kernel has no nested groups) with their weight
    /// (≥ 1), in the kernel's order.
    Group(Vec<(u32, u16)>),
    /// What the dataplane does not do (an encapsulation, an FDB nexthop): the kernel
    /// forwards what uses it.
    Other,
}

/// One path through an object: the interface, the gateway (None: on the link), the
/// weight (≥ 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NhPath {
    pub ifindex: u32,
    pub gateway: Option<IpAddr>,
    pub weight: u16,
}

/// What a route through a nexthop object forwards to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NhTarget {
    /// Paths (one, or a group's members with their weights).
    Paths(Vec<NhPath>),
    Blackhole,
    /// Punted: the kernel forwards (an object the dataplane cannot follow).
    Kernel,
}

/// The kernel's nexthop table as the writer mirrors it.
#[derive(Debug, Default)]
pub struct NextHopObjects {
    objs: HashMap<u32, NextHopKind>,
    /// The groups each object is a member of.
    in_groups: HashMap<u32, BTreeSet<u32>>,
}

impl NextHopObjects {
    /// Forget everything (a resync dumps the table again).
    pub fn clear(&mut self) {
        self.objs.clear();
        self.in_groups.clear();
    }

    /// Objects known now.
    pub fn len(&self) -> usize {
        self.objs.len()
    }

    /// Is the table empty?
    pub fn is_empty(&self) -> bool {
        self.objs.is_empty()
    }

    /// Is `id` known?
    pub fn contains(&self, id: u32) -> bool {
        self.objs.contains_key(&id)
    }

    /// Add or replace `id`. `changed` gets every id whose resolution may differ now: `id`
    /// and the groups it is a member of.
    pub fn set(&mut self, id: u32, kind: NextHopKind, changed: &mut BTreeSet<u32>) {
        if let Some(NextHopKind::Group(old)) = self.objs.get(&id) {
            for (m, _) in old {
                if let Some(g) = self.in_groups.get_mut(m) {
                    g.remove(&id);
                }
            }
        }
        if let NextHopKind::Group(members) = &kind {
            for (m, _) in members {
                self.in_groups.entry(*m).or_default().insert(id);
            }
        }
        self.objs.insert(id, kind);
        self.changed_with_groups(id, changed);
    }

    fn changed_with_groups(&self, id: u32, changed: &mut BTreeSet<u32>) {
        changed.insert(id);
        if let Some(groups) = self.in_groups.get(&id) {
            changed.extend(groups.iter().copied());
        }
    }

    /// Remove `id` as the kernel does: it also leaves every group it is in, and a group
    /// left empty is removed in turn. `gone` gets every id removed (the kernel deletes the
    /// routes using them), `changed` the groups that lost a member and remain.
    pub fn remove(&mut self, id: u32, changed: &mut BTreeSet<u32>, gone: &mut BTreeSet<u32>) {
        let Some(kind) = self.objs.remove(&id) else { return };
        gone.insert(id);
        changed.remove(&id);
        if let NextHopKind::Group(members) = kind {
            for (m, _) in members {
                if let Some(g) = self.in_groups.get_mut(&m) {
                    g.remove(&id);
                }
            }
        }
        for g in self.in_groups.remove(&id).unwrap_or_default() {
            let Some(NextHopKind::Group(members)) = self.objs.get_mut(&g) else { continue };
            members.retain(|(m, _)| *m != id);
            if members.is_empty() {
                self.remove(g, changed, gone);
            } else {
                self.changed_with_groups(g, changed);
            }
        }
    }

    /// The single objects through interface `ifindex`, sorted.
    pub fn through(&self, ifindex: u32) -> Vec<u32> {
        let mut v: Vec<u32> = self
            .objs
            .iter()
            .filter(|(_, k)| matches!(k, NextHopKind::Via { ifindex: i, .. } if *i == ifindex))
            .map(|(id, _)| *id)
            .collect();
        v.sort_unstable();
        v
    }

    /// What a route through `id` forwards to; None if `id` is unknown.
    pub fn resolve(&self, id: u32) -> Option<NhTarget> {
        Some(match self.objs.get(&id)? {
            NextHopKind::Via { ifindex, gateway } => {
                NhTarget::Paths(vec![NhPath { ifindex: *ifindex, gateway: *gateway, weight: 1 }])
            }
            NextHopKind::Blackhole => NhTarget::Blackhole,
            NextHopKind::Other => NhTarget::Kernel,
            NextHopKind::Group(members) => {
                let mut paths = Vec::with_capacity(members.len());
                let mut blackholes = 0;
                for &(m, weight) in members {
                    match self.objs.get(&m) {
                        Some(NextHopKind::Via { ifindex, gateway }) => {
                            paths.push(NhPath { ifindex: *ifindex, gateway: *gateway, weight: weight.max(1) })
                        }
                        Some(NextHopKind::Blackhole) => blackholes += 1,
                        // A member the dataplane cannot follow: the kernel forwards it all.
                        Some(NextHopKind::Other) => return Some(NhTarget::Kernel),
                        // Not known (yet): left out, as the kernel would refuse it.
                        Some(NextHopKind::Group(_)) | None => {}
                    }
                }
                match (paths.is_empty(), blackholes) {
                    (false, _) => NhTarget::Paths(paths),
                    (true, 0) => NhTarget::Kernel,
                    (true, _) => NhTarget::Blackhole,
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn via(i: u32, g: &str) -> NextHopKind {
        NextHopKind::Via { ifindex: i, gateway: Some(g.parse().unwrap()) }
    }

    #[test]
    fn groups_follow_their_members_and_removal_cascades() {
        let mut t = NextHopObjects::default();
        let (mut changed, mut gone) = (BTreeSet::new(), BTreeSet::new());
        t.set(1, via(3, "10.0.0.1"), &mut changed);
        t.set(2, via(5, "10.0.0.3"), &mut changed);
        t.set(10, NextHopKind::Group(vec![(1, 1), (2, 3)]), &mut changed);
        t.set(11, NextHopKind::Group(vec![(1, 1)]), &mut changed);
        let Some(NhTarget::Paths(p)) = t.resolve(10) else { panic!() };
        assert_eq!(p.iter().map(|p| (p.ifindex, p.weight)).collect::<Vec<_>>(), vec![(3, 1), (5, 3)]);

        // A member replaced: it and both groups holding it change.
        changed.clear();
        t.set(1, via(3, "10.0.0.9"), &mut changed);
        assert_eq!(changed, BTreeSet::from([1, 10, 11]));
        // A group replaced: it no longer follows its old member.
        t.set(11, NextHopKind::Group(vec![(2, 1)]), &mut changed);
        changed.clear();
        t.set(1, via(3, "10.0.0.1"), &mut changed);
        assert_eq!(changed, BTreeSet::from([1, 10]));

        // Member 2 removed: group 10 keeps member 1, group 11 is left empty and goes.
        changed.clear();
        t.remove(2, &mut changed, &mut gone);
        assert_eq!(gone, BTreeSet::from([2, 11]));
        assert_eq!(changed, BTreeSet::from([10]));
        assert_eq!(t.resolve(11), None);
        let Some(NhTarget::Paths(p)) = t.resolve(10) else { panic!() };
        assert_eq!(p.len(), 1);
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn blackholes_and_what_the_kernel_forwards() {
        let mut t = NextHopObjects::default();
        let mut changed = BTreeSet::new();
        t.set(4, NextHopKind::Blackhole, &mut changed);
        t.set(5, NextHopKind::Other, &mut changed);
        t.set(6, NextHopKind::Via { ifindex: 3, gateway: None }, &mut changed);
        t.set(20, NextHopKind::Group(vec![(4, 1)]), &mut changed);
        t.set(21, NextHopKind::Group(vec![(6, 1), (5, 1)]), &mut changed);
        assert_eq!(t.resolve(4), Some(NhTarget::Blackhole));
        assert_eq!(t.resolve(20), Some(NhTarget::Blackhole));
        assert_eq!(t.resolve(5), Some(NhTarget::Kernel));
        assert_eq!(t.resolve(21), Some(NhTarget::Kernel));
        assert_eq!(t.resolve(6), Some(NhTarget::Paths(vec![NhPath { ifindex: 3, gateway: None, weight: 1 }])));
        assert_eq!(t.resolve(99), None);
    }
}
