//! Sysctls the switch writes, with the values they had, written back at stop
//! (without `[control_plane] netns` they are the host's own). Each file is kept
//! open from the first write: a sysctl file belongs to the network namespace it was opened
//! in, so the restore reaches the same one even after the thread entered another (the
//! host's neighbour thresholds are written before the switch enters its namespace).

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::FileExt;

use super::KernelError;

struct Saved {
    path: String,
    file: File,
    old: String,
}

/// The sysctls written so far and their previous values; [`Sysctls::restore`] (or drop)
/// writes those back, the last written first.
#[derive(Default)]
pub struct Sysctls {
    saved: Vec<Saved>,
}

fn err(path: &str, err: std::io::Error) -> KernelError {
    KernelError::Sysctl { path: path.to_string(), err }
}

fn write(f: &File, v: &str) -> std::io::Result<()> {
    // A regular file (tests) keeps a longer old value's tail without this; /proc refuses it
    // and needs none.
    let _ = f.set_len(0);
    f.write_all_at(v.as_bytes(), 0)
}

impl Sysctls {
    /// Set `path` (e.g. `/proc/sys/net/ipv4/ip_forward`) to `value`, remembering the value
    /// it had the first time. Nothing is written (or remembered) when it holds `value`.
    pub fn set(&mut self, path: &str, value: &str) -> Result<(), KernelError> {
        let mut f = OpenOptions::new().read(true).write(true).open(path).map_err(|e| err(path, e))?;
        let mut old = String::new();
        f.read_to_string(&mut old).map_err(|e| err(path, e))?;
        let old = old.trim().to_string();
        if old == value {
            return Ok(());
        }
        write(&f, value).map_err(|e| err(path, e))?;
        if !self.saved.iter().any(|s| s.path == path) {
            self.saved.push(Saved { path: path.to_string(), file: f, old });
        }
        Ok(())
    }

    /// [`Sysctls::set`] where `path` exists: `Ok(false)` when it does not (a sysctl this
    /// kernel or this interface has not).
    pub fn set_if_present(&mut self, path: &str, value: &str) -> Result<bool, KernelError> {
        if !std::path::Path::new(path).exists() {
            return Ok(false);
        }
        self.set(path, value)?;
        Ok(true)
    }

    /// Raise the number in `path` to `at_least` (never lower it). `Ok(false)` when there is
    /// no such file.
    pub fn raise(&mut self, path: &str, at_least: u64) -> Result<bool, KernelError> {
        let now = match std::fs::read_to_string(path) {
            Ok(s) => s.trim().parse::<u64>().unwrap_or(0),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(err(path, e)),
        };
        if now < at_least {
            self.set(path, &at_least.to_string())?;
        }
        Ok(true)
    }

    /// The sysctls changed, with their previous values.
    pub fn changed(&self) -> Vec<(String, String)> {
        self.saved.iter().map(|s| (s.path.clone(), s.old.clone())).collect()
    }

    /// Write every previous value back, the last changed first; the errors (each logged).
    pub fn restore(&mut self) -> Vec<KernelError> {
        let mut errors = Vec::new();
        while let Some(s) = self.saved.pop() {
            match write(&s.file, &s.old) {
                Ok(()) => log::info!("sysctl {} restored to {}", s.path, s.old),
                // An interface's sysctl, gone with the interface (a representor closed first).
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    log::debug!("sysctl {}: gone with its interface", s.path);
                }
                Err(e) => {
                    log::warn!("sysctl {} not restored to {}: {e}", s.path, s.old);
                    errors.push(err(&s.path, e));
                }
            }
        }
        errors
    }
}

impl Drop for Sysctls {
    fn drop(&mut self) {
        self.restore();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_raise_and_restore_in_reverse() {
        let d = std::env::temp_dir().join(format!("pfcsw-sysctl-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = |n: &str| d.join(n).to_str().unwrap().to_string();
        std::fs::write(p("fwd"), "0\n").unwrap();
        std::fs::write(p("thresh"), "1024\n").unwrap();
        std::fs::write(p("same"), "1\n").unwrap();
        let read = |n: &str| std::fs::read_to_string(p(n)).unwrap().trim().to_string();
        let mut s = Sysctls::default();
        s.set(&p("fwd"), "1").unwrap();
        s.set(&p("fwd"), "2").unwrap(); // the first old value is the one kept
        s.set(&p("same"), "1").unwrap();
        assert!(s.raise(&p("thresh"), 16384).unwrap());
        assert!(s.raise(&p("thresh"), 100).unwrap(), "never lowered");
        assert!(!s.raise(&p("absent"), 1).unwrap());
        assert_eq!((read("fwd"), read("thresh"), read("same")), ("2".into(), "16384".into(), "1".into()));
        assert_eq!(s.changed().len(), 2, "an unchanged value is not remembered");
        assert!(s.restore().is_empty());
        assert_eq!((read("fwd"), read("thresh")), ("0".into(), "1024".into()));
        // Drop restores too.
        {
            let mut s = Sysctls::default();
            s.set(&p("fwd"), "1").unwrap();
        }
        assert_eq!(read("fwd"), "0");
        assert!(s.set(&p("absent"), "1").is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
