//! One learning table for every worker: lock-free lookups and learning, aging in bounded
//! slices by another thread (the control lcore).
//!
//! With one [`super::Fdb`] per worker, a MAC learned by worker A is unknown to worker B,
//! and B floods that MAC's traffic for ever when it never receives from it (3+ ports, a
//! port's RX on A, another's on B). [`SharedFdb`] is one table all workers read and write.
//!
//! # Layout
//!
//! Open addressing with linear probing, `2 × capacity` slots of two `AtomicU64` (16
//! bytes: four slots per cache line), the same multiply-shift hash as [`super::Fdb`].
//! A slot's `key` is 0 (empty, ends a probe chain), `RESERVED | k` (being filled),
//! `OCCUPIED | k`, or `TOMBSTONE` (aged out; does not end a chain, may be reused). Its
//! `val` is `port << 48 | stamp`, `stamp` the last-seen time in units of 2^k TSC ticks
//! (the power of two at or above `tsc_hz / 16`: 1/16 to 1/8 s; a shift, not a division, on
//! the per-packet path), so a refresh writes a MAC's slot at most 16 times a second.
//!
//! `k` is the entry's (VID, MAC): the MAC in bits 0..48, the VID in bits 48..60 (see
//! [`crate::vlan`]; VID 0 is the VLAN-unaware domain, the only one without `[vlan]`). The
//! same MAC in two VLANs is two entries, each with its own port and age.
//!
//! # Concurrency
//!
//! * **Learn** (any worker): find the MAC's slot on its chain; refresh `val` only if the
//!   port or the stamp changed (no write, no cache-line transfer, on most packets).
//!   Absent: claim the first tombstone or the empty slot that ends the chain with a CAS
//!   `0|TOMBSTONE → RESERVED|mac`, write `val`, then publish `OCCUPIED|mac` (release).
//!   Only the CAS winner writes `val`; a learner that finds `RESERVED|mac` leaves it to
//!   the winner. Two workers learning the same new MAC at once may, rarely, claim two
//!   slots (one behind a tombstone the other did not see): lookups use the first, the other
//!   ages out.
//! * **Lookup** (any worker): `key` with acquire, then `val`: a published key's `val` is
//!   complete.
//! * **Aging** (one thread, [`SharedFdb::age_slice`]): a bounded number of slots per call
//!   (lookups already treat expired entries as absent; the sweep reclaims their slots);
//!   an expired `OCCUPIED` key becomes `TOMBSTONE` by CAS. No entry ever moves, so a
//!   reader never misses one (no backward-shift deletion here).
//!
//! A refresh racing with the aging of the same entry may be lost: the MAC is learned again
//! from its next frame (flooded once meanwhile).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};

use super::{is_group, mac_to_u64};

/// The table key of `mac` in VLAN `vid` (bits 60..64 always 0).
#[inline(always)]
pub fn vkey(vid: u16, mac: [u8; 6]) -> u64 {
    u64::from(vid & 0xfff) << 48 | mac_to_u64(mac)
}

const OCCUPIED: u64 = 1 << 63;
const RESERVED: u64 = 1 << 62;
const TOMBSTONE: u64 = 1 << 61;
/// (VID, MAC) key bits.
const KEY_MASK: u64 = (1 << 60) - 1;
const HASH_MUL: u64 = 0x9E37_79B9_7F4A_7C15;
const STAMP_MASK: u64 = (1 << 48) - 1;
/// Stamps per second, at least.
const STAMPS_PER_S: u64 = 16;

#[derive(Default)]
struct Slot {
    key: AtomicU64,
    val: AtomicU64,
}

/// The switch's learning table. See the module documentation.
pub struct SharedFdb {
    slots: Box<[Slot]>,
    mask: usize,
    shift: u32,
    capacity: usize,
    /// Published or reserved entries (not tombstones): at most `capacity`.
    used: AtomicUsize,
    /// log2 of the TSC ticks per stamp.
    stamp_shift: u32,
    /// Aging time in stamps (0 = never).
    aging_stamps: u64,
    /// Where the next aging slice starts (one aging thread).
    cursor: AtomicUsize,
}

impl SharedFdb {
    /// A table for up to `capacity` entries (a power of two), aging after `aging_time_s`
    /// seconds (0 = never) at `tsc_hz`. Allocates `2 × capacity` slots of 16 bytes.
    pub fn new(capacity: usize, aging_time_s: u32, tsc_hz: u64) -> SharedFdb {
        assert!(capacity.is_power_of_two(), "FDB capacity must be a power of two, got {capacity}");
        let nslots = capacity.checked_mul(2).expect("FDB capacity too large");
        SharedFdb {
            slots: (0..nslots).map(|_| Slot::default()).collect(),
            mask: nslots - 1,
            shift: 64 - nslots.trailing_zeros(),
            capacity,
            used: AtomicUsize::new(0),
            stamp_shift: (tsc_hz / STAMPS_PER_S).max(1).next_power_of_two().trailing_zeros(),
            aging_stamps: (u64::from(aging_time_s) * tsc_hz)
                .div_ceil((tsc_hz / STAMPS_PER_S).max(1).next_power_of_two()),
            cursor: AtomicUsize::new(0),
        }
    }

    /// Slots in the table (`2 × capacity`).
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Entries stored (live or not yet aged).
    pub fn len(&self) -> usize {
        self.used.load(Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    fn home(&self, mac: u64) -> usize {
        (mac.wrapping_mul(HASH_MUL) >> self.shift) as usize
    }

    #[inline]
    fn stamp(&self, now_tsc: u64) -> u64 {
        (now_tsc >> self.stamp_shift) & STAMP_MASK
    }

    #[inline]
    fn expired(&self, val: u64, now_tsc: u64) -> bool {
        self.aging_stamps != 0 && self.stamp(now_tsc).saturating_sub(val & STAMP_MASK) >= self.aging_stamps
    }

    /// Learn (or refresh) `mac` in VLAN `vid` on `port`. Per-packet path: no allocation,
    /// no lock, no system call; writes only when something changed. Returns false when not
    /// learned (group or zero source, table full).
    #[inline]
    pub fn learn(&self, vid: u16, mac: [u8; 6], port: u16, now_tsc: u64) -> bool {
        if is_group(mac) || mac_to_u64(mac) == 0 {
            return false;
        }
        let m = vkey(vid, mac);
        let val = u64::from(port) << 48 | self.stamp(now_tsc);
        let mut i = self.home(m);
        let mut free = None;
        for _ in 0..self.slots.len() {
            let s = &self.slots[i];
            let k = s.key.load(Acquire);
            if k == OCCUPIED | m {
                if s.val.load(Relaxed) != val {
                    s.val.store(val, Relaxed);
                }
                return true;
            }
            if k == RESERVED | m {
                return true; // another worker is filling it in
            }
            if k == TOMBSTONE && free.is_none() {
                free = Some((i, TOMBSTONE));
            }
            if k == 0 {
                free.get_or_insert((i, 0));
                break;
            }
            i = (i + 1) & self.mask;
        }
        let Some((slot, was)) = free else { return false };
        if self.used.load(Relaxed) >= self.capacity {
            return false;
        }
        let s = &self.slots[slot];
        if s.key.compare_exchange(was, RESERVED | m, AcqRel, Acquire).is_err() {
            // Lost the slot to another learner: it may be this MAC; try once more.
            return self.learn_retry(vid, mac, port, now_tsc);
        }
        self.used.fetch_add(1, Relaxed);
        s.val.store(val, Relaxed);
        s.key.store(OCCUPIED | m, Release);
        true
    }

    #[cold]
    fn learn_retry(&self, vid: u16, mac: [u8; 6], port: u16, now_tsc: u64) -> bool {
        self.learn(vid, mac, port, now_tsc)
    }

    /// The live port of `mac` in VLAN `vid`. Per-packet path.
    #[inline]
    pub fn lookup(&self, vid: u16, mac: [u8; 6], now_tsc: u64) -> Option<u16> {
        let m = vkey(vid, mac);
        let mut i = self.home(m);
        for _ in 0..self.slots.len() {
            let s = &self.slots[i];
            let k = s.key.load(Acquire);
            if k == OCCUPIED | m {
                let v = s.val.load(Relaxed);
                return (!self.expired(v, now_tsc)).then_some((v >> 48) as u16);
            }
            if k == 0 {
                return None;
            }
            i = (i + 1) & self.mask;
        }
        None
    }

    /// Age the next `n` slots (one thread only): expired entries become tombstones, and
    /// tombstones no probe chain needs become empty again. Returns how many entries were
    /// removed. Bounded work per call, whatever the table's size.
    pub fn age_slice(&self, n: usize, now_tsc: u64) -> usize {
        let start = self.cursor.load(Relaxed);
        let mut removed = 0;
        for j in 0..n.min(self.slots.len()) {
            let i = (start + j) & self.mask;
            let s = &self.slots[i];
            let mut k = s.key.load(Acquire);
            if k & OCCUPIED != 0
                && self.aging_stamps != 0
                && self.expired(s.val.load(Relaxed), now_tsc)
                && s.key.compare_exchange(k, TOMBSTONE, AcqRel, Relaxed).is_ok()
            {
                self.used.fetch_sub(1, Relaxed);
                removed += 1;
                k = TOMBSTONE;
            }
            if k == TOMBSTONE {
                self.reclaim(i);
            }
        }
        self.cursor.store((start + n) & self.mask, Relaxed);
        removed
    }

    /// Makes the tombstone at `i` empty when no probe chain passes through it: no entry
    /// between it and the next empty slot has its home at or before `i`. Without this,
    /// MAC churn turns every empty slot into a tombstone over time, and then every lookup
    /// miss and every new MAC probes the whole table (the worker falls to kpps).
    ///
    /// A learner may claim a slot after `i` while this runs (it scanned `i` while it was
    /// still occupied): the chain is checked again after the slot is emptied and the
    /// tombstone put back if the learner's entry needs it. A learner that claims after that
    /// check too leaves its entry unreachable from before `i`: the MAC is learned again
    /// from its next frame (flooded once meanwhile) and the stray entry ages out — the same
    /// outcome as the refresh/aging race in the module docs.
    fn reclaim(&self, i: usize) {
        if self.chain_passes(i) {
            return;
        }
        if self.slots[i].key.compare_exchange(TOMBSTONE, 0, AcqRel, Relaxed).is_err() {
            return;
        }
        std::sync::atomic::fence(SeqCst);
        if self.chain_passes(i) {
            // A learner came in between; it may also have taken `i` itself (then keep it).
            let _ = self.slots[i].key.compare_exchange(0, TOMBSTONE, AcqRel, Relaxed);
        }
    }

    /// Whether an entry after `i`, up to the next empty slot, probes through `i` (its
    /// home is at or before `i` on the ring).
    fn chain_passes(&self, i: usize) -> bool {
        let mut j = (i + 1) & self.mask;
        while j != i {
            let k = self.slots[j].key.load(Acquire);
            if k == 0 {
                return false;
            }
            if k & (OCCUPIED | RESERVED) != 0 {
                let h = self.home(k & KEY_MASK);
                if (i.wrapping_sub(h) & self.mask) < (j.wrapping_sub(h) & self.mask) {
                    return true;
                }
            }
            j = (j + 1) & self.mask;
        }
        false
    }

    /// Slots a lookup of `mac` in `vid` reads before it answers (control path, tests and
    /// bench).
    pub fn probe_len(&self, vid: u16, mac: [u8; 6]) -> usize {
        let m = vkey(vid, mac);
        let mut i = self.home(m);
        for n in 1..=self.slots.len() {
            let k = self.slots[i].key.load(Acquire);
            if k == 0 || k & KEY_MASK == m && k & (OCCUPIED | RESERVED) != 0 {
                return n;
            }
            i = (i + 1) & self.mask;
        }
        self.slots.len()
    }

    /// Empty slots (control path, tests).
    pub fn empty_slots(&self) -> usize {
        self.slots.iter().filter(|s| s.key.load(Relaxed) == 0).count()
    }

    /// Live entries `(vid, mac, port)` (control path: walks the whole table).
    pub fn entries(&self, now_tsc: u64) -> impl Iterator<Item = (u16, [u8; 6], u16)> + '_ {
        self.slots.iter().filter_map(move |s| {
            let k = s.key.load(Acquire);
            let v = s.val.load(Relaxed);
            (k & OCCUPIED != 0 && !self.expired(v, now_tsc))
                .then(|| (((k & KEY_MASK) >> 48) as u16, super::u64_to_mac(k), (v >> 48) as u16))
        })
    }

    /// Remove every entry of VLAN `vid`, or every entry (`None`) (SONiC's `sonic-clear
    /// fdb vlan` / `all`; control path, any thread): each becomes a tombstone by CAS, as
    /// aging does, and the aging sweep makes it empty again. Returns how many were removed.
    pub fn flush(&self, vid: Option<u16>) -> usize {
        let mut removed = 0;
        for s in self.slots.iter() {
            let k = s.key.load(Acquire);
            if k & OCCUPIED != 0
                && vid.is_none_or(|v| (k & KEY_MASK) >> 48 == u64::from(v & 0xfff))
                && s.key.compare_exchange(k, TOMBSTONE, AcqRel, Relaxed).is_ok()
            {
                self.used.fetch_sub(1, Relaxed);
                removed += 1;
            }
        }
        removed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    const HZ: u64 = 2_048; // 128 ticks per stamp

    fn mac(n: u32) -> [u8; 6] {
        let b = n.to_be_bytes();
        [0x02, 0, b[0], b[1], b[2], b[3]]
    }

    #[test]
    fn learn_lookup_move_age() {
        let f = SharedFdb::new(64, 2, HZ);
        assert_eq!(f.lookup(0, mac(1), 0), None);
        assert!(f.learn(0, mac(1), 3, 0));
        assert!(f.learn(0, mac(2), 4, 0));
        assert_eq!((f.lookup(0, mac(1), 10), f.lookup(0, mac(2), 10)), (Some(3), Some(4)));
        assert!(f.learn(0, mac(1), 5, 128), "station move");
        assert_eq!(f.lookup(0, mac(1), 128), Some(5));
        assert!(!f.learn(0, [0x01, 0, 0, 0, 0, 1], 1, 0) && !f.learn(0, [0; 6], 1, 0));
        assert_eq!(f.len(), 2);
        // 2 s = 32 stamps: mac(2), last seen at stamp 0, is expired at stamp 32.
        assert_eq!(f.lookup(0, mac(2), 4096), None);
        assert_eq!(f.age_slice(f.slots(), 4096), 1, "mac(2) aged, mac(1) (stamp 1) too young");
        assert_eq!(f.len(), 1);
        assert_eq!(f.lookup(0, mac(1), 4096), Some(5));
        // The tombstone keeps chains intact and is reused.
        assert!(f.learn(0, mac(2), 6, 4150));
        assert_eq!(f.lookup(0, mac(2), 4150), Some(6));
        assert_eq!(f.entries(4150).count(), 2);
    }

    #[test]
    fn full_table_refuses_and_chains_survive_aging() {
        let f = SharedFdb::new(8, 1, HZ);
        for n in 0..8 {
            assert!(f.learn(0, mac(n), n as u16, 0));
        }
        assert!(!f.learn(0, mac(100), 1, 0), "full");
        for n in 0..4 {
            assert!(f.learn(0, mac(n), n as u16, 2048), "refreshed");
        }
        // Age in small slices: 4 entries expire, every other is still found.
        let mut removed = 0;
        for _ in 0..8 {
            removed += f.age_slice(2, 2176);
        }
        assert_eq!(removed, 4);
        for n in 0..4 {
            assert_eq!(f.lookup(0, mac(n), 2176), Some(n as u16));
        }
        for n in 4..8 {
            assert_eq!(f.lookup(0, mac(n), 2176), None);
        }
        assert!(f.learn(0, mac(100), 1, 2176));
    }

    /// MAC churn: a 16-entry table (32 slots) through 200 rounds of 16 fresh MACs learned
    /// and aged out keeps empty slots, and a lookup miss stays short. Without reclaiming,
    /// every slot ends up a tombstone and every miss probes all 32.
    #[test]
    fn churn_keeps_empty_slots_and_short_probes() {
        let f = SharedFdb::new(16, 1, HZ);
        let mut now = 0u64;
        for round in 0..200u32 {
            for n in 0..16 {
                assert!(f.learn(0, mac(round * 16 + n), 1, now), "round {round}: table full of tombstones");
            }
            now += 2 * HZ; // 1 s aging: all expired
            assert_eq!(f.age_slice(f.slots(), now), 16);
            assert_eq!(f.len(), 0);
            assert!(f.empty_slots() >= 16, "round {round}: {} empty slots", f.empty_slots());
            let worst = (0..64).map(|n| f.probe_len(0, mac(1_000_000 + n))).max().unwrap();
            assert!(worst <= 2, "round {round}: a miss probes {worst} slots");
        }
    }

    /// Reclaiming never cuts a chain: entries that probed past a tombstone stay found.
    #[test]
    fn reclaim_keeps_chains_whole() {
        let f = SharedFdb::new(64, 1, HZ);
        let mut now = 0u64;
        for round in 0..300u32 {
            // Young and old entries mixed, many sharing home slots (128 slots, 40 MACs).
            for n in 0..40 {
                let m = mac((round * 40 + n) % 997);
                f.learn(0, m, (n % 7) as u16, now + u64::from(n % 2) * HZ);
            }
            now += HZ + HZ / 2;
            f.age_slice(37, now);
            for s in 0..f.slots() {
                let k = f.slots[s].key.load(Relaxed);
                if k & OCCUPIED != 0 {
                    let m = super::super::u64_to_mac(k);
                    assert!(f.probe_len(0, m) <= f.slots(), "lost");
                    let v = f.slots[s].val.load(Relaxed);
                    if !f.expired(v, now) {
                        assert_eq!(f.lookup(0, m, now), Some((v >> 48) as u16), "round {round}: entry unreachable");
                    }
                }
            }
        }
    }

    /// (VID, MAC) keys: the same MAC in two VLANs is two entries, each with its port and
    /// age; clearing one VLAN leaves the other; VID 4095 and MAC bits never mix.
    #[test]
    fn vlans_are_separate_tables() {
        let f = SharedFdb::new(64, 2, HZ);
        let m = [0x02, 0xff, 0xff, 0xff, 0xff, 0xff];
        assert!(f.learn(10, m, 1, 0));
        assert_eq!(f.lookup(20, m, 0), None, "unknown in VLAN 20");
        assert!(f.learn(20, m, 3, 128));
        assert!(f.learn(4095, m, 5, 128));
        assert_eq!((f.lookup(10, m, 128), f.lookup(20, m, 128), f.lookup(4095, m, 128)), (Some(1), Some(3), Some(5)));
        assert_eq!(f.lookup(0, m, 128), None);
        let mut e: Vec<_> = f.entries(128).collect();
        e.sort();
        assert_eq!(e, vec![(10, m, 1), (20, m, 3), (4095, m, 5)]);
        // 2 s = 32 stamps: VLAN 10's entry (stamp 0) ages before VLAN 20's (stamp 1).
        assert_eq!(f.age_slice(f.slots(), 4096), 1);
        assert_eq!((f.lookup(10, m, 4096), f.lookup(20, m, 4096)), (None, Some(3)));
        assert_eq!(f.flush(Some(20)), 1);
        assert_eq!((f.lookup(20, m, 4096), f.lookup(4095, m, 4096), f.len()), (None, Some(5), 1));
        assert!(f.learn(20, m, 2, 4096), "a cleared VLAN learns again");
        assert_eq!(f.lookup(20, m, 4096), Some(2));
        assert_eq!((f.flush(None), f.len(), f.entries(4096).count()), (2, 0, 0));
    }

    #[test]
    fn concurrent_learners_agree() {
        let f = Arc::new(SharedFdb::new(1 << 12, 300, HZ));
        let threads: Vec<_> = (0..4u16)
            .map(|t| {
                let f = f.clone();
                std::thread::spawn(move || {
                    for n in 0..2000 {
                        // Every thread learns every MAC, on a port derived from the MAC.
                        let m = (n * 7 + u32::from(t)) % 2000;
                        assert!(f.learn(0, mac(m), (m % 5) as u16, 0));
                        if let Some(p) = f.lookup(0, mac(m), 0) {
                            assert_eq!(p, (m % 5) as u16);
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        for m in 0..2000 {
            assert_eq!(f.lookup(0, mac(m), 0), Some((m % 5) as u16), "mac {m}");
        }
        assert!(f.len() >= 2000 && f.len() <= 2100, "{} entries for 2000 MACs", f.len());
    }
}
