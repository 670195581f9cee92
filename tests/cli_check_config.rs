//! `pfcswitch check-config` as a user meets it: every broken file gives exactly one line
//! on stderr naming the file and the field, and exit code 2; every shipped config passes;
//! `run` refuses a broken file the same way before EAL starts.

mod common;
use common::*;

use std::process::Command;

fn expectation(path: &std::path::Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let first = text.lines().next().unwrap_or("");
    first
        .strip_prefix("# expect:")
        .unwrap_or_else(|| panic!("{}: first line must be '# expect: ...'", path.display()))
        .trim()
        .to_string()
}

fn bad_files() -> Vec<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/bad-configs");
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    v.sort();
    assert!(v.len() >= 10, "expected a set of broken configs, found {}", v.len());
    v
}

#[test]
fn broken_configs_give_one_line_and_exit_2() {
    for f in bad_files() {
        let out = Command::new(BIN).args(["check-config", f.to_str().unwrap()]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {}", f.display(), show(&out));
        let lines: Vec<_> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{}: expected one line, got:\n{stderr}", f.display());
        let name = f.file_name().unwrap().to_str().unwrap();
        assert!(lines[0].contains(name), "{}: line does not name the file: {}", f.display(), lines[0]);
        let expect = expectation(&f);
        assert!(lines[0].contains(&expect), "{}: line does not contain '{expect}': {}", f.display(), lines[0]);
    }
}

#[test]
fn run_validates_before_eal() {
    let f = &bad_files()[0];
    let out = Command::new(BIN).args(["run", "--config", f.to_str().unwrap(), "--duration", "1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("EAL:"), "EAL started before validation: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn shipped_configs_pass() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("dpdk-config");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|e| e == "toml") {
            let out = Command::new(BIN).args(["check-config", p.to_str().unwrap()]).output().unwrap();
            assert!(out.status.success(), "{}: {}", p.display(), show(&out));
            n += 1;
        }
    }
    assert!(n >= 5);
}

#[test]
fn run_refuses_bad_flags_before_eal() {
    let dir = TestDir::new("cli-flags");
    let cfg = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("dpdk-config/null.toml");
    let cfg = cfg.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--duration", "inf"], "--duration"),
        (&["--duration", "NaN"], "--duration"),
        (&["--duration", "1e20"], "--duration"),
        (&["--duration", "-1"], "--duration"),
        (&["--duration", "99999999999"], "--duration"),
        (&["--stats-interval", "-0.5"], "--stats-interval"),
        (&["--stats-interval", "inf"], "--stats-interval"),
        (&["--duration", "1", "--stats-json", "/nonexistent-dir/stats.json"], "--stats-json"),
        (&["--duration", "1", "--timeline", "/nonexistent-dir/t.csv"], "--timeline"),
        (&["--duration", "1", "--timeline-interval-us", "18446744073709551615"], "--timeline-interval-us"),
    ];
    for (args, flag) in cases {
        let out = Command::new(BIN)
            .args(["run", "--config", cfg])
            .args(*args)
            .env("RUNTIME_DIRECTORY", &dir.path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", show(&out));
        assert!(!stderr.contains("EAL:") && !stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with(flag), "{args:?}: line does not name {flag}: {stderr}");
    }
}
