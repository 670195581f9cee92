//! Reading a view from the switch: the port names, then one port per command, merged;
//! nested replies unflattened; a router table page by page.

use serde_json::{Map, Value};

use super::commands::PORTS;
use super::{Fetch, View};

/// Reading a view from the switch failed.
#[derive(Debug, thiserror::Error)]
pub enum ShowError {
    #[error("{0}")]
    Query(String),
    /// The switch answered with an error object.
    #[error("{cmd}: {msg}")]
    Switch { cmd: String, msg: String },
    #[error("{cmd}: unexpected reply {reply} (is the switch the same pfcswitch version?)")]
    Unexpected { cmd: String, reply: String },
}

/// A view as read from the switch, and when that switch started.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub value: Value,
    pub start_time_ns: u64,
}

/// Read `view` through `query` (sends one telemetry command, returns the reply's data):
/// the port names first, then each port on its own, merged. One port per reply keeps
/// every reply under DPDK's 16 KB limit, so the result is complete for any number of ports.
pub fn fetch<E: std::fmt::Display>(
    view: View,
    query: &mut dyn FnMut(&str) -> Result<Value, E>,
) -> Result<Reading, ShowError> {
    let mut ask = |cmd: &str| -> Result<Map<String, Value>, ShowError> {
        match query(cmd).map_err(|e| ShowError::Query(e.to_string()))? {
            Value::Object(m) => match m.get("error") {
                Some(e) => Err(ShowError::Switch {
                    cmd: cmd.to_string(),
                    msg: e.as_str().map_or_else(|| e.to_string(), String::from),
                }),
                None => Ok(m),
            },
            other => Err(ShowError::Unexpected { cmd: cmd.to_string(), reply: other.to_string() }),
        }
    };
    let ports = ask(PORTS.name)?;
    let names: Vec<String> = match ports.get("ports") {
        Some(Value::Array(a)) => a.iter().filter_map(|n| n.as_str().map(String::from)).collect(),
        _ => {
            return Err(ShowError::Unexpected { cmd: PORTS.name.to_string(), reply: Value::Object(ports).to_string() })
        }
    };
    let start_time_ns = ports.get("start_time_ns").and_then(Value::as_u64).unwrap_or(0);
    let value = if view.per_port() {
        let mut all = Map::new();
        for n in &names {
            all.extend(ask(&format!("{},{n}", view.command()))?);
        }
        if view.nested() {
            for v in all.values_mut() {
                *v = unflatten(v);
            }
        }
        all
    } else {
        ask(view.command())?
    };
    Ok(Reading { value: Value::Object(value), start_time_ns })
}

/// The separator of flattened keys (`dpdk::telemetry` flattens with `/`: DPDK 22.11 keeps
/// only letters, digits, `_` and `/` in a dictionary key).
pub const FLAT_SEP: char = '/';

/// An object with `a/b/c` keys (DPDK telemetry allows one level of containers; deeper
/// objects arrive flattened) nested again; objects whose keys are 0..n become arrays.
pub fn unflatten(v: &Value) -> Value {
    fn insert(m: &mut Map<String, Value>, path: &[&str], x: Value) {
        match path {
            [] => {}
            [k] => {
                m.insert(k.to_string(), x);
            }
            [k, rest @ ..] => {
                let e = m.entry(k.to_string()).or_insert_with(|| Value::Object(Map::new()));
                if !e.is_object() {
                    *e = Value::Object(Map::new());
                }
                if let Value::Object(inner) = e {
                    insert(inner, rest, x);
                }
            }
        }
    }
    fn arrays(v: Value) -> Value {
        match v {
            Value::Object(m) => {
                let is_array = !m.is_empty() && (0..m.len()).all(|i| m.contains_key(&i.to_string()));
                if is_array {
                    let mut m = m;
                    Value::Array(
                        (0..m.len()).map(|i| arrays(m.remove(&i.to_string()).unwrap_or(Value::Null))).collect(),
                    )
                } else {
                    Value::Object(m.into_iter().map(|(k, x)| (k, arrays(x))).collect())
                }
            }
            x => x,
        }
    }
    let Value::Object(flat) = v else { return v.clone() };
    let mut out = Map::new();
    for (k, x) in flat {
        let path: Vec<&str> = k.split(FLAT_SEP).collect();
        insert(&mut out, &path, x.clone());
    }
    arrays(Value::Object(out))
}

/// Every row of a [`Fetch::Rows`] view, page by page through `query` (one telemetry
/// command each); a view of another kind has none.
pub fn fetch_rows<E: std::fmt::Display>(
    view: View,
    query: &mut dyn FnMut(&str) -> Result<Value, E>,
) -> Result<Vec<String>, ShowError> {
    let Fetch::Rows { family: fam, .. } = view.def().fetch else { return Ok(Vec::new()) };
    let cmd = view.command();
    let mut rows = Vec::new();
    loop {
        let ask = format!("{cmd},{fam},{}", rows.len());
        let v = query(&ask).map_err(|e| ShowError::Query(e.to_string()))?;
        if let Some(e) = v.get("error") {
            return Err(ShowError::Switch {
                cmd: cmd.into(),
                msg: e.as_str().map_or_else(|| e.to_string(), String::from),
            });
        }
        let (Some(total), Some(Value::Array(page))) = (v.get("total").and_then(Value::as_u64), v.get("rows")) else {
            return Err(ShowError::Unexpected { cmd: cmd.into(), reply: v.to_string() });
        };
        rows.extend(page.iter().filter_map(|r| r.as_str().map(String::from)));
        if page.is_empty() || rows.len() as u64 >= total {
            return Ok(rows);
        }
    }
}
