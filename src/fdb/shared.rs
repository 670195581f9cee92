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
//! the per-packet path). A refresh on the same port writes the stamp only once it is 1/16
//! of the aging time old: a MAC's slot is written every ~19 s at 300 s aging, and an entry
//! ages out between 15/16 of the aging time and the aging time after its last frame.
//!
//! `k` is the entry's (VID, MAC): the MAC in bits 0..48, the VID in bits 48..60 (see
//! [`crate::vlan`]; VID 0 is the VLAN-unaware domain, the only one without `[vlan]`). The
//! same MAC in two VLANs is two entries, each with its own port and age.
//!
//! # Concurrency
//!
//! * **Learn** (any worker): find the MAC's slot on its chain; refresh `val` only if the
//!   port changed or the stamp is old enough (no write, no cache-line transfer, on most
//!   packets).
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
//!
//! # MAC moves, damped
//!
//! A learn that finds the MAC on another port is a move (a station moved, or a loop, a
//! misconfigured bond, a MAC seen on ports of two workers). Moves are counted
//! ([`FdbCounters::mac_moves`]); a MAC that moves more than [`MoveDamping::max_moves`]
//! times within [`MoveDamping::window_s`] is held on the port it has for
//! [`MoveDamping::hold_s`] ([`FdbCounters::mac_flaps`] counts the holds, `show mac` flags
//! the entry): its frames from elsewhere are forwarded but teach nothing, so a flapping MAC
//! costs one read of its move word per burst and no write. The move words are a separate
//! array, read only when the port differs: the common path is unchanged. Their updates
//! are plain stores: two workers moving the same MAC at once may lose one count (a hold
//! comes one move later).
//!
//! A full table refuses new MACs (counted, [`FdbCounters::learn_full`]); nothing is evicted:
//! the MACs learned keep their entries, the new ones are flooded until room comes back.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};

use super::{is_group, mac_to_u64};

/// The table key of `mac` in VLAN `vid` (bits 60..64 always 0).
#[inline(always)]
pub fn vkey(vid: u16, mac: [u8; 6]) -> u64 {
    u64::from(vid & 0xfff) << 48 | mac_to_u64(mac)
}

/// [`vkey`] from the MAC's six bytes read as a little-endian word (bits 48..64 zero), as
/// the receive side already holds them: a byte swap, not six loads.
#[inline(always)]
pub fn vkey_of_word(vid: u16, le_word: u64) -> u64 {
    u64::from(vid & 0xfff) << 48 | le_word.swap_bytes() >> 16
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
/// Move word: held (bit 31), the hold's end (low 32 bits of its stamp, bits 32..64), the
/// window's start (low 23 bits of its stamp, bits 8..31), moves in the window (bits 0..8).
const HELD: u64 = 1 << 31;
const WINDOW_MASK: u64 = (1 << 23) - 1;

/// When a moving MAC is held (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct MoveDamping {
    /// Moves allowed within `window_s` (0 = never hold); one more holds the MAC.
    pub max_moves: u32,
    pub window_s: u32,
    /// How long a held MAC stays on its port.
    pub hold_s: u32,
}

impl Default for MoveDamping {
    /// More than 5 moves within 10 s holds the MAC for 60 s: a moved VM or a failed-over
    /// bond moves once, a loop or a flapping bond thousands of times a second.
    fn default() -> Self {
        MoveDamping { max_moves: 5, window_s: 10, hold_s: 60 }
    }
}

/// One counter in its own cache line.
#[derive(Default)]
#[repr(align(64))]
struct Padded(AtomicU64);

/// A counter written by every worker: one line per ingress port (modulo 16), so workers
/// polling different ports never share a line.
#[derive(Default)]
struct Sharded([Padded; 16]);

impl Sharded {
    #[inline]
    fn add(&self, port: u16) {
        self.0[usize::from(port) & 15].0.fetch_add(1, Relaxed);
    }
    fn sum(&self) -> u64 {
        self.0.iter().map(|c| c.0.load(Relaxed)).sum()
    }
}

/// The table's event counters (stats JSON `fdb`, `/pfcswitch/fdb`, Prometheus).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct FdbCounters {
    /// A MAC learned on a port other than its entry's.
    pub mac_moves: u64,
    /// A MAC held on its port for moving too often.
    pub mac_flaps: u64,
    /// A new MAC not learned: the table was full.
    pub learn_full: u64,
}

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
    /// A refresh on the same port writes the stamp only once it is this many stamps old
    /// (1/16 of the aging time: ~19 s at 300 s; 1 s without aging): a MAC's slot is written
    /// that seldom, not at every stamp, and lookups on other workers keep the line.
    refresh_stamps: u64,
    /// Where the next aging slice starts (one aging thread).
    cursor: AtomicUsize,
    /// Per slot: its MAC's recent moves and hold (see [`HELD`]).
    moves: Box<[AtomicU64]>,
    damping: MoveDamping,
    /// [`MoveDamping`] in stamps.
    window_stamps: u64,
    hold_stamps: u64,
    mac_moves: Sharded,
    mac_flaps: Sharded,
    learn_full: Sharded,
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
            refresh_stamps: 1,
            cursor: AtomicUsize::new(0),
            moves: (0..nslots).map(|_| AtomicU64::new(0)).collect(),
            damping: MoveDamping { max_moves: 0, window_s: 0, hold_s: 0 },
            window_stamps: 0,
            hold_stamps: 0,
            mac_moves: Sharded::default(),
            mac_flaps: Sharded::default(),
            learn_full: Sharded::default(),
        }
        .with_refresh()
        .with_damping(MoveDamping::default(), tsc_hz)
    }

    fn with_refresh(mut self) -> SharedFdb {
        self.refresh_stamps = if self.aging_stamps == 0 { 16 } else { (self.aging_stamps / 16).max(1) };
        self
    }

    /// The same table with `d` as its move damping (before any learning).
    pub fn with_damping(mut self, d: MoveDamping, tsc_hz: u64) -> SharedFdb {
        let stamp = (tsc_hz / STAMPS_PER_S).max(1).next_power_of_two();
        self.damping = d;
        self.window_stamps = (u64::from(d.window_s) * tsc_hz).div_ceil(stamp).min(WINDOW_MASK);
        self.hold_stamps = (u64::from(d.hold_s) * tsc_hz).div_ceil(stamp).min(u64::from(u32::MAX >> 1));
        self
    }

    /// The move damping in force.
    pub fn damping(&self) -> MoveDamping {
        self.damping
    }

    /// Moves, holds and refusals so far.
    pub fn counters(&self) -> FdbCounters {
        FdbCounters {
            mac_moves: self.mac_moves.sum(),
            mac_flaps: self.mac_flaps.sum(),
            learn_full: self.learn_full.sum(),
        }
    }

    /// May the MAC in slot `i` move to `port` now? Counts the move, or holds the MAC when
    /// it moved too often. Only when a learn finds the MAC on another port.
    #[cold]
    #[inline(never)]
    fn may_move(&self, i: usize, port: u16, now_tsc: u64) -> bool {
        if self.damping.max_moves == 0 {
            self.mac_moves.add(port);
            return true;
        }
        let st = self.stamp(now_tsc);
        let now32 = st as u32;
        let mut w = self.moves[i].load(Relaxed);
        if w & HELD != 0 {
            if ((w >> 32) as u32).wrapping_sub(now32) as i32 > 0 {
                return false;
            }
            w = 0; // the hold is over: counting starts again
        }
        let (start, count) = ((w >> 8) & WINDOW_MASK, w & 0xff);
        let now_w = st & WINDOW_MASK;
        let (start, count) = if count == 0 || now_w.wrapping_sub(start) & WINDOW_MASK >= self.window_stamps {
            (now_w, 1)
        } else {
            (start, count + 1)
        };
        if count > u64::from(self.damping.max_moves) {
            let until = now32.wrapping_add(self.hold_stamps as u32);
            self.moves[i].store(u64::from(until) << 32 | HELD, Relaxed);
            self.mac_flaps.add(port);
            return false;
        }
        self.moves[i].store(start << 8 | count.min(255), Relaxed);
        self.mac_moves.add(port);
        true
    }

    /// Is the MAC in slot `i` held (flapping) now?
    fn held(&self, i: usize, now_tsc: u64) -> bool {
        let w = self.moves[i].load(Relaxed);
        w & HELD != 0 && ((w >> 32) as u32).wrapping_sub(self.stamp(now_tsc) as u32) as i32 > 0
    }

    /// Bytes the table holds, allocated whole at creation: its slots and their move words.
    pub fn bytes(&self) -> usize {
        std::mem::size_of_val(&*self.slots) + std::mem::size_of_val(&*self.moves)
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
        self.learn_key(vkey(vid, mac), port, now_tsc)
    }

    /// [`SharedFdb::learn`] of a frame's source as the receive side holds it: the MAC's
    /// bytes as a little-endian word ([`vkey_of_word`]).
    #[inline]
    pub fn learn_word(&self, vid: u16, src_le_word: u64, port: u16, now_tsc: u64) -> bool {
        // The group bit is the first byte's lowest: bit 0 of the little-endian word.
        if src_le_word & 1 != 0 || src_le_word == 0 {
            return false;
        }
        self.learn_key(vkey_of_word(vid, src_le_word), port, now_tsc)
    }

    /// Learn the unicast key `m` ([`vkey`]). The common case inline: the MAC is on its
    /// chain before any free slot, on this port, its stamp fresh — a hash, a load or two
    /// and no write. Anything else (a move, a stamp to write, a new MAC) goes to
    /// [`SharedFdb::learn_slow`], out of line.
    #[inline(always)]
    fn learn_key(&self, m: u64, port: u16, now_tsc: u64) -> bool {
        let stamp = self.stamp(now_tsc);
        let mut i = self.home(m);
        for _ in 0..self.slots.len() {
            let s = &self.slots[i];
            let k = s.key.load(Acquire);
            if k == OCCUPIED | m {
                let old = s.val.load(Relaxed);
                if old >> 48 == u64::from(port) && stamp.wrapping_sub(old) & STAMP_MASK < self.refresh_stamps {
                    return true;
                }
                break;
            }
            if k & OCCUPIED == 0 {
                break; // empty, a tombstone or being filled: the slow path sorts it out
            }
            i = (i + 1) & self.mask;
        }
        self.learn_slow(m, port, now_tsc)
    }

    /// [`SharedFdb::learn_key`] when something may be written: the whole chain from the
    /// MAC's home.
    #[cold]
    #[inline(never)]
    fn learn_slow(&self, m: u64, port: u16, now_tsc: u64) -> bool {
        let stamp = self.stamp(now_tsc);
        let val = u64::from(port) << 48 | stamp;
        let mut i = self.home(m);
        let mut free = None;
        for _ in 0..self.slots.len() {
            let s = &self.slots[i];
            let k = s.key.load(Acquire);
            if k == OCCUPIED | m {
                let old = s.val.load(Relaxed);
                if old >> 48 != u64::from(port) {
                    if !self.may_move(i, port, now_tsc) {
                        return true; // held on its port: this frame teaches nothing
                    }
                    s.val.store(val, Relaxed);
                } else if stamp.wrapping_sub(old) & STAMP_MASK >= self.refresh_stamps {
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
        let Some((slot, was)) = free else {
            self.learn_full.add(port);
            return false;
        };
        if self.used.load(Relaxed) >= self.capacity {
            self.learn_full.add(port);
            return false;
        }
        let s = &self.slots[slot];
        if s.key.compare_exchange(was, RESERVED | m, AcqRel, Acquire).is_err() {
            // Lost the slot to another learner: it may be this MAC; try once more.
            return self.learn_slow(m, port, now_tsc);
        }
        self.used.fetch_add(1, Relaxed);
        self.moves[slot].store(0, Relaxed);
        s.val.store(val, Relaxed);
        s.key.store(OCCUPIED | m, Release);
        true
    }

    /// The live port of `mac` in VLAN `vid`. Per-packet path.
    #[inline]
    pub fn lookup(&self, vid: u16, mac: [u8; 6], now_tsc: u64) -> Option<u16> {
        self.lookup_key(vkey(vid, mac), now_tsc)
    }

    /// [`SharedFdb::lookup`] of a destination as the receive side holds it (the MAC's
    /// bytes as a little-endian word, [`vkey_of_word`]).
    #[inline]
    pub fn lookup_word(&self, vid: u16, dst_le_word: u64, now_tsc: u64) -> Option<u16> {
        self.lookup_key(vkey_of_word(vid, dst_le_word), now_tsc)
    }

    #[inline]
    fn lookup_key(&self, m: u64, now_tsc: u64) -> Option<u16> {
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

    /// Live entries with their state: `(vid, mac, port, flapping)`, flapping = held on
    /// its port for moving too often (control path: walks the whole table).
    pub fn entries_with_state(&self, now_tsc: u64) -> impl Iterator<Item = (u16, [u8; 6], u16, bool)> + '_ {
        self.slots.iter().enumerate().filter_map(move |(i, s)| {
            let k = s.key.load(Acquire);
            let v = s.val.load(Relaxed);
            (k & OCCUPIED != 0 && !self.expired(v, now_tsc))
                .then(|| (((k & KEY_MASK) >> 48) as u16, super::u64_to_mac(k), (v >> 48) as u16, self.held(i, now_tsc)))
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
    fn words_as_the_receive_side_holds_them_are_the_same_keys() {
        let f = SharedFdb::new(64, 300, HZ);
        let word = |m: [u8; 6]| u64::from_le_bytes([m[0], m[1], m[2], m[3], m[4], m[5], 0, 0]);
        let m = [0x02, 0x11, 0x22, 0x33, 0x44, 0x55];
        assert_eq!(vkey_of_word(100, word(m)), vkey(100, m));
        assert!(f.learn_word(100, word(m), 3, 0));
        assert_eq!((f.lookup(100, m, 0), f.lookup_word(100, word(m), 0)), (Some(3), Some(3)));
        assert_eq!(f.lookup_word(101, word(m), 0), None, "another VLAN's entry");
        // Group and zero sources teach nothing.
        assert!(!f.learn_word(100, word([0x01, 0, 0x5e, 0, 0, 1]), 3, 0));
        assert!(!f.learn_word(100, 0, 3, 0));
        assert_eq!(f.len(), 1);
    }

    #[test]
    fn a_refresh_writes_the_stamp_only_once_it_is_old_enough() {
        // 32 s aging = 512 stamps of 128 ticks; a refresh on the same port writes once the
        // stamp is 512 / 16 = 32 stamps old.
        let f = SharedFdb::new(64, 32, HZ);
        let at = |stamps: u64| stamps * 128;
        assert!(f.learn(0, mac(1), 3, at(0)));
        assert!(f.learn(0, mac(2), 3, at(0)));
        assert!(f.learn(0, mac(1), 3, at(31))); // too fresh to write: still stamped 0
        assert!(f.learn(0, mac(2), 3, at(40))); // written: stamped 40
        assert_eq!(f.lookup(0, mac(1), at(511)), Some(3));
        assert_eq!(f.lookup(0, mac(1), at(512)), None, "aged from its first stamp");
        assert_eq!(f.lookup(0, mac(2), at(551)), Some(3), "aged from its refreshed stamp");
        // A move is written at once, however fresh.
        assert!(f.learn(0, mac(2), 4, at(41)));
        assert_eq!(f.lookup(0, mac(2), at(42)), Some(4));
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

    /// 3 moves allowed per 10 s, then held 5 s (at HZ = 2048: 16 stamps a second).
    fn damped() -> SharedFdb {
        SharedFdb::new(64, 300, HZ).with_damping(MoveDamping { max_moves: 3, window_s: 10, hold_s: 5 }, HZ)
    }

    /// A MAC seen alternately on two ports (a loop): 3 moves, then held on the port it has
    /// for 5 s whatever arrives from the other, flagged; after the hold it moves again.
    #[test]
    fn a_flapping_mac_is_held_counted_and_flagged() {
        let f = damped();
        let m = mac(7);
        assert!(f.learn(0, m, 1, 0));
        let mut changes = 0;
        let mut last = 1;
        for n in 1..=1000u64 {
            let port = if n % 2 == 1 { 2 } else { 1 };
            assert!(f.learn(0, m, port, n)); // 1000 bursts within half a second
            let now = f.lookup(0, m, n).unwrap();
            changes += u64::from(now != last);
            last = now;
        }
        assert_eq!(changes, 3, "moves before the hold");
        assert_eq!(f.counters(), FdbCounters { mac_moves: 3, mac_flaps: 1, learn_full: 0 });
        let flagged: Vec<_> = f.entries_with_state(1000).collect();
        assert_eq!(flagged, vec![(0, m, last, true)]);
        // Held 5 s (80 stamps of 128 ticks): still held at 4 s, moves at 6 s.
        let other = if last == 1 { 2 } else { 1 };
        assert!(f.learn(0, m, other, 4 * HZ));
        assert_eq!(f.lookup(0, m, 4 * HZ), Some(last));
        assert!(f.learn(0, m, other, 6 * HZ));
        assert_eq!(f.lookup(0, m, 6 * HZ), Some(other));
        assert!(!f.entries_with_state(6 * HZ).next().unwrap().3, "no longer flagged");
        assert_eq!(f.counters().mac_moves, 4);
    }

    /// A station that moves now and then (once per 4 s: 3 moves per 10 s at most) is never
    /// held; a slot reused by another MAC starts without history.
    #[test]
    fn occasional_moves_are_never_held() {
        let f = damped();
        let m = mac(8);
        for n in 0..50u64 {
            let port = (n % 3) as u16;
            assert!(f.learn(0, m, port, n * 4 * HZ));
            assert_eq!(f.lookup(0, m, n * 4 * HZ), Some(port), "move {n}");
        }
        assert_eq!(f.counters(), FdbCounters { mac_moves: 49, mac_flaps: 0, learn_full: 0 });
    }

    /// A full table refuses new MACs, counts them, and evicts nothing.
    #[test]
    fn a_full_table_counts_and_keeps_its_entries() {
        let f = SharedFdb::new(8, 300, HZ);
        for n in 0..8 {
            assert!(f.learn(0, mac(n), 1, 0));
        }
        for n in 100..1100 {
            assert!(!f.learn(0, mac(n), 2, 0));
        }
        assert_eq!(f.counters().learn_full, 1000);
        assert!((0..8).all(|n| f.lookup(0, mac(n), 0) == Some(1)), "an entry was evicted");
    }

    proptest::proptest! {
        /// Whatever the ports and times: every port change a lookup sees is a counted
        /// move, nothing changes while the MAC is flagged held, and within any window no
        /// more than `max_moves` moves happen between holds.
        #[test]
        fn moves_are_counted_and_holds_hold(steps in proptest::collection::vec((0u16..3, 0u64..400), 1..400)) {
            let f = damped();
            let m = mac(9);
            let mut now = 0u64;
            let mut last: Option<u16> = None;
            let mut changes = 0u64;
            for (port, dt) in steps {
                now += dt;
                let held_before = f.entries_with_state(now).next().is_some_and(|e| e.3);
                f.learn(0, m, port, now);
                let p = f.lookup(0, m, now);
                if let (Some(a), Some(b)) = (last, p) {
                    if a != b {
                        changes += 1;
                        proptest::prop_assert!(!held_before, "moved while held");
                    }
                }
                last = p;
            }
            proptest::prop_assert_eq!(changes, f.counters().mac_moves);
        }
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
