//! Frame edits the stages make in place: the egress VLAN tag, and a flood's copy.

use crate::dpdk::Mbuf;
use crate::vlan::{self, Egress};
use crate::wire;

use super::super::shared::Shared;

/// Give a frame (received with a tag or not: `tagged`) its egress tag (see
/// [`crate::vlan`]), in place: a tag is inserted in the mbuf's headroom, removed by
/// moving the MACs over it (padded back to 60 bytes), or its TCI rewritten. False if the
/// mbuf cannot take it (no headroom or tailroom: not with DPDK's 128-byte headroom and a
/// data room above the MTU).
#[inline]
pub fn vlan_edit(m: &mut Mbuf, e: Egress, tagged: bool) -> bool {
    const TAG: u16 = wire::VLAN_TAG_LEN as u16;
    match e {
        Egress::Keep => true,
        Egress::Tag(t) if tagged => vlan::write_tci(m.data_mut(), t),
        Egress::Tag(t) => m.prepend(TAG).is_some_and(|d| vlan::write_inserted_tag(d, t)),
        Egress::Untag => match vlan::write_removed_tag(m.data_mut()) {
            Some(pad) => {
                m.adj(TAG);
                pad == 0 || m.append(pad as u16).map(|tail| tail.fill(0)).is_some()
            }
            None => false,
        },
    }
}

/// A copy of `m` from the switch's pool (None: the pool is empty).
pub fn copy_mbuf(shared: &Shared, m: &Mbuf) -> Option<Mbuf> {
    let mut copy = shared.pool.alloc()?;
    let src = m.data();
    let dst = copy.append(src.len() as u16)?;
    dst.copy_from_slice(src);
    Some(copy)
}
