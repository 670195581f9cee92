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
    /// kernel-backed ports (net_tap, net_af_packet, net_af_xdp): the kernel hands over
    /// unpadded frames, padding is what a NIC's MAC does on the wire.
    pub pad_short_frames: bool,
    /// Put PFC frames on TX queue 1: `Some(true)` required, `Some(false)` never, None
    /// (`auto`) where the device has a second TX queue and both feed one wire (PCI).
    pub control_txq: Option<bool>,
    /// A PCI device (not a vdev).
    pub is_pci: bool,
    /// The kernel representor of port `i` (added by the switch after the `[[port]]`s).
    pub representor_of: Option<usize>,
    /// The kernel representor of the VLAN interface of this VID.
    pub vlan_interface_of: Option<u16>,
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
    pub worker_idle: crate::config::WorkerIdle,
    /// Flood lossless-class frames to unknown unicast destinations.
    pub flood_lossless: bool,
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
    /// The configuration this was derived from (to derive it again with the links' speeds).
    pub config: crate::config::Config,
}

/// A link whose speed is not the one configured, at start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("port {port}: {msg}")]
pub struct SpeedMismatch {
    pub port: String,
    pub msg: String,
}

/// Packets one egress queue (each TC queue, and a port's inbound ring) must hold: all that
/// the buffer can admit in minimum-size frames, or all the mbufs if there are fewer (a
/// waiting packet holds one). Then the MMU, never a queue, decides what is dropped.
pub fn queue_len_for(plan: &crate::plan::Plan, mbuf_count: u32, burst: usize) -> usize {
    let admit = plan.mmu.max_packets(crate::wire::MIN_FRAME_LEN as u32);
    (admit.min(u64::from(mbuf_count)) as usize).max(burst).max(1)
}

impl SwitchSpec {
    /// How many ports are configured `[[port]]`s (the representors follow them).
    pub fn switch_ports(&self) -> usize {
        self.ports.iter().take_while(|p| p.representor_of.is_none() && p.vlan_interface_of.is_none()).count()
    }

    /// The largest MTU of any port: what bounds a frame that can reach an egress port.
    pub fn max_mtu(&self) -> u32 {
        self.ports.iter().map(|p| p.mtu).max().unwrap_or(1500)
    }

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
                    pad_short_frames: matches!(&p.device, crate::config::PortDevice::Vdev { driver, .. }
                        if ["net_tap", "net_af_packet", "net_af_xdp"].contains(&driver.as_str())),
                    control_txq: match p.control_tx_queue {
                        crate::config::ControlTxQueue::On => Some(true),
                        crate::config::ControlTxQueue::Off => Some(false),
                        crate::config::ControlTxQueue::Auto => None,
                    },
                    is_pci: matches!(p.device, crate::config::PortDevice::Pci { .. }),
                    representor_of: p.representor_of,
                    vlan_interface_of: p.vlan_interface_of,
                })
                .collect(),
            workers: cfg
                .lcores
                .workers
                .iter()
                .map(|w| WorkerSpec {
                    lcore: w.lcore,
                    rx: w.rx.iter().map(|r| (r.port, r.queue)).collect(),
                    tx: w.tx.clone(),
                })
                .collect(),
            control_lcore: cfg.lcores.control,
            control_idle: cfg.lcores.control_idle,
            control_nap_ns: cfg.lcores.control_nap_ns,
            worker_idle: cfg.lcores.worker_idle,
            flood_lossless: cfg.switch.flood_lossless,
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
            config: cfg.clone(),
        }
    }

    /// Apply the speeds the links report at start (`link_bps[i]`, None or 0 = unknown)
    /// on ports with a real link: `speed = "auto"` takes it; a different configured speed
    /// refuses to start, or with `speed_mismatch = "warn"` is warned about (returned) and
    /// kept. Nominal-speed devices keep the configured speed, silently. Returns the spec
    /// re-derived with the speeds in force (PFC timers, refresh, headroom, shaper) if any
    /// changed, and the warnings.
    pub fn with_link_speeds(
        &self,
        link_bps: &[Option<u64>],
    ) -> Result<(Option<SwitchSpec>, Vec<String>), SpeedMismatch> {
        let mut cfg = self.config.clone();
        let (mut changed, mut warnings) = (false, Vec::new());
        for (p, link) in cfg.ports.iter_mut().zip(link_bps) {
            if !p.has_real_link() {
                continue;
            }
            let link = link.filter(|&l| l > 0);
            let err = |msg: String| SpeedMismatch { port: p.name.clone(), msg };
            match link {
                None if p.speed_auto => {
                    return Err(err("speed = \"auto\" but the link reports no speed (is it up?)".into()))
                }
                None => {}
                Some(l) if l == p.speed_bps => {}
                Some(l) if p.speed_auto => {
                    if p.shaper_bps == Some(p.speed_bps) || p.shaper_bps.is_some_and(|s| s > l) {
                        p.shaper_bps = Some(l);
                    }
                    p.speed_bps = l;
                    changed = true;
                }
                Some(l) => {
                    let msg = format!(
                        "the link runs at {} but speed = \"{}\"",
                        crate::units::format_speed(l),
                        crate::units::format_speed(p.speed_bps)
                    );
                    if !p.speed_mismatch_warn {
                        return Err(err(format!(
                            "{msg}: set the link's speed, speed = \"auto\", or speed_mismatch = \"warn\""
                        )));
                    }
                    warnings.push(format!(
                        "port {}: {msg}; the configured speed is used (speed_mismatch = \"warn\")",
                        p.name
                    ));
                }
            }
        }
        if !changed {
            return Ok((None, warnings));
        }
        let plan = crate::plan::plan(&cfg, cfg.switch.sw_response_ns)
            .map_err(|e| SpeedMismatch { port: "*".into(), msg: format!("with the links' speeds: {e}") })?;
        Ok((Some(SwitchSpec::from_config(&cfg, plan)), warnings))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CFG: &str = r#"
[eal]
args = ["--no-huge", "-m", "512", "--lcores=0@0,1@1"]
[[port]]
name = "Ethernet0"
devargs = "0000:3b:00.0"
speed = "100G"
cable_length = "300m"
[[port]]
name = "Ethernet4"
devargs = "net_null0"
speed = "100G"
"#;

    fn spec(text: &str) -> SwitchSpec {
        let cfg = crate::config::from_str(text, "t.toml").unwrap();
        let plan = crate::plan::plan(&cfg, cfg.switch.sw_response_ns).unwrap();
        SwitchSpec::from_config(&cfg, plan)
    }

    #[test]
    fn link_speed_refuse_warn_auto() {
        const G25: u64 = 25_000_000_000;
        let s = spec(CFG);
        // A real link at another speed: refused, naming both; a vdev's nominal speed: ignored.
        let e = s.with_link_speeds(&[Some(G25), Some(10_000_000_000)]).unwrap_err();
        assert_eq!(e.port, "Ethernet0");
        assert!(e.to_string().contains("25G") && e.to_string().contains("100G"), "{e}");
        let (same, warnings) = s.with_link_speeds(&[None, Some(1)]).unwrap();
        assert!(same.is_none() && warnings.is_empty(), "unknown speed, vdev: nothing");
        assert!(s.with_link_speeds(&[Some(100_000_000_000), None]).unwrap().0.is_none(), "same speed");
        // warn: the config wins.
        let w = spec(&CFG.replacen("speed = \"100G\"", "speed = \"100G\"\nspeed_mismatch = \"warn\"", 1));
        let (again, warnings) = w.with_link_speeds(&[Some(G25), None]).unwrap();
        assert!(again.is_none() && warnings.len() == 1, "{warnings:?}");
        // auto: the link's speed in force everywhere (PFC timers and headroom follow it).
        let a = spec(&CFG.replacen("speed = \"100G\"", "speed = \"auto\"", 1));
        assert!(a.with_link_speeds(&[None, None]).is_err(), "auto with no link speed");
        let (b, _) = a.with_link_speeds(&[Some(G25), None]).unwrap();
        let b = b.expect("re-derived");
        assert_eq!(b.ports[0].speed_bps, G25);
        assert_eq!(b.ports[1].speed_bps, 100_000_000_000);
        let (h100, h25) = (a.plan.ports[0].headroom[3], b.plan.ports[0].headroom[3]);
        assert!(h25 < h100, "headroom at 25G {h25} not below 100G's {h100}");
    }
}
