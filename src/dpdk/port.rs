use std::ffi::{CStr, CString};
use std::sync::Arc;

use super::{sys, DpdkError, MbufBurst, Mempool, BURST_CAP};

/// Counters the PMD keeps for a port (`rte_eth_stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PortStats {
    pub ipackets: u64,
    pub opackets: u64,
    pub ibytes: u64,
    pub obytes: u64,
    /// RX packets dropped by the NIC because its RX ring was full.
    pub imissed: u64,
    pub ierrors: u64,
    pub oerrors: u64,
    /// RX mbuf allocation failures: the mempool was empty.
    pub rx_nombuf: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkStatus {
    pub up: bool,
    /// Mb/s as reported by the PMD (0 = unknown).
    pub speed_mbps: u32,
    pub full_duplex: bool,
}

/// What happened when the NIC's own link-level flow control was turned off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlowCtrlOutcome {
    Disabled,
    /// Off, but only with `mac_ctrl_frame_fwd = 0` (the PMD refused forwarding): the NIC
    /// may drop received MAC-control frames (already logged as a warning).
    DisabledNoForward,
    /// The PMD has no flow-control knob (typical for virtual devices).
    NotSupported,
    Failed(String),
}

/// A configured ethdev port. Stopped and closed on drop.
pub struct Port {
    id: u16,
    name: String,
    driver: String,
    nb_rx: u16,
    nb_tx: u16,
    started: bool,
    // The pool must outlive the port's RX rings.
    _pool: Arc<Mempool>,
}

/// The right to poll one RX queue: `Send`, not `Clone`, so exactly one lcore polls it.
pub struct RxQueue {
    port: u16,
    queue: u16,
}

/// The right to transmit on one TX queue: `Send`, not `Clone`.
pub struct TxQueue {
    port: u16,
    queue: u16,
}

impl Port {
    /// Port id of a probed device by its name (the devargs up to the first comma, e.g.
    /// "net_null0", or a PCI address).
    pub fn id_by_name(name: &str) -> Result<u16, DpdkError> {
        let c = CString::new(name).map_err(|_| DpdkError::msg("port", "name contains NUL"))?;
        let mut id: u16 = 0;
        // SAFETY: valid C string and out-pointer.
        let ret = unsafe { sys::rte_eth_dev_get_port_by_name(c.as_ptr(), &mut id) };
        if ret != 0 {
            return Err(DpdkError::from_ret(format!("rte_eth_dev_get_port_by_name({name})"), ret));
        }
        Ok(id)
    }

    /// Configure port `id` with `nb_rx` RX and `nb_tx` TX queues (`rx_desc`/`tx_desc`
    /// descriptors each), RX buffers from `pool`; try to set `mtu`. Returns the port and
    /// its queue tokens.
    pub fn configure(
        id: u16,
        nb_rx: u16,
        nb_tx: u16,
        rx_desc: u16,
        tx_desc: u16,
        pool: Arc<Mempool>,
        mtu: Option<u16>,
    ) -> Result<(Port, Vec<RxQueue>, Vec<TxQueue>), DpdkError> {
        Port::configure_rss(id, nb_rx, nb_tx, rx_desc, tx_desc, pool, mtu, 0)
    }

    /// [`Port::configure`], and with `rss_hf` non-zero, received flows spread over the RX
    /// queues by these RSS hash types (`RTE_ETH_RSS_*`, the PMD's default key).
    #[allow(clippy::too_many_arguments)]
    pub fn configure_rss(
        id: u16,
        nb_rx: u16,
        nb_tx: u16,
        rx_desc: u16,
        tx_desc: u16,
        pool: Arc<Mempool>,
        mtu: Option<u16>,
        rss_hf: u64,
    ) -> Result<(Port, Vec<RxQueue>, Vec<TxQueue>), DpdkError> {
        let info = dev_info(id)?;
        let driver = info.driver.clone();
        if nb_rx > info.max_rx_queues || nb_tx > info.max_tx_queues {
            return Err(DpdkError::msg(
                format!("port {id} ({driver})"),
                format!("needs {nb_rx} rx/{nb_tx} tx queues, device has {}/{}", info.max_rx_queues, info.max_tx_queues),
            ));
        }
        // No RX offloads: in particular no RTE_ETH_RX_OFFLOAD_SCATTER, so a PMD that honours
        // it never chains mbufs (the mempool's data room covers MTU + header); a chain that
        // arrives anyway is dropped as multi_segment by the worker.
        let mut conf: sys::rte_eth_conf = Default::default();
        if rss_hf != 0 {
            conf.rxmode.mq_mode = sys::rte_eth_rx_mq_mode_RTE_ETH_MQ_RX_RSS;
            conf.rx_adv_conf.rss_conf.rss_hf = rss_hf;
        }
        // SAFETY: valid port id and conf.
        let ret = unsafe { sys::rte_eth_dev_configure(id, nb_rx, nb_tx, &conf) };
        if ret != 0 {
            return Err(DpdkError::from_ret(format!("rte_eth_dev_configure(port {id})"), ret));
        }
        if let Some(mtu) = mtu {
            // SAFETY: plain call.
            let ret = unsafe { sys::rte_eth_dev_set_mtu(id, mtu) };
            if ret != 0 {
                let msg = DpdkError::from_ret("rte_eth_dev_set_mtu", ret).msg;
                if driver.contains("tap") {
                    // A kernel representor: net_tap's fixed limit in DPDK 22.11, which the
                    // caller raises (`raise_tap_mtu`, docs/routing.md).
                    log::debug!("port {id} ({driver}): MTU {mtu} not set: {msg}");
                } else {
                    log::info!("port {id} ({driver}): MTU {mtu} not set: {msg}");
                }
            }
        }
        // SAFETY: plain call.
        let socket = unsafe { sys::rte_eth_dev_socket_id(id) };
        let socket = if socket < 0 { sys::SOCKET_ID_ANY } else { socket };
        for q in 0..nb_rx {
            // SAFETY: the pool outlives the port (held in Port::_pool).
            let ret =
                unsafe { sys::rte_eth_rx_queue_setup(id, q, rx_desc, socket as u32, std::ptr::null(), pool.as_ptr()) };
            if ret != 0 {
                return Err(DpdkError::from_ret(format!("rte_eth_rx_queue_setup(port {id}, queue {q})"), ret));
            }
        }
        for q in 0..nb_tx {
            // SAFETY: default txconf (NULL).
            let ret = unsafe { sys::rte_eth_tx_queue_setup(id, q, tx_desc, socket as u32, std::ptr::null()) };
            if ret != 0 {
                return Err(DpdkError::from_ret(format!("rte_eth_tx_queue_setup(port {id}, queue {q})"), ret));
            }
        }
        let port = Port { id, name: String::new(), driver, nb_rx, nb_tx, started: false, _pool: pool };
        let rxq = (0..nb_rx).map(|queue| RxQueue { port: id, queue }).collect();
        let txq = (0..nb_tx).map(|queue| TxQueue { port: id, queue }).collect();
        Ok((port, rxq, txq))
    }

    pub fn with_name(mut self, name: &str) -> Self {
        self.name = name.to_string();
        self
    }

    pub fn id(&self) -> u16 {
        self.id
    }
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn driver(&self) -> &str {
        &self.driver
    }
    pub fn nb_rx(&self) -> u16 {
        self.nb_rx
    }
    pub fn nb_tx(&self) -> u16 {
        self.nb_tx
    }

    pub fn start(&mut self) -> Result<(), DpdkError> {
        // SAFETY: configured port.
        let ret = unsafe { sys::rte_eth_dev_start(self.id) };
        if ret != 0 {
            return Err(DpdkError::from_ret(format!("rte_eth_dev_start(port {})", self.id), ret));
        }
        self.started = true;
        // Switch ports see every frame.
        // SAFETY: plain call; failure is harmless for vdevs that are always promiscuous.
        let ret = unsafe { sys::rte_eth_promiscuous_enable(self.id) };
        if ret != 0 {
            log::debug!("port {}: promiscuous mode not enabled ({ret})", self.id);
        }
        Ok(())
    }

    pub fn stop(&mut self) -> Result<(), DpdkError> {
        if !self.started {
            return Ok(());
        }
        self.started = false;
        // SAFETY: no lcore polls the port any more (caller's contract: lcores joined).
        let ret = unsafe { sys::rte_eth_dev_stop(self.id) };
        if ret != 0 {
            return Err(DpdkError::from_ret(format!("rte_eth_dev_stop(port {})", self.id), ret));
        }
        Ok(())
    }

    pub fn mac(&self) -> [u8; 6] {
        let mut a = sys::rte_ether_addr::default();
        // SAFETY: out-pointer.
        unsafe { sys::rte_eth_macaddr_get(self.id, &mut a) };
        a.addr_bytes
    }

    /// Set the port's MAC address (`rte_eth_dev_default_mac_addr_set`).
    pub fn set_mac(&self, mac: [u8; 6]) -> Result<(), DpdkError> {
        let mut a = sys::rte_ether_addr { addr_bytes: mac };
        // SAFETY: valid port id and address; DPDK copies it.
        let ret = unsafe { sys::rte_eth_dev_default_mac_addr_set(self.id, &mut a) };
        if ret != 0 {
            return Err(DpdkError::from_ret("rte_eth_dev_default_mac_addr_set", ret));
        }
        Ok(())
    }

    pub fn link(&self) -> LinkStatus {
        let mut l = sys::rte_eth_link::default();
        // SAFETY: out-pointer; nowait never blocks.
        unsafe { sys::rte_eth_link_get_nowait(self.id, &mut l) };
        LinkStatus { up: l.link_status() != 0, speed_mbps: l.link_speed, full_duplex: l.link_duplex() != 0 }
    }

    pub fn stats(&self) -> PortStats {
        stats_of(self.id)
    }

    /// Turn the NIC's own 802.3x link flow control off (mode none) and ask it to pass
    /// MAC-control frames (EtherType 0x8808) to the host, so that PFC frames reach the
    /// software and the NIC never answers them behind the switch's back.
    ///
    /// Some PMDs (octeontx, octeontx2/cnxk) refuse the whole call with -EINVAL when
    /// `mac_ctrl_frame_fwd != 0`; the NIC's flow control would then stay on. So a refusal
    /// is retried with `mac_ctrl_frame_fwd = 0`: flow control goes off, but the NIC may
    /// drop PFC frames instead of passing them up, which is logged as a warning here.
    /// What each PMD does is documented in `dpdk-config/nic-example.toml`.
    pub fn flow_ctrl_off(&self) -> FlowCtrlOutcome {
        // SAFETY: a plain C struct of integers and an enum whose 0 is RTE_ETH_FC_NONE.
        let mut fc: sys::rte_eth_fc_conf = unsafe { std::mem::zeroed() };
        // SAFETY: out-pointer.
        let ret = unsafe { sys::rte_eth_dev_flow_ctrl_get(self.id, &mut fc) };
        if is_enotsup(ret) {
            return FlowCtrlOutcome::NotSupported;
        }
        fc.mode = sys::rte_eth_fc_mode_RTE_ETH_FC_NONE;
        fc.autoneg = 0;
        let with_fwd = self.flow_ctrl_set(&mut fc, 1);
        if with_fwd == 0 {
            return FlowCtrlOutcome::Disabled;
        }
        if is_enotsup(with_fwd) {
            return FlowCtrlOutcome::NotSupported;
        }
        let refused = DpdkError::from_ret("rte_eth_dev_flow_ctrl_set(mac_ctrl_frame_fwd=1)", with_fwd);
        match self.flow_ctrl_set(&mut fc, 0) {
            0 => {
                log::warn!(
                    "port {} ({}): {refused}; retried with mac_ctrl_frame_fwd=0 and NIC flow control is off, \
                     but the NIC may drop MAC-control frames: PFC frames from the peer may not reach the switch",
                    self.id,
                    self.driver
                );
                FlowCtrlOutcome::DisabledNoForward
            }
            r if is_enotsup(r) => FlowCtrlOutcome::NotSupported,
            r => FlowCtrlOutcome::Failed(format!(
                "{refused}; {}",
                DpdkError::from_ret("rte_eth_dev_flow_ctrl_set(mac_ctrl_frame_fwd=0)", r)
            )),
        }
    }

    /// One `rte_eth_dev_flow_ctrl_set` with `mac_ctrl_frame_fwd = fwd`; the PMD's return.
    fn flow_ctrl_set(&self, fc: &mut sys::rte_eth_fc_conf, fwd: u8) -> i32 {
        fc.mac_ctrl_frame_fwd = fwd;
        // SAFETY: valid port id and conf.
        unsafe { sys::rte_eth_dev_flow_ctrl_set(self.id, fc) }
    }
}

/// -ENOTSUP (== -EOPNOTSUPP on Linux): the PMD has no flow-control op.
fn is_enotsup(ret: i32) -> bool {
    ret == -libc_enotsup()
}

fn libc_enotsup() -> i32 {
    95 // ENOTSUP == EOPNOTSUPP on Linux
}

/// What a PMD says about its device (`rte_eth_dev_info_get`, `rte_eth_dev_socket_id`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevInfo {
    /// The PMD's name, e.g. "net_i40e", "net_tap".
    pub driver: String,
    pub max_rx_queues: u16,
    pub max_tx_queues: u16,
    /// RSS hash types the device can spread by (`flow_type_rss_offloads`; 0: no RSS).
    pub rss_offloads: u64,
    /// RSS redirection table entries (`reta_size`).
    pub reta_size: u16,
    /// NUMA socket of the device; None when unknown (vdevs, single-socket hosts).
    pub socket: Option<u32>,
}

/// Device `id`'s capabilities as its PMD reports them.
pub fn dev_info(id: u16) -> Result<DevInfo, DpdkError> {
    let mut info: sys::rte_eth_dev_info = Default::default();
    // SAFETY: out-pointer to a zeroed struct.
    let ret = unsafe { sys::rte_eth_dev_info_get(id, &mut info) };
    if ret != 0 {
        return Err(DpdkError::from_ret(format!("rte_eth_dev_info_get(port {id})"), ret));
    }
    let driver = if info.driver_name.is_null() {
        String::new()
    } else {
        // SAFETY: driver_name is a static C string.
        unsafe { CStr::from_ptr(info.driver_name) }.to_string_lossy().into_owned()
    };
    // SAFETY: plain call.
    let socket = unsafe { sys::rte_eth_dev_socket_id(id) };
    Ok(DevInfo {
        driver,
        max_rx_queues: info.max_rx_queues,
        max_tx_queues: info.max_tx_queues,
        rss_offloads: info.flow_type_rss_offloads,
        reta_size: info.reta_size,
        socket: u32::try_from(socket).ok(),
    })
}

/// NUMA socket of an EAL lcore (`rte_lcore_to_socket_id`).
pub fn lcore_socket(lcore: u32) -> u32 {
    // SAFETY: plain getter; DPDK bounds-checks the lcore id.
    unsafe { sys::rte_lcore_to_socket_id(lcore) }
}

/// Port counters by id (readable from any thread: the PMD's stats are read-only here).
/// Link status of port `id` without waiting (`rte_eth_link_get_nowait`).
/// The most RX and TX queues device `id` offers ((0, 0) if it cannot say).
pub fn max_queues(id: u16) -> (u16, u16) {
    dev_info(id).map_or((0, 0), |i| (i.max_rx_queues, i.max_tx_queues))
}

/// Set port `id`'s link administratively up or down (`rte_eth_dev_set_link_up/down`;
/// net_tap: its kernel netdev's IFF_UP).
pub fn set_link(id: u16, up: bool) -> Result<(), DpdkError> {
    // SAFETY: plain calls on a port id.
    let ret = unsafe {
        if up {
            sys::rte_eth_dev_set_link_up(id)
        } else {
            sys::rte_eth_dev_set_link_down(id)
        }
    };
    if ret != 0 {
        return Err(DpdkError::from_ret(if up { "rte_eth_dev_set_link_up" } else { "rte_eth_dev_set_link_down" }, ret));
    }
    Ok(())
}

pub fn link_of(id: u16) -> LinkStatus {
    let mut l = sys::rte_eth_link::default();
    // SAFETY: out-pointer; nowait never blocks.
    unsafe { sys::rte_eth_link_get_nowait(id, &mut l) };
    LinkStatus { up: l.link_status() != 0, speed_mbps: l.link_speed, full_duplex: l.link_duplex() != 0 }
}

pub fn stats_of(id: u16) -> PortStats {
    let mut s = sys::rte_eth_stats::default();
    // SAFETY: out-pointer.
    unsafe { sys::rte_eth_stats_get(id, &mut s) };
    PortStats {
        ipackets: s.ipackets,
        opackets: s.opackets,
        ibytes: s.ibytes,
        obytes: s.obytes,
        imissed: s.imissed,
        ierrors: s.ierrors,
        oerrors: s.oerrors,
        rx_nombuf: s.rx_nombuf,
    }
}

impl Drop for Port {
    fn drop(&mut self) {
        let _ = self.stop();
        // SAFETY: stopped port, no lcore uses it.
        unsafe {
            sys::rte_eth_dev_close(self.id);
        }
    }
}

impl RxQueue {
    pub fn port(&self) -> u16 {
        self.port
    }
    pub fn queue(&self) -> u16 {
        self.queue
    }
    /// Receive up to `max` packets, appended to `burst`. Returns how many arrived.
    #[inline(always)]
    pub fn rx_burst(&mut self, burst: &mut MbufBurst, max: usize) -> usize {
        let start = burst.len();
        let want = max.min(BURST_CAP - start) as u16;
        if want == 0 {
            return 0;
        }
        // SAFETY: the slots from `start` are empty (None == NULL) and at least `want` long;
        // the PMD writes `n` owned mbuf pointers into them.
        let n = unsafe { sys::rte_eth_rx_burst(self.port, self.queue, burst.raw_slots(start), want) } as usize;
        burst.set_len(start + n);
        n
    }
}

impl TxQueue {
    pub fn port(&self) -> u16 {
        self.port
    }
    pub fn queue(&self) -> u16 {
        self.queue
    }
    /// Free the mbufs of descriptors the device completed (`rte_eth_tx_done_cleanup`),
    /// for PMDs that free lazily (Intel's, until the ring is nearly full). Only the lcore
    /// that transmits on this queue may call it. Returns the packets freed, or None when
    /// the PMD does not support it.
    pub fn done_cleanup(&mut self) -> Option<u32> {
        // SAFETY: our queue, called by its only user; 0 = free all that completed.
        let r = unsafe { sys::rte_eth_tx_done_cleanup(self.port, self.queue, 0) };
        u32::try_from(r).ok()
    }

    /// Transmit from the front of `burst`; the packets the driver took leave the burst,
    /// the rest stay (a full TX ring is backpressure, not loss). Returns how many went.
    #[inline(always)]
    pub fn tx_burst(&mut self, burst: &mut MbufBurst) -> usize {
        let (slots, len) = burst.raw_for_tx();
        if len == 0 {
            return 0;
        }
        // SAFETY: `raw_for_tx` compacted the burst: the first `len` slots hold owned mbufs,
        // none NULL; the driver takes ownership of the first `n`.
        let n = unsafe { sys::rte_eth_tx_burst(self.port, self.queue, slots, len as u16) } as usize;
        burst.consume_front(n);
        n
    }
}
