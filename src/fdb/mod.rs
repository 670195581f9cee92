//! Forwarding database: a learning bridge table (source MAC → ingress port) with aging.
//!
//! Pure logic, no DPDK types: timestamps are TSC ticks passed in by the caller (`now_tsc`),
//! and the aging time (SONiC `SWITCH|fdb_aging_time`, seconds) is converted to ticks once,
//! at construction, with the caller's `tsc_hz`.
//!
//! # Data structure
//!
//! A fixed-capacity open-addressing hash table with linear probing:
//!
//! * all memory is allocated in [`Fdb::new`]; the per-packet calls [`Fdb::learn`] and
//!   [`Fdb::lookup`] allocate nothing, lock nothing and make no system calls;
//! * the table has `2 × capacity` slots (both powers of two), so the load factor never
//!   exceeds 50 % and probe sequences stay short; at most `capacity` entries are stored;
//! * the hash is a multiply-shift (Fibonacci / FxHash-style) of the 48-bit MAC as a `u64`,
//!   taking the high bits of the product;
//! * a slot is 24 bytes (`key`, `last_seen`, `port`) so one probe touches one cache line
//!   most of the time;
//! * no tombstones: deletion ([`Fdb::age`], [`Fdb::flush_port`], [`Fdb::remove`]) uses
//!   backward-shift deletion, which keeps every remaining key reachable from its home slot.
//!
//! # Aging
//!
//! An entry last seen at `t` is live for `now ∈ [t, t + aging)` and expired from
//! `now = t + aging` on (the Linux bridge rule: expired when `age ≥ aging_time`). An
//! expired entry is treated as absent by [`Fdb::lookup`] and [`Fdb::entries`], its slot is
//! reused by [`Fdb::learn`] when met on a probe path, and it is removed by the control-path
//! sweep [`Fdb::age`]. `fdb_aging_time = 0` means entries never age. A timestamp older than
//! `last_seen` (TSC read on another core slightly behind) counts as age 0.
//!
//! Only `learn` refreshes an entry; a destination lookup does not (bridge semantics).
//!
//! # Concurrency
//!
//! Single writer: an `Fdb` is owned by one thread (`&mut self` for `learn`). The switch's
//! workers share one [`SharedFdb`] instead (lock-free lookups and learning, aging in
//! bounded slices by the control lcore); `Fdb` is the reference model it is tested
//! against and the table of the engine benchmarks.

mod shared;
pub use shared::{vkey, vkey_of_word, FdbCounters, MoveDamping, SharedFdb};

/// Outcome of [`Fdb::learn`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Learn {
    /// A new entry was created (or an expired entry for this MAC was revived).
    New,
    /// The MAC was already known on this port; its timestamp was refreshed.
    Refreshed,
    /// Station move: the MAC was known on another (live) port; it now points to `port`.
    Moved { from: u16 },
    /// Not learned: the source MAC has the group (multicast/broadcast) bit set.
    GroupSource,
    /// Not learned: the all-zero MAC is not a valid station address.
    ZeroSource,
    /// Not learned: the table is full (counted in [`FdbStats::learn_failures`]).
    Full,
}

impl Learn {
    /// True when the table now maps the MAC to the port.
    pub fn learned(self) -> bool {
        matches!(self, Learn::New | Learn::Refreshed | Learn::Moved { .. })
    }
}

/// Counters of one FDB (single writer: plain integers, read from the owner lcore or
/// copied out by it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FdbStats {
    /// New entries created.
    pub learned: u64,
    /// Station moves (a live MAC seen on another port).
    pub moves: u64,
    /// Learn attempts skipped because the table was full.
    pub learn_failures: u64,
    /// Entries removed by [`Fdb::age`] (expired entries reused in place by `learn` are not
    /// counted here).
    pub aged: u64,
}

const OCCUPIED: u64 = 1 << 63;
const MAC_MASK: u64 = (1 << 48) - 1;
/// Fibonacci hashing constant: 2^64 / φ.
const HASH_MUL: u64 = 0x9E37_79B9_7F4A_7C15;

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    /// `OCCUPIED | mac` or 0 when empty.
    key: u64,
    last_seen: u64,
    port: u16,
}

/// The learning bridge table. See the module documentation.
#[derive(Debug, Clone)]
pub struct Fdb {
    slots: Box<[Slot]>,
    /// `slots.len() - 1`.
    mask: usize,
    /// `64 - log2(slots.len())`.
    shift: u32,
    capacity: usize,
    len: usize,
    aging_ticks: u64,
    stats: FdbStats,
}

/// A MAC address as a `u64` (big-endian: first octet in bits 40..48).
#[inline]
pub fn mac_to_u64(mac: [u8; 6]) -> u64 {
    u64::from_be_bytes([0, 0, mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]])
}

/// Inverse of [`mac_to_u64`] (bits above 48 are ignored).
#[inline]
pub fn u64_to_mac(v: u64) -> [u8; 6] {
    let b = v.to_be_bytes();
    [b[2], b[3], b[4], b[5], b[6], b[7]]
}

/// True for multicast and broadcast addresses (I/G bit, the LSB of the first octet).
#[inline]
pub fn is_group(mac: [u8; 6]) -> bool {
    mac[0] & 1 != 0
}

impl Fdb {
    /// A table for up to `capacity` entries (a power of two ≥ 1, e.g. 65536) aging entries
    /// after `aging_time_s` seconds (0 = never) at a TSC frequency of `tsc_hz`.
    ///
    /// Allocates `2 × capacity` slots of 24 bytes (3 MiB for 64K entries).
    ///
    /// # Panics
    /// If `capacity` is not a power of two or `2 × capacity` overflows.
    pub fn new(capacity: usize, aging_time_s: u32, tsc_hz: u64) -> Fdb {
        assert!(capacity.is_power_of_two(), "FDB capacity must be a power of two, got {capacity}");
        let nslots = capacity.checked_mul(2).expect("FDB capacity too large");
        Fdb {
            slots: vec![Slot::default(); nslots].into_boxed_slice(),
            mask: nslots - 1,
            shift: 64 - nslots.trailing_zeros(),
            capacity,
            len: 0,
            aging_ticks: (aging_time_s as u64).saturating_mul(tsc_hz),
            stats: FdbStats::default(),
        }
    }

    /// The aging time in TSC ticks (0 = never).
    pub fn aging_ticks(&self) -> u64 {
        self.aging_ticks
    }

    /// Maximum number of entries.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Occupied entries, including expired entries not yet reclaimed by [`Fdb::age`] or
    /// reused by [`Fdb::learn`]. For the number of live entries use [`Fdb::live_len`].
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no entry is stored.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of live (not expired) entries at `now_tsc` (walks the whole table: control
    /// path only).
    pub fn live_len(&self, now_tsc: u64) -> usize {
        self.entries(now_tsc).count()
    }

    /// Counters.
    pub fn stats(&self) -> FdbStats {
        self.stats
    }

    #[inline]
    fn home(&self, key: u64) -> usize {
        ((key & MAC_MASK).wrapping_mul(HASH_MUL) >> self.shift) as usize
    }

    #[inline]
    fn expired(&self, last_seen: u64, now_tsc: u64) -> bool {
        self.aging_ticks != 0 && now_tsc.saturating_sub(last_seen) >= self.aging_ticks
    }

    /// Learn (or refresh) `mac` as reachable through `port`. Per-packet path: no
    /// allocation, no lock, no system call.
    pub fn learn(&mut self, mac: [u8; 6], port: u16, now_tsc: u64) -> Learn {
        if is_group(mac) {
            return Learn::GroupSource;
        }
        let m = mac_to_u64(mac);
        if m == 0 {
            return Learn::ZeroSource;
        }
        let key = m | OCCUPIED;
        let mut i = self.home(key);
        // First expired slot met on the probe path: reused for a new key.
        let mut reuse: Option<usize> = None;
        // At most `slots.len()` probes; with the load factor ≤ 1/2 an empty slot is always
        // met well before that, the bound only guards the loop.
        for _ in 0..self.slots.len() {
            let s = self.slots[i];
            if s.key == 0 {
                break;
            }
            if s.key == key {
                let expired = self.expired(s.last_seen, now_tsc);
                let slot = &mut self.slots[i];
                slot.last_seen = now_tsc;
                if expired {
                    slot.port = port;
                    self.stats.learned += 1;
                    return Learn::New;
                }
                if slot.port == port {
                    return Learn::Refreshed;
                }
                let from = slot.port;
                slot.port = port;
                self.stats.moves += 1;
                return Learn::Moved { from };
            }
            if reuse.is_none() && self.expired(s.last_seen, now_tsc) {
                reuse = Some(i);
            }
            i = (i + 1) & self.mask;
        }
        let target = match reuse {
            // Overwriting an expired slot in place keeps the probe chains intact.
            Some(r) => r,
            None if self.len < self.capacity && self.slots[i].key == 0 => {
                self.len += 1;
                i
            }
            None => {
                self.stats.learn_failures += 1;
                return Learn::Full;
            }
        };
        self.slots[target] = Slot { key, last_seen: now_tsc, port };
        self.stats.learned += 1;
        Learn::New
    }

    #[inline]
    fn find(&self, key: u64) -> Option<usize> {
        let mut i = self.home(key);
        for _ in 0..self.slots.len() {
            let k = self.slots[i].key;
            if k == key {
                return Some(i);
            }
            if k == 0 {
                return None;
            }
            i = (i + 1) & self.mask;
        }
        None
    }

    /// The port `mac` was learned on, if it is live at `now_tsc`. Group addresses are never
    /// in the table (the caller floods them). Per-packet path.
    #[inline]
    pub fn lookup(&self, mac: [u8; 6], now_tsc: u64) -> Option<u16> {
        let i = self.find(mac_to_u64(mac) | OCCUPIED)?;
        let s = &self.slots[i];
        if self.expired(s.last_seen, now_tsc) {
            None
        } else {
            Some(s.port)
        }
    }

    /// Remove `mac` (live or expired). Returns the port it was on.
    pub fn remove(&mut self, mac: [u8; 6]) -> Option<u16> {
        let i = self.find(mac_to_u64(mac) | OCCUPIED)?;
        let port = self.slots[i].port;
        self.delete_at(i);
        Some(port)
    }

    /// Backward-shift deletion of slot `hole`: every following entry of the cluster whose
    /// home is not cyclically in `(hole, j]` moves back into the hole.
    fn delete_at(&mut self, mut hole: usize) {
        let mask = self.mask;
        let mut j = hole;
        loop {
            j = (j + 1) & mask;
            let s = self.slots[j];
            if s.key == 0 {
                break;
            }
            let home = self.home(s.key);
            // Distance from home to j vs. from hole to j (cyclic): the entry may move into
            // the hole iff the hole lies on its probe path, i.e. between home and j.
            let dist_home = j.wrapping_sub(home) & mask;
            let dist_hole = j.wrapping_sub(hole) & mask;
            if dist_home >= dist_hole {
                self.slots[hole] = s;
                hole = j;
            }
        }
        self.slots[hole] = Slot::default();
        self.len -= 1;
    }

    /// Remove every entry matching `pred`; returns how many. Restarts at the same index
    /// after a deletion, since backward shift may have moved an entry into it.
    fn remove_where(&mut self, mut pred: impl FnMut(&Slot) -> bool) -> usize {
        let mut removed = 0;
        // Start the sweep right after an empty slot, so that no cluster wraps around the
        // sweep's starting point (entries shifted back never cross into swept territory).
        let n = self.slots.len();
        let start = match self.slots.iter().position(|s| s.key == 0) {
            Some(e) => (e + 1) & self.mask,
            None => 0,
        };
        let mut steps = 0;
        let mut i = start;
        while steps < n {
            let s = self.slots[i];
            if s.key != 0 && pred(&s) {
                self.delete_at(i);
                removed += 1;
                // Re-examine slot i (an entry may have been shifted into it).
                continue;
            }
            i = (i + 1) & self.mask;
            steps += 1;
        }
        removed
    }

    /// Control-path sweep: remove every entry expired at `now_tsc`. Returns how many.
    pub fn age(&mut self, now_tsc: u64) -> usize {
        if self.aging_ticks == 0 {
            return 0;
        }
        let aging = self.aging_ticks;
        let n = self.remove_where(|s| now_tsc.saturating_sub(s.last_seen) >= aging);
        self.stats.aged += n as u64;
        n
    }

    /// Remove every entry learned on `port` (link down, admin flush). Returns how many.
    pub fn flush_port(&mut self, port: u16) -> usize {
        self.remove_where(|s| s.port == port)
    }

    /// Remove everything.
    pub fn clear(&mut self) {
        self.slots.fill(Slot::default());
        self.len = 0;
    }

    /// Live entries at `now_tsc` as `(mac, port, age_ticks)`, in table order (for show
    /// commands; control path).
    pub fn entries(&self, now_tsc: u64) -> impl Iterator<Item = ([u8; 6], u16, u64)> + '_ {
        self.slots.iter().filter_map(move |s| {
            if s.key == 0 || self.expired(s.last_seen, now_tsc) {
                None
            } else {
                Some((u64_to_mac(s.key), s.port, now_tsc.saturating_sub(s.last_seen)))
            }
        })
    }

    /// Test helper: every occupied slot is reachable from its home without crossing an
    /// empty slot, and `len` matches.
    #[cfg(test)]
    fn check_invariants(&self) {
        let mut count = 0;
        for (j, s) in self.slots.iter().enumerate() {
            if s.key == 0 {
                continue;
            }
            count += 1;
            let mut i = self.home(s.key);
            while i != j {
                assert_ne!(self.slots[i].key, 0, "slot {j} unreachable from home");
                i = (i + 1) & self.mask;
            }
        }
        assert_eq!(count, self.len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    const HZ: u64 = 1_000;

    fn mac(n: u32) -> [u8; 6] {
        let b = n.to_be_bytes();
        [0x02, 0, b[0], b[1], b[2], b[3]]
    }

    #[test]
    fn learn_and_lookup() {
        let mut f = Fdb::new(64, 300, HZ);
        assert_eq!(f.lookup(mac(1), 0), None);
        assert_eq!(f.learn(mac(1), 3, 10), Learn::New);
        assert_eq!(f.learn(mac(2), 4, 10), Learn::New);
        assert_eq!(f.lookup(mac(1), 11), Some(3));
        assert_eq!(f.lookup(mac(2), 11), Some(4));
        assert_eq!(f.learn(mac(1), 3, 20), Learn::Refreshed);
        assert_eq!(f.len(), 2);
        let mut e: Vec<_> = f.entries(30).collect();
        e.sort();
        assert_eq!(e, vec![(mac(1), 3, 10), (mac(2), 4, 20)]);
        assert_eq!(f.stats().learned, 2);
    }

    #[test]
    fn aging_boundary() {
        // 300 s at 1000 Hz = 300_000 ticks.
        let mut f = Fdb::new(16, 300, HZ);
        f.learn(mac(1), 1, 1_000);
        assert_eq!(f.lookup(mac(1), 1_000 + 299_999), Some(1), "age < aging: live");
        assert_eq!(f.lookup(mac(1), 1_000 + 300_000), None, "age == aging: expired");
        assert_eq!(f.entries(1_000 + 300_000).count(), 0);
        assert_eq!(f.age(1_000 + 299_999), 0);
        assert_eq!(f.len(), 1);
        assert_eq!(f.age(1_000 + 300_000), 1);
        assert_eq!(f.len(), 0);
        assert_eq!(f.stats().aged, 1);
        // A clock slightly behind the entry's timestamp means age 0.
        f.learn(mac(2), 1, 5_000);
        assert_eq!(f.lookup(mac(2), 4_000), Some(1));
    }

    #[test]
    fn aging_disabled() {
        let mut f = Fdb::new(16, 0, HZ);
        f.learn(mac(1), 1, 0);
        assert_eq!(f.lookup(mac(1), u64::MAX), Some(1));
        assert_eq!(f.age(u64::MAX), 0);
    }

    #[test]
    fn expired_entry_relearned_is_new() {
        let mut f = Fdb::new(16, 1, HZ);
        f.learn(mac(1), 1, 0);
        assert_eq!(f.learn(mac(1), 2, 1_000), Learn::New);
        assert_eq!(f.lookup(mac(1), 1_000), Some(2));
        assert_eq!(f.len(), 1);
    }

    #[test]
    fn station_move() {
        let mut f = Fdb::new(16, 300, HZ);
        f.learn(mac(7), 1, 0);
        assert_eq!(f.learn(mac(7), 2, 5), Learn::Moved { from: 1 });
        assert_eq!(f.lookup(mac(7), 6), Some(2));
        assert_eq!(f.len(), 1);
        assert_eq!(f.stats().moves, 1);
    }

    #[test]
    fn group_and_zero_sources_not_learned() {
        let mut f = Fdb::new(16, 300, HZ);
        assert_eq!(f.learn([0xff; 6], 1, 0), Learn::GroupSource);
        assert_eq!(f.learn([0x01, 0x00, 0x5e, 0, 0, 1], 1, 0), Learn::GroupSource);
        assert_eq!(f.learn([0x33, 0x33, 0, 0, 0, 1], 1, 0), Learn::GroupSource);
        assert_eq!(f.learn([0; 6], 1, 0), Learn::ZeroSource);
        assert!(!Learn::GroupSource.learned());
        assert!(f.is_empty());
        assert_eq!(f.lookup([0xff; 6], 0), None);
    }

    #[test]
    fn full_table() {
        let mut f = Fdb::new(8, 10, HZ);
        for n in 0..8 {
            assert_eq!(f.learn(mac(n), 1, 0), Learn::New);
        }
        assert_eq!(f.len(), 8);
        assert_eq!(f.learn(mac(100), 1, 0), Learn::Full);
        assert_eq!(f.learn(mac(101), 1, 0), Learn::Full);
        assert_eq!(f.stats().learn_failures, 2);
        assert_eq!(f.lookup(mac(100), 0), None);
        // Known MACs still refresh and move while full.
        assert_eq!(f.learn(mac(3), 2, 1), Learn::Moved { from: 1 });
        // After aging, there is room again.
        assert_eq!(f.age(10_001), 8);
        assert_eq!(f.learn(mac(100), 1, 10_001), Learn::New);
        f.check_invariants();
    }

    #[test]
    fn flush_and_remove() {
        let mut f = Fdb::new(64, 300, HZ);
        for n in 0..40 {
            f.learn(mac(n), (n % 3) as u16, 0);
        }
        let on1 = (0..40).filter(|n| n % 3 == 1).count();
        assert_eq!(f.flush_port(1), on1);
        f.check_invariants();
        for n in 0..40 {
            let want = if n % 3 == 1 { None } else { Some((n % 3) as u16) };
            assert_eq!(f.lookup(mac(n), 1), want);
        }
        assert_eq!(f.remove(mac(0)), Some(0));
        assert_eq!(f.remove(mac(0)), None);
        f.check_invariants();
        f.clear();
        assert!(f.is_empty());
    }

    #[test]
    fn mac_u64_roundtrip() {
        let m = [0x02, 0x11, 0x22, 0x33, 0x44, 0x55];
        assert_eq!(mac_to_u64(m), 0x0211_2233_4455);
        assert_eq!(u64_to_mac(mac_to_u64(m)), m);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Learn(u8, u16),
        Lookup(u8),
        Age,
        Flush(u16),
        Remove(u8),
        Tick(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0u8..32, 0u16..4).prop_map(|(m, p)| Op::Learn(m, p)),
            4 => (0u8..40).prop_map(Op::Lookup),
            1 => Just(Op::Age),
            1 => (0u16..4).prop_map(Op::Flush),
            1 => (0u8..40).prop_map(Op::Remove),
            3 => (0u64..600).prop_map(Op::Tick),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Against a HashMap model. 32 distinct MACs in a 32-entry (64-slot) table: never
        /// full, but long clusters, reuse of expired slots and backward shifts.
        #[test]
        fn matches_model(ops in proptest::collection::vec(op(), 1..300)) {
            let aging = 1_000u64; // 1 s at 1000 Hz
            let mut f = Fdb::new(32, 1, HZ);
            let mut model: HashMap<u8, (u16, u64)> = HashMap::new();
            let mut now = 0u64;
            let live = |model: &HashMap<u8, (u16, u64)>, m: u8, now: u64| {
                model.get(&m).filter(|(_, t)| now - t < aging).map(|(p, _)| *p)
            };
            for op in ops {
                match op {
                    Op::Learn(m, p) => {
                        let before = live(&model, m, now);
                        let r = f.learn(mac(m as u32), p, now);
                        let want = match before {
                            None => Learn::New,
                            Some(q) if q == p => Learn::Refreshed,
                            Some(q) => Learn::Moved { from: q },
                        };
                        prop_assert_eq!(r, want);
                        model.insert(m, (p, now));
                    }
                    Op::Lookup(m) => {
                        prop_assert_eq!(f.lookup(mac(m as u32), now), live(&model, m, now));
                    }
                    Op::Age => {
                        let n_exp = model.values().filter(|(_, t)| now - t >= aging).count();
                        // Expired entries may already have been reused in place by learn,
                        // in which case the model still holds the stale key: the table
                        // can only have fewer expired entries than the model.
                        let removed = f.age(now);
                        prop_assert!(removed <= n_exp);
                        model.retain(|_, (_, t)| now - *t < aging);
                        prop_assert_eq!(f.len(), model.len());
                    }
                    Op::Flush(p) => {
                        f.flush_port(p);
                        model.retain(|_, (q, _)| *q != p);
                    }
                    Op::Remove(m) => {
                        let r = f.remove(mac(m as u32));
                        let e = model.remove(&m).map(|(p, _)| p);
                        // The table may have dropped an expired key by reusing its slot.
                        if r.is_some() { prop_assert_eq!(r, e); }
                    }
                    Op::Tick(dt) => now += dt,
                }
                f.check_invariants();
                let mut got: Vec<_> = f.entries(now).map(|(m, p, a)| (m[5], p, a)).collect();
                got.sort();
                let mut want: Vec<_> = model
                    .iter()
                    .filter(|(_, (_, t))| now - t < aging)
                    .map(|(m, (p, t))| (*m, *p, now - t))
                    .collect();
                want.sort();
                prop_assert_eq!(got, want);
            }
        }
    }
}
