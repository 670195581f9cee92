//! What the dataplane needs to start, resolved from the configuration (plain data).

/// One switch port.
#[derive(Debug, Clone)]
pub struct PortSpec {
    pub name: String,
    /// Full devargs as given to EAL (`--vdev=` or `-a`).
    pub devargs: String,
    pub speed_bps: u64,
    pub mtu: u32,
    /// RX queues (numbered 0..nb_rx as in DPDK).
    pub nb_rx: u16,
    /// false: the port's queues fill and nothing is sent (test knob).
    pub tx_enable: bool,
    /// Obey received 802.3x PAUSE.
    pub obey_8023x: bool,
    /// Configured MAC (`mac`), else the device's.
    pub mac: Option<[u8; 6]>,
    /// Pad frames shorter than 60 bytes instead of dropping them as runts. On for
    /// kernel-backed ports (net_tap): the kernel hands over unpadded frames, padding is
    /// what a NIC's MAC does on the wire.
    pub pad_short_frames: bool,
}

impl PortSpec {
    /// The ethdev name DPDK registers for these devargs (up to the first comma).
    pub fn dev_name(&self) -> &str {
        self.devargs.split(',').next().unwrap_or("").trim()
    }
}

/// One worker lcore: the RX queues it polls and the ports whose TX it owns.
#[derive(Debug, Clone)]
pub struct WorkerSpec {
    pub lcore: u32,
    pub rx: Vec<(usize, u16)>,
    pub tx: Vec<usize>,
}

#[derive(Debug, Clone)]
pub struct SwitchSpec {
    pub eal_args: Vec<String>,
    pub ports: Vec<PortSpec>,
    pub workers: Vec<WorkerSpec>,
    pub control_lcore: u32,
    pub control_idle: crate::config::ControlIdle,
    pub control_nap_ns: u64,
    pub burst_size: usize,
    pub rx_ring_size: u16,
    pub tx_ring_size: u16,
    /// Mbufs in the pool: explicit or computed by the config (never 0).
    pub mbuf_count: u32,
    pub fdb_size: usize,
    /// Seconds; 0 = never age.
    pub fdb_aging_time: u64,
    /// Packets per egress TC queue.
    pub egress_queue_len: usize,
    /// MMU, classification, PFC and scheduling derived from the config.
    pub plan: crate::plan::Plan,
    /// PFC watchdog on every port's lossless priorities (None = off).
    pub pfcwd: Option<crate::pfcwd::PfcwdConfig>,
    /// WRED/ECN random seed (`[qos] wred_seed`); None = from the TSC.
    pub wred_seed: Option<u64>,
}

/// Packets one egress queue (each TC queue, and a port's inbound ring) must hold: all that
/// the buffer can admit in minimum-size frames, or all the mbufs if there are fewer (a
/// waiting packet holds one). Then the MMU, never a queue, decides what is dropped.
pub fn queue_len_for(plan: &crate::plan::Plan, mbuf_count: u32, burst: usize) -> usize {
    let admit = plan.mmu.max_packets(crate::wire::MIN_FRAME_LEN as u32);
    (admit.min(u64::from(mbuf_count)) as usize).max(burst).max(1)
}

impl SwitchSpec {
    /// The start-up spec of a validated configuration.
    pub fn from_config(cfg: &crate::config::Config, plan: crate::plan::Plan) -> SwitchSpec {
        let burst = cfg.switch.burst_size as usize;
        SwitchSpec {
            eal_args: cfg.eal_args("pfcswitch"),
            ports: cfg
                .ports
                .iter()
                .map(|p| PortSpec {
                    name: p.name.clone(),
                    devargs: p.dpdk_name().to_string(),
                    speed_bps: p.speed_bps,
                    mtu: p.mtu as u32,
                    nb_rx: p.rx_queues,
                    tx_enable: p.tx_enable,
                    obey_8023x: p.obey_8023x,
                    mac: p.mac,
                    pad_short_frames: matches!(&p.device, crate::config::PortDevice::Vdev { driver, .. } if driver == "net_tap"),
                })
                .collect(),
            workers: cfg
                .lcores
                .workers
                .iter()
                .map(|w| WorkerSpec { lcore: w.lcore, rx: w.rx.iter().map(|r| (r.port, r.queue)).collect(), tx: w.tx.clone() })
                .collect(),
            control_lcore: cfg.lcores.control,
            control_idle: cfg.lcores.control_idle,
            control_nap_ns: cfg.lcores.control_nap_ns,
            burst_size: burst,
            rx_ring_size: cfg.switch.rx_ring_size,
            tx_ring_size: cfg.switch.tx_ring_size,
            mbuf_count: cfg.switch.mbuf_count,
            fdb_size: cfg.switch.fdb_size,
            fdb_aging_time: cfg.switch.fdb_aging_time as u64,
            egress_queue_len: queue_len_for(&plan, cfg.switch.mbuf_count, burst),
            plan,
            pfcwd: cfg.pfcwd,
            wred_seed: cfg.qos.wred_seed,
        }
    }
}
