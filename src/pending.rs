//! What one port's TX side has taken from its TC queues (and its PFC frames) and the
//! driver has not accepted yet: the packets in the burst `tx_burst` is handed, and beside
//! them what accounting needs once the driver takes them — per packet its length and
//! charged bytes, per run of consecutive packets from one run of one TC queue its key (the
//! MMU account, RX time, TC), per PFC frame the TSC of the edge it answers.
//!
//! [`Pending::push`] appends a run's packets and [`Pending::close_run`] records their run, [`Pending::insert_control`] puts a PFC frame
//! after the PFC frames already waiting and ahead of all data, [`Pending::settle`] takes
//! what the driver accepted off the front and yields one [`Settled`] per run (one MMU
//! release, one counter update), [`Pending::drain`] empties it (link down, stop).
//!
//! Generic over the burst (`MbufBurst` in the dataplane, a vector in the tests) and the
//! key; pure code. Never allocates after [`Pending::new`].

/// The array of packets handed to the driver.
pub trait Burst {
    type Item;
    /// Packets held.
    fn len(&self) -> usize;
    /// True when it holds none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Packets it can hold (the pending list's `N`).
    fn capacity(&self) -> usize;
    /// Append; gives the packet back when full.
    fn push(&mut self, p: Self::Item) -> Result<(), Self::Item>;
    /// Insert at `i` (≤ len), shifting the rest; gives the packet back when full.
    fn insert(&mut self, i: usize, p: Self::Item) -> Result<(), Self::Item>;
    /// Every packet, in order, to `f`; empty afterwards.
    fn drain_into(&mut self, f: impl FnMut(Self::Item));
}

/// Consecutive pending packets from one run of one TC queue, or one PFC frame.
#[derive(Clone, Copy)]
struct PendRun<K> {
    /// None for a PFC frame.
    key: Option<K>,
    /// PFC frame: TSC of the MMU edge it answers (0 = refresh).
    edge_tsc: u64,
    /// Packets of the run still pending.
    n: u32,
    /// Where the run came from (TC queue and run serial): packets from the same source
    /// join it. Never equal for two PFC frames.
    src: u64,
}

const CONTROL: u64 = u64::MAX;

/// What the driver accepted, per run: settle its accounting at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled<K> {
    /// One PFC frame; `edge_tsc` is the crossing it answers (0: refresh, RESUME).
    Control { edge_tsc: u64 },
    /// `n` packets of a run with key `key`: `bytes` on the wire (frame lengths), `charged`
    /// by the MMU.
    Data { key: K, n: u32, bytes: u64, charged: u64 },
}

/// The pending list of at most `N` packets (the burst's capacity). See the module
/// documentation.
pub struct Pending<B, K, const N: usize> {
    burst: B,
    /// The runs, in order (`runs[..nruns]`); Σ n = n.
    runs: [PendRun<K>; N],
    nruns: usize,
    /// Per packet (`[..burst.len()]`): length and charged bytes.
    len: [u32; N],
    charged: [u32; N],
}

impl<B: Burst, K: Copy, const N: usize> Pending<B, K, N> {
    /// An empty list around `burst` (itself empty, holding at least `N`).
    pub fn new(burst: B) -> Pending<B, K, N> {
        assert_eq!(burst.capacity(), N, "the burst holds the pending list's packets");
        Pending {
            burst,
            runs: [PendRun { key: None, edge_tsc: 0, n: 0, src: CONTROL }; N],
            nruns: 0,
            len: [0; N],
            charged: [0; N],
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.burst.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.burst.is_empty()
    }

    /// Free places.
    #[inline]
    pub fn room(&self) -> usize {
        N - self.burst.len()
    }

    #[inline]
    pub fn is_full(&self) -> bool {
        self.room() == 0
    }

    /// The burst, for the driver: it takes packets off the front, then [`Pending::settle`]
    /// must be told how many (before anything else touches the list).
    #[inline]
    pub fn burst_mut(&mut self) -> &mut B {
        &mut self.burst
    }

    /// Append a data packet of `len` bytes charged `charged`; the caller checked the room.
    /// The packets pushed since [`Pending::len`] was `since` become a run with
    /// [`Pending::close_run`].
    #[inline(always)]
    pub fn push(&mut self, packet: B::Item, len: u32, charged: u32) {
        let i = self.burst.len();
        let ok = self.burst.push(packet).is_ok();
        debug_assert!(ok, "Pending::push beyond its room");
        if ok {
            (self.len[i], self.charged[i]) = (len, charged);
        }
    }

    /// The packets pushed since the list held `since` are a run with `key` from `src` (a
    /// TC queue's run serial, never `u64::MAX`): they join the last pending run if it came
    /// from the same source. Returns how many there are.
    #[inline]
    pub fn close_run(&mut self, since: usize, key: K, src: u64) -> u32 {
        let n = (self.burst.len() - since) as u32;
        if n > 0 {
            match self.nruns.checked_sub(1).map(|l| &mut self.runs[l]) {
                Some(last) if last.src == src => last.n += n,
                _ => {
                    self.runs[self.nruns] = PendRun { key: Some(key), edge_tsc: 0, n, src };
                    self.nruns += 1;
                }
            }
        }
        n
    }

    /// A PFC frame of `len` bytes after the PFC frames already pending, ahead of all data;
    /// gives it back when full.
    pub fn insert_control(&mut self, frame: B::Item, len: u32, edge_tsc: u64) -> Result<(), B::Item> {
        let at = self.runs[..self.nruns].iter().take_while(|r| r.key.is_none()).count();
        let n = self.burst.len();
        // PFC frames are runs of one: the packet index is the run index.
        self.burst.insert(at, frame)?;
        self.len.copy_within(at..n, at + 1);
        self.charged.copy_within(at..n, at + 1);
        (self.len[at], self.charged[at]) = (len, 0);
        self.runs.copy_within(at..self.nruns, at + 1);
        self.runs[at] = PendRun { key: None, edge_tsc, n: 1, src: CONTROL };
        self.nruns += 1;
        Ok(())
    }

    /// The driver took the first `sent` packets (the burst holds what is left): their
    /// runs, in order, to `f` (a run the driver took only part of is settled for that part
    /// and keeps the rest first).
    #[inline]
    pub fn settle(&mut self, sent: usize, mut f: impl FnMut(Settled<K>)) {
        let left = self.burst.len();
        let (mut off, mut r) = (0usize, 0usize);
        while off < sent {
            let run = self.runs[r];
            let k = (run.n as usize).min(sent - off);
            match run.key {
                None => f(Settled::Control { edge_tsc: run.edge_tsc }),
                Some(key) => {
                    let bytes = self.len[off..off + k].iter().map(|&l| u64::from(l)).sum();
                    let charged = self.charged[off..off + k].iter().map(|&b| u64::from(b)).sum();
                    f(Settled::Data { key, n: k as u32, bytes, charged });
                }
            }
            off += k;
            if k < run.n as usize {
                self.runs[r].n -= k as u32;
                break;
            }
            r += 1;
        }
        if r > 0 {
            self.runs.copy_within(r..self.nruns, 0);
            self.nruns -= r;
        }
        if sent > 0 && left > 0 {
            self.len.copy_within(sent..sent + left, 0);
            self.charged.copy_within(sent..sent + left, 0);
        }
    }

    /// Every pending packet, in order, to `f` with its key (None: a PFC frame) and charged
    /// bytes; empty afterwards.
    pub fn drain(&mut self, mut f: impl FnMut(Option<K>, B::Item, u32)) {
        let (runs, charged) = (&self.runs[..self.nruns], &self.charged);
        let (mut r, mut left, mut i) = (0usize, runs.first().map_or(0, |x| x.n), 0usize);
        self.burst.drain_into(|p| {
            while left == 0 && r + 1 < runs.len() {
                r += 1;
                left = runs[r].n;
            }
            f(runs.get(r).and_then(|x| x.key), p, charged.get(i).copied().unwrap_or(0));
            left = left.saturating_sub(1);
            i += 1;
        });
        self.nruns = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A burst of numbers, capacity `cap`.
    struct VecBurst(Vec<u32>, usize);

    impl Burst for VecBurst {
        type Item = u32;
        fn len(&self) -> usize {
            self.0.len()
        }
        fn capacity(&self) -> usize {
            self.1
        }
        fn push(&mut self, p: u32) -> Result<(), u32> {
            if self.0.len() == self.1 {
                return Err(p);
            }
            self.0.push(p);
            Ok(())
        }
        fn insert(&mut self, i: usize, p: u32) -> Result<(), u32> {
            if self.0.len() == self.1 || i > self.0.len() {
                return Err(p);
            }
            self.0.insert(i, p);
            Ok(())
        }
        fn drain_into(&mut self, f: impl FnMut(u32)) {
            self.0.drain(..).for_each(f);
        }
    }

    impl VecBurst {
        /// What a driver does: take the first `n`.
        fn send(&mut self, n: usize) -> Vec<u32> {
            let n = n.min(self.0.len());
            self.0.drain(..n).collect()
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        /// A run of `n` packets from source `src` with key `key`.
        Run {
            key: u8,
            src: u8,
            n: u8,
        },
        Control,
        Send(u8),
        Drain,
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        let op = prop_oneof![
            // One source (a TC queue's run) has one key.
            4 => (0u8..3, 0u8..12).prop_map(|(src, n)| Op::Run { key: src + 10, src, n }),
            1 => Just(Op::Control),
            3 => (0u8..20).prop_map(Op::Send),
            1 => Just(Op::Drain),
        ];
        proptest::collection::vec(op, 1..200)
    }

    /// One entry of the model: (key or None for control, packet, len, charged, edge tsc).
    type M = (Option<u8>, u32, u32, u32, u64);

    proptest! {
        /// The list is a FIFO of packets with PFC frames ahead of data (in their own
        /// order), and settling yields, per consecutive packets of one run, exactly the
        /// sums a per-packet account would give.
        #[test]
        fn equals_a_fifo_with_control_first(ops in ops()) {
            let mut p: Pending<VecBurst, u8, 32> = Pending::new(VecBurst(Vec::new(), 32));
            let mut model: std::collections::VecDeque<(M, u64)> = Default::default();
            let mut next = 0u32;
            for op in ops {
                match op {
                    Op::Run { key, src, n } => {
                        let n = (n as usize).min(p.room());
                        let since = p.len();
                        for _ in 0..n {
                            next += 1;
                            p.push(next, 60 + next % 1000, next % 7 * 64);
                            model.push_back(((Some(key), next, 60 + next % 1000, next % 7 * 64, 0), u64::from(src)));
                        }
                        p.close_run(since, key, u64::from(src));
                    }
                    Op::Control => {
                        next += 1;
                        let at = model.iter().take_while(|(m, _)| m.0.is_none()).count();
                        if p.insert_control(next, 60, u64::from(next)).is_ok() {
                            model.insert(at, ((None, next, 60, 0, u64::from(next)), u64::MAX));
                        }
                    }
                    Op::Send(k) => {
                        let sent = p.burst_mut().send(k as usize);
                        let mut got = Vec::new();
                        p.settle(sent.len(), |s| got.push(s));
                        // The model: the first sent.len() entries, grouped into runs the way
                        // the list groups them (consecutive data of one source join).
                        let taken: Vec<_> = model.drain(..sent.len()).collect();
                        prop_assert_eq!(sent, taken.iter().map(|(m, _)| m.1).collect::<Vec<_>>());
                        let mut want: Vec<Settled<u8>> = Vec::new();
                        let mut prev_src = None;
                        for ((key, _, len, charged, tsc), src) in taken {
                            match key {
                                None => { want.push(Settled::Control { edge_tsc: tsc }); prev_src = None; }
                                Some(k) => match want.last_mut() {
                                    Some(Settled::Data { n, bytes, charged: c, .. }) if prev_src == Some(src) => {
                                        *n += 1; *bytes += u64::from(len); *c += u64::from(charged);
                                    }
                                    _ => { want.push(Settled::Data { key: k, n: 1, bytes: u64::from(len), charged: u64::from(charged) }); prev_src = Some(src); }
                                },
                            }
                        }
                        prop_assert_eq!(got, want);
                    }
                    Op::Drain => {
                        let mut got = Vec::new();
                        p.drain(|k, pk, c| got.push((k, pk, c)));
                        let want: Vec<_> = model.drain(..).map(|(m, _)| (m.0, m.1, m.3)).collect();
                        prop_assert_eq!(got, want);
                    }
                }
                prop_assert_eq!(p.len(), model.len());
            }
        }
    }

    #[test]
    fn control_goes_after_control_ahead_of_data() {
        let mut p: Pending<VecBurst, u8, 8> = Pending::new(VecBurst(Vec::new(), 8));
        p.push(1, 100, 128);
        p.push(2, 100, 128);
        assert_eq!(p.close_run(0, 7, 0), 2);
        p.insert_control(10, 60, 5).unwrap();
        p.insert_control(11, 60, 0).unwrap();
        let since = p.len();
        p.push(3, 200, 256);
        p.close_run(since, 7, 0); // the same run continues
        let sent = p.burst_mut().send(3);
        assert_eq!(sent, [10, 11, 1]);
        let mut got = Vec::new();
        p.settle(3, |s| got.push(s));
        assert_eq!(
            got,
            [
                Settled::Control { edge_tsc: 5 },
                Settled::Control { edge_tsc: 0 },
                Settled::Data { key: 7, n: 1, bytes: 100, charged: 128 }
            ]
        );
        let mut got = Vec::new();
        let n = p.burst_mut().send(9).len();
        p.settle(n, |s| got.push(s));
        assert_eq!(got, [Settled::Data { key: 7, n: 2, bytes: 300, charged: 384 }]);
        assert!(p.is_empty());
    }
}
