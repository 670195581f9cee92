//! Network namespaces by name (`ip netns add NAME` makes `/run/netns/NAME`).

use super::KernelError;
use std::path::PathBuf;

/// The bind-mounted namespace file of `name`.
pub fn path(name: &str) -> PathBuf {
    PathBuf::from("/run/netns").join(name)
}

/// Does the namespace exist? For `check-config`/`run` before EAL starts (the message says
/// how to make it).
pub fn check(name: &str) -> Result<(), KernelError> {
    let p = path(name);
    if p.exists() {
        Ok(())
    } else {
        Err(KernelError::Netns {
            name: name.to_string(),
            msg: format!("{} does not exist (create it with `ip netns add {name}`)", p.display()),
        })
    }
}

/// Move the calling thread into namespace `name`. Threads it starts afterwards (EAL's
/// lcores, the control thread) are born there; other threads stay where they are. The
/// switch calls it on its main thread before EAL starts.
pub fn enter(name: &str) -> Result<(), KernelError> {
    let err = |msg: String| KernelError::Netns { name: name.to_string(), msg };
    check(name)?;
    let f = std::fs::File::open(path(name)).map_err(|e| err(e.to_string()))?;
    nix::sched::setns(f, nix::sched::CloneFlags::CLONE_NEWNET).map_err(|e| err(format!("setns: {e}")))
}
