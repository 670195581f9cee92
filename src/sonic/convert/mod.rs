//! CONFIG_DB tables → pfcswitch's TOML configuration (a [`toml::Table`] that
//! [`crate::config::from_str`] then validates like any file), with a record of which
//! CONFIG_DB field each TOML value came from, so that a validation error names
//! `TABLE|key|field`, and one [`Note`] per table or field not implemented or approximated.

use super::error::{At, BResult, Bad};
use super::load::Db;
use super::portmap::PortMap;
use std::collections::{BTreeMap, HashMap};
use toml::{Table, Value};

mod buffer;
mod l3;
mod ports;
mod qos;

/// What the import could not carry over exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum NoteKind {
    /// A table or field pfcswitch does not implement: ignored (`--strict`: refused).
    Unsupported,
    /// Carried over with a difference the line explains.
    Approximated,
}

/// One line of the import report.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Note {
    pub kind: NoteKind,
    pub line: String,
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let k = match self.kind {
            NoteKind::Unsupported => "unsupported",
            NoteKind::Approximated => "approximated",
        };
        write!(f, "{k}: {}", self.line)
    }
}

/// Tables the import reads (every other table is reported as unsupported).
pub const TABLES: &[&str] = &[
    "DEVICE_METADATA",
    "PORT",
    "CABLE_LENGTH",
    "BUFFER_POOL",
    "BUFFER_PROFILE",
    "BUFFER_PG",
    "BUFFER_QUEUE",
    "BUFFER_PORT_INGRESS_PROFILE_LIST",
    "BUFFER_PORT_EGRESS_PROFILE_LIST",
    "DSCP_TO_TC_MAP",
    "DOT1P_TO_TC_MAP",
    "TC_TO_PRIORITY_GROUP_MAP",
    "TC_TO_QUEUE_MAP",
    "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP",
    "MAP_PFC_PRIORITY_TO_QUEUE",
    "PORT_QOS_MAP",
    "QUEUE",
    "SCHEDULER",
    "WRED_PROFILE",
    "PFC_WD",
    "VLAN",
    "VLAN_MEMBER",
    "VLAN_INTERFACE",
    "INTERFACE",
    "LOOPBACK_INTERFACE",
    "BGP_NEIGHBOR",
    "BGP_GLOBALS",
    "BGP_GLOBALS_AF_NETWORK",
];

/// Fields with no meaning for a software port or switch, read and dropped without a
/// line (docs/sonic.md lists them).
const INFORMATIONAL: &[(&str, &str)] = &[
    ("PORT", "alias"),
    ("PORT", "lanes"),
    ("PORT", "index"),
    ("PORT", "description"),
    ("DEVICE_METADATA", "hwsku"),
    ("DEVICE_METADATA", "platform"),
    ("DEVICE_METADATA", "type"),
    ("DEVICE_METADATA", "deployment_id"),
];

/// The conversion's state: the database, the TOML being built, where each TOML value
/// came from, and the report.
pub(crate) struct Cx<'a> {
    pub db: &'a Db,
    pub map: Option<&'a PortMap>,
    pub out: Table,
    pub notes: Vec<Note>,
    /// TOML field path → CONFIG_DB place.
    pub prov: Vec<(String, At)>,
    /// SONiC port names in `[[port]]` order.
    pub ports: Vec<String>,
    pub port_index: HashMap<String, usize>,
    /// The `[[port]]` tables, in order.
    pub port_tables: Vec<Table>,
    /// The TC → PG and TC → queue maps in force (after qos), for the buffer bindings.
    pub tc_to_pg: [u8; 8],
}

impl Cx<'_> {
    pub fn note(&mut self, kind: NoteKind, line: impl Into<String>) {
        // One line whatever the file's names hold.
        self.notes.push(Note { kind, line: crate::sonic::error::one_line(&line.into()) });
    }

    pub fn prov(&mut self, path: impl Into<String>, at: At) {
        self.prov.push((path.into(), at));
    }

    /// A section of the output, created on first use.
    pub fn section(&mut self, name: &str) -> &mut Table {
        section(&mut self.out, name)
    }

    /// The port's index, or an error at `at` naming the port.
    pub fn port(&self, name: &str, at: &At) -> BResult<usize> {
        self.port_index.get(name).copied().ok_or_else(|| Bad::new(at.clone(), format!("port '{name}' is not in PORT")))
    }
}

/// `t[name]` as a table, created on first use.
pub(crate) fn section<'t>(t: &'t mut Table, name: &str) -> &'t mut Table {
    let v = t.entry(name.to_string()).or_insert_with(|| Value::Table(Table::new()));
    match v {
        Value::Table(t) => t,
        _ => unreachable!("sections are tables"),
    }
}

/// `parent.key`, quoting `key` when it is not a bare TOML key (as the config's errors do).
pub(crate) fn join(parent: &str, key: &str) -> String {
    let bare = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    let k = if bare { key.to_string() } else { format!("{key:?}") };
    if parent.is_empty() {
        k
    } else {
        format!("{parent}.{k}")
    }
}

/// A non-negative integer field.
pub(crate) fn uint(v: &str, at: &At) -> BResult<i64> {
    v.trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| i64::try_from(n).ok())
        .ok_or_else(|| Bad::new(at.clone(), format!("'{v}' is not a non-negative integer")))
}

/// `"3,4"` → `[3, 4]` (priorities or queues 0..=7); `""` → `[]`.
pub(crate) fn prio_list(v: &str, at: &At) -> BResult<Vec<i64>> {
    let mut out: Vec<i64> = Vec::new();
    for s in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let n = uint(s, at)?;
        if n > 7 {
            return Err(Bad::new(at.clone(), format!("{n} in '{v}' is not a priority 0..=7")));
        }
        if out.contains(&n) {
            return Err(Bad::new(at.clone(), format!("{n} appears twice in '{v}'")));
        }
        out.push(n);
    }
    Ok(out)
}

/// Port names in SONiC order: by the name's text, then its trailing number
/// (`Ethernet4` before `Ethernet12`).
pub(crate) fn natural_key(name: &str) -> (String, u64, String) {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (head, num) = name.split_at(name.len() - digits);
    (head.to_string(), num.parse().unwrap_or(0), name.to_string())
}

/// The converted configuration before validation.
pub(crate) struct Converted {
    pub toml: Table,
    pub notes: Vec<Note>,
    pub prov: Vec<(String, At)>,
}

pub(crate) fn convert(db: &Db, map: Option<&PortMap>) -> BResult<Converted> {
    let mut cx = Cx {
        db,
        map,
        out: Table::new(),
        notes: Vec::new(),
        prov: Vec::new(),
        ports: Vec::new(),
        port_index: HashMap::new(),
        port_tables: Vec::new(),
        tc_to_pg: crate::config::QosConfig::default().tc_to_pg,
    };
    if let Some(m) = map {
        for (k, v) in &m.sections {
            cx.out.insert(k.clone(), v.clone());
        }
    }
    ports::ports(&mut cx)?;
    qos::qos(&mut cx)?;
    ports::pfc(&mut cx)?;
    buffer::buffer(&mut cx)?;
    qos::pfcwd(&mut cx)?;
    l3::l3(&mut cx)?;
    let tables = std::mem::take(&mut cx.port_tables);
    cx.out.insert("port".into(), Value::Array(tables.into_iter().map(Value::Table).collect()));
    report_unused(&mut cx);
    let mut notes = cx.notes;
    notes.sort();
    notes.dedup();
    Ok(Converted { toml: cx.out, notes, prov: cx.prov })
}

/// One line per table the import does not read, and per (table, field) no converter read.
fn report_unused(cx: &mut Cx) {
    let db = cx.db;
    for (t, keys) in &db.tables {
        if !TABLES.contains(&t.as_str()) {
            let n = keys.len();
            cx.note(
                NoteKind::Unsupported,
                format!("{t}: table not supported, ignored ({n} key{})", if n == 1 { "" } else { "s" }),
            );
        }
    }
    for (t, f) in INFORMATIONAL {
        for k in db.keys(t) {
            db.get(t, k, f);
        }
    }
    let unused: BTreeMap<(String, String), Vec<String>> = db.unused(TABLES);
    for ((t, f), keys) in unused {
        let line = if keys.len() == 1 {
            format!("{t}|{}|{f}: field not supported, ignored", keys[0])
        } else {
            format!("{t}|*|{f}: field not supported, ignored ({} keys, e.g. {t}|{})", keys.len(), keys[0])
        };
        cx.note(NoteKind::Unsupported, line);
    }
}

/// The CONFIG_DB place a configuration error's field path came from: the longest
/// recorded path that is the error's path or a parent of it.
/// A key's place and a longer path (a field the file does not have, e.g. a missing one)
/// name that field: TOML field names are CONFIG_DB's.
pub(crate) fn origin_of(prov: &[(String, At)], path: &str) -> Option<At> {
    let (p, at) = prov
        .iter()
        .filter(|(p, _)| {
            path == p || (path.starts_with(p.as_str()) && matches!(path.as_bytes().get(p.len()), Some(b'.' | b'[')))
        })
        .max_by_key(|(p, _)| p.len())?;
    let mut at = at.clone();
    if at.key.is_some() && at.field.is_none() {
        let rest = path[p.len()..].trim_start_matches('.');
        let field = rest.split(['.', '[']).next().unwrap_or("").trim_matches('"');
        if !field.is_empty() {
            at.field = Some(field.to_string());
        }
    }
    Some(at)
}
