//! Helpers shared by the integration tests: pcap files, frame builders, and running the
//! real `pfcswitch` binary (one EAL per process) with a generated configuration.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

pub const BIN: &str = env!("CARGO_BIN_EXE_pfcswitch");

/// A fresh directory for one test, removed on drop.
pub struct TestDir {
    pub path: PathBuf,
}

impl TestDir {
    pub fn new(tag: &str) -> TestDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "pfcsw-test-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TestDir { path }
    }
    pub fn join(&self, p: &str) -> PathBuf {
        self.path.join(p)
    }
    /// A unique EAL file prefix for this test.
    pub fn prefix(&self) -> String {
        self.path.file_name().unwrap().to_string_lossy().into_owned()
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        if std::env::var_os("PFCSW_KEEP_TEST_DIRS").is_none() {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

// ---- pcap (classic libpcap format, microsecond timestamps, LINKTYPE_ETHERNET) ----

pub fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2c3d4u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&0i32.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&65535u32.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes());
    for (i, f) in frames.iter().enumerate() {
        out.extend_from_slice(&1u32.to_le_bytes());
        out.extend_from_slice(&(i as u32).to_le_bytes());
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(f);
    }
    std::fs::write(path, out).unwrap();
}

/// Frames of a pcap file (either byte order, µs or ns timestamps).
pub fn read_pcap(path: &Path) -> Vec<Vec<u8>> {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    assert!(b.len() >= 24, "{}: not a pcap file", path.display());
    let magic = u32::from_le_bytes(b[0..4].try_into().unwrap());
    let le = match magic {
        0xa1b2c3d4 | 0xa1b23c4d => true,
        0xd4c3b2a1 | 0x4d3cb2a1 => false,
        m => panic!("{}: bad pcap magic {m:#x}", path.display()),
    };
    let rd = |o: usize| {
        let a: [u8; 4] = b[o..o + 4].try_into().unwrap();
        if le {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        }
    };
    let mut frames = Vec::new();
    let mut off = 24;
    while off + 16 <= b.len() {
        let incl = rd(off + 8) as usize;
        off += 16;
        frames.push(b[off..off + incl].to_vec());
        off += incl;
    }
    frames
}

// ---- frames ----

pub fn mac(last: u8) -> [u8; 6] {
    [0x02, 0, 0, 0, 0, last]
}
pub const BCAST: [u8; 6] = [0xff; 6];

/// An untagged non-IP frame of `len` bytes (EtherType 0x88b5, local experimental), with a
/// payload tag to tell frames apart.
pub fn eth_frame(dst: [u8; 6], src: [u8; 6], tag: u8, len: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(len);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&[0x88, 0xb5]);
    while f.len() < len {
        f.push(tag);
    }
    f.truncate(len);
    f
}

/// An 802.1Qbb PFC frame built by hand from the standard (60 bytes).
pub fn pfc_frame(src: [u8; 6], class_enable: u8, quanta: [u16; 8]) -> Vec<u8> {
    let mut f = vec![0x01, 0x80, 0xc2, 0x00, 0x00, 0x01];
    f.extend_from_slice(&src);
    f.extend_from_slice(&[0x88, 0x08, 0x01, 0x01, 0x00, class_enable]);
    for q in quanta {
        f.extend_from_slice(&q.to_be_bytes());
    }
    f.resize(60, 0);
    f
}

// ---- running the switch ----

pub fn run_switch(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("RUST_LOG", "info")
        .output()
        .expect("spawn pfcswitch")
}

pub fn show(out: &Output) -> String {
    format!(
        "status: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub fn read_json(path: &Path) -> serde_json::Value {
    let t = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&t).unwrap()
}

/// Port object by name from a stats JSON.
pub fn port<'a>(j: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    j["ports"].as_array().unwrap().iter().find(|p| p["name"] == name).unwrap_or_else(|| panic!("no port {name} in {j}"))
}

/// The conservation and leak checks every switch-starting test ends with.
pub fn assert_conserved(j: &serde_json::Value) {
    assert_eq!(j["conservation"]["ok"], true, "conservation failed: {}", j["conservation"]);
    assert_eq!(j["mbufs"]["in_use_after_stop"], 0, "mbuf leak: {}", j["mbufs"]);
}
