//! `[dcqcn]` and `[cnp]`: DCQCN's reaction point and notification point parameters
//! (docs/dcqcn.md), resolved from the file's tables.

use super::{Fields, RateSpec, SpecError, Table};

/// DCQCN's reaction point parameters (`[dcqcn]`), before they meet a stream's line rate
/// and the TSC. Defaults: the DCQCN paper's (Zhu et al. 2015) at 40 Gbit/s; rates not
/// given are the same fractions of the stream's line rate. `time_scale` multiplies every
/// time constant (and the CNP interval): links here are slower than 40 Gbit/s by that
/// much or more (docs/dcqcn.md).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DcqcnSpec {
    pub g: f64,
    pub alpha_period_ns: u64,
    pub timer_ns: u64,
    pub byte_counter: u64,
    pub f: u32,
    /// None: line / 1000 (the paper's 40 Mbit/s of 40 Gbit/s).
    pub ai_bps: Option<f64>,
    /// None: 10 × the additive step.
    pub hai_bps: Option<f64>,
    /// None: line / 1000.
    pub min_bps: Option<f64>,
    pub initial_alpha: f64,
    pub time_scale: f64,
}

impl Default for DcqcnSpec {
    fn default() -> DcqcnSpec {
        DcqcnSpec {
            g: 1.0 / 256.0,
            alpha_period_ns: 55_000,
            timer_ns: 55_000,
            byte_counter: 10 << 20,
            f: 5,
            ai_bps: None,
            hai_bps: None,
            min_bps: None,
            initial_alpha: 1.0,
            time_scale: 1.0,
        }
    }
}

impl DcqcnSpec {
    /// The reaction point of a flow whose line rate is `line_bps`, timers in ticks of `hz`.
    pub fn params(&self, line_bps: f64, hz: u64) -> crate::pfcgen::dcqcn::DcqcnParams {
        let ticks = |ns: u64| (ns as f64 * self.time_scale * hz as f64 / 1e9).round().max(1.0) as u64;
        let ai = self.ai_bps.unwrap_or(line_bps / 1000.0);
        crate::pfcgen::dcqcn::DcqcnParams {
            line_bps,
            min_bps: self.min_bps.unwrap_or(line_bps / 1000.0),
            ai_bps: ai,
            hai_bps: self.hai_bps.unwrap_or(ai * 10.0),
            g: self.g,
            alpha_ticks: ticks(self.alpha_period_ns),
            timer_ticks: ticks(self.timer_ns),
            byte_counter: self.byte_counter,
            f: self.f,
            alpha0: self.initial_alpha,
        }
    }
}

/// The notification point (`[cnp]`): answer CE-marked RoCEv2 frames with CNPs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CnpSpec {
    pub enable: bool,
    /// At most one CNP per flow per interval (before `[dcqcn] time_scale`), mlx5
    /// `min_time_between_cnps`; the paper's 50 µs.
    pub interval_ns: u64,
    /// DSCP of the CNPs (default 48: TC 6 in SONiC's default map, above the data's 3).
    pub dscp: u8,
    /// PCP of CNPs answering tagged data.
    pub pcp: u8,
}

impl Default for CnpSpec {
    fn default() -> CnpSpec {
        CnpSpec { enable: false, interval_ns: 50_000, dscp: 48, pcp: 6 }
    }
}

const DCQCN_KEYS: &[&str] = &[
    "g",
    "alpha_period",
    "timer",
    "byte_counter",
    "f",
    "ai_rate",
    "hai_rate",
    "min_rate",
    "initial_alpha",
    "time_scale",
];

fn float(f: &Fields, k: &str, lo: f64, hi: f64) -> Result<Option<f64>, SpecError> {
    match f.t.get(k) {
        None => Ok(None),
        Some(v) => match v.as_float().or_else(|| v.as_integer().map(|i| i as f64)) {
            Some(x) if x >= lo && x <= hi => Ok(Some(x)),
            Some(x) => Err(f.e(k, format!("{x} is outside {lo}..={hi}"))),
            None => Err(f.e(k, format!("expected a number, got {}", v.type_str()))),
        },
    }
}

fn bit_rate(s: &str) -> Result<f64, String> {
    match RateSpec::parse(s)? {
        RateSpec::Bps(b) => Ok(b),
        _ => Err(format!("'{s}' is not a bit rate (e.g. \"40Mbit/s\")")),
    }
}

/// The `[dcqcn]` table.
pub(super) fn resolve_dcqcn(t: &Table, origin: &str) -> Result<DcqcnSpec, SpecError> {
    let f = Fields { t, origin, path: "dcqcn".into() };
    f.check_known(DCQCN_KEYS)?;
    let d = DcqcnSpec::default();
    let positive = |k: &str, v: Option<u64>, dflt: u64| match v {
        Some(0) => Err(f.e(k, "must be longer than 0")),
        v => Ok(v.unwrap_or(dflt)),
    };
    Ok(DcqcnSpec {
        g: float(&f, "g", 0.0, 1.0)?.unwrap_or(d.g),
        alpha_period_ns: positive("alpha_period", f.duration("alpha_period")?, d.alpha_period_ns)?,
        timer_ns: positive("timer", f.duration("timer")?, d.timer_ns)?,
        byte_counter: match f.parsed("byte_counter", |s| crate::units::parse_bytes(s).map_err(|e| e.to_string()))? {
            Some(0) => return Err(f.e("byte_counter", "must be at least 1 byte")),
            v => v.unwrap_or(d.byte_counter),
        },
        f: f.int("f", 0, 1000)?.map_or(d.f, |x| x as u32),
        ai_bps: f.parsed("ai_rate", bit_rate)?,
        hai_bps: f.parsed("hai_rate", bit_rate)?,
        min_bps: f.parsed("min_rate", bit_rate)?,
        initial_alpha: float(&f, "initial_alpha", 0.0, 1.0)?.unwrap_or(d.initial_alpha),
        time_scale: float(&f, "time_scale", 1e-9, 1e9)?.unwrap_or(d.time_scale),
    })
}

/// The `[cnp]` table.
pub(super) fn resolve_cnp(t: &Table, origin: &str) -> Result<CnpSpec, SpecError> {
    let f = Fields { t, origin, path: "cnp".into() };
    f.check_known(&["enable", "interval", "dscp", "pcp"])?;
    let d = CnpSpec::default();
    Ok(CnpSpec {
        enable: f.boolean("enable")?.unwrap_or(true),
        interval_ns: f.duration("interval")?.unwrap_or(d.interval_ns),
        dscp: f.int("dscp", 0, 63)?.map_or(d.dscp, |x| x as u8),
        pcp: f.int("pcp", 0, 7)?.map_or(d.pcp, |x| x as u8),
    })
}
