//! The import error: one line, `<file>: <TABLE|key|field>: <what is wrong>`.

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

/// Why a SONiC configuration cannot be imported. `Display` is always one line: whatever
/// a file's names hold (a JSON key may carry `\n`), line breaks are collapsed there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SonicError {
    /// A file could not be read.
    Io { file: String, msg: String },
    /// Not JSON, or not CONFIG_DB's shape.
    Syntax { file: String, line: usize, column: usize, msg: String },
    /// A table, key or field is missing, malformed, inconsistent, or means something
    /// pfcswitch would do differently.
    Field { file: String, at: String, msg: String },
    /// The port map (`--ports`).
    PortMap { file: String, msg: String },
}

impl std::fmt::Display for SonicError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let s = match self {
            SonicError::Io { file, msg } => format!("{file}: cannot read: {msg}"),
            SonicError::Syntax { file, line, column, msg } => format!("{file}: line {line}, column {column}: {msg}"),
            SonicError::Field { file, at, msg } => format!("{file}: {at}: {msg}"),
            SonicError::PortMap { file, msg } => format!("{file}: {msg}"),
        };
        f.write_str(&one_line(&s))
    }
}

impl std::error::Error for SonicError {}

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
