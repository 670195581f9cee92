//! The import error: one line, `<file>: <TABLE|key|field>: <what is wrong>`.

use thiserror::Error;

/// Where in CONFIG_DB a value lives: `TABLE|key|field` (`field` absent for a whole key,
/// `key` absent for a whole table).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct At {
    pub table: String,
    pub key: Option<String>,
    pub field: Option<String>,
}

impl At {
    pub fn table(table: &str) -> At {
        At { table: table.to_string(), key: None, field: None }
    }
    pub fn key(table: &str, key: &str) -> At {
        At { table: table.to_string(), key: Some(key.to_string()), field: None }
    }
    pub fn field(table: &str, key: &str, field: &str) -> At {
        At { table: table.to_string(), key: Some(key.to_string()), field: Some(field.to_string()) }
    }
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(&self.table)?;
        for part in [&self.key, &self.field].into_iter().flatten() {
            write!(f, "|{part}")?;
        }
        Ok(())
    }
}

/// Why a SONiC configuration cannot be imported. `Display` is always one line.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SonicError {
    /// A file could not be read.
    #[error("{file}: cannot read: {msg}")]
    Io { file: String, msg: String },
    /// Not JSON, or not CONFIG_DB's shape.
    #[error("{file}: line {line}, column {column}: {msg}")]
    Syntax { file: String, line: usize, column: usize, msg: String },
    /// A table, key or field is missing, malformed, inconsistent, or means something
    /// pfcswitch would do differently.
    #[error("{file}: {at}: {msg}")]
    Field { file: String, at: String, msg: String },
    /// The port map (`--ports`).
    #[error("{file}: {msg}")]
    PortMap { file: String, msg: String },
}

impl SonicError {
    /// `TABLE|key|field` of a field error.
    pub fn at(&self) -> Option<&str> {
        match self {
            SonicError::Field { at, .. } => Some(at),
            _ => None,
        }
    }
}

/// Collapse line breaks so that a message is one line.
pub(crate) fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A field error before the file is known: resolved by [`super::load::Db::error`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bad {
    pub at: At,
    pub msg: String,
}

impl Bad {
    pub fn new(at: At, msg: impl AsRef<str>) -> Bad {
        Bad { at, msg: one_line(msg.as_ref()) }
    }
}

pub(crate) type BResult<T> = Result<T, Bad>;
