//! Speed from the link, on a port with a kernel link: net_af_packet on a veth, whose
//! kernel speed is 10G (`/sys/class/net/<iface>/speed`; the PMD itself reports a nominal
//! 10G whatever the interface). A config saying 25G is refused (exit 2, one line naming
//! both speeds); `speed_mismatch = "warn"` runs with the configured speed and a warning;
//! `speed = "auto"` runs at the link's. Needs root (veth); skipped otherwise.

mod common;
use common::*;

use std::process::Command;

fn run(d: &TestDir, iface: &str, keys: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut port = Port::new("Ethernet0", &format!("net_af_packet0,iface={iface}")).set("cable_length", "\"5m\"");
    for (k, v) in keys {
        port = port.set(k, v);
    }
    let cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1")
        .port(port)
        .port(Port::new("Ethernet4", "net_null0").speed("10G"))
        .write(&d.join("t.toml"));
    let out = Command::new(BIN)
        .args(["run", "--config", cfg.to_str().unwrap(), "--duration", "0.5"])
        .env("RUST_LOG", "info")
        .output()
        .unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn config_speed_against_the_kernel_link() {
    if !is_root() {
        eprintln!("SKIP: needs root (veth pair)");
        return;
    }
    let d = TestDir::new("speed");
    let n = std::process::id() % 100_000;
    let veth = Veth::new(&format!("spd{n}a"), &format!("spd{n}b"));
    let kernel = std::fs::read_to_string(format!("/sys/class/net/{}/speed", veth.a)).unwrap();
    assert_eq!(kernel.trim(), "10000", "a veth's kernel speed");

    let (code, err) = run(&d, &veth.a, &[("speed", "\"25G\"")]);
    assert_eq!(code, Some(2), "{err}");
    let line: Vec<&str> = err.lines().filter(|l| l.starts_with("pfcswitch: ")).collect();
    assert_eq!(line.len(), 1, "{err}");
    assert!(line[0].contains("Ethernet0") && line[0].contains("10G") && line[0].contains("25G"), "{}", line[0]);

    let (code, err) = run(&d, &veth.a, &[("speed", "\"25G\""), ("speed_mismatch", "\"warn\"")]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("the link runs at 10G but speed = \"25G\""), "{err}");

    let (code, err) = run(&d, &veth.a, &[("speed", "\"auto\"")]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("port Ethernet0: speed 10G from the link"), "{err}");

    let (code, err) = run(&d, &veth.a, &[("speed", "\"10G\"")]);
    assert_eq!(code, Some(0), "{err}");
    drop(veth);
}
