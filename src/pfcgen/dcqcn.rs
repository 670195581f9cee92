//! DCQCN's reaction point (Zhu et al., SIGCOMM 2015, §3.1): the rate of one flow (QP),
//! cut when a CNP arrives and raised again by a timer and a byte counter. Pure: times are
//! TSC ticks passed in by the caller. Reference: `docs/dcqcn.md`.
//!
//! State: the current rate `rc`, the target rate `rt`, the congestion estimate `α`.
//! * **CNP**: `rt ← rc`, `rc ← rc·(1 − α/2)`, `α ← (1 − g)·α + g`; the rate-increase
//!   timer, the byte counter and their stage counts `T`, `BC` restart.
//! * **α timer** (every `K` without a CNP): `α ← (1 − g)·α`.
//! * **Rate increase** (the timer every `T_timer`, or every `B` bytes sent): the stage that
//!   fired counts one, then with `F` stages: *fast recovery* while `max(T, BC) < F`
//!   (`rc ← (rt + rc)/2`), *hyper increase* once `min(T, BC) > F` (`rt ← rt + i·R_HAI`,
//!   `i = min(T, BC) − F`), else *additive increase* (`rt ← rt + R_AI`), each followed by
//!   `rc ← (rt + rc)/2`.
//!
//! Rates stay within `[min_rate, line_rate]`, α within `[0, 1]`. Back at line rate with
//! no CNP since, the flow has no rate limiter (a NIC frees it): timers stop and the next
//! CNP starts again from α = `initial_alpha` (mlx5 `initial_alpha_value`).

/// Parameters, resolved to ticks and bit/s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DcqcnParams {
    /// The flow's line rate (its configured rate), bit/s: `rc` starts and ends here.
    pub line_bps: f64,
    /// The lowest rate a CNP can cut to (mlx5 `rpg_min_rate`).
    pub min_bps: f64,
    /// Additive increase step (mlx5 `rpg_ai_rate`).
    pub ai_bps: f64,
    /// Hyper increase step (mlx5 `rpg_hai_rate`).
    pub hai_bps: f64,
    /// α gain (mlx5 `rpg_gd` / `dce_tcp_g`).
    pub g: f64,
    /// α decay period `K`, ticks (mlx5 `dce_tcp_rtt`).
    pub alpha_ticks: u64,
    /// Rate-increase timer, ticks (mlx5 `rpg_time_reset`).
    pub timer_ticks: u64,
    /// Rate-increase byte counter, bytes (mlx5 `rpg_byte_reset`).
    pub byte_counter: u64,
    /// Stages of fast recovery (mlx5 `rpg_threshold`).
    pub f: u32,
    /// α after the first CNP's update starts from this (mlx5 `initial_alpha_value`).
    pub alpha0: f64,
}

/// The reaction point of one flow.
#[derive(Debug, Clone)]
pub struct Dcqcn {
    p: DcqcnParams,
    rc: f64,
    rt: f64,
    alpha: f64,
    /// Next α decay, next rate-increase timer expiry (TSC).
    alpha_due: u64,
    timer_due: u64,
    bytes: u64,
    t: u32,
    bc: u32,
    /// Reached line rate with no CNP since: timers idle (nothing to raise).
    settled: bool,
    pub cnps: u64,
    /// Lowest `rc` so far.
    pub min_seen_bps: f64,
}

impl Dcqcn {
    /// A flow at line rate at `now`, α at `alpha0`.
    pub fn new(p: DcqcnParams, now: u64) -> Dcqcn {
        let mut p = p;
        p.line_bps = p.line_bps.max(1.0);
        p.min_bps = p.min_bps.clamp(1.0, p.line_bps);
        p.g = p.g.clamp(0.0, 1.0);
        p.alpha0 = p.alpha0.clamp(0.0, 1.0);
        p.alpha_ticks = p.alpha_ticks.max(1);
        p.timer_ticks = p.timer_ticks.max(1);
        p.byte_counter = p.byte_counter.max(1);
        Dcqcn {
            rc: p.line_bps,
            rt: p.line_bps,
            alpha: p.alpha0,
            alpha_due: now.saturating_add(p.alpha_ticks),
            timer_due: now.saturating_add(p.timer_ticks),
            bytes: 0,
            t: 0,
            bc: 0,
            settled: true,
            cnps: 0,
            min_seen_bps: p.line_bps,
            p,
        }
    }

    /// The current rate, bit/s.
    #[inline]
    pub fn rate_bps(&self) -> f64 {
        self.rc
    }

    pub fn target_bps(&self) -> f64 {
        self.rt
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    pub fn params(&self) -> &DcqcnParams {
        &self.p
    }

    /// A CNP arrived at `now`: cut the rate.
    pub fn on_cnp(&mut self, now: u64) {
        self.cnps += 1;
        if self.settled {
            self.alpha = self.p.alpha0;
        }
        self.rt = self.rc;
        self.rc = (self.rc * (1.0 - self.alpha / 2.0)).max(self.p.min_bps);
        self.alpha = ((1.0 - self.p.g) * self.alpha + self.p.g).clamp(0.0, 1.0);
        self.alpha_due = now.saturating_add(self.p.alpha_ticks);
        self.timer_due = now.saturating_add(self.p.timer_ticks);
        self.bytes = 0;
        self.t = 0;
        self.bc = 0;
        self.settled = false;
        self.min_seen_bps = self.min_seen_bps.min(self.rc);
    }

    /// `n` bytes were sent: the byte counter. Returns whether the rate changed.
    #[inline]
    pub fn on_sent(&mut self, n: u64) -> bool {
        if self.settled {
            return false;
        }
        self.bytes += n;
        if self.bytes < self.p.byte_counter {
            return false;
        }
        self.bytes -= self.p.byte_counter;
        self.bc = self.bc.saturating_add(1);
        self.increase();
        true
    }

    /// Run the timers up to `now`. Returns whether the rate changed.
    #[inline]
    pub fn tick(&mut self, now: u64) -> bool {
        if self.settled {
            return false;
        }
        if now >= self.alpha_due {
            let n = (now - self.alpha_due) / self.p.alpha_ticks + 1;
            self.alpha = (self.alpha * (1.0 - self.p.g).powi(n.min(1 << 20) as i32)).clamp(0.0, 1.0);
            self.alpha_due = self.alpha_due.saturating_add(n.saturating_mul(self.p.alpha_ticks));
        }
        if now < self.timer_due {
            return false;
        }
        let n = (now - self.timer_due) / self.p.timer_ticks + 1;
        self.timer_due = self.timer_due.saturating_add(n.saturating_mul(self.p.timer_ticks));
        // Each missed expiry is a stage of its own (a late poll must not slow recovery);
        // once at line rate further stages change nothing.
        for _ in 0..n.min(4096) {
            self.t = self.t.saturating_add(1);
            self.increase();
            if self.settled {
                break;
            }
        }
        true
    }

    fn increase(&mut self) {
        let f = self.p.f;
        if self.t.max(self.bc) < f {
            // Fast recovery: toward the rate before the cut.
        } else if self.t.min(self.bc) > f {
            let i = f64::from(self.t.min(self.bc) - f);
            self.rt += i * self.p.hai_bps;
        } else {
            self.rt += self.p.ai_bps;
        }
        self.rt = self.rt.clamp(self.p.min_bps, self.p.line_bps);
        self.rc = ((self.rt + self.rc) / 2.0).clamp(self.p.min_bps, self.p.line_bps);
        // Within a millionth of line rate (or a bit/s): there.
        if self.p.line_bps - self.rc <= (self.p.line_bps * 1e-6).max(1.0) {
            self.rc = self.p.line_bps;
            self.rt = self.p.line_bps;
            self.settled = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const HZ: u64 = 1_000_000_000; // 1 tick = 1 ns

    /// The paper's parameters at 40 Gbit/s.
    fn paper() -> DcqcnParams {
        DcqcnParams {
            line_bps: 40e9,
            min_bps: 40e6,
            ai_bps: 40e6,
            hai_bps: 400e6,
            g: 1.0 / 256.0,
            alpha_ticks: 55 * HZ / 1_000_000,
            timer_ticks: 55 * HZ / 1_000_000,
            byte_counter: 10 << 20,
            f: 5,
            alpha0: 1.0,
        }
    }

    #[test]
    fn first_cnp_halves_then_fast_recovery_halves_the_gap() {
        let mut d = Dcqcn::new(paper(), 0);
        d.on_cnp(0);
        assert_eq!(d.rate_bps(), 20e9, "α = 1: Rc·(1 − 1/2)");
        assert_eq!(d.target_bps(), 40e9);
        assert!((d.alpha() - 1.0).abs() < 1e-12, "(1 − g)·1 + g = 1");
        // Fast recovery: each timer stage halves the distance to the target.
        assert!(!d.tick(54_999));
        assert!(d.tick(55_000));
        assert_eq!(d.rate_bps(), 30e9);
        assert!(d.tick(110_000));
        assert_eq!(d.rate_bps(), 35e9);
        // A second CNP: α has decayed twice, the cut is a little less than half.
        d.on_cnp(120_000);
        let a = (1.0 - 1.0 / 256.0f64).powi(2);
        assert!((d.rate_bps() - 35e9 * (1.0 - a / 2.0)).abs() < 1.0);
        assert_eq!(d.target_bps(), 35e9);
        assert_eq!(d.cnps, 2);
    }

    #[test]
    fn additive_then_hyper_increase() {
        let mut p = paper();
        p.byte_counter = u64::MAX; // timer only: T counts, BC stays 0
        let mut d = Dcqcn::new(p, 0);
        d.on_cnp(0);
        d.on_cnp(0); // the target below line rate
        for k in 1..=5 {
            d.tick(k * 55_000);
        }
        // T = 5 = F: additive from here (min(T, BC) = 0 is never above F).
        let (rt, rc) = (d.target_bps(), d.rate_bps());
        d.tick(6 * 55_000);
        assert!(rt < 39e9);
        assert_eq!(d.target_bps(), rt + 40e6);
        assert_eq!(d.rate_bps(), (rt + 40e6 + rc) / 2.0);
        // Both counters past F: hyper increase by i · R_HAI.
        let mut d = Dcqcn::new(DcqcnParams { byte_counter: 1000, ..paper() }, 0);
        d.on_cnp(0);
        d.on_cnp(0);
        for k in 1..=6 {
            d.on_sent(1000);
            d.tick(k * 55_000);
        }
        // After six of each: T = BC = 6, and the last two increases were hyper (i = 1).
        let rt = d.target_bps();
        assert!(rt < 39e9);
        d.on_sent(1000); // BC = 7, T = 6: i = 1
        assert_eq!(d.target_bps(), rt + 400e6);
        d.tick(7 * 55_000); // T = 7, BC = 7: i = 2
        assert_eq!(d.target_bps(), rt + 400e6 + 800e6);
    }

    #[test]
    fn settles_at_line_rate_and_stays_there() {
        let mut d = Dcqcn::new(paper(), 0);
        assert!(!d.tick(10 * HZ), "nothing to do at line rate");
        d.on_cnp(10 * HZ);
        let mut now = 10 * HZ;
        while d.rate_bps() < 40e9 {
            now += 55_000;
            d.tick(now);
            assert!(now < 20 * HZ, "did not recover in 10 s");
        }
        assert!(!d.on_sent(u64::MAX / 2), "{d:?}");
        assert!(!d.tick(now + HZ), "{d:?}");
        assert_eq!((d.rate_bps(), d.target_bps()), (40e9, 40e9));
    }

    #[derive(Debug, Clone)]
    enum Ev {
        Cnp(u64),
        Sent(u64, u64),
        Tick(u64),
    }

    fn ev() -> impl Strategy<Value = Ev> {
        prop_oneof![
            (0u64..200_000).prop_map(Ev::Cnp),
            (0u64..200_000, 64u64..100_000).prop_map(|(d, n)| Ev::Sent(d, n)),
            (0u64..2_000_000).prop_map(Ev::Tick),
        ]
    }

    fn params() -> impl Strategy<Value = DcqcnParams> {
        (
            1e6f64..1e11,
            1e-4f64..0.5,
            1e-5f64..0.01,
            1u32..10,
            1e-4f64..0.2,
            1u64..1_000_000,
            1u64..1_000_000,
            0.0f64..1.0,
        )
            .prop_map(|(line, minf, ai, f, g, k, t, a0)| DcqcnParams {
                line_bps: line,
                min_bps: line * minf,
                ai_bps: line * ai,
                hai_bps: line * ai * 10.0,
                g,
                alpha_ticks: k,
                timer_ticks: t,
                byte_counter: 10_000 + k,
                f,
                alpha0: a0,
            })
    }

    proptest! {
        #[test]
        fn rate_within_min_and_line_alpha_within_0_1(p in params(), evs in proptest::collection::vec(ev(), 1..300)) {
            let mut d = Dcqcn::new(p, 0);
            let mut now = 0u64;
            for e in evs {
                match e {
                    Ev::Cnp(dt) => { now += dt; d.on_cnp(now); }
                    Ev::Sent(dt, n) => { now += dt; d.tick(now); d.on_sent(n); }
                    Ev::Tick(dt) => { now += dt; d.tick(now); }
                }
                prop_assert!(d.rate_bps() >= p.min_bps && d.rate_bps() <= p.line_bps, "rc {} of [{}, {}]", d.rate_bps(), p.min_bps, p.line_bps);
                prop_assert!(d.target_bps() >= p.min_bps && d.target_bps() <= p.line_bps);
                prop_assert!((0.0..=1.0).contains(&d.alpha()), "α {}", d.alpha());
                prop_assert!(d.rate_bps().is_finite() && d.alpha().is_finite());
            }
        }

        #[test]
        fn without_cnps_it_returns_to_line_rate(p in params(), cnps in 1usize..50, gap in 1u64..100_000) {
            let mut d = Dcqcn::new(p, 0);
            let mut now = 0;
            for _ in 0..cnps {
                now += gap;
                d.on_cnp(now);
            }
            // A sending flow: a timer stage and a byte-counter stage per step. Fast recovery,
            // additive, then hyper increase growing by R_HAI a stage: line rate within
            // F + 2·sqrt(line / R_HAI) + 64 steps.
            let bound = u64::from(p.f) + 2 * (p.line_bps / p.hai_bps).sqrt() as u64 + 64;
            for _ in 0..bound {
                now += p.timer_ticks;
                d.tick(now);
                d.on_sent(p.byte_counter);
            }
            prop_assert_eq!(d.rate_bps(), p.line_bps);
        }
    }
}
