//! Live reconfiguration, the pure part: a change (`pfcswitch config buffer profile NAME
//! --dynamic-th N`, `pfcswitch config interface cable-length PORT LEN`) is made to the
//! running configuration's TOML text and the result validated exactly as the file is at
//! start ([`crate::config::from_str`], then [`crate::plan::plan`]: the same one-line
//! errors naming the field), giving the new text (what `config save` writes) and the new
//! MMU limits. The dataplane applies them from the control lcore
//! (`dataplane::reconfig`, [`crate::mmu::Mmu::set_limits`]); nothing here touches a
//! running switch. See docs/live-config.md.

use crate::config::{self, Config};
use crate::mmu::MmuConfig;
use crate::plan::{self, Plan};

/// One change to the running configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// `[buffer.profile.<profile>] dynamic_th = value` (SONiC `config buffer profile set
    /// <name> --dynamic_th`).
    DynamicTh { profile: String, value: i64 },
    /// `[[port]] name = <port>`: `cable_length = <length>` (SONiC `config interface
    /// cable-length`); the port's lossless PGs get the headroom the calculator gives for it
    /// unless their profile sets `xoff`.
    CableLength { port: String, length: String },
}

/// The telemetry command that carries a change (`/pfcswitch/config,<param>`).
pub const COMMAND: &str = "/pfcswitch/config";

const USAGE: &str = "parameters: dynamic_th,<profile>,<-8..7> | cable_length,<port>,<length>";

impl Change {
    /// The telemetry parameter: `dynamic_th,<profile>,<n>` or `cable_length,<port>,<len>`.
    pub fn to_param(&self) -> String {
        match self {
            Change::DynamicTh { profile, value } => format!("dynamic_th,{profile},{value}"),
            Change::CableLength { port, length } => format!("cable_length,{port},{length}"),
        }
    }

    /// Inverse of [`Change::to_param`]; an error is one line.
    pub fn parse_param(p: &str) -> Result<Change, String> {
        let parts: Vec<&str> = p.split(',').map(str::trim).collect();
        match parts.as_slice() {
            ["dynamic_th", profile, v] if !profile.is_empty() => match v.parse() {
                Ok(value) => Ok(Change::DynamicTh { profile: profile.to_string(), value }),
                Err(_) => Err(format!("dynamic_th: '{v}' is not an integer")),
            },
            ["cable_length", port, len] if !port.is_empty() && !len.is_empty() => {
                Ok(Change::CableLength { port: port.to_string(), length: len.to_string() })
            }
            _ => Err(USAGE.to_string()),
        }
    }

    /// For the log: what changed, as the configuration names it.
    pub fn describe(&self) -> String {
        match self {
            Change::DynamicTh { profile, value } => format!("buffer.profile.{profile}.dynamic_th = {value}"),
            Change::CableLength { port, length } => format!("port {port} cable_length = {length}"),
        }
    }
}

/// A change made and validated: the new text, configuration and plan.
#[derive(Debug, Clone)]
pub struct Applied {
    pub text: String,
    pub config: Config,
    pub plan: Plan,
}

impl Applied {
    /// The MMU limits to install.
    pub fn mmu(&self) -> &MmuConfig {
        &self.plan.mmu
    }
}

/// A length as the file would hold it: a bare number stays a number (metres).
fn length_value(s: &str) -> toml::Value {
    if let Ok(i) = s.parse::<i64>() {
        return toml::Value::Integer(i);
    }
    if let Ok(f) = s.parse::<f64>() {
        return toml::Value::Float(f);
    }
    toml::Value::String(s.to_string())
}

/// Makes `change` to `text` (a configuration that validated, named `origin` in errors) and
/// validates the result as at start, with the switch's `sw_response_ns`. Changes that
/// would change more than limits (another port's set, the shape of the MMU) cannot be
/// expressed: only a profile's `dynamic_th` and a port's `cable_length` are written.
pub fn apply(text: &str, origin: &str, change: &Change, sw_response_ns: u64) -> Result<Applied, String> {
    let mut top: toml::Table = toml::from_str(text).map_err(|e| format!("{origin}: {}", e.message().trim()))?;
    match change {
        Change::DynamicTh { profile, value } => {
            let field = format!("buffer.profile.{profile}");
            let prof = top
                .get_mut("buffer")
                .and_then(|b| b.get_mut("profile"))
                .and_then(|p| p.get_mut(profile.as_str()))
                .and_then(toml::Value::as_table_mut)
                .ok_or_else(|| {
                    format!("{origin}: {field}: no such profile in the configuration file (only its profiles can be changed)")
                })?;
            if prof.contains_key("static_th") {
                return Err(format!("{origin}: {field}: has static_th; dynamic_th would give it both"));
            }
            prof.insert("dynamic_th".into(), toml::Value::Integer(*value));
        }
        Change::CableLength { port, length } => {
            let p = top
                .get_mut("port")
                .and_then(toml::Value::as_array_mut)
                .and_then(|a| {
                    a.iter_mut()
                        .filter_map(toml::Value::as_table_mut)
                        .find(|t| t.get("name").and_then(toml::Value::as_str) == Some(port.as_str()))
                })
                .ok_or_else(|| format!("{origin}: port: no port named '{port}'"))?;
            p.insert("cable_length".into(), length_value(length));
        }
    }
    let new_text = toml::to_string(&top).map_err(|e| format!("{origin}: {e}"))?;
    let cfg = config::from_str(&new_text, origin).map_err(|e| e.to_string())?;
    let plan = plan::plan(&cfg, sw_response_ns).map_err(|e| e.to_string())?;
    Ok(Applied { text: new_text, config: cfg, plan })
}

/// The limits to install at once when `new` shrinks some headroom that is not safe to
/// shrink yet ([`crate::mmu::Mmu::headroom_shrink_safe`]): `new` with every PG's `xoff`
/// (and a shared headroom pool's size) at least `cur`'s, so nothing in flight towards a
/// paused PG loses its place; the shrink follows once the PGs drained.
pub fn interim(cur: &MmuConfig, new: &MmuConfig) -> MmuConfig {
    let mut m = new.clone();
    for (n, c) in m.ports.iter_mut().zip(&cur.ports) {
        for (g, old) in n.pgs.iter_mut().zip(&c.pgs) {
            g.xoff = g.xoff.max(old.xoff);
        }
    }
    if let (crate::mmu::HeadroomPolicy::SharedPool { size }, crate::mmu::HeadroomPolicy::SharedPool { size: old }) =
        (&mut m.headroom_policy, cur.headroom_policy)
    {
        *size = (*size).max(old);
    }
    m
}

/// Longest piece of [`pieces`], bytes: DPDK 22.11 keeps at most 127 bytes of a string.
pub const PIECE_LEN: usize = 120;

/// `text` as strings DPDK telemetry carries whole and unchanged: `%`, `"`, `\` and control
/// characters (newlines) %-escaped (DPDK 22.11 does not escape JSON strings), cut into
/// pieces of at most [`PIECE_LEN`] bytes, never inside a character or an escape.
pub fn pieces(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for ch in text.chars() {
        let enc = if ch == '%' || ch == '"' || ch == '\\' || ch.is_control() {
            let mut b = [0u8; 4];
            ch.encode_utf8(&mut b).bytes().map(|x| format!("%{x:02X}")).collect::<String>()
        } else {
            ch.to_string()
        };
        if cur.len() + enc.len() > PIECE_LEN {
            out.push(std::mem::take(&mut cur));
        }
        cur.push_str(&enc);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Inverse of [`pieces`].
pub fn join_pieces<S: AsRef<str>>(pieces: &[S]) -> Result<String, String> {
    let joined: String = pieces.iter().map(AsRef::as_ref).collect();
    let b = joined.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = joined.get(i + 1..i + 3).ok_or("truncated escape")?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| format!("bad escape %{hex}"))?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "not UTF-8".to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn pieces_round_trip() {
        let t = format!("a = \"%x\\y\"\n# é{}\n", "z".repeat(300));
        let p = pieces(&t);
        assert!(p.iter().all(|s| s.len() <= PIECE_LEN && !s.contains(['"', '\\', '\n'])), "{p:?}");
        assert_eq!(join_pieces(&p).unwrap(), t);
    }

    use super::*;

    const TEXT: &str = r#"
[[port]]
name = "Ethernet0"
devargs = "net_null0"
speed = "100G"
cable_length = "5m"

[[port]]
name = "Ethernet4"
devargs = "net_null1"
speed = "100G"

[buffer]
total_size = "12MiB"
[buffer.pool.ingress_lossless_pool]
size = "8MiB"
type = "ingress"
[buffer.pool.egress_lossy_pool]
size = "4MiB"
type = "egress"
[buffer.profile.pg_lossless_profile]
pool = "ingress_lossless_pool"
size = 4096
dynamic_th = -2
[buffer.pg]
"Ethernet0|3-4" = "pg_lossless_profile"
"Ethernet4|3-4" = "pg_lossless_profile"
"#;

    #[test]
    fn params_round_trip() {
        for c in [
            Change::DynamicTh { profile: "pg_lossless_profile".into(), value: -3 },
            Change::CableLength { port: "Ethernet0".into(), length: "300m".into() },
        ] {
            assert_eq!(Change::parse_param(&c.to_param()), Ok(c));
        }
        for bad in ["", "dynamic_th,p", "dynamic_th,p,x", "xoff,p,1", "cable_length,,5m"] {
            let e = Change::parse_param(bad).unwrap_err();
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn dynamic_th_and_cable_length_change_only_the_limits() {
        let cur = apply(TEXT, "t.toml", &Change::CableLength { port: "Ethernet0".into(), length: "5m".into() }, 10_000)
            .unwrap();
        let th = apply(TEXT, "t.toml", &Change::DynamicTh { profile: "pg_lossless_profile".into(), value: 1 }, 10_000)
            .unwrap();
        assert_eq!(th.mmu().ports[0].pgs[3].threshold, crate::mmu::Threshold::Dynamic(1));
        assert_eq!(cur.mmu().ports[0].pgs[3].threshold, crate::mmu::Threshold::Dynamic(-2));
        let long =
            apply(&th.text, "t.toml", &Change::CableLength { port: "Ethernet0".into(), length: "300m".into() }, 10_000)
                .unwrap();
        // Both changes kept (the text carries the first), headroom recomputed for 300 m on
        // Ethernet0 only.
        assert_eq!(long.mmu().ports[0].pgs[3].threshold, crate::mmu::Threshold::Dynamic(1));
        assert!(long.mmu().ports[0].pgs[3].xoff > cur.mmu().ports[0].pgs[3].xoff);
        assert_eq!(long.mmu().ports[1].pgs[3].xoff, cur.mmu().ports[1].pgs[3].xoff);
        assert_eq!(long.config.ports[0].cable_length_m, 300.0);
        assert_eq!(long.mmu().ports.len(), 2);
        let mid = interim(long.mmu(), cur.mmu());
        assert_eq!(mid.ports[0].pgs[3].xoff, long.mmu().ports[0].pgs[3].xoff);
        assert_eq!(mid.ports[0].pgs[3].threshold, crate::mmu::Threshold::Dynamic(-2));
    }

    #[test]
    fn errors_are_one_line_naming_the_field() {
        for (c, field) in [
            (Change::DynamicTh { profile: "pg_lossless_profile".into(), value: 8 }, "dynamic_th"),
            (Change::DynamicTh { profile: "nope".into(), value: 0 }, "buffer.profile.nope"),
            (Change::CableLength { port: "Ethernet9".into(), length: "5m".into() }, "Ethernet9"),
            (Change::CableLength { port: "Ethernet0".into(), length: "5parsecs".into() }, "cable_length"),
            // 80 km of headroom on two PGs does not fit an 8 MiB pool.
            (Change::CableLength { port: "Ethernet0".into(), length: "80km".into() }, "size"),
        ] {
            let e = apply(TEXT, "t.toml", &c, 10_000).unwrap_err();
            assert!(e.starts_with("t.toml: ") && e.contains(field) && !e.contains('\n'), "{c:?}: {e}");
        }
    }
}
