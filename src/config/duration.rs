//! Durations in configuration: a number with a unit, `"10us"`, `"2.5µs"`, `"500ns"`,
//! `"1ms"`, `"0.001s"`. A bare number is refused: nanoseconds and microseconds are both
//! plausible here and a factor of 1000 in a headroom term must not be a guess.

use thiserror::Error;

/// Why a duration was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DurationError {
    #[error("empty value")]
    Empty,
    #[error("'{0}' is not a number with a unit")]
    NotANumber(String),
    #[error("'{0}' has no unit (expected ns, us, ms or s, e.g. \"10us\")")]
    NoUnit(String),
    #[error("unknown unit '{unit}' in '{value}' (expected ns, us, ms or s)")]
    UnknownUnit { value: String, unit: String },
    #[error("'{value}' is out of range 0..={max}")]
    OutOfRange { value: String, max: &'static str },
}

/// Largest duration on the command line (`--duration`, `--stats-interval`): one year.
pub const CLI_MAX_NS: u64 = 365 * 24 * 3600 * 1_000_000_000;

/// Largest accepted duration: one second, far beyond any sensible reaction delay, and
/// small enough that bytes = speed · time cannot overflow.
pub const MAX_NS: u64 = 1_000_000_000;

/// Nanoseconds in `s`, rounded to the nearest nanosecond.
pub fn parse_duration_ns(s: &str) -> Result<u64, DurationError> {
    parse(s, None, MAX_NS, "1s")
}

/// A command-line duration: like the config's, but a bare number means seconds (as
/// `timeout(1)` reads it) and up to a year. Negative, NaN, infinite and huge values are
/// refused with an error instead of a panic in `Duration::from_secs_f64`.
pub fn parse_cli_duration_ns(s: &str) -> Result<u64, DurationError> {
    parse(s, Some(1e9), CLI_MAX_NS, "365 days")
}

fn parse(s: &str, bare_ns: Option<f64>, max_ns: u64, max_text: &'static str) -> Result<u64, DurationError> {
    let t = s.trim();
    if t.is_empty() {
        return Err(DurationError::Empty);
    }
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| DurationError::NotANumber(s.to_string()))?;
    let per_unit = match (unit.trim(), bare_ns) {
        ("", Some(bare)) => bare,
        (u, _) => unit_ns(s, u)?,
    };
    let ns = n * per_unit;
    if !ns.is_finite() || ns > max_ns as f64 {
        return Err(DurationError::OutOfRange { value: s.to_string(), max: max_text });
    }
    Ok(ns.round() as u64)
}

/// Nanoseconds per `unit`.
fn unit_ns(value: &str, unit: &str) -> Result<f64, DurationError> {
    match unit {
        "" => Err(DurationError::NoUnit(value.to_string())),
        "ns" => Ok(1.0),
        "us" | "µs" | "μs" => Ok(1e3),
        "ms" => Ok(1e6),
        "s" => Ok(1e9),
        _ => Err(DurationError::UnknownUnit { value: value.to_string(), unit: unit.to_string() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse_duration_ns("10us"), Ok(10_000));
        assert_eq!(parse_duration_ns(" 2.5µs "), Ok(2_500));
        assert_eq!(parse_duration_ns("2.5μs"), Ok(2_500));
        assert_eq!(parse_duration_ns("500ns"), Ok(500));
        assert_eq!(parse_duration_ns("1ms"), Ok(1_000_000));
        assert_eq!(parse_duration_ns("0.001s"), Ok(1_000_000));
        assert_eq!(parse_duration_ns("0us"), Ok(0));
        assert_eq!(parse_duration_ns("1s"), Ok(MAX_NS));
    }

    #[test]
    fn refusals() {
        assert_eq!(parse_duration_ns(""), Err(DurationError::Empty));
        assert_eq!(parse_duration_ns("10"), Err(DurationError::NoUnit("10".into())));
        assert!(matches!(parse_duration_ns("10 min"), Err(DurationError::UnknownUnit { .. })));
        assert!(matches!(parse_duration_ns("-1us"), Err(DurationError::NotANumber(_))));
        assert!(matches!(parse_duration_ns("us"), Err(DurationError::NotANumber(_))));
        assert!(matches!(parse_duration_ns("2s"), Err(DurationError::OutOfRange { .. })));
    }

    #[test]
    fn cli_durations() {
        assert_eq!(parse_cli_duration_ns("3"), Ok(3_000_000_000));
        assert_eq!(parse_cli_duration_ns("0.5"), Ok(500_000_000));
        assert_eq!(parse_cli_duration_ns("1ms"), Ok(1_000_000));
        assert_eq!(parse_cli_duration_ns("0"), Ok(0));
        assert_eq!(parse_cli_duration_ns("3600s"), Ok(3_600_000_000_000));
        for bad in ["inf", "NaN", "1e20", "-1", "-0.5", "", "10 min", "1e3"] {
            assert!(parse_cli_duration_ns(bad).is_err(), "{bad} accepted");
        }
        assert!(matches!(parse_cli_duration_ns("99999999999"), Err(DurationError::OutOfRange { .. })));
    }
}
