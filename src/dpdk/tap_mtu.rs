//! A jumbo MTU for a `net_tap` port (the kernel representors) on DPDK 22.11.
//!
//! The tap driver's `dev_infos_get` reports a fixed `max_rx_pktlen` of 1522 in 22.11
//! (raised to 9018 from 23.03), so `rte_eth_dev_set_mtu` above 1500 fails with EINVAL
//! before the driver is asked, and the driver's TX drops every frame longer than
//! ethdev's recorded MTU + 22 B. Nothing else in the driver is limited: its TX writes any
//! length to the kernel's tap, its RX reads into the mbuf's whole data room, and the
//! kernel netdev takes any MTU up to 65535 (set over netlink by `kernel::representor`).
//!
//! So the MTU ethdev records (`rte_eth_dev_data.mtu`, which the driver's TX reads) is
//! raised here. That struct's layout is not in the installed headers; the field is found
//! without it: it is the one 16-bit word of ethdev's shared data that follows two
//! `rte_eth_dev_set_mtu` calls the driver accepts (1280, then 1500), and the result is
//! checked with `rte_eth_dev_get_mtu` (else put back and an error returned).

use super::{sys, DpdkError};

extern "C" {
    fn pfcsw_ethdev_data(len: *mut usize) -> *const std::ffi::c_void;
}

/// The MTU ethdev records for port `id` (`rte_eth_dev_get_mtu`), None if it has none.
pub fn mtu_of(id: u16) -> Option<u16> {
    let mut mtu: u16 = 0;
    // SAFETY: out-pointer.
    let ret = unsafe { sys::rte_eth_dev_get_mtu(id, &mut mtu) };
    (ret == 0).then_some(mtu)
}

fn set_mtu(id: u16, mtu: u16) -> Result<(), DpdkError> {
    // SAFETY: plain call on a configured port.
    let ret = unsafe { sys::rte_eth_dev_set_mtu(id, mtu) };
    if ret != 0 {
        return Err(DpdkError::from_ret(format!("rte_eth_dev_set_mtu(port {id}, {mtu})"), ret));
    }
    Ok(())
}

/// Ethdev's shared port data as 16-bit words (its memzone; valid until EAL cleanup).
fn ethdev_words() -> Result<(*mut u16, usize), DpdkError> {
    let mut len = 0usize;
    // SAFETY: out-pointer; the shim only looks the memzone up.
    let addr = unsafe { pfcsw_ethdev_data(&mut len) };
    if addr.is_null() {
        return Err(DpdkError::msg("tap mtu", "memzone rte_eth_dev_data not found"));
    }
    Ok((addr as *mut u16, len / 2))
}

/// Word `i` of `words`.
fn word(words: (*mut u16, usize), i: usize) -> u16 {
    assert!(i < words.1);
    // SAFETY: `words` spans the memzone, which is mapped (and 2-aligned: memzones start
    // on a cache line) for the process's life; the workers are not started yet, and a
    // word another thread writes meanwhile is only read.
    unsafe { std::ptr::read_volatile(words.0.add(i)) }
}

/// Give configured `net_tap` port `id` the MTU `mtu` past the driver's fixed 1500, so
/// that its TX takes frames up to `mtu` + 22 B (module doc). Called only where
/// `rte_eth_dev_set_mtu(id, mtu)` was refused; the port keeps 1500 on error.
pub fn raise_tap_mtu(id: u16, mtu: u16) -> Result<(), DpdkError> {
    let (lo, hi) = (1280, 1500);
    set_mtu(id, lo)?;
    let words = ethdev_words()?;
    let at_lo: Vec<usize> = (0..words.1).filter(|&i| word(words, i) == lo).collect();
    set_mtu(id, hi)?;
    let field: Vec<usize> = at_lo.into_iter().filter(|&i| word(words, i) == hi).collect();
    let [i] = field[..] else {
        return Err(DpdkError::msg(
            format!("tap mtu (port {id})"),
            format!("{} candidate fields for ethdev's MTU, not one", field.len()),
        ));
    };
    // SAFETY: word `i` of the memzone is this port's `mtu` (it followed both calls above).
    unsafe { std::ptr::write_volatile(words.0.add(i), mtu) };
    if mtu_of(id) != Some(mtu) {
        // SAFETY: as above, the value the last accepted call wrote.
        unsafe { std::ptr::write_volatile(words.0.add(i), hi) };
        return Err(DpdkError::msg(format!("tap mtu (port {id})"), "rte_eth_dev_get_mtu does not see the new MTU"));
    }
    Ok(())
}
