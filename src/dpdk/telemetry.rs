//! DPDK telemetry: register read-only `/pfcswitch/...` commands whose handlers are Rust
//! closures returning JSON, and a client for a running instance's telemetry socket (the
//! same protocol `dpdk-telemetry.py` speaks).
//!
//! Handlers run on DPDK's telemetry thread; whatever they read must be safe to read
//! concurrently (atomics, or data behind the handler's own synchronisation).

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use serde_json::Value;

use super::{sys, DpdkError};

type Handler = Box<dyn Fn(&str) -> Value + Send + Sync>;

fn handlers() -> &'static Mutex<HashMap<String, Handler>> {
    static H: OnceLock<Mutex<HashMap<String, Handler>>> = OnceLock::new();
    H.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The C callback DPDK's telemetry thread calls for every `/pfcswitch/...` command.
///
/// # Safety
/// `cmd` must be a NUL-terminated string, `params` NULL or NUL-terminated, and `d` a
/// valid, writable telemetry data object for the duration of the call (DPDK's contract
/// for `telemetry_cb`).
unsafe extern "C" fn trampoline(cmd: *const c_char, params: *const c_char, d: *mut sys::rte_tel_data) -> c_int {
    // SAFETY: DPDK passes NUL-terminated strings (params may be NULL) and a valid data
    // object for this call.
    let cmd = unsafe { CStr::from_ptr(cmd) }.to_string_lossy().into_owned();
    let params =
        if params.is_null() { String::new() } else { unsafe { CStr::from_ptr(params) }.to_string_lossy().into_owned() };
    let value = {
        let Ok(h) = handlers().lock() else { return -1 };
        match h.get(&cmd) {
            Some(f) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&params))).unwrap_or(Value::Null),
            None => return -1,
        }
    };
    // SAFETY: `d` is the output object DPDK gave us.
    unsafe { fill(d, &value) }
}

/// Top level: a dict. Second level: objects become dict containers, arrays of numbers
/// array containers; deeper objects are flattened into "a/b" keys (DPDK telemetry allows
/// one level of containers).
///
/// # Safety
/// `d` must be a valid, writable telemetry data object not yet started.
unsafe fn fill(d: *mut sys::rte_tel_data, v: &Value) -> c_int {
    unsafe {
        sys::rte_tel_data_start_dict(d);
        let Value::Object(map) = v else {
            let s = CString::new(v.to_string()).unwrap_or_default();
            let k = CString::new("value").unwrap();
            sys::rte_tel_data_add_dict_string(d, k.as_ptr(), s.as_ptr());
            return 0;
        };
        for (k, val) in map {
            let key = CString::new(k.as_str()).unwrap_or_default();
            match val {
                Value::Object(_) => {
                    let c = sys::rte_tel_data_alloc();
                    if c.is_null() {
                        continue;
                    }
                    sys::rte_tel_data_start_dict(c);
                    let mut flat = Vec::new();
                    flatten("", val, &mut flat);
                    for (fk, fv) in flat {
                        add_scalar(c, &fk, &fv);
                    }
                    sys::rte_tel_data_add_dict_container(d, key.as_ptr(), c, 0);
                }
                Value::Array(items) => {
                    let c = sys::rte_tel_data_alloc();
                    if c.is_null() {
                        continue;
                    }
                    if items.iter().all(|x| x.is_u64()) {
                        sys::rte_tel_data_start_array(c, sys::rte_tel_value_type_RTE_TEL_U64_VAL);
                        for x in items {
                            sys::rte_tel_data_add_array_u64(c, x.as_u64().unwrap_or(0));
                        }
                    } else {
                        sys::rte_tel_data_start_array(c, sys::rte_tel_value_type_RTE_TEL_STRING_VAL);
                        for x in items {
                            let s = CString::new(match x {
                                Value::String(s) => s.clone(),
                                o => o.to_string(),
                            })
                            .unwrap_or_default();
                            sys::rte_tel_data_add_array_string(c, s.as_ptr());
                        }
                    }
                    sys::rte_tel_data_add_dict_container(d, key.as_ptr(), c, 0);
                }
                scalar => add_scalar(d, k, scalar),
            }
        }
        0
    }
}

/// Joins the keys of a flattened object: DPDK 22.11 accepts only letters, digits, `_` and
/// `/` in a dictionary key and silently leaves out any other (a `.` would lose the entry).
pub const FLAT_SEP: char = '/';

fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}{FLAT_SEP}{k}") };
                flatten(&key, x, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                flatten(&format!("{prefix}{FLAT_SEP}{i}"), x, out);
            }
        }
        x => out.push((prefix.to_string(), x.clone())),
    }
}

/// Add `k = v` to dict `d`.
///
/// # Safety
/// `d` must be a valid telemetry data object started as a dict.
unsafe fn add_scalar(d: *mut sys::rte_tel_data, k: &str, v: &Value) {
    let key = CString::new(k).unwrap_or_default();
    unsafe {
        match v {
            Value::Number(n) if n.is_u64() => {
                sys::rte_tel_data_add_dict_u64(d, key.as_ptr(), n.as_u64().unwrap_or(0));
            }
            Value::Number(n) if n.is_i64() => {
                let x = n.as_i64().unwrap_or(0).clamp(i32::MIN as i64, i32::MAX as i64) as i32;
                sys::rte_tel_data_add_dict_int(d, key.as_ptr(), x);
            }
            Value::Bool(b) => {
                sys::rte_tel_data_add_dict_u64(d, key.as_ptr(), *b as u64);
            }
            Value::Null => {}
            other => {
                let s = CString::new(match other {
                    Value::String(s) => s.clone(),
                    o => o.to_string(),
                })
                .unwrap_or_default();
                sys::rte_tel_data_add_dict_string(d, key.as_ptr(), s.as_ptr());
            }
        }
    }
}

/// Register `cmd` (e.g. "/pfcswitch/pfc_counters"); `f(params)` returns a JSON object.
/// Call after `Eal::init`. Re-registering a name replaces the handler.
pub fn register(cmd: &str, help: &str, f: impl Fn(&str) -> Value + Send + Sync + 'static) -> Result<(), DpdkError> {
    let fresh = {
        let mut h = handlers().lock().map_err(|_| DpdkError::msg("telemetry", "poisoned"))?;
        h.insert(cmd.to_string(), Box::new(f)).is_none()
    };
    if !fresh {
        return Ok(());
    }
    // DPDK keeps the pointers: leak the strings.
    let c = CString::new(cmd).map_err(|_| DpdkError::msg("telemetry", "NUL in command"))?.into_raw();
    let hp = CString::new(help).map_err(|_| DpdkError::msg("telemetry", "NUL in help"))?.into_raw();
    // SAFETY: static strings and a valid callback.
    let ret = unsafe { sys::rte_telemetry_register_cmd(c, Some(trampoline), hp) };
    if ret != 0 {
        return Err(DpdkError::from_ret(format!("rte_telemetry_register_cmd({cmd})"), ret));
    }
    Ok(())
}

/// Where a running instance's telemetry socket is, by EAL file prefix.
pub fn socket_path(file_prefix: &str) -> PathBuf {
    runtime_dir(file_prefix).join("dpdk_telemetry.v2")
}

/// An instance's runtime directory, as EAL 22.11 makes it (`eal_create_runtime_dir`):
/// `$RUNTIME_DIRECTORY/dpdk/<prefix>` when set (systemd), else `/var/run/dpdk/<prefix>`
/// for root, else `$XDG_RUNTIME_DIR/dpdk/<prefix>` or `/tmp/dpdk/<prefix>`.
pub fn runtime_dir(file_prefix: &str) -> PathBuf {
    let base = match std::env::var_os("RUNTIME_DIRECTORY") {
        Some(d) => PathBuf::from(d).join("dpdk"),
        None if is_root() => PathBuf::from("/var/run/dpdk"),
        None => xdg_runtime(),
    };
    base.join(file_prefix)
}

/// An instance's runtime directory left from before (EAL reuses one that exists) must be
/// private: a directory (not a symlink) owned by this user, mode 0700. Another user's, or
/// one others may enter, would let them at the telemetry socket and `clear` snapshots.
/// `Ok` when it does not exist (EAL creates it 0700).
pub fn check_private_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let m = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("runtime directory {}: {e}", dir.display())),
    };
    // The owner of /proc/self is this process's effective uid.
    let me = std::fs::metadata("/proc/self").map(|m| m.uid()).map_err(|e| format!("/proc/self: {e}"))?;
    let mode = m.permissions().mode() & 0o7777;
    if !m.file_type().is_dir() || m.uid() != me || mode != 0o700 {
        return Err(format!(
            "runtime directory {} is {} owned by uid {} with mode {mode:04o}; it must be a directory of this user (uid {me}) \
             with mode 0700: remove it (or fix it) if no switch uses it",
            dir.display(),
            if m.file_type().is_dir() { "a directory" } else { "not a directory" },
            m.uid(),
        ));
    }
    Ok(())
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0).unwrap_or(false)
}

fn xdg_runtime() -> PathBuf {
    std::env::var_os("XDG_RUNTIME_DIR")
        .map(|p| PathBuf::from(p).join("dpdk"))
        .unwrap_or_else(|| PathBuf::from("/tmp/dpdk"))
}

/// The largest reply DPDK 22.11's telemetry sends (`MAX_OUTPUT_LEN` in telemetry.c):
/// entries that do not fit are left out without an error, so a handler must not build more.
pub const MAX_REPLY_LEN: usize = 16 * 1024;
/// Entries per dictionary (`RTE_TEL_MAX_DICT_ENTRIES`); more are refused one by one.
pub const MAX_DICT_ENTRIES: usize = 256;

/// A reply DPDK would truncate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyTooLarge {
    #[error("{len} bytes, over DPDK's {MAX_REPLY_LEN}-byte telemetry limit")]
    Bytes { len: usize },
    #[error("{entries} entries in one dictionary, over DPDK's limit of {MAX_DICT_ENTRIES}")]
    Entries { entries: usize },
}

/// `v` as [`fill`] lays it out: top-level dict, one level of containers, deeper objects
/// flattened to "a/b" keys, nulls left out. Returns it and its largest dictionary's size.
fn as_sent(v: &Value) -> (Value, usize) {
    let Value::Object(map) = v else { return (v.clone(), 0) };
    let mut widest = map.len();
    let mut top = serde_json::Map::new();
    for (k, val) in map {
        let shown = match val {
            Value::Object(_) => {
                let mut flat = Vec::new();
                flatten("", val, &mut flat);
                flat.retain(|(_, x)| !x.is_null());
                widest = widest.max(flat.len());
                Value::Object(flat.into_iter().collect())
            }
            Value::Null => continue,
            x => x.clone(),
        };
        top.insert(k.clone(), shown);
    }
    (Value::Object(top), widest)
}

/// Bytes of the reply DPDK prints for `v`: compact JSON under `{"<cmd>": ...}`.
pub fn reply_len(cmd: &str, v: &Value) -> usize {
    cmd.len() + 5 + as_sent(v).0.to_string().len()
}

/// Whether DPDK can send `v` as the reply to `cmd` whole.
pub fn check_reply(cmd: &str, v: &Value) -> Result<(), ReplyTooLarge> {
    let (sent, entries) = as_sent(v);
    if entries > MAX_DICT_ENTRIES {
        return Err(ReplyTooLarge::Entries { entries });
    }
    let len = cmd.len() + 5 + sent.to_string().len();
    if len > MAX_REPLY_LEN {
        return Err(ReplyTooLarge::Bytes { len });
    }
    Ok(())
}

/// Talking to a running instance's telemetry socket failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot connect to {path} (is the switch running with that file prefix?): {source}")]
    Connect { path: String, source: std::io::Error },
    #[error("telemetry socket {path}: {op}: {source}")]
    Io { path: String, op: &'static str, source: std::io::Error },
    /// The socket's receive timeout passed: the switch's telemetry thread runs at the
    /// lowest priority where no CPU is free of lcores, so a busy machine delays it.
    #[error(
        "telemetry socket {path}: no answer to {what} within {secs} s (the switch's telemetry thread runs at the lowest priority: are the CPUs busy?)"
    )]
    NoAnswer { path: String, what: String, secs: u64 },
    #[error("telemetry socket {path}: bad reply to {cmd}: {source}")]
    BadReply { path: String, cmd: String, source: serde_json::Error },
}

/// How long the greeting and a reply may take unless [`Client::set_timeout`] says otherwise.
/// Generous: where no CPU is free of lcores the telemetry thread (and the thread DPDK starts
/// for each client) runs at nice 19, and beside a busy process it answers seconds late.
pub const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// A connection to a running instance's telemetry socket (the protocol
/// `dpdk-telemetry.py` speaks): several commands over one connection.
pub struct Client {
    sock: socket2::Socket,
    path: String,
    buf: Vec<std::mem::MaybeUninit<u8>>,
    timeout: std::time::Duration,
    /// The instance's process id, from the server's greeting.
    pub pid: u64,
    /// The largest reply the server sends, from the greeting.
    pub max_output_len: usize,
}

impl Client {
    pub fn connect(socket: &Path) -> Result<Client, ClientError> {
        use socket2::{Domain, SockAddr, Socket, Type};
        let path = socket.display().to_string();
        let io = |op, source| ClientError::Io { path: path.clone(), op, source };
        let s = Socket::new(Domain::UNIX, Type::SEQPACKET, None).map_err(|e| io("socket", e))?;
        let addr = SockAddr::unix(socket).map_err(|e| io("address", e))?;
        s.connect(&addr).map_err(|source| ClientError::Connect { path: path.clone(), source })?;
        s.set_read_timeout(Some(DEFAULT_TIMEOUT)).ok();
        let mut c = Client {
            sock: s,
            path,
            timeout: DEFAULT_TIMEOUT,
            buf: vec![std::mem::MaybeUninit::<u8>::uninit(); 65536],
            pid: 0,
            max_output_len: MAX_REPLY_LEN,
        };
        // The server greets with {"version":..,"pid":..,"max_output_len":..}.
        let greeting = c.recv_json("greeting")?;
        c.pid = greeting.get("pid").and_then(Value::as_u64).unwrap_or(0);
        c.max_output_len = greeting.get("max_output_len").and_then(Value::as_u64).map_or(MAX_REPLY_LEN, |n| n as usize);
        Ok(c)
    }

    /// Send one command (`/cmd` or `/cmd,param`) and return the data of the reply (DPDK
    /// wraps it as `{"<cmd>": <data>}`; an unknown command's data is null).
    /// How long a reply may take ([`DEFAULT_TIMEOUT`] unless set): a command that waits for
    /// an lcore (`/pfcswitch/config`) may take longer on a loaded machine.
    pub fn set_timeout(&mut self, t: std::time::Duration) {
        self.timeout = t;
        self.sock.set_read_timeout(Some(t)).ok();
    }

    pub fn query(&mut self, cmd: &str) -> Result<Value, ClientError> {
        self.sock.send(cmd.as_bytes()).map_err(|source| ClientError::Io {
            path: self.path.clone(),
            op: "send",
            source,
        })?;
        let cmd_key = cmd.split(',').next().unwrap_or(cmd);
        loop {
            let v = self.recv_json(cmd)?;
            if let Some(data) = v.get(cmd_key) {
                return Ok(data.clone());
            }
            // The late reply to an earlier command that timed out (a loaded machine kept
            // the telemetry thread off its CPU): not this command's, read on.
            if is_other_reply(&v) {
                continue;
            }
            return Ok(v);
        }
    }

    fn recv_json(&mut self, what: &str) -> Result<Value, ClientError> {
        let n = self.sock.recv(&mut self.buf).map_err(|source| match source.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                ClientError::NoAnswer { path: self.path.clone(), what: what.to_string(), secs: self.timeout.as_secs() }
            }
            _ => ClientError::Io { path: self.path.clone(), op: "recv", source },
        })?;
        serde_json::from_slice(&bytes(&self.buf, n)).map_err(|source| ClientError::BadReply {
            path: self.path.clone(),
            cmd: what.to_string(),
            source,
        })
    }
}

/// A reply DPDK wrapped for some command: one key, the command's name (`/…`).
fn is_other_reply(v: &Value) -> bool {
    v.as_object().is_some_and(|o| o.len() == 1 && o.keys().all(|k| k.starts_with('/')))
}

/// Send one command to a telemetry socket and return the JSON value of the reply.
pub fn query(socket: &Path, cmd: &str) -> Result<Value, ClientError> {
    Client::connect(socket)?.query(cmd)
}

fn bytes(buf: &[std::mem::MaybeUninit<u8>], n: usize) -> Vec<u8> {
    // SAFETY: recv initialised the first n bytes.
    buf[..n].iter().map(|b| unsafe { b.assume_init() }).collect()
}

#[cfg(test)]
mod tests {

    #[test]
    fn runtime_directory_must_be_private() {
        use std::os::unix::fs::PermissionsExt;
        let d = std::env::temp_dir().join(format!("pfcsw-rundir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        assert!(check_private_dir(&d).is_ok(), "absent: EAL makes it");
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(check_private_dir(&d).is_ok());
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        let e = check_private_dir(&d).unwrap_err();
        assert!(e.contains("mode 0755") && !e.contains('\n'), "{e}");
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        if is_root() {
            std::os::unix::fs::chown(&d, Some(65534), None).unwrap();
            let e = check_private_dir(&d).unwrap_err();
            assert!(e.contains("owned by uid 65534"), "{e}");
        }
        let link = d.with_extension("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&d, &link).unwrap();
        assert!(check_private_dir(&link).unwrap_err().contains("not a directory"));
        std::fs::remove_file(&link).unwrap();
        std::fs::remove_dir_all(&d).unwrap();
    }

    use super::*;
    use serde_json::json;

    #[test]
    fn a_late_reply_to_another_command_is_not_this_ones() {
        assert!(is_other_reply(&json!({"/pfcswitch/ports": {"ports": []}})));
        assert!(!is_other_reply(&json!({"error": "x"})));
        assert!(!is_other_reply(&json!({"/a": 1, "/b": 2})));
    }

    #[test]
    fn reply_size_is_dpdks_compact_json() {
        // {"/x":{"Ethernet0":{"a":1,"b.c":"x"},"n":5}}
        let v = json!({"Ethernet0": {"a": 1, "b": {"c": "x"}}, "n": 5});
        assert_eq!(reply_len("/x", &v), r#"{"/x":{"Ethernet0":{"a":1,"b.c":"x"},"n":5}}"#.len());
        assert_eq!(check_reply("/x", &v), Ok(()));
        let big: serde_json::Map<String, Value> = (0..200)
            .map(|i| {
                (
                    format!("Ethernet{i}"),
                    json!({"a_counter_with_a_long_name": 1u64 << 40, "another_counter": 1u64 << 40}),
                )
            })
            .collect();
        match check_reply("/x", &Value::Object(big)) {
            Err(ReplyTooLarge::Bytes { len }) => assert!(len > MAX_REPLY_LEN),
            other => panic!("{other:?}"),
        }
        let wide: serde_json::Map<String, Value> = (0..300).map(|i| (format!("k{i}"), json!(1))).collect();
        assert_eq!(check_reply("/x", &json!({ "p": wide })), Err(ReplyTooLarge::Entries { entries: 300 }));
    }
}
