//! The Debian package (`scripts/deb.sh`, docs/package.md): its contents and control files,
//! an install into a fresh root with dpkg, the unit checked by `systemd-analyze verify`,
//! and the unit's own ExecStart command line running a vdev switch that forwards and
//! stops cleanly on SIGTERM.
//!
//! The package is built once for all tests, from the binaries of this test build
//! (`PFCSW_DEB_BIN_DIR` picks others, e.g. `target/release`): the release build
//! `scripts/deb.sh` does by default takes minutes and is not what these tests check.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// The package, built once: (its path, the directory it was built in).
fn package() -> &'static (PathBuf, PathBuf) {
    static DEB: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    DEB.get_or_init(|| {
        let bin_dir = std::env::var_os("PFCSW_DEB_BIN_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(BIN).parent().unwrap().to_path_buf());
        // Under target/tmp (cargo's scratch for integration tests), replaced at each run.
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("deb");
        let o = Command::new(format!("{}/scripts/deb.sh", env!("CARGO_MANIFEST_DIR")))
            .args(["--bin-dir", bin_dir.to_str().unwrap(), "--out", out.to_str().unwrap()])
            .output()
            .expect("run scripts/deb.sh");
        assert!(o.status.success(), "scripts/deb.sh failed\n{}", show(&o));
        let path = PathBuf::from(String::from_utf8_lossy(&o.stdout).lines().last().expect("deb path").trim());
        assert!(path.is_file(), "no package at {}", path.display());
        (path, out)
    })
}

fn run(cmd: &mut Command) -> std::process::Output {
    cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
}

fn dpkg_deb(flag: &str) -> String {
    let o = run(Command::new("dpkg-deb").args([flag, package().0.to_str().unwrap()]));
    assert!(o.status.success(), "dpkg-deb {flag}\n{}", show(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn field<'a>(control: &'a str, name: &str) -> &'a str {
    control
        .lines()
        .find_map(|l| l.trim_start().strip_prefix(&format!("{name}: ")))
        .unwrap_or_else(|| panic!("no {name} in\n{control}"))
}

#[test]
fn contents_control_and_maintainer_scripts() {
    let list = dpkg_deb("-c");
    // `dpkg-deb -c` lines: mode owner size date time path.
    let entry = |path: &str| {
        list.lines()
            .find(|l| l.split_whitespace().last() == Some(&format!(".{path}")))
            .unwrap_or_else(|| panic!("{path} not in the package:\n{list}"))
            .to_string()
    };
    for (path, mode) in [
        ("/usr/bin/pfcswitch", "-rwxr-xr-x"),
        ("/usr/bin/pfcgen", "-rwxr-xr-x"),
        ("/lib/systemd/system/pfcswitch.service", "-rw-r--r--"),
        ("/etc/pfcswitch/pfcswitch.toml", "-rw-r--r--"),
        ("/usr/share/doc/pfcswitch/README.md", "-rw-r--r--"),
        ("/usr/share/doc/pfcswitch/copyright", "-rw-r--r--"),
        ("/usr/share/doc/pfcswitch/changelog.gz", "-rw-r--r--"),
        ("/usr/share/man/man1/pfcswitch.1.gz", "-rw-r--r--"),
        ("/usr/share/man/man1/pfcgen.1.gz", "-rw-r--r--"),
        ("/usr/share/doc/pfcswitch/config-schema.md", "-rw-r--r--"),
        ("/usr/share/doc/pfcswitch/docs/package.md", "-rw-r--r--"),
        ("/usr/share/doc/pfcswitch/docs/nic.md", "-rw-r--r--"),
        ("/usr/share/doc/pfcswitch/examples/nic-example.toml", "-rw-r--r--"),
    ] {
        let e = entry(path);
        assert!(e.starts_with(mode), "{path}: {e}, expected mode {mode}");
        assert!(e.contains("root/root"), "{path} not owned by root: {e}");
    }

    let info = dpkg_deb("-I");
    let depends = field(&info, "Depends");
    // From dpkg-shlibdeps: the DPDK runtime libraries the binaries link; and Debian's dpdk
    // (dpdk.service, dpdk-devbind.py, /etc/dpdk).
    for dep in ["librte-eal23", "librte-ethdev23", "librte-mbuf23", "librte-mempool23", "libc6"] {
        assert!(depends.contains(dep), "Depends lacks {dep}: {depends}");
    }
    assert!(depends.split(", ").any(|d| d == "dpdk"), "Depends lacks dpdk: {depends}");
    // `apt-get install ./pfcswitch.deb` on a fresh Debian 12: simulated by apt against an
    // empty dpkg status (nothing installed) with this machine's Debian package lists, so it
    // must resolve every dependency, and theirs, from the archive.
    let d = TestDir::new("debapt");
    std::fs::write(d.join("status"), "").unwrap();
    let o = run(Command::new("apt-get")
        .args(["-s", "-o", &format!("Dir::State::status={}", d.join("status").display()), "install"])
        .arg(&package().0));
    let plan = String::from_utf8_lossy(&o.stdout);
    let lists = std::fs::read_dir("/var/lib/apt/lists")
        .map(|rd| rd.flatten().any(|e| e.file_name().to_string_lossy().ends_with("_Packages")))
        .unwrap_or(false);
    if !lists {
        eprintln!("no Debian package lists here (apt-get update): install simulation skipped");
    } else {
        assert!(o.status.success(), "apt-get cannot install the package on a fresh system\n{}", show(&o));
        for p in ["pfcswitch", "dpdk", "librte-eal23", "librte-ethdev23", "libc6"] {
            assert!(plan.lines().any(|l| l.starts_with(&format!("Inst {p} "))), "apt would not install {p}\n{plan}");
        }
    }

    // Maintainer scripts: shell that parses, and the conffile declared.
    let d = TestDir::new("debctl");
    let o =
        run(Command::new("dpkg-deb").args(["-e", package().0.to_str().unwrap(), d.join("DEBIAN").to_str().unwrap()]));
    assert!(o.status.success(), "{}", show(&o));
    for s in ["postinst", "prerm", "postrm"] {
        let o = run(Command::new("sh").args(["-n", d.join(&format!("DEBIAN/{s}")).to_str().unwrap()]));
        assert!(o.status.success(), "{s} does not parse\n{}", show(&o));
        let text = std::fs::read_to_string(d.join(&format!("DEBIAN/{s}"))).unwrap();
        assert!(text.contains("DPKG_ROOT"), "{s} must do nothing to the host when installed with --root");
    }
    let conffiles = std::fs::read_to_string(d.join("DEBIAN/conffiles")).unwrap();
    assert_eq!(conffiles.trim(), "/etc/pfcswitch/pfcswitch.toml");

    // Debian's own checks: no error and no warning (lintian is in scripts/setup.sh).
    match Command::new("lintian")
        .args(["--tag-display-limit", "0", "--fail-on", "error,warning"])
        .arg(&package().0)
        .output()
    {
        Err(e) => eprintln!("lintian cannot run here ({e}): skipped"),
        Ok(o) => {
            let tags: Vec<String> = String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter(|l| l.starts_with("E: ") || l.starts_with("W: "))
                .map(String::from)
                .collect();
            assert!(o.status.success() && tags.is_empty(), "lintian: {tags:#?}\n{}", show(&o));
        }
    }
}

/// A fresh root with an empty dpkg database, the package installed into it.
fn install_into(d: &TestDir) -> PathBuf {
    let root = d.join("root");
    for sub in ["var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/dpkg/triggers", "var/log"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    std::fs::write(root.join("var/lib/dpkg/status"), "").unwrap();
    dpkg_root(&root, &["-i", package().0.to_str().unwrap()]);
    root
}

/// `dpkg --root` without a chroot: the root has no shell, so maintainer scripts run on
/// the host with DPKG_ROOT set (they then leave the host alone); the dependencies are not
/// in this root.
fn dpkg_root(root: &Path, args: &[&str]) {
    let o = run(Command::new("dpkg")
        .arg(format!("--root={}", root.display()))
        .arg(format!("--log={}", root.join("var/log/dpkg.log").display()))
        .args(["--force-depends", "--force-script-chrootless"])
        .args(args));
    assert!(o.status.success(), "dpkg {args:?}\n{}", show(&o));
}

#[test]
fn installs_into_a_fresh_root_and_the_unit_verifies() {
    let d = TestDir::new("debroot");
    let root = install_into(&d);
    let status = run(Command::new("dpkg").arg(format!("--root={}", root.display())).args(["-s", "pfcswitch"]));
    assert!(String::from_utf8_lossy(&status.stdout).contains("Status: install ok installed"), "{}", show(&status));
    let bin = root.join("usr/bin/pfcswitch");
    let conf = root.join("etc/pfcswitch/pfcswitch.toml");

    // The shipped configuration refuses to start, in one line, until ports are set ...
    let o = run(Command::new(&bin).args(["check-config", conf.to_str().unwrap()]));
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("port: missing: at least one [[port]] is required"), "{err}");
    // ... and with its commented ports and lcores taken in, it is valid.
    let shipped = std::fs::read_to_string(&conf).unwrap();
    let mut on = false;
    let filled: String = shipped
        .lines()
        .map(|l| {
            if l.starts_with("# [[port]]") {
                on = true;
            }
            if l.starts_with("# No [buffer]") {
                on = false;
            }
            let l = if on { l.strip_prefix("# ").or_else(|| l.strip_prefix('#')).unwrap_or(l) } else { l };
            format!("{l}\n")
        })
        .collect();
    let filled_path = d.join("filled.toml");
    std::fs::write(&filled_path, &filled).unwrap();
    let o = run(Command::new(&bin).args(["check-config", filled_path.to_str().unwrap()]));
    assert!(o.status.success(), "the example in the shipped configuration is invalid\n{filled}\n{}", show(&o));

    // The unit, against this root with the host's systemd units (sysinit.target, ...) and
    // dpdk.service beside it, as on a Debian 12 server with systemd and dpdk installed.
    // `verify` reports unknown keys, bad values and an ExecStart that is not executable
    // in the root; it exits 0 on some of those, so its output must be empty.
    let units = root.join("lib/systemd/system");
    let o = run(Command::new("cp").args(["-an", "/lib/systemd/system/.", units.to_str().unwrap()]));
    assert!(o.status.success(), "{}", show(&o));
    let verify =
        |unit: &str| run(Command::new("systemd-analyze").args(["verify", &format!("--root={}", root.display()), unit]));
    let o = verify("pfcswitch.service");
    if !o.status.success() && String::from_utf8_lossy(&o.stderr).contains("Failed to initialize manager") {
        eprintln!("systemd-analyze verify cannot run in this container: skipped\n{}", show(&o));
    } else {
        assert!(o.status.success() && text(&o).trim().is_empty(), "systemd-analyze verify\n{}", show(&o));
        // The check can fail: a broken copy of the unit is reported.
        let unit = std::fs::read_to_string(units.join("pfcswitch.service")).unwrap();
        std::fs::write(units.join("pfcsw-broken.service"), unit.replace("KillMode=mixed", "KillMode=gently")).unwrap();
        let o = verify("pfcsw-broken.service");
        assert!(text(&o).contains("KillMode") || text(&o).contains("kill mode"), "{}", show(&o));
    }

    // Removal keeps the edited conffile; purge removes it.
    std::fs::write(&conf, format!("{shipped}\n# edited\n")).unwrap();
    dpkg_root(&root, &["-r", "pfcswitch"]);
    assert!(!bin.exists(), "binary left after remove");
    assert!(conf.exists(), "conffile removed by remove (only purge may)");
    dpkg_root(&root, &["--purge", "pfcswitch"]);
    assert!(!conf.exists(), "conffile left after purge");
}

/// The unit's ExecStart, as systemd would run it: its command line with the configuration
/// path swapped for a vdev one, RUST_LOG and RUNTIME_DIRECTORY from the unit.
#[test]
fn exec_start_forwards_and_stops_cleanly_on_sigterm() {
    let d = TestDir::new("debexec");
    let root = install_into(&d);
    let unit = std::fs::read_to_string(root.join("lib/systemd/system/pfcswitch.service")).unwrap();
    let exec: Vec<String> = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("ExecStart")
        .split_whitespace()
        .map(String::from)
        .collect();
    assert_eq!(exec.join(" "), "/usr/bin/pfcswitch run --config /etc/pfcswitch/pfcswitch.toml");
    for line in ["Environment=RUST_LOG=info", "RuntimeDirectory=pfcswitch", "KillSignal=SIGTERM", "Restart=on-failure"]
    {
        assert!(unit.lines().any(|l| l == line), "unit lacks {line}");
    }

    // Two pcap ports: 200 frames into Ethernet0 for an unknown MAC, flooded to Ethernet4.
    let frames: Vec<Vec<u8>> = (0..200).map(|i| eth_frame(mac(0xb0), mac(0x0a), i as u8, 100)).collect();
    write_pcap(&d.join("in0.pcap"), &frames);
    write_pcap(&d.join("in1.pcap"), &[]);
    let dir = d.path.display();
    // A prefix starting with "pfcswitch", as the shipped file's: `config reload` finds the
    // instance without --prefix, as ExecReload needs.
    let prefix = format!("pfcswitch-{}", d.prefix());
    let sw = |edit: &dyn Fn(SwitchConfig) -> SwitchConfig| {
        edit(
            SwitchConfig::new(&prefix, "0@0,1@1")
                .port(Port::new("Ethernet0", &format!("net_pcap0,rx_pcap={dir}/in0.pcap,tx_pcap={dir}/out0.pcap")))
                .port(Port::new("Ethernet4", &format!("net_pcap1,rx_pcap={dir}/in1.pcap,tx_pcap={dir}/out1.pcap"))),
        )
        .one_worker()
        .write(&d.join("vdev.toml"))
    };
    let cfg = sw(&|c| c);
    let runtime = d.join("run-pfcswitch");
    std::fs::create_dir_all(&runtime).unwrap();
    let args: Vec<String> = exec[1..]
        .iter()
        .map(|a| if a == "/etc/pfcswitch/pfcswitch.toml" { cfg.display().to_string() } else { a.clone() })
        .collect();
    let child = Command::new(root.join(exec[0].trim_start_matches('/')))
        .args(&args)
        .env("RUST_LOG", "info")
        .env("RUNTIME_DIRECTORY", &runtime)
        .stdout(std::fs::File::create(d.join("stdout")).unwrap())
        .stderr(std::fs::File::create(d.join("stderr")).unwrap())
        .spawn()
        .expect("spawn the installed pfcswitch");
    let mut child = Proc(child);
    let output = |d: &TestDir| {
        let r = |f: &str| std::fs::read_to_string(d.join(f)).unwrap_or_default();
        format!("--- stdout ---\n{}\n--- stderr ---\n{}", r("stdout"), r("stderr"))
    };

    // The telemetry socket is under the unit's runtime directory (/run/pfcswitch).
    let sock = runtime.join(format!("dpdk/{prefix}/dpdk_telemetry.v2"));
    let up = until(Duration::from_secs(60), || sock.exists());
    assert!(up.is_some(), "no telemetry socket at {}\n{}", sock.display(), output(&d));
    // Only root gets in: EAL makes the instance's directory 0700 (and the unit the runtime
    // directory), so the telemetry socket, and with it `pfcswitch config`, is root's.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(sock.parent().unwrap()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{} is {mode:o}", sock.parent().unwrap().display());
    let fwd = until(Duration::from_secs(60), || output(&d).contains("forwarding:"));
    assert!(fwd.is_some(), "not forwarding\n{}", output(&d));
    let mut tel = pfcswitch::dpdk::telemetry::Client::connect(&sock).expect("telemetry");
    let sent = until(Duration::from_secs(30), || n(&counters(&mut tel, "Ethernet4"), "tx_packets") == 200);
    assert!(sent.is_some(), "Ethernet4 sent {} of 200", n(&counters(&mut tel, "Ethernet4"), "tx_packets"));
    drop(tel);

    // systemctl reload: the unit's ExecReload, in the service's environment.
    let reload: Vec<String> = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecReload="))
        .expect("ExecReload")
        .split_whitespace()
        .map(|a| if a == "/etc/pfcswitch/pfcswitch.toml" { cfg.display().to_string() } else { a.to_string() })
        .collect();
    assert_eq!(reload[0], "/usr/bin/pfcswitch");
    let reload_now = || {
        run(Command::new(root.join(reload[0].trim_start_matches('/')))
            .args(&reload[1..])
            .env("RUNTIME_DIRECTORY", &runtime))
    };
    sw(&|c| c.edit_port("Ethernet4", |p| p.set("cable_length", "\"300m\"")));
    let o = reload_now();
    assert!(o.status.success(), "reload\n{}\n{}", show(&o), output(&d));
    assert!(String::from_utf8_lossy(&o.stdout).contains("port Ethernet4 cable_length = 300m: applied"), "{}", show(&o));
    // The MTU cannot change live: refused in one line, exit 2, nothing sent.
    sw(&|c| c.edit_port("Ethernet4", |p| p.set("cable_length", "\"1km\"")).edit_port("Ethernet0", |p| p.mtu(9000)));
    let o = reload_now();
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.trim().lines().count() == 1 && err.contains("port[0].mtu: differs from the running configuration"),
        "{err}"
    );
    let running = pfcswitch::dpdk::telemetry::query(&sock, "/pfcswitch/running_config").expect("running_config");
    let pieces: Vec<String> =
        running["pieces"].as_array().unwrap().iter().map(|p| p.as_str().unwrap().to_string()).collect();
    let text = pfcswitch::reconfig::join_pieces(&pieces).unwrap();
    assert!(text.contains("cable_length = \"300m\"") && !text.contains("1km"), "{text}");

    let st = Command::new("kill").args(["-TERM", &child.0.id().to_string()]).status().unwrap();
    assert!(st.success());
    let status = child.0.wait().unwrap();
    assert!(status.success(), "not a clean stop on SIGTERM: {status:?}\n{}", output(&d));
    assert!(output(&d).contains("pfcswitch stopped after"), "no stop summary\n{}", output(&d));
    assert_eq!(read_pcap(&d.join("out1.pcap")).len(), 200, "frames written by Ethernet4");
    assert!(!runtime.join(format!("dpdk/{prefix}")).exists(), "EAL runtime directory left behind");
}
