//! Live reconfiguration, the pure part: a change (`pfcswitch config buffer profile NAME
//! --dynamic-th N --xoff B …`, `config interface cable-length PORT LEN`, `config wred
//! PROFILE …`, `config pfcwd …`) is made to the running configuration's TOML text and the
//! result validated exactly as the file is at start ([`crate::config::from_str`], then
//! [`crate::plan::plan`]: the same one-line errors naming the field), giving the new text
//! (what `config save` writes), the new MMU limits and the new per-port egress settings.
//! The dataplane applies them from the control lcore (`dataplane::reconfig`,
//! [`crate::mmu::Mmu::set_limits`]); nothing here touches a running switch. See
//! docs/live-config.md.

use crate::config::{self, Config};
use crate::mmu::MmuConfig;
use crate::plan::{self, Plan};

/// What a change is made to: a table of the configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `[buffer.profile.<name>]` (SONiC `BUFFER_PROFILE`).
    Profile(String),
    /// `[qos.wred_profile.<name>]` (SONiC `WRED_PROFILE`).
    Wred(String),
    /// `[pfcwd]` (SONiC `PFC_WD`).
    Pfcwd,
    /// The `[[port]]` named so.
    Port(String),
}

/// How a key's value is written in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An integer.
    Int,
    /// Bytes or a length: a bare number stays a number, anything else a string ("20KiB",
    /// "300m"), which the file's own parser judges.
    Amount,
    Bool,
    Str,
    /// Priorities `3:4` (`none`: the empty list): a list of integers.
    Prios,
}

impl Target {
    fn kind(&self) -> &'static str {
        match self {
            Target::Profile(_) => "profile",
            Target::Wred(_) => "wred",
            Target::Pfcwd => "pfcwd",
            Target::Port(_) => "port",
        }
    }

    fn name(&self) -> &str {
        match self {
            Target::Profile(n) | Target::Wred(n) | Target::Port(n) => n,
            Target::Pfcwd => "",
        }
    }

    /// The keys a live change may set here, and how each is written.
    pub(crate) fn keys(&self) -> &'static [(&'static str, Kind)] {
        match self {
            Target::Profile(_) => &[
                ("dynamic_th", Kind::Int),
                ("static_th", Kind::Amount),
                ("size", Kind::Amount),
                ("xoff", Kind::Amount),
                ("xon", Kind::Amount),
                ("xon_offset", Kind::Amount),
            ],
            Target::Wred(_) => &[
                ("green_min_threshold", Kind::Amount),
                ("green_max_threshold", Kind::Amount),
                ("green_drop_probability", Kind::Int),
                ("wred_green_enable", Kind::Bool),
                ("ecn", Kind::Str),
            ],
            Target::Pfcwd => &[
                ("action", Kind::Str),
                ("detection_time", Kind::Int),
                ("restoration_time", Kind::Int),
                ("poll_interval", Kind::Int),
            ],
            Target::Port(_) => &[("cable_length", Kind::Amount), ("pfc_enable", Kind::Prios)],
        }
    }

    /// The table's name as errors and the log give it.
    fn field(&self) -> String {
        match self {
            Target::Profile(n) => format!("buffer.profile.{n}"),
            Target::Wred(n) => format!("qos.wred_profile.{n}"),
            Target::Pfcwd => "pfcwd".to_string(),
            Target::Port(n) => format!("port {n}"),
        }
    }
}

/// One change to the running configuration: keys set in one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub target: Target,
    /// (key, value as typed); at least one.
    pub sets: Vec<(String, String)>,
}

/// The telemetry command that carries a change (`/pfcswitch/config,<param>`).
pub const COMMAND: &str = "/pfcswitch/config";

const USAGE: &str =
    "parameters: <profile|wred|port|pfcwd>,<name>,<key>=<value>[,<key>=<value>…] (pfcwd: an empty name)";

impl Change {
    /// A change of `target`'s `key = value` pairs.
    pub fn new(target: Target, sets: &[(&str, &str)]) -> Change {
        Change { target, sets: sets.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect() }
    }

    /// The telemetry parameter: `<kind>,<name>,<key>=<value>…`.
    pub fn to_param(&self) -> String {
        let sets: Vec<String> = self.sets.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{},{},{}", self.target.kind(), self.target.name(), sets.join(","))
    }

    /// Inverse of [`Change::to_param`], checking the keys; an error is one line.
    pub fn parse_param(p: &str) -> Result<Change, String> {
        let mut parts = p.split(',').map(str::trim);
        let (Some(kind), Some(name)) = (parts.next(), parts.next()) else { return Err(USAGE.to_string()) };
        let target = match (kind, name) {
            ("pfcwd", "") => Target::Pfcwd,
            (_, "") => return Err(USAGE.to_string()),
            ("profile", n) => Target::Profile(n.to_string()),
            ("wred", n) => Target::Wred(n.to_string()),
            ("port", n) => Target::Port(n.to_string()),
            _ => return Err(USAGE.to_string()),
        };
        let mut sets = Vec::new();
        for kv in parts {
            let Some((k, v)) = kv.split_once('=') else { return Err(USAGE.to_string()) };
            let (k, v) = (k.trim(), v.trim());
            if !target.keys().iter().any(|(key, _)| *key == k) {
                let known: Vec<&str> = target.keys().iter().map(|(key, _)| *key).collect();
                return Err(format!("{}: '{k}' cannot be changed live (keys: {})", target.field(), known.join(", ")));
            }
            if v.is_empty() || sets.iter().any(|(key, _): &(String, String)| key == k) {
                return Err(format!("{}.{k}: given twice or without a value", target.field()));
            }
            sets.push((k.to_string(), v.to_string()));
        }
        if sets.is_empty() {
            return Err(format!("{}: nothing to change", target.field()));
        }
        Ok(Change { target, sets })
    }

    /// For the log: what changed, as the configuration names it
    /// (`buffer.profile.P.dynamic_th = -1`, `port Ethernet0 cable_length = 300m`).
    pub fn describe(&self) -> String {
        let sep = if matches!(self.target, Target::Port(_)) { " " } else { "." };
        let f = self.target.field();
        self.sets.iter().map(|(k, v)| format!("{f}{sep}{k} = {v}")).collect::<Vec<_>>().join(", ")
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

/// `v` as the file would hold it for a key of `kind` (`key` names it in errors).
fn value(kind: Kind, field: &str, v: &str) -> Result<toml::Value, String> {
    let bad = |what: &str| format!("{field}: '{v}' is not {what}");
    Ok(match kind {
        Kind::Int => toml::Value::Integer(v.parse().map_err(|_| bad("an integer"))?),
        Kind::Bool => toml::Value::Boolean(v.parse().map_err(|_| bad("true or false"))?),
        Kind::Str => toml::Value::String(v.to_string()),
        Kind::Prios if v == "none" => toml::Value::Array(Vec::new()),
        Kind::Prios => toml::Value::Array(
            v.split(':')
                .map(|p| p.trim().parse::<i64>().map(toml::Value::Integer))
                .collect::<Result<_, _>>()
                .map_err(|_| bad("a list of priorities (3:4, or none)"))?,
        ),
        Kind::Amount => {
            if let Ok(i) = v.parse::<i64>() {
                toml::Value::Integer(i)
            } else if let Ok(f) = v.parse::<f64>() {
                toml::Value::Float(f)
            } else {
                toml::Value::String(v.to_string())
            }
        }
    })
}

/// The table `target` names in `top`, or a one-line error.
fn table<'a>(top: &'a mut toml::Table, target: &Target, origin: &str) -> Result<&'a mut toml::Table, String> {
    let field = target.field();
    let path: &[&str] = match target {
        Target::Profile(n) => &["buffer", "profile", n],
        Target::Wred(n) => &["qos", "wred_profile", n],
        Target::Pfcwd => &["pfcwd"],
        Target::Port(n) => {
            return top
                .get_mut("port")
                .and_then(toml::Value::as_array_mut)
                .and_then(|a| {
                    a.iter_mut()
                        .filter_map(toml::Value::as_table_mut)
                        .find(|t| t.get("name").and_then(toml::Value::as_str) == Some(n.as_str()))
                })
                .ok_or_else(|| format!("{origin}: port: no port named '{n}'"));
        }
    };
    let mut t = top;
    for key in path {
        t = t.get_mut(*key).and_then(toml::Value::as_table_mut).ok_or_else(|| match target {
            Target::Pfcwd => {
                format!("{origin}: pfcwd: the watchdog was off at start ([pfcwd] absent): it cannot be started live")
            }
            _ => format!("{origin}: {field}: no such table in the configuration file (only its own can be changed)"),
        })?;
    }
    Ok(t)
}

/// Makes `change` to `text` (a configuration that validated, named `origin` in errors) and
/// validates the result as at start, with the switch's `sw_response_ns`. A change that
/// would change more than limits (which PGs are lossless, the MMU's shape) is refused
/// here, in one line, as the MMU would refuse it.
pub fn apply(text: &str, origin: &str, change: &Change, sw_response_ns: u64) -> Result<Applied, String> {
    let mut top: toml::Table = toml::from_str(text).map_err(|e| format!("{origin}: {}", e.message().trim()))?;
    let field = change.target.field();
    let t = table(&mut top, &change.target, origin)?;
    for (k, v) in &change.sets {
        let kind = change.target.keys().iter().find(|(key, _)| key == k).map(|(_, kind)| *kind);
        let kind = kind.ok_or_else(|| format!("{origin}: {field}: '{k}' cannot be changed live"))?;
        t.insert(k.clone(), value(kind, &format!("{origin}: {field}.{k}"), v)?);
        // A profile has one threshold: setting one kind replaces the other.
        let other = match k.as_str() {
            "dynamic_th" => Some("static_th"),
            "static_th" => Some("dynamic_th"),
            _ => None,
        };
        if let Some(o) = other.filter(|o| !change.sets.iter().any(|(k2, _)| k2 == o)) {
            t.remove(o);
        }
    }
    let new_text = toml::to_string(&top).map_err(|e| format!("{origin}: {e}"))?;
    let cfg = config::from_str(&new_text, origin).map_err(|e| e.to_string())?;
    let plan = plan::plan(&cfg, sw_response_ns).map_err(|e| e.to_string())?;
    if plan.mmu.headroom_policy == crate::mmu::HeadroomPolicy::Dsh {
        // DSH keeps a port's sum of its lossless PGs' shared bytes: which PGs are lossless
        // cannot change under it.
        let old = config::from_str(text, origin).ok().and_then(|c| plan::plan(&c, sw_response_ns).ok());
        let same = old.is_some_and(|o| o.ports.iter().zip(&plan.ports).all(|(a, b)| a.lossless_pgs == b.lossless_pgs));
        if !same {
            return Err(format!(
                "{origin}: {field}: which PGs are lossless cannot change live with headroom_policy = \"dsh\" (restart)"
            ));
        }
    }
    Ok(Applied { text: new_text, config: cfg, plan })
}

/// The limits to install at once when `new` shrinks some headroom or private size that is
/// not safe to shrink yet ([`crate::mmu::Mmu::headroom_shrink_safe`]): `new` with every
/// PG's `xoff` and `size` (and a shared headroom pool's size) at least `cur`'s, so nothing
/// in flight towards a paused PG loses its place and the shared segment is not
/// over-committed; the shrink follows once the PGs drained.
pub fn interim(cur: &MmuConfig, new: &MmuConfig) -> MmuConfig {
    let mut m = new.clone();
    for (n, c) in m.ports.iter_mut().zip(&cur.ports) {
        for (g, old) in n.pgs.iter_mut().zip(&c.pgs) {
            g.xoff = g.xoff.max(old.xoff);
            g.size = g.size.max(old.size);
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

    fn th(v: &str) -> Change {
        Change::new(Target::Profile("pg_lossless_profile".into()), &[("dynamic_th", v)])
    }

    fn cable(port: &str, len: &str) -> Change {
        Change::new(Target::Port(port.into()), &[("cable_length", len)])
    }

    #[test]
    fn params_round_trip() {
        for c in [
            th("-3"),
            cable("Ethernet0", "300m"),
            Change::new(Target::Profile("p".into()), &[("xoff", "20KiB"), ("xon", "4096"), ("size", "0")]),
            Change::new(Target::Wred("W".into()), &[("green_min_threshold", "1000"), ("ecn", "ecn_all")]),
            Change::new(Target::Pfcwd, &[("action", "forward"), ("detection_time", "400")]),
            Change::new(Target::Port("Ethernet0".into()), &[("pfc_enable", "3:4")]),
        ] {
            assert_eq!(Change::parse_param(&c.to_param()), Ok(c));
        }
        for bad in [
            "",
            "profile,p",
            "profile,p,x",
            "profile,p,pool=x",
            "xoff,p,1",
            "port,,cable_length=5m",
            "profile,p,xoff=1,xoff=2",
            "profile,p,xoff=",
            "pfcwd,x,action=drop",
        ] {
            let e = Change::parse_param(bad).unwrap_err();
            assert!(!e.contains('\n'), "{e}");
        }
        assert_eq!(th("-1").describe(), "buffer.profile.pg_lossless_profile.dynamic_th = -1");
        assert_eq!(cable("Ethernet0", "5m").describe(), "port Ethernet0 cable_length = 5m");
    }

    #[test]
    fn dynamic_th_and_cable_length_change_only_the_limits() {
        let cur = apply(TEXT, "t.toml", &cable("Ethernet0", "5m"), 10_000).unwrap();
        let th = apply(TEXT, "t.toml", &th("1"), 10_000).unwrap();
        assert_eq!(th.mmu().ports[0].pgs[3].threshold, crate::mmu::Threshold::Dynamic(1));
        assert_eq!(cur.mmu().ports[0].pgs[3].threshold, crate::mmu::Threshold::Dynamic(-2));
        let long = apply(&th.text, "t.toml", &cable("Ethernet0", "300m"), 10_000).unwrap();
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
    fn profile_xoff_xon_size_and_static_th() {
        let p = Target::Profile("pg_lossless_profile".into());
        let a = apply(
            TEXT,
            "t.toml",
            &Change::new(p.clone(), &[("xoff", "20000"), ("xon", "3000"), ("size", "8KiB")]),
            10_000,
        )
        .unwrap();
        let g = a.mmu().ports[1].pgs[4];
        assert_eq!((g.xoff, g.xon, g.size), (20000, 3000, 8192));
        assert!(a.text.contains("xoff = 20000") && a.text.contains("size = \"8KiB\""), "{}", a.text);
        // One threshold per profile: static_th replaces dynamic_th and back.
        let s = apply(&a.text, "t.toml", &Change::new(p.clone(), &[("static_th", "50000")]), 10_000).unwrap();
        assert_eq!(s.mmu().ports[0].pgs[3].threshold, crate::mmu::Threshold::Static(50000));
        let d = apply(&s.text, "t.toml", &Change::new(p, &[("dynamic_th", "0")]), 10_000).unwrap();
        assert_eq!(d.mmu().ports[0].pgs[3].threshold, crate::mmu::Threshold::Dynamic(0));
        // A private size that shrinks waits, as headroom does.
        let mid = interim(a.mmu(), &cur_mmu());
        assert_eq!(mid.ports[0].pgs[3].size, 8192);
    }

    #[test]
    fn pfc_enable_changes_the_lossless_pgs() {
        let pfc = |v: &str| Change::new(Target::Port("Ethernet4".into()), &[("pfc_enable", v)]);
        let one = apply(TEXT, "t.toml", &pfc("3"), 10_000).unwrap();
        assert_eq!((one.plan.ports[1].pfc_mask, one.plan.ports[1].lossless_pgs), (1 << 3, 1 << 3));
        assert_eq!(one.plan.ports[0].pfc_mask, 0b1_1000, "the other port keeps [3, 4]");
        assert!(one.text.contains("pfc_enable = [3]"), "{}", one.text);
        let none = apply(&one.text, "t.toml", &pfc("none"), 10_000).unwrap();
        assert_eq!((none.plan.ports[1].pfc_mask, none.plan.ports[1].lossless_pgs), (0, 0));
        // The shared buffer grows by the headroom PG 3 no longer reserves.
        assert!(none.plan.mmu.validate().unwrap().0 > one.plan.mmu.validate().unwrap().0);
        for (v, field) in [("3:x", "pfc_enable"), ("9", "pfc_enable")] {
            let e = apply(TEXT, "t.toml", &pfc(v), 10_000).unwrap_err();
            assert!(e.contains(field) && !e.contains('\n'), "{e}");
        }
        let dsh = TEXT.replace("total_size = \"12MiB\"", "total_size = \"12MiB\"\nheadroom_policy = \"dsh\"");
        let e = apply(&dsh, "t.toml", &pfc("3"), 10_000).unwrap_err();
        assert!(e.contains("dsh") && e.contains("port Ethernet4"), "{e}");
    }

    fn cur_mmu() -> MmuConfig {
        apply(TEXT, "t.toml", &th("-2"), 10_000).unwrap().plan.mmu
    }

    #[test]
    fn errors_are_one_line_naming_the_field() {
        let p = || Target::Profile("pg_lossless_profile".into());
        for (c, field) in [
            (th("8"), "dynamic_th"),
            (th("x"), "dynamic_th"),
            (Change::new(Target::Profile("nope".into()), &[("dynamic_th", "0")]), "buffer.profile.nope"),
            (cable("Ethernet9", "5m"), "Ethernet9"),
            (cable("Ethernet0", "5parsecs"), "cable_length"),
            // 80 km of headroom on two PGs does not fit an 8 MiB pool.
            (cable("Ethernet0", "80km"), "size"),
            (Change::new(p(), &[("xon", "lots")]), "xon"),
            (Change::new(Target::Pfcwd, &[("action", "drop")]), "pfcwd"),
            (Change::new(Target::Wred("W".into()), &[("ecn", "ecn_all")]), "qos.wred_profile.W"),
        ] {
            let e = apply(TEXT, "t.toml", &c, 10_000).unwrap_err();
            assert!(e.starts_with("t.toml: ") && e.contains(field) && !e.contains('\n'), "{c:?}: {e}");
        }
    }
}
