//! An EAL runtime directory left from before must be the switch's own (docs/failure-behaviour.md,
//! "Files"): EAL reuses one that exists, and one others may enter exposes the telemetry
//! socket and `clear` snapshots. `run` refuses it in one line, exit 2, before EAL starts.

mod common;
use common::*;

use std::os::unix::fs::PermissionsExt;

#[test]
fn a_runtime_directory_others_may_enter_is_refused() {
    let d = TestDir::new("rundir");
    let cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1")
        .port(Port::new("Ethernet0", "net_null0"))
        .port(Port::new("Ethernet4", "net_null1"))
        .toml("[switch]\nmbuf_count = 16383")
        .one_worker()
        .write(&d.join("t.toml"));
    let dir = pfcswitch::dpdk::telemetry::runtime_dir(&d.prefix());
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = run_switch(&["run", "--config", cfg.to_str().unwrap(), "--duration", "1"]);
    let _ = std::fs::remove_dir_all(&dir);
    // The error is the last line (config warnings may come before it).
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    let err = stderr.trim().lines().last().unwrap_or_default().to_string();
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(
        err.starts_with("pfcswitch: runtime directory") && err.contains("mode 0755") && err.contains("with mode 0700"),
        "{stderr}"
    );
}
