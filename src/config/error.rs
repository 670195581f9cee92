//! The configuration error: one line, `<file>: <field path>: <what is wrong>`.

use thiserror::Error;

/// A configuration error. Its `Display` is always exactly one line:
///
/// * `<file>: cannot read: <io error>`
/// * `<file>: line <l>, column <c>: <TOML syntax error>`
/// * `<file>: <field path>: <what is wrong>`, e.g.
///   `dpdk-config/bad.toml: port[1].speed: unknown unit 'X' in '100X' (expected ...)`
///
/// Field paths use TOML names: `port[1].speed` (index into the `[[port]]` array, from 0),
/// `lcores.worker[0].rx[1]`, `buffer.pool.ingress_lossless_pool.size`,
/// `buffer.pg."Ethernet0|3-4"` (keys that are not bare TOML keys are quoted).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{file}: cannot read: {msg}")]
    Io { file: String, msg: String },
    /// The text is not valid TOML.
    #[error("{file}: line {line}, column {column}: {msg}")]
    Syntax { file: String, line: usize, column: usize, msg: String },
    /// A field is missing, unknown, of the wrong type, or fails validation.
    #[error("{file}: {path}: {msg}")]
    Field { file: String, path: String, msg: String },
}

impl ConfigError {
    /// The file (the `origin` given to [`super::from_str`], or the path given to
    /// [`super::load`]).
    pub fn file(&self) -> &str {
        match self {
            ConfigError::Io { file, .. } | ConfigError::Syntax { file, .. } | ConfigError::Field { file, .. } => file,
        }
    }

    /// The field path (`port[1].speed`) for field errors.
    pub fn field_path(&self) -> Option<&str> {
        match self {
            ConfigError::Field { path, .. } => Some(path),
            _ => None,
        }
    }

    /// The message without file and path.
    pub fn message(&self) -> &str {
        match self {
            ConfigError::Io { msg, .. } | ConfigError::Syntax { msg, .. } | ConfigError::Field { msg, .. } => msg,
        }
    }
}

/// A field error before the file name is attached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldError {
    pub path: String,
    pub msg: String,
}

impl FieldError {
    pub fn new(path: impl Into<String>, msg: impl Into<String>) -> FieldError {
        FieldError { path: path.into(), msg: one_line(&msg.into()) }
    }

    pub fn with_file(self, file: &str) -> ConfigError {
        ConfigError::Field { file: one_line(file), path: one_line(&self.path), msg: self.msg }
    }
}

/// Collapse any line breaks and runs of whitespace so that a message is one line.
pub(crate) fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut space = false;
    for c in s.trim().chars() {
        if c.is_whitespace() {
            space = true;
        } else {
            if space && !out.is_empty() {
                out.push(' ');
            }
            space = false;
            out.push(c);
        }
    }
    out
}

/// `parent.key`, quoting `key` when it is not a bare TOML key.
pub(crate) fn join(parent: &str, key: &str) -> String {
    let bare = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    let k = if bare { key.to_string() } else { format!("{key:?}") };
    if parent.is_empty() {
        k
    } else {
        format!("{parent}.{k}")
    }
}

pub(crate) type FResult<T> = Result<T, FieldError>;
