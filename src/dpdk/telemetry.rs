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

unsafe extern "C" fn trampoline(cmd: *const c_char, params: *const c_char, d: *mut sys::rte_tel_data) -> c_int {
    // SAFETY: DPDK passes NUL-terminated strings (params may be NULL) and a valid data
    // object for this call.
    let cmd = unsafe { CStr::from_ptr(cmd) }.to_string_lossy().into_owned();
    let params = if params.is_null() { String::new() } else { unsafe { CStr::from_ptr(params) }.to_string_lossy().into_owned() };
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
/// array containers; deeper objects are flattened into "a.b" keys (DPDK telemetry allows
/// one level of containers).
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

fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                flatten(&key, x, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                flatten(&format!("{prefix}.{i}"), x, out);
            }
        }
        x => out.push((prefix.to_string(), x.clone())),
    }
}

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
    let base = std::env::var_os("RUNTIME_DIRECTORY")
        .map(PathBuf::from)
        .unwrap_or_else(|| if is_root() { PathBuf::from("/var/run/dpdk") } else { xdg_runtime() });
    base.join(file_prefix).join("dpdk_telemetry.v2")
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0).unwrap_or(false)
}

fn xdg_runtime() -> PathBuf {
    std::env::var_os("XDG_RUNTIME_DIR").map(|p| PathBuf::from(p).join("dpdk")).unwrap_or_else(|| PathBuf::from("/tmp/dpdk"))
}

/// Send one command to a telemetry socket and return the JSON value of the reply.
pub fn query(socket: &Path, cmd: &str) -> Result<Value, String> {
    use socket2::{Domain, SockAddr, Socket, Type};
    let s = Socket::new(Domain::UNIX, Type::SEQPACKET, None).map_err(|e| format!("socket: {e}"))?;
    let addr = SockAddr::unix(socket).map_err(|e| format!("{}: {e}", socket.display()))?;
    s.connect(&addr).map_err(|e| format!("cannot connect to {} (is the switch running with that file prefix?): {e}", socket.display()))?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(5))).ok();
    let mut buf = vec![std::mem::MaybeUninit::<u8>::uninit(); 65536];
    // The server greets with {"version":..,"pid":..,"max_output_len":..}.
    let n = s.recv(&mut buf).map_err(|e| format!("recv: {e}"))?;
    let _greeting = bytes(&buf, n);
    s.send(cmd.as_bytes()).map_err(|e| format!("send: {e}"))?;
    let n = s.recv(&mut buf).map_err(|e| format!("recv: {e}"))?;
    let text = bytes(&buf, n);
    let v: Value = serde_json::from_slice(&text).map_err(|e| format!("bad reply: {e}"))?;
    // The reply is {"<cmd>": <data>}.
    let cmd_key = cmd.split(',').next().unwrap_or(cmd);
    Ok(v.get(cmd_key).cloned().unwrap_or(v))
}

fn bytes(buf: &[std::mem::MaybeUninit<u8>], n: usize) -> Vec<u8> {
    // SAFETY: recv initialised the first n bytes.
    buf[..n].iter().map(|b| unsafe { b.assume_init() }).collect()
}
