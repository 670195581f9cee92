//! `pfcswitch nic-check`, the pure part: what a PMD's answers mean for software PFC, and a
//! verdict per port (ready / ready with warnings / not ready, with the reasons). The
//! answers are gathered on a real EAL by `dataplane::nic_check`; the PMD facts that no
//! answer reveals (a TX filter that drops MAC-control frames, an ignored
//! `mac_ctrl_frame_fwd`, port-level PFC offload) are the table [`PMD_FACTS`], each with
//! the DPDK 22.11 source file it was read from. docs/nic.md.

/// The RSS hash types the switch asks a NIC for when several RX queues are polled: IPv4 and
/// IPv6 with TCP and UDP ports (`RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP`: bits
/// 2-5, 7-11, 13, 15-17 of `rte_ethdev.h`), so a flow stays on one queue (one worker, in
/// order).
pub const RSS_IP_TCP_UDP: u64 = (1 << 2)
    | (1 << 3)
    | (1 << 4)
    | (1 << 5)
    | (1 << 7)
    | (1 << 8)
    | (1 << 9)
    | (1 << 10)
    | (1 << 11)
    | (1 << 13)
    | (1 << 15)
    | (1 << 16)
    | (1 << 17);

/// Of the hash types a PMD offers (`flow_type_rss_offloads`), those the switch uses.
pub fn rss_hash_types(offered: u64) -> u64 {
    offered & RSS_IP_TCP_UDP
}

/// What reading one PMD's DPDK source showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PmdFact {
    /// The PMD's driver name (`rte_eth_dev_info.driver_name`).
    pub driver: &'static str,
    /// An ethertype filter drops every 0x8808 frame the host transmits: the switch's own
    /// PFC frames never leave the port.
    pub drops_tx_mac_ctrl: bool,
    /// `mac_ctrl_frame_fwd` is accepted but has no effect.
    pub ignores_fwd: bool,
    /// `flow_ctrl_set` reports success without touching the hardware.
    pub fc_set_noop: bool,
    /// Port-level PFC offload (`rte_eth_dev_priority_flow_ctrl_set`) exists. pfcswitch
    /// generates PFC in software either way; this says whether the NIC could too.
    pub pfc_offload: bool,
    /// Where it was read (DPDK 22.11 tree).
    pub source: &'static str,
}

const fn fact(driver: &'static str, source: &'static str) -> PmdFact {
    PmdFact { driver, drops_tx_mac_ctrl: false, ignores_fwd: false, fc_set_noop: false, pfc_offload: false, source }
}

/// Per PMD, from its DPDK 22.11 source (docs/nic.md has the details). Not verified on
/// hardware: a user confirms on the wire (the peer counts this switch's PAUSE frames,
/// `pfc.rx_pause` grows when the peer pauses).
pub const PMD_FACTS: &[PmdFact] = &[
    // eth_i40e_dev_init always installs i40e_add_tx_flow_control_drop_filter (TX 0x8808
    // dropped); i40e_priority_flow_ctrl_set returns -ENOSYS.
    PmdFact { drops_tx_mac_ctrl: true, ..fact("net_i40e", "drivers/net/i40e/i40e_ethdev.c") },
    // ixgbe_flow_ctrl_set: mac_ctrl_frame_fwd sets MFLCN.PMCF; ixgbe_priority_flow_ctrl_set.
    PmdFact { pfc_offload: true, ..fact("net_ixgbe", "drivers/net/ixgbe/ixgbe_ethdev.c") },
    PmdFact { pfc_offload: true, ..fact("net_txgbe", "drivers/net/txgbe/txgbe_ethdev.c") },
    // From the reading; not re-checked against the source (see docs/nic.md).
    PmdFact { pfc_offload: true, ..fact("net_hns3", "drivers/net/hns3/hns3_ethdev.c") },
    PmdFact { pfc_offload: true, ..fact("net_axgbe", "drivers/net/axgbe/axgbe_ethdev.c") },
    // No flow_ctrl_get/set op: -ENOTSUP, the firmware default stays.
    fact("net_ice", "drivers/net/ice/ice_ethdev.c"),
    // The mode goes to ethtool ETHTOOL_SPAUSEPARAM on the kernel netdev;
    // mac_ctrl_frame_fwd is not looked at.
    PmdFact { ignores_fwd: true, ..fact("mlx5_pci", "drivers/net/mlx5/linux/mlx5_ethdev_os.c") },
    // mac_ctrl_frame_fwd != 0 is -EINVAL (pfcswitch retries with 0).
    fact("net_octeontx", "drivers/net/octeontx/octeontx_ethdev_ops.c"),
    fact("net_cnxk", "drivers/net/cnxk/cnxk_ethdev_ops.c"),
    // Mode none returns 0 with a "TBD" instead of a hardware write.
    PmdFact { fc_set_noop: true, ..fact("net_dpaa", "drivers/net/dpaa/dpaa_ethdev.c") },
];

/// The fact table's entry for `driver`, if it has one.
pub fn pmd_fact(driver: &str) -> Option<&'static PmdFact> {
    PMD_FACTS.iter().find(|f| f.driver == driver)
}

/// What the virtual devices are, and so what a check on them can and cannot show.
pub fn vdev_note(driver: &str) -> Option<&'static str> {
    Some(match driver {
        "net_null" => "net_null: RX generates frames, TX discards them",
        "net_ring" => "net_ring: rings in memory carry 0x8808 like any frame (PFC verifiable with a ring peer)",
        "net_tap" => "net_tap: a kernel TAP carries 0x8808 like any frame (PFC verifiable from the kernel side)",
        "net_memif" => "net_memif: shared-memory rings carry 0x8808 like any frame (PFC verifiable with a memif peer)",
        "net_af_packet" => {
            "net_af_packet: the kernel interface carries 0x8808 (a veth does; a physical NIC's driver decides)"
        }
        "net_pcap" => "net_pcap: pcap files or an interface carry 0x8808 like any frame",
        _ => return None,
    })
}

/// The outcome of turning the NIC's own link-level flow control off (as the switch does
/// at start), in pure terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlowCtrl {
    /// Off, with MAC-control frames forwarded to software.
    Off,
    /// Off, but the PMD refused `mac_ctrl_frame_fwd = 1`.
    OffNoForward,
    /// The PMD has no flow-control op.
    NoOp,
    /// The PMD refused to turn it off.
    Refused(String),
}

/// What became of one software-built PFC frame (a RESUME, harmless to any peer) handed to
/// the port's transmit queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PfcTx {
    /// Not sent (the port did not start, or its link is down).
    NotTried,
    /// `tx_burst` did not take it.
    Refused,
    /// Taken; no port of this switch received it (no loop to see it arrive).
    Taken,
    /// Taken, and received unchanged on this port of the switch (a loop or a cable).
    Arrived(String),
}

/// A port's facts as its PMD answered them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortFacts {
    pub name: String,
    pub devargs: String,
    pub driver: String,
    /// A PCI NIC (not a vdev).
    pub pci: bool,
    /// PFC is enabled on some priority of this port.
    pub pfc: bool,
    pub max_rx: u16,
    pub max_tx: u16,
    pub need_rx: u16,
    pub need_tx: u16,
    pub rss_offloads: u64,
    /// `None`: the port could not be configured or started (the error).
    pub started: Result<(), String>,
    pub flow_ctrl: Option<FlowCtrl>,
    pub link_up: bool,
    pub link_mbps: u32,
    /// NUMA socket of the device, if known, and of the lcores that poll it.
    pub socket: Option<u32>,
    pub lcore_sockets: Vec<(u32, u32)>,
    pub pfc_tx: PfcTx,
}

/// ready / ready with warnings / not ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Readiness {
    Ready,
    Warnings,
    NotReady,
}

impl Readiness {
    pub fn as_str(self) -> &'static str {
        match self {
            Readiness::Ready => "ready",
            Readiness::Warnings => "ready with warnings",
            Readiness::NotReady => "not ready",
        }
    }
}

/// A port's verdict: the worst finding and every reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub readiness: Readiness,
    /// Reasons for warnings and refusals, worst first.
    pub reasons: Vec<String>,
    /// What was found that is fine, or what this PMD cannot show (informative).
    pub notes: Vec<String>,
}

impl Verdict {
    /// `<port>: <verdict>[: reasons]` then the notes in brackets: one line.
    pub fn line(&self, f: &PortFacts) -> String {
        let mut s = format!("{}: {}", f.name, self.readiness.as_str());
        if !self.reasons.is_empty() {
            s.push_str(": ");
            s.push_str(&self.reasons.join("; "));
        }
        if !self.notes.is_empty() {
            s.push_str(&format!(" [{}]", self.notes.join("; ")));
        }
        s
    }
}

/// Judge one port.
pub fn judge(f: &PortFacts) -> Verdict {
    let mut bad = Vec::new();
    let mut warn = Vec::new();
    let mut notes = vec![format!("driver {}", f.driver)];
    let queues_ok = f.need_rx <= f.max_rx && f.need_tx <= f.max_tx;
    if !queues_ok {
        bad.push(format!(
            "needs {} RX / {} TX queues, the PMD offers {} / {}",
            f.need_rx, f.need_tx, f.max_rx, f.max_tx
        ));
    } else {
        notes.push(format!("queues RX {}/{} TX {}/{}", f.need_rx, f.max_rx, f.need_tx, f.max_tx));
    }
    if let (true, Err(e)) = (queues_ok, &f.started) {
        bad.push(format!("does not start: {e}"));
    }
    let fact = pmd_fact(&f.driver);
    if let Some(fact) = fact {
        if fact.drops_tx_mac_ctrl && f.pfc {
            bad.push(format!(
                "the PMD drops MAC-control frames the host sends ({}): this switch's PFC frames would not leave",
                fact.source
            ));
        }
        if fact.ignores_fwd && f.pfc {
            warn.push(format!(
                "the PMD ignores mac_ctrl_frame_fwd ({}): whether the peer's PFC reaches software is unverified",
                fact.source
            ));
        }
        if fact.fc_set_noop && f.pfc {
            warn.push(format!(
                "the PMD reports flow control off without touching the hardware ({}): the NIC may still act on PAUSE",
                fact.source
            ));
        }
        notes.push(format!(
            "PFC offload {} ({})",
            if fact.pfc_offload { "exists, unused: PFC is sent by software" } else { "none: PFC is sent by software" },
            fact.source
        ));
    }
    match (&f.flow_ctrl, f.pfc) {
        (Some(FlowCtrl::Refused(e)), true) => {
            bad.push(format!("link-level flow control cannot be turned off ({e}): the NIC may consume or answer PAUSE"))
        }
        (Some(FlowCtrl::OffNoForward), true) => warn.push(
            "link-level flow control off, but the PMD refused mac_ctrl_frame_fwd: the peer's PFC may be dropped by the NIC"
                .into(),
        ),
        (Some(FlowCtrl::NoOp), true) if f.pci => warn.push(
            "the PMD has no flow-control op: the NIC keeps its firmware default for PAUSE and MAC-control frames".into(),
        ),
        (Some(FlowCtrl::Off), _) => notes.push("flow control off, MAC-control frames to software accepted".into()),
        (Some(FlowCtrl::NoOp), _) => notes.push("no flow-control op".into()),
        _ => {}
    }
    if queues_ok && f.started.is_ok() {
        if f.link_up && (f.link_mbps == 0 || f.link_mbps == u32::MAX) {
            notes.push("link up, speed unknown".into());
        } else if f.link_up {
            notes.push(format!("link up {} Mb/s", f.link_mbps));
        } else {
            warn.push("link down: nothing is sent to it until it comes up".into());
        }
    }
    match &f.pfc_tx {
        PfcTx::Refused if f.pfc => bad.push("the PMD did not take a PFC frame for transmission".into()),
        PfcTx::Taken => notes.push("a PFC frame was taken by tx_burst (no loop here to see it arrive)".into()),
        PfcTx::Arrived(to) => notes.push(format!("a PFC frame sent here arrived unchanged on {to}")),
        _ => {}
    }
    if f.need_rx > 1 && f.pci {
        match rss_hash_types(f.rss_offloads) {
            0 => warn.push(format!(
                "{} RX queues polled, but the PMD offers no IP/TCP/UDP RSS (hash types {:#x}): every flow arrives on queue 0",
                f.need_rx, f.rss_offloads
            )),
            hf => notes.push(format!("RSS over {} RX queues, hash types {hf:#x}", f.need_rx)),
        }
    }
    if let Some(s) = f.socket {
        for (lcore, ls) in f.lcore_sockets.iter().filter(|(_, ls)| *ls != s) {
            warn.push(format!("lcore {lcore} on NUMA socket {ls} polls a device on socket {s}"));
        }
    }
    if let Some(n) = vdev_note(&f.driver) {
        notes.push(n.to_string());
        if f.driver == "net_null" && f.pfc {
            warn.push("net_null has no peer: PFC can be neither sent to nor received from anyone".into());
        }
    }
    let readiness = if !bad.is_empty() {
        Readiness::NotReady
    } else if !warn.is_empty() {
        Readiness::Warnings
    } else {
        Readiness::Ready
    };
    bad.extend(warn);
    Verdict { readiness, reasons: bad, notes }
}

/// Hugepages as `/proc/meminfo` reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Hugepages {
    pub total: u64,
    pub free: u64,
    pub size_kib: u64,
}

/// Parse `/proc/meminfo`'s hugepage lines.
pub fn parse_meminfo(text: &str) -> Hugepages {
    let mut h = Hugepages::default();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(k), Some(v)) = (it.next(), it.next().and_then(|v| v.parse::<u64>().ok())) else { continue };
        match k {
            "HugePages_Total:" => h.total = v,
            "HugePages_Free:" => h.free = v,
            "Hugepagesize:" => h.size_kib = v,
            _ => {}
        }
    }
    h
}

/// The switch-wide memory line: hugepages against what the mempool needs. `no_huge`:
/// EAL runs on ordinary memory (`--no-huge`). Returns the readiness and the line.
pub fn memory_line(no_huge: bool, any_pci: bool, h: Hugepages, mempool_mib: u64) -> (Readiness, String) {
    if no_huge {
        return if any_pci {
            (Readiness::NotReady, format!("memory: --no-huge with a PCI port: a NIC needs hugepages for DMA (mempool about {mempool_mib} MiB)"))
        } else {
            (Readiness::Ready, format!("memory: --no-huge (fine for virtual devices); mempool about {mempool_mib} MiB"))
        };
    }
    let free_mib = h.free * h.size_kib / 1024;
    if h.total == 0 {
        (
            Readiness::NotReady,
            "memory: no hugepages reserved (NR_2M_PAGES in /etc/dpdk/dpdk.conf, then systemctl restart dpdk)".into(),
        )
    } else if free_mib < mempool_mib {
        (
            Readiness::NotReady,
            format!("memory: {free_mib} MiB of hugepages free, the mempool needs about {mempool_mib} MiB"),
        )
    } else {
        (
            Readiness::Ready,
            format!(
                "memory: {free_mib} MiB of hugepages free ({} KiB pages), the mempool needs about {mempool_mib} MiB",
                h.size_kib
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(driver: &str) -> PortFacts {
        PortFacts {
            name: "Ethernet0".into(),
            devargs: "x".into(),
            driver: driver.into(),
            pci: true,
            pfc: true,
            max_rx: 64,
            max_tx: 64,
            need_rx: 1,
            need_tx: 2,
            rss_offloads: 0x38d34,
            started: Ok(()),
            flow_ctrl: Some(FlowCtrl::Off),
            link_up: true,
            link_mbps: 100_000,
            socket: Some(0),
            lcore_sockets: vec![(2, 0)],
            pfc_tx: PfcTx::Taken,
        }
    }

    #[test]
    fn a_nic_that_does_everything_is_ready() {
        let v = judge(&facts("net_ixgbe"));
        assert_eq!(v.readiness, Readiness::Ready, "{v:?}");
        assert!(v.line(&facts("net_ixgbe")).starts_with("Ethernet0: ready ["));
    }

    #[test]
    fn i40e_cannot_send_pfc() {
        let v = judge(&facts("net_i40e"));
        assert_eq!(v.readiness, Readiness::NotReady);
        assert!(v.reasons[0].contains("i40e_ethdev.c"), "{v:?}");
        // Without PFC on the port it does not matter.
        let v = judge(&PortFacts { pfc: false, ..facts("net_i40e") });
        assert_eq!(v.readiness, Readiness::Ready, "{v:?}");
    }

    #[test]
    fn too_few_queues_or_refused_flow_control_is_not_ready() {
        let v = judge(&PortFacts { need_rx: 4, max_rx: 1, ..facts("net_af_packet") });
        assert_eq!(v.readiness, Readiness::NotReady);
        assert!(v.reasons[0].contains("needs 4 RX / 2 TX queues, the PMD offers 1 / 64"), "{v:?}");
        let v = judge(&PortFacts { flow_ctrl: Some(FlowCtrl::Refused("-EIO".into())), ..facts("net_foo") });
        assert_eq!(v.readiness, Readiness::NotReady);
        let v = judge(&PortFacts { pfc_tx: PfcTx::Refused, ..facts("net_foo") });
        assert_eq!(v.readiness, Readiness::NotReady);
    }

    #[test]
    fn warnings_stay_warnings() {
        for f in [
            PortFacts { link_up: false, ..facts("net_ixgbe") },
            PortFacts { flow_ctrl: Some(FlowCtrl::OffNoForward), ..facts("net_cnxk") },
            PortFacts { flow_ctrl: Some(FlowCtrl::NoOp), ..facts("net_ice") },
            PortFacts { lcore_sockets: vec![(2, 1)], ..facts("net_ixgbe") },
            PortFacts { need_rx: 2, rss_offloads: 1 << 14, ..facts("net_ixgbe") },
            facts("mlx5_pci"),
            facts("net_dpaa"),
        ] {
            let v = judge(&f);
            assert_eq!(v.readiness, Readiness::Warnings, "{f:?}: {v:?}");
        }
        // A vdev without a flow-control op is fine: it carries 0x8808 as any frame.
        let v = judge(&PortFacts { pci: false, flow_ctrl: Some(FlowCtrl::NoOp), ..facts("net_ring") });
        assert_eq!(v.readiness, Readiness::Ready, "{v:?}");
    }

    #[test]
    fn rss_on_a_nic_with_several_queues() {
        // ixgbe's offloads (IPv4/IPv6, TCP, UDP and their _EX forms): all used.
        let v = judge(&PortFacts { need_rx: 2, rss_offloads: 0x38d34, ..facts("net_ixgbe") });
        assert_eq!(v.readiness, Readiness::Ready, "{v:?}");
        assert!(v.notes.iter().any(|n| n == "RSS over 2 RX queues, hash types 0x38d34"), "{v:?}");
        // SCTP and L2 payload are not asked for.
        assert_eq!(rss_hash_types((1 << 6) | (1 << 12) | (1 << 14)), 0);
        assert_eq!(RSS_IP_TCP_UDP, 0x3afbc);
    }

    #[test]
    fn every_fact_names_a_dpdk_source_file() {
        for f in PMD_FACTS {
            assert!(f.source.starts_with("drivers/net/") && f.source.ends_with(".c"), "{f:?}");
        }
    }

    #[test]
    fn hugepages_against_the_mempool() {
        let h = parse_meminfo(
            "MemTotal: 1 kB\nHugePages_Total:    2048\nHugePages_Free:     1024\nHugepagesize:       2048 kB\n",
        );
        assert_eq!(h, Hugepages { total: 2048, free: 1024, size_kib: 2048 });
        assert_eq!(memory_line(false, true, h, 1500).0, Readiness::Ready);
        assert_eq!(memory_line(false, true, h, 3000).0, Readiness::NotReady);
        assert_eq!(memory_line(false, true, Hugepages::default(), 1).0, Readiness::NotReady);
        assert_eq!(memory_line(true, false, Hugepages::default(), 100).0, Readiness::Ready);
        assert_eq!(memory_line(true, true, h, 100).0, Readiness::NotReady);
    }
}
