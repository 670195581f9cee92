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
///
/// Like `ip netns exec`, the thread also gets a mount namespace of its own with `/sys`
/// mounted again: sysfs shows the interfaces of the namespace that mounted it, and the
/// switch reads its af_packet ports' link state there. If that fails (no right to mount),
/// a warning says so and the rest works.
pub fn enter(name: &str) -> Result<(), KernelError> {
    let err = |msg: String| KernelError::Netns { name: name.to_string(), msg };
    check(name)?;
    let f = std::fs::File::open(path(name)).map_err(|e| err(e.to_string()))?;
    nix::sched::setns(f, nix::sched::CloneFlags::CLONE_NEWNET).map_err(|e| err(format!("setns: {e}")))?;
    if let Err(e) = remount_sys() {
        log::warn!("network namespace {name}: /sys not remounted ({e}): link states of af_packet ports may be wrong");
    }
    Ok(())
}

/// What iproute2's `netns_switch` does after `setns`: a private mount namespace (for this
/// thread and those it starts), mount events no longer propagated back, a fresh sysfs.
fn remount_sys() -> nix::Result<()> {
    use nix::mount::{mount, umount2, MntFlags, MsFlags};
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS)?;
    mount(None::<&str>, "/", None::<&str>, MsFlags::MS_SLAVE | MsFlags::MS_REC, None::<&str>)?;
    umount2("/sys", MntFlags::MNT_DETACH)?;
    mount(Some("sysfs"), "/sys", Some("sysfs"), MsFlags::empty(), None::<&str>)
}
