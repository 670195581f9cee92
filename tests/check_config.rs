//! Configuration files: every shipped `dpdk-config/*.toml` validates, and every
//! `tests/data/bad-configs/*.toml` is rejected with a one-line error naming the file and the
//! field given in its first line (`# expect: <text>`).
//!
//! Uses only `pfcswitch::config`, so it builds with and without the `dpdk` feature. The
//! helpers (`bad_configs`, `expected`, `check_error_line`) are meant to be reused by a
//! test that runs `pfcswitch check-config FILE` and checks exit code 2 and stderr.

use pfcswitch::config;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `*.toml` files of a directory under the crate root, sorted.
pub fn toml_files(dir: &str) -> Vec<PathBuf> {
    let dir = root().join(dir);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    v
}

/// The shipped configurations (with the fabric's, `dpdk-config/fabric/`).
pub fn shipped_configs() -> Vec<PathBuf> {
    let mut v = toml_files("dpdk-config");
    v.extend(toml_files("dpdk-config/fabric"));
    v
}

/// The broken configurations with what their error must contain.
pub fn bad_configs() -> Vec<(PathBuf, String)> {
    toml_files("tests/data/bad-configs")
        .into_iter()
        .map(|p| {
            let e = expected(&p);
            (p, e)
        })
        .collect()
}

/// The text after `# expect:` on the first line of `path`.
pub fn expected(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let first = text.lines().next().unwrap_or("");
    first
        .strip_prefix("# expect:")
        .unwrap_or_else(|| panic!("{}: first line must be '# expect: <field path>'", path.display()))
        .trim()
        .to_string()
}

/// Check one error report (a `ConfigError`'s Display, or the stderr of `check-config`):
/// exactly one line, names the file, and contains `expect` after the file name.
pub fn check_error_line(report: &str, file: &Path, expect: &str) -> Result<(), String> {
    let report = report.strip_suffix('\n').unwrap_or(report);
    if report.contains('\n') {
        return Err(format!("not one line: {report:?}"));
    }
    let name = file.file_name().unwrap().to_string_lossy();
    let Some(at) = report.find(name.as_ref()) else {
        return Err(format!("does not name the file {name}: {report}"));
    };
    if !report[at + name.len()..].contains(expect) {
        return Err(format!("does not contain {expect:?} after the file name: {report}"));
    }
    Ok(())
}

#[test]
fn shipped_configs_are_valid() {
    let files = shipped_configs();
    assert!(files.len() >= 5, "expected the shipped configs, found {files:?}");
    for f in files {
        let c = config::load(&f).unwrap_or_else(|e| panic!("{e}"));
        assert!(!c.ports.is_empty());
        // The memif examples keep DPDK's defaults (abstract socket, no secret) so that any
        // generator connects as documented in their headers; the switch says so at start.
        let unexpected: Vec<_> = c.warnings.iter().filter(|w| !w.contains("devargs: memif")).collect();
        assert!(unexpected.is_empty(), "{}: {:?}", f.display(), unexpected);
        let args = c.eal_args("pfcswitch");
        assert_eq!(args[0], "pfcswitch");
        assert!(args.iter().any(|a| a.starts_with("--file-prefix")), "{args:?}");
    }
}

#[test]
fn bad_configs_are_rejected_with_one_line_naming_the_field() {
    let cases = bad_configs();
    assert!(cases.len() >= 12, "expected at least 12 bad configs, found {}", cases.len());
    let mut failures = Vec::new();
    for (f, expect) in &cases {
        match config::load(f) {
            Ok(_) => failures.push(format!("{}: accepted", f.display())),
            Err(e) => {
                let s = e.to_string();
                assert!(s.starts_with(&f.display().to_string()), "{s}");
                if let Err(m) = check_error_line(&s, f, expect) {
                    failures.push(format!("{}: {m}", f.display()));
                }
            }
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn missing_file_is_a_one_line_error() {
    let f = root().join("tests/data/bad-configs/does-not-exist.toml");
    let e = config::load(&f).unwrap_err();
    check_error_line(&e.to_string(), &f, "cannot read").unwrap();
}
