//! CONFIG_DB files → one merged database of `TABLE → key → field → value`.
//!
//! Both shapes SONiC users hold are read, even mixed in one file: the nested
//! `config_db.json` (`{"PORT": {"Ethernet0": {…}}}`) and the flat `"TABLE|key"` form of a
//! redis dump (`{"PORT|Ethernet0": {…}}`, also as `sonic-db-dump` writes it:
//! `{"PORT|Ethernet0": {"type": "hash", "value": {…}}}`). Values are kept as CONFIG_DB
//! keeps them, strings: numbers and booleans are written out, lists (`"members": [...]`,
//! redis' `"members@": "a,b"`) become comma-separated. A port table keyed by a list of
//! ports, as older templates write (`"Ethernet0,Ethernet4|3-4"`), becomes one key per port.
//! Several files merge like
//! `sonic-cfggen -j a.json -j b.json`: a later file's field replaces an earlier one's.

use super::error::{one_line, At, Bad, SonicError};
use serde_json::Value;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

/// One field's value and the file (index into [`Db::files`]) it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldValue {
    pub value: String,
    pub file: usize,
}

/// One key of a table: its fields, and the file that first named it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entry {
    pub file: usize,
    pub fields: BTreeMap<String, FieldValue>,
}

/// The merged CONFIG_DB. Reading a field through [`Db::get`] marks it used, so that
/// whatever no converter read can be reported ([`Db::unused`]).
#[derive(Debug, Default)]
pub struct Db {
    pub files: Vec<String>,
    pub tables: BTreeMap<String, BTreeMap<String, Entry>>,
    used: RefCell<BTreeSet<(String, String, String)>>,
}

impl Db {
    /// Parse and merge `(name, text)` pairs in order.
    pub fn from_texts(files: &[(String, String)]) -> Result<Db, SonicError> {
        let mut db = Db::default();
        for (i, (name, text)) in files.iter().enumerate() {
            db.files.push(name.clone());
            db.merge(i, name, text)?;
        }
        Ok(db)
    }

    /// Read and merge files.
    pub fn load(paths: &[std::path::PathBuf]) -> Result<Db, SonicError> {
        let mut texts = Vec::new();
        for p in paths {
            let name = p.display().to_string();
            let text = std::fs::read_to_string(p)
                .map_err(|e| SonicError::Io { file: one_line(&name), msg: one_line(&e.to_string()) })?;
            texts.push((name, text));
        }
        Db::from_texts(&texts)
    }

    fn merge(&mut self, file: usize, name: &str, text: &str) -> Result<(), SonicError> {
        let top: Value = serde_json::from_str(text).map_err(|e| SonicError::Syntax {
            file: one_line(name),
            line: e.line(),
            column: e.column(),
            msg: one_line(e.to_string().split(" at line ").next().unwrap_or_default()),
        })?;
        let bad = |at: String, msg: &str| SonicError::Field { file: one_line(name), at, msg: msg.to_string() };
        let Value::Object(top) = top else {
            return Err(SonicError::Syntax {
                file: one_line(name),
                line: 1,
                column: 1,
                msg: "expected an object of tables ({\"TABLE\": {...}} or {\"TABLE|key\": {...}})".into(),
            });
        };
        for (tk, tv) in top {
            if let Some((table, key)) = tk.split_once('|') {
                let fields = dump_value(&tv).ok_or_else(|| bad(tk.clone(), "expected an object of fields"))?;
                self.merge_entry(file, name, table, key, fields)?;
            } else {
                let Value::Object(keys) = tv else {
                    return Err(bad(tk, "expected an object of keys"));
                };
                for (k, v) in keys {
                    let fields =
                        dump_value(&v).ok_or_else(|| bad(format!("{tk}|{k}"), "expected an object of fields"))?;
                    self.merge_entry(file, name, &tk, &k, fields)?;
                }
            }
        }
        Ok(())
    }

    fn merge_entry(
        &mut self,
        file: usize,
        name: &str,
        table: &str,
        key: &str,
        fields: &serde_json::Map<String, Value>,
    ) -> Result<(), SonicError> {
        // Older templates key a port table by a list of ports ("Ethernet0,Ethernet4|3-4"):
        // one entry per port, as CONFIG_DB holds it today.
        if PORT_LIST_TABLES.contains(&table) {
            let (ports, rest) = match key.split_once('|') {
                Some((p, r)) => (p, Some(r)),
                None => (key, None),
            };
            if ports.contains(',') {
                for p in ports.split(',').map(str::trim) {
                    let k = match rest {
                        Some(r) => format!("{p}|{r}"),
                        None => p.to_string(),
                    };
                    self.merge_entry(file, name, table, &k, fields)?;
                }
                return Ok(());
            }
        }
        if table.is_empty() || key.is_empty() {
            return Err(SonicError::Field {
                file: one_line(name),
                at: format!("{table}|{key}"),
                msg: "empty table or key name".into(),
            });
        }
        let entry = self
            .tables
            .entry(table.to_string())
            .or_default()
            .entry(key.to_string())
            .or_insert_with(|| Entry { file, fields: BTreeMap::new() });
        for (f, v) in fields {
            let fname = f.strip_suffix('@').unwrap_or(f);
            let value = scalar(v).ok_or_else(|| SonicError::Field {
                file: one_line(name),
                at: At::field(table, key, fname).to_string(),
                msg: "expected a string, a number, a boolean or a list of them".into(),
            })?;
            entry.fields.insert(fname.to_string(), FieldValue { value, file });
        }
        Ok(())
    }

    /// The keys of `table` (empty if absent).
    pub fn keys(&self, table: &str) -> Vec<&str> {
        self.tables.get(table).map(|t| t.keys().map(String::as_str).collect()).unwrap_or_default()
    }

    pub fn has(&self, table: &str) -> bool {
        self.tables.get(table).is_some_and(|t| !t.is_empty())
    }

    pub fn entry(&self, table: &str, key: &str) -> Option<&Entry> {
        self.tables.get(table)?.get(key)
    }

    /// A field's value, marked used.
    pub fn get(&self, table: &str, key: &str, field: &str) -> Option<&str> {
        let v = self.entry(table, key)?.fields.get(field)?;
        self.used.borrow_mut().insert((table.into(), key.into(), field.into()));
        Some(&v.value)
    }

    /// Mark every field of a key used (a key consumed as a whole, e.g. a QoS map).
    pub fn use_all(&self, table: &str, key: &str) {
        if let Some(e) = self.entry(table, key) {
            for f in e.fields.keys() {
                self.used.borrow_mut().insert((table.into(), key.into(), f.clone()));
            }
        }
    }

    /// The fields of the given tables that nothing read: `(table, field) → keys`.
    pub fn unused(&self, tables: &[&str]) -> BTreeMap<(String, String), Vec<String>> {
        let used = self.used.borrow();
        let mut out: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
        for t in tables {
            for (k, e) in self.tables.get(*t).into_iter().flatten() {
                for f in e.fields.keys() {
                    if !used.contains(&(t.to_string(), k.clone(), f.clone())) {
                        out.entry((t.to_string(), f.clone())).or_default().push(k.clone());
                    }
                }
            }
        }
        out
    }

    /// The file a place comes from: the field's, else the key's, else the first file.
    pub fn file_of(&self, at: &At) -> &str {
        let entry = at.key.as_deref().and_then(|k| self.entry(&at.table, k));
        let idx = match (entry, at.field.as_deref()) {
            (Some(e), Some(f)) => e.fields.get(f).map_or(e.file, |v| v.file),
            (Some(e), None) => e.file,
            _ => 0,
        };
        self.files.get(idx).map_or("<none>", String::as_str)
    }

    /// A field error with its file.
    pub(crate) fn error(&self, bad: Bad) -> SonicError {
        SonicError::Field { file: one_line(self.file_of(&bad.at)), at: one_line(&bad.at.to_string()), msg: bad.msg }
    }
}

/// Tables whose key starts with a port name (a list of ports in older templates).
const PORT_LIST_TABLES: &[&str] = &[
    "PORT_QOS_MAP",
    "QUEUE",
    "BUFFER_PG",
    "BUFFER_QUEUE",
    "BUFFER_PORT_INGRESS_PROFILE_LIST",
    "BUFFER_PORT_EGRESS_PROFILE_LIST",
    "PFC_WD",
];

/// The fields of one key: an object, or a `sonic-db-dump` hash record's `value`.
fn dump_value(v: &Value) -> Option<&serde_json::Map<String, Value>> {
    let o = v.as_object()?;
    if o.get("type").and_then(Value::as_str) == Some("hash") {
        if let Some(Value::Object(inner)) = o.get("value") {
            return Some(inner);
        }
    }
    Some(o)
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Array(a) => {
            a.iter().map(|x| scalar(x).filter(|_| !x.is_array())).collect::<Option<Vec<_>>>().map(|v| v.join(","))
        }
        Value::Null | Value::Object(_) => None,
    }
}

/// `"[BUFFER_PROFILE|name]"` (a reference in the older format) or `"name"` → `name`;
/// the bracketed form must name `table`.
pub(crate) fn reference(v: &str, table: &str, at: &At) -> Result<String, Bad> {
    let v = v.trim();
    if let Some(inner) = v.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
        match inner.split_once('|') {
            Some((t, name)) if t == table && !name.is_empty() => Ok(name.to_string()),
            _ => Err(Bad::new(
                at.clone(),
                format!("'{v}' is not a reference to {table} ('[{table}|<name>]' or '<name>')"),
            )),
        }
    } else if v.is_empty() {
        Err(Bad::new(at.clone(), format!("empty reference, expected a {table} name")))
    } else {
        Ok(v.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(files: &[&str]) -> Db {
        let f: Vec<(String, String)> =
            files.iter().enumerate().map(|(i, t)| (format!("f{i}.json"), t.to_string())).collect();
        Db::from_texts(&f).unwrap()
    }

    #[test]
    fn nested_flat_and_dump_forms_merge() {
        let d = db(&[
            r#"{"PORT": {"Ethernet0": {"speed": "100000", "mtu": 9100}}}"#,
            r#"{"PORT|Ethernet0": {"mtu": "1500"}, "PORT|Ethernet4": {"type": "hash", "value": {"speed": "25000"}},
                "VLAN|Vlan10": {"members@": "Ethernet0,Ethernet4"}, "VLAN|Vlan20": {"members": ["Ethernet8"]}}"#,
        ]);
        assert_eq!(d.get("PORT", "Ethernet0", "speed"), Some("100000"));
        assert_eq!(d.get("PORT", "Ethernet0", "mtu"), Some("1500"));
        assert_eq!(d.file_of(&At::field("PORT", "Ethernet0", "mtu")), "f1.json");
        assert_eq!(d.file_of(&At::field("PORT", "Ethernet0", "speed")), "f0.json");
        assert_eq!(d.get("PORT", "Ethernet4", "speed"), Some("25000"));
        assert_eq!(d.get("VLAN", "Vlan10", "members"), Some("Ethernet0,Ethernet4"));
        assert_eq!(d.get("VLAN", "Vlan20", "members"), Some("Ethernet8"));
        let unused = d.unused(&["PORT"]);
        assert!(unused.is_empty(), "{unused:?}");
    }

    #[test]
    fn port_lists_in_keys_become_one_entry_per_port() {
        let d = db(&[r#"{"BUFFER_PG": {"Ethernet0,Ethernet4|3-4": {"profile": "p"}},
                         "PORT_QOS_MAP": {"Ethernet0,Ethernet4": {"pfc_enable": "3,4"}},
                         "PORT": {"Ethernet0,Ethernet4": {"speed": "1"}}}"#]);
        assert_eq!(d.keys("BUFFER_PG"), ["Ethernet0|3-4", "Ethernet4|3-4"]);
        assert_eq!(d.keys("PORT_QOS_MAP"), ["Ethernet0", "Ethernet4"]);
        assert_eq!(d.keys("PORT"), ["Ethernet0,Ethernet4"], "PORT keys are names, not lists");
    }

    #[test]
    fn shape_errors_are_one_line() {
        let e = Db::from_texts(&[("a.json".into(), "{\"PORT\": [1]}".into())]).unwrap_err();
        assert_eq!(e.to_string(), "a.json: PORT: expected an object of keys");
        let e = Db::from_texts(&[("a.json".into(), "{\"PORT\": {\"E0\": {\"x\": {}}}}".into())]).unwrap_err();
        assert_eq!(e.to_string(), "a.json: PORT|E0|x: expected a string, a number, a boolean or a list of them");
        let e = Db::from_texts(&[("a.json".into(), "{\n\"PORT\": }".into())]).unwrap_err();
        assert!(e.to_string().starts_with("a.json: line 2, column "), "{e}");
        assert_eq!(e.to_string().lines().count(), 1);
        // A table named with line breaks (JSON escapes), as the fuzzer found: still one line.
        let crash = "{\"\u{00d3}&\\r\\n\\r\\n[[[\\n\\n\": 6}";
        let e = Db::from_texts(&[("a.json".into(), crash.into())]).unwrap_err();
        assert!(!e.to_string().contains('\n'), "{e:?}");
    }

    #[test]
    fn references() {
        let at = At::field("BUFFER_PG", "Ethernet0|3-4", "profile");
        assert_eq!(reference("[BUFFER_PROFILE|p1]", "BUFFER_PROFILE", &at).unwrap(), "p1");
        assert_eq!(reference("p1", "BUFFER_PROFILE", &at).unwrap(), "p1");
        assert!(reference("[BUFFER_POOL|p1]", "BUFFER_PROFILE", &at).is_err());
    }
}
