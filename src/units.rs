//! Human units used in configuration and on the command line: link speeds ("100G"),
//! cable lengths ("5m") and byte sizes ("12MiB"). Pure parsing, no I/O.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum UnitError {
    #[error("empty value")]
    Empty,
    #[error("'{0}' is not a number with a unit")]
    NotANumber(String),
    #[error("unknown unit '{unit}' in '{value}' (expected one of {expected})")]
    UnknownUnit { value: String, unit: String, expected: &'static str },
    #[error("'{0}' must be greater than zero")]
    NotPositive(String),
    #[error("'{0}' is out of range")]
    OutOfRange(String),
}

fn split_number(s: &str) -> Result<(f64, String), UnitError> {
    let t = s.trim();
    if t.is_empty() {
        return Err(UnitError::Empty);
    }
    let idx = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(idx);
    let n: f64 = num.parse().map_err(|_| UnitError::NotANumber(s.to_string()))?;
    if !n.is_finite() {
        return Err(UnitError::NotANumber(s.to_string()));
    }
    Ok((n, unit.trim().to_string()))
}

/// Link speed in bits per second. Accepts SONiC-style megabit integers ("100000"),
/// and suffixed forms "10G", "25G", "100G", "400G", "5M", "1.5Gbps", "100k".
pub fn parse_speed(s: &str) -> Result<u64, UnitError> {
    let (n, unit) = split_number(s)?;
    let lower = unit.to_ascii_lowercase();
    let explicit_bits = lower.ends_with("bps") || lower.ends_with("bit/s");
    let mult: f64 = match lower.trim_end_matches("bps").trim_end_matches("bit/s") {
        // "5000000bps" is bits per second.
        "" if explicit_bits => 1.0,
        // A bare number is megabits, as in SONiC's PORT|speed.
        "" => 1e6,
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        "t" => 1e12,
        _ => {
            return Err(UnitError::UnknownUnit {
                value: s.to_string(),
                unit,
                expected: "k, M, G, T (bits per second), or a bare number of Mb/s",
            })
        }
    };
    let bps = n * mult;
    if bps < 1.0 {
        return Err(UnitError::NotPositive(s.to_string()));
    }
    if bps > 1e15 {
        return Err(UnitError::OutOfRange(s.to_string()));
    }
    Ok(bps.round() as u64)
}

/// Cable length in metres: "5m", "300m", "1.5km", "40" (metres, as in SONiC CABLE_LENGTH).
pub fn parse_length_m(s: &str) -> Result<f64, UnitError> {
    let (n, unit) = split_number(s)?;
    let mult = match unit.to_ascii_lowercase().as_str() {
        "" | "m" => 1.0,
        "km" => 1000.0,
        "cm" => 0.01,
        _ => return Err(UnitError::UnknownUnit { value: s.to_string(), unit, expected: "m, km, cm" }),
    };
    let m = n * mult;
    if m > 100_000.0 {
        return Err(UnitError::OutOfRange(s.to_string()));
    }
    Ok(m)
}

/// Byte size: "4096", "12MiB", "12MB", "64KiB", "1G". K/M/G without 'i' are also binary
/// (buffer sizes are conventionally powers of two on switch ASICs).
pub fn parse_bytes(s: &str) -> Result<u64, UnitError> {
    let (n, unit) = split_number(s)?;
    let mult: f64 = match unit.to_ascii_lowercase().trim_end_matches('b').trim_end_matches('i') {
        "" => 1.0,
        "k" => 1024.0,
        "m" => 1024.0 * 1024.0,
        "g" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(UnitError::UnknownUnit { value: s.to_string(), unit, expected: "B, KiB, MiB, GiB" }),
    };
    let b = n * mult;
    if b > (1u64 << 40) as f64 {
        return Err(UnitError::OutOfRange(s.to_string()));
    }
    Ok(b.round() as u64)
}

/// Format bits per second the way a network engineer writes it ("100G", "25G", "5M").
pub fn format_speed(bps: u64) -> String {
    let units = [(1_000_000_000_000u64, "T"), (1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")];
    for (m, u) in units {
        if bps >= m && bps.is_multiple_of(m) {
            return format!("{}{}", bps / m, u);
        }
    }
    for (m, u) in units {
        if bps >= m {
            return format!("{:.3}{}", bps as f64 / m as f64, u);
        }
    }
    format!("{bps}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speeds() {
        assert_eq!(parse_speed("100G").unwrap(), 100_000_000_000);
        assert_eq!(parse_speed("25g").unwrap(), 25_000_000_000);
        assert_eq!(parse_speed("5M").unwrap(), 5_000_000);
        assert_eq!(parse_speed("5Mbps").unwrap(), 5_000_000);
        assert_eq!(parse_speed("5000000bps").unwrap(), 5_000_000);
        assert_eq!(parse_speed("100000").unwrap(), 100_000_000_000);
        assert_eq!(parse_speed("1.5G").unwrap(), 1_500_000_000);
        assert!(parse_speed("fast").is_err());
        assert!(parse_speed("10X").is_err());
        assert!(parse_speed("").is_err());
        assert!(parse_speed("0G").is_err());
        assert_eq!(format_speed(100_000_000_000), "100G");
        assert_eq!(format_speed(5_000_000), "5M");
    }

    #[test]
    fn lengths() {
        assert_eq!(parse_length_m("5m").unwrap(), 5.0);
        assert_eq!(parse_length_m("300m").unwrap(), 300.0);
        assert_eq!(parse_length_m("1.5km").unwrap(), 1500.0);
        assert_eq!(parse_length_m("40").unwrap(), 40.0);
        assert!(parse_length_m("5ft").is_err());
    }

    #[test]
    fn bytes() {
        assert_eq!(parse_bytes("4096").unwrap(), 4096);
        assert_eq!(parse_bytes("12MiB").unwrap(), 12 << 20);
        assert_eq!(parse_bytes("64KB").unwrap(), 64 << 10);
        assert!(parse_bytes("12 parsecs").is_err());
    }
}
