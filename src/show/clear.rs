//! `clear`: snapshots of a view, kept per instance, and what `show` displays since one.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::View;

/// Which switch a reading came from: the pid (from the telemetry greeting) and the start
/// time. A `clear` snapshot applies only to the instance it was taken of; a switch
/// restarted under the same file prefix starts from zero and must show its raw counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Instance {
    pub pid: u64,
    pub start_time_ns: u64,
}

/// What `clear` stores.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Snapshot {
    pub instance: Instance,
    pub data: Value,
}

/// Where `clear` keeps the snapshot of `view`: in `dir`, the instance's own runtime
/// directory (DPDK creates it 0700 for its user), never a shared temporary directory.
pub fn snapshot_path(dir: &Path, view: View) -> PathBuf {
    dir.join(format!("pfcswitch-clear{}.json", view.command().replace('/', "_")))
}

/// Write a snapshot without following links or trusting what is there: a fresh file
/// (O_EXCL|O_NOFOLLOW, mode 0600) beside `path`, then renamed over it.
pub fn write_snapshot(path: &Path, s: &Snapshot) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let text = serde_json::to_string(s).map_err(std::io::Error::other)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)?;
    let written = f.write_all(text.as_bytes()).and_then(|_| f.sync_all()).and_then(|_| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// The snapshot at `path`, if there is a readable one that the caller's user owns and that
/// is not a symbolic link (an older format counts as none).
pub fn read_snapshot(path: &Path) -> Option<Snapshot> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let mut f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path).ok()?;
    let me = std::fs::metadata("/proc/self").ok()?.uid();
    let meta = f.metadata().ok()?;
    if meta.uid() != me || !meta.is_file() {
        return None;
    }
    let mut text = String::new();
    f.read_to_string(&mut text).ok()?;
    serde_json::from_str(&text).ok()
}

/// What `show` displays: the reading less the snapshot, when the view is clearable and
/// the snapshot was taken of this same instance.
pub fn since_clear(view: View, cur: Value, snap: Option<&Snapshot>, now: &Instance) -> Value {
    match snap {
        Some(s) if view.clearable() && s.instance == *now => subtract(&cur, &s.data),
        _ => cur,
    }
}

/// Keys that are gauges or watermarks (or not counts at all): `clear` leaves them alone.
fn is_gauge(key: &str) -> bool {
    const SUFFIXES: [&str; 11] = [
        "_depth",
        "occupancy",
        "_watermark",
        "_off",
        "threshold",
        "_in_flight",
        "size",
        "_used",
        "_ns",
        "_ms",
        "_status",
    ];
    SUFFIXES.iter().any(|s| key.ends_with(s))
}

/// `cur − snapshot` for every counter leaf; gauges as they are now (counters only go up;
/// a counter below its snapshot shows raw).
pub fn subtract(cur: &Value, snap: &Value) -> Value {
    match (cur, snap) {
        (Value::Object(c), Value::Object(s)) => Value::Object(
            c.iter()
                .map(|(k, v)| {
                    let d = match s.get(k) {
                        Some(sv) if !is_gauge(k) => subtract(v, sv),
                        _ => v.clone(),
                    };
                    (k.clone(), d)
                })
                .collect(),
        ),
        (Value::Number(c), Value::Number(s)) => match (c.as_u64(), s.as_u64()) {
            (Some(a), Some(b)) if a >= b => (a - b).into(),
            _ => cur.clone(),
        },
        _ => cur.clone(),
    }
}

/// `clear watermarks` (also SONiC's `clear queue watermark` and `clear priority-group
/// watermark`, which here reset every MMU watermark together): the telemetry command.
pub fn watermark_clear_command(words: &[String]) -> Option<&'static str> {
    let w: Vec<&str> = words.iter().map(|s| s.as_str()).collect();
    match w.as_slice() {
        ["watermarks"] | ["queue", "watermark", ..] | ["priority-group", "watermark", ..] => {
            Some(super::commands::WATERMARK_CLEAR.name)
        }
        _ => None,
    }
}

/// `clear fdb all` / `clear fdb vlan Vlan1000` (SONiC's `sonic-clear fdb ...`): the
/// telemetry command that removes those entries; None if the words are not an FDB clear.
pub fn fdb_clear_command(words: &[String]) -> Option<Result<String, String>> {
    let w: Vec<&str> = words.iter().map(|s| s.as_str()).collect();
    match w.as_slice() {
        ["fdb", "all"] => Some(Ok("/pfcswitch/fdb_clear,all".to_string())),
        ["fdb", "vlan", v] => Some(Ok(format!("/pfcswitch/fdb_clear,{v}"))),
        ["fdb", ..] => Some(Err("expected: clear fdb all | clear fdb vlan VlanN".to_string())),
        _ => None,
    }
}
