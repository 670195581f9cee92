//! Start-up: check the lcores, find the ports EAL probed, create the mempools, configure
//! and start the ports, build the state every lcore shares, and give each worker its
//! queues. Nothing here runs once forwarding has started.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::Arc;

use crossbeam_queue::ArrayQueue;

use crate::counters::LcoreCounters;
use crate::dpdk::{self, rdtsc, Eal, Mempool, Port, RxQueue, TxQueue};
use crate::mmu::Mmu;
use crate::pfc::{PfcRx, PfcTxConfig};
use crate::pfcwd::{Pfcwd, PfcwdRxStamps};
use crate::wire::MacAddr;

use super::egress::EgressPort;
use super::latency::PortLatency;
use super::link::LinkSource;
use super::shared::{PortRt, Shared};
use super::spec::SwitchSpec;
use super::tx::TxPort;
use super::worker::Worker;
use super::DataplaneError;

/// Mempool cache per lcore: the config's constant, which the mbuf count assumes.
use crate::config::MBUF_CACHE_SIZE as MEMPOOL_CACHE;

/// A port's link as read once it started.
#[derive(Debug, Clone, Copy)]
pub struct LinkAtStart {
    /// Up. A link that never came up counts as down (as one that went down would):
    /// nothing is admitted for it, so its backlog cannot hold an upstream PG OFF.
    pub up: bool,
    /// The speed it reports (bit/s) where that is real; None: unknown, down, or a device
    /// whose speed is nominal.
    pub speed_bps: Option<u64>,
}

/// Per port, its link after start. A link that is down is waited for, up to 3 s in all:
/// a NIC negotiates after start, a memif peer started beside the switch connects within
/// that time (a memif server whose peer never comes reads as down: nothing is sent to it
/// until the peer connects).
pub fn link_states(spec: &SwitchSpec, links: &[LinkSource]) -> Vec<LinkAtStart> {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(3);
    spec.config
        .ports
        .iter()
        .zip(links)
        .map(|(p, src)| {
            let mut l = src.read();
            while !l.up && std::time::Instant::now() < until {
                std::thread::sleep(std::time::Duration::from_millis(20));
                l = src.read();
            }
            if !l.up {
                log::warn!("port {}: link down at start: nothing is sent to it until it comes up", p.name);
            } else if p.has_real_link() {
                log::info!("port {}: link up, {} Mb/s", p.name, l.speed_mbps);
            }
            // RTE_ETH_SPEED_NUM_UNKNOWN is u32::MAX, NONE is 0.
            let real = p.has_real_link() && l.up && l.speed_mbps != 0 && l.speed_mbps != u32::MAX;
            LinkAtStart { up: l.up, speed_bps: real.then(|| u64::from(l.speed_mbps) * 1_000_000) }
        })
        .collect()
}

/// The queues behind the MMU can hold everything it can admit (every waiting packet holds
/// an mbuf of `pool_size`): checked at start, so a queue never drops what was admitted.
pub fn check_queue_capacity(spec: &SwitchSpec, pool_size: u32) -> Result<(), DataplaneError> {
    let admit = spec.plan.mmu.max_packets(crate::wire::MIN_FRAME_LEN as u32).min(u64::from(pool_size));
    if (spec.egress_queue_len as u64) < admit {
        return Err(DataplaneError::Mmu(format!(
            "egress queues hold {} packets but the buffer can admit {admit}",
            spec.egress_queue_len
        )));
    }
    Ok(())
}

/// Every worker lcore must be an enabled, non-main lcore of this EAL.
pub fn check_lcores(eal: &Eal, spec: &SwitchSpec) -> Result<(), DataplaneError> {
    for w in &spec.workers {
        if !eal.lcore_enabled(w.lcore) || w.lcore == dpdk::main_lcore() {
            return Err(DataplaneError::Lcore {
                lcore: w.lcore,
                msg: format!(
                    "worker lcore is not an enabled non-main lcore of this EAL (main lcore is {}); check eal.args --lcores",
                    dpdk::main_lcore()
                ),
            });
        }
    }
    Ok(())
}

/// DPDK port ids, in `[[port]]` order. Every port must have been probed by EAL (a bad
/// devargs or a missing pcap file fails there): say which one before anything is allocated.
pub fn port_ids(spec: &SwitchSpec) -> Result<Vec<u16>, DataplaneError> {
    spec.ports
        .iter()
        .map(|ps| {
            Port::id_by_name(ps.dev_name()).map_err(|err| DataplaneError::Port {
                name: ps.name.clone(),
                devargs: ps.devargs.clone(),
                err: dpdk::DpdkError {
                    msg: format!("device not probed by EAL (see the EAL messages above): {}", err.msg),
                    ..err
                },
            })
        })
        .collect()
}

/// Bytes of one packet mbuf's data room: single segment, the biggest frame (+ VLAN tag
/// and FCS slack).
fn data_room(spec: &SwitchSpec) -> u16 {
    (spec.max_mtu() + crate::wire::L2_OVERHEAD + 128).clamp(2048 + 128, u16::MAX as u32) as u16
}

/// About how many MiB the packet mempool takes (mbufs with their headers).
pub fn mempool_mib(spec: &SwitchSpec) -> u64 {
    (spec.mbuf_count as u64 * (data_room(spec) as u64 + 192)) >> 20
}

/// The packet mempool (sized from the buffer so that the MMU, not the mempool, runs out
/// first) and the small pool PFC frames come from, so data can never starve them.
pub fn mempools(spec: &SwitchSpec) -> Result<(Arc<Mempool>, Arc<Mempool>), DataplaneError> {
    let data_room = data_room(spec);
    // Computed by the config (`config::resolve::switch::compute_mbufs`) unless explicit.
    let n_mbufs = spec.mbuf_count;
    let pool = Mempool::new("pfcsw_pool", n_mbufs, MEMPOOL_CACHE, data_room, -1).map_err(|e| {
        let mib = mempool_mib(spec);
        DataplaneError::Mempool(dpdk::DpdkError {
            msg: format!(
                "{} (needs about {mib} MiB: raise EAL -m/--socket-mem, lower the ports' mtu or the buffer size)",
                e.msg
            ),
            ..e
        })
    })?;
    let need = control_mbufs(spec);
    let n_ctl = match super::fault_lcore("PFCSW_FAULT_CTL_POOL") {
        Some(n) => {
            log::warn!("control mempool: {n} mbufs (PFCSW_FAULT_CTL_POOL), below the {need} its rings may hold");
            n
        }
        None => need,
    };
    let ctl_pool = Mempool::new("pfcsw_ctl", n_ctl, MEMPOOL_CACHE, 256 + 128, -1).map_err(DataplaneError::Mempool)?;
    log::info!("mempool: {n_mbufs} mbufs of {data_room} bytes; PFC frames: {n_ctl} mbufs");
    Ok((Arc::new(pool), Arc::new(ctl_pool)))
}

/// Mbufs the PFC frames' pool needs so that it never runs dry while frames wait
/// anywhere they can: every TX ring of every port (a PMD may keep sent frames until its
/// ring is nearly full: Intel's free lazily), every port's control queue, every worker's
/// pending bursts (data queue and control queue), and every lcore's mempool cache; plus a
/// margin. Rounded up to 2^n − 1 (the mempool's best size).
pub fn control_mbufs(spec: &SwitchSpec) -> u32 {
    let nports = spec.ports.len() as u64;
    let rings = nports * 2 * u64::from(spec.tx_ring_size);
    let queues = nports * super::egress::CONTROL_QUEUE_LEN as u64;
    let pending = spec.workers.len() as u64 * 2 * crate::dpdk::BURST_CAP as u64;
    let caches = (spec.workers.len() as u64 + 1) * u64::from(MEMPOOL_CACHE) * 3 / 2;
    let need = rings + queues + pending + caches + 64;
    (need + 1).next_power_of_two().saturating_sub(1).min(u64::from(u32::MAX)) as u32
}

/// The started ports and the queue tokens not yet handed to a worker.
pub struct Ports {
    pub ports: Vec<Port>,
    pub ids: Vec<u16>,
    pub macs: Vec<MacAddr>,
    /// Per port, per RX queue.
    pub rxqs: Vec<Vec<Option<RxQueue>>>,
    pub txqs: Vec<Option<TxQueue>>,
    /// Per port, the TX queue of its PFC frames when it has its own (`control_tx_queue`).
    pub ctl_txqs: Vec<Option<TxQueue>>,
    /// Per port, what turning the NIC's own flow control off gave.
    pub flow_ctrl: Vec<dpdk::FlowCtrlOutcome>,
}

/// Configure and start every port: its queues, MTU, and the NIC's own flow control off
/// (so PFC frames reach the software).
pub fn start_ports(spec: &SwitchSpec, ids: Vec<u16>, pool: &Arc<Mempool>) -> Result<Ports, DataplaneError> {
    let mut out = Ports {
        ports: Vec::new(),
        ids,
        macs: Vec::new(),
        rxqs: Vec::new(),
        txqs: Vec::new(),
        ctl_txqs: Vec::new(),
        flow_ctrl: Vec::new(),
    };
    for (ps, &id) in spec.ports.iter().zip(&out.ids) {
        let s = start_port(spec, ps, id, pool)?;
        out.macs.push(s.mac);
        out.rxqs.push(s.rxqs.into_iter().map(Some).collect());
        out.ctl_txqs.push(s.ctl_txq);
        out.txqs.push(s.txq);
        out.flow_ctrl.push(s.flow_ctrl);
        out.ports.push(s.port);
    }
    Ok(out)
}

/// The TX queues a port is given: 2 when its PFC frames have their own
/// (`control_tx_queue`), else 1. Refused when asked for and the device has one.
pub fn tx_queues(ps: &super::PortSpec, id: u16) -> Result<u16, dpdk::DpdkError> {
    let (_, max_tx) = dpdk::max_queues(id);
    let ctl_queue = match ps.control_txq {
        Some(true) if max_tx < 2 => {
            return Err(dpdk::DpdkError::msg(
                format!("port {}", ps.name),
                format!("control_tx_queue = true needs a second TX queue; the device has {max_tx}"),
            ))
        }
        Some(on) => on,
        None => ps.is_pci && max_tx >= 2,
    };
    Ok(if ctl_queue { 2 } else { 1 })
}

/// One started port and its queue tokens.
pub struct StartedPort {
    pub port: Port,
    pub mac: MacAddr,
    pub rxqs: Vec<RxQueue>,
    pub txq: Option<TxQueue>,
    pub ctl_txq: Option<TxQueue>,
    pub flow_ctrl: dpdk::FlowCtrlOutcome,
}

/// Configure and start one port (what `run` and `nic-check` both do).
pub fn start_port(
    spec: &SwitchSpec,
    ps: &super::PortSpec,
    id: u16,
    pool: &Arc<Mempool>,
) -> Result<StartedPort, DataplaneError> {
    let perr = |err| DataplaneError::Port { name: ps.name.clone(), devargs: ps.devargs.clone(), err };
    let mtu = u16::try_from(ps.mtu).ok();
    let nb_tx = tx_queues(ps, id).map_err(perr)?;
    let ctl_queue = nb_tx == 2;
    // A NIC spreads flows over the workers' RX queues only with RSS on (virtual devices
    // spread by their own means: af_packet's fanout, separate rings).
    let rss_hf = match dpdk::dev_info(id) {
        Ok(info) if ps.is_pci && ps.nb_rx > 1 => crate::nic::rss_hash_types(info.rss_offloads),
        _ => 0,
    };
    let (mut port, rq, mut tq) =
        Port::configure_rss(id, ps.nb_rx, nb_tx, spec.rx_ring_size, spec.tx_ring_size, pool.clone(), mtu, rss_hf)
            .map_err(perr)?;
    if rss_hf != 0 {
        log::info!("port {}: RSS over {} RX queues, hash types {rss_hf:#x}", ps.name, ps.nb_rx);
    }
    if let Some(mtu) = mtu {
        tap_mtu(ps, &port, mtu);
    }
    let flow_ctrl = port.flow_ctrl_off();
    match &flow_ctrl {
        dpdk::FlowCtrlOutcome::Disabled => log::info!("port {}: NIC flow control off, MAC control frames to host", ps.name),
        dpdk::FlowCtrlOutcome::DisabledNoForward => {
            log::warn!("port {}: NIC flow control off without MAC-control forwarding (see above)", ps.name)
        }
        dpdk::FlowCtrlOutcome::NotSupported => log::debug!("port {}: PMD {} has no flow control to turn off", ps.name, port.driver()),
        dpdk::FlowCtrlOutcome::Failed(e) => log::warn!(
            "port {}: PMD {} refused to turn NIC flow control off ({e}); PFC frames may be consumed or answered by the NIC",
            ps.name,
            port.driver()
        ),
    }
    port.start().map_err(perr)?;
    // The configured MAC is the port's: the source of its PFC frames, the destination
    // its MAC-control frames may have. Set on the device where the PMD allows.
    let mac = match ps.mac {
        Some(m) => {
            if let Err(e) = port.set_mac(m) {
                log::info!("port {}: MAC {} not set on the device: {}", ps.name, MacAddr(m), e.msg);
            }
            MacAddr(m)
        }
        None => MacAddr(port.mac()),
    };
    log::info!(
        "port {} = DPDK port {id} ({}), mac {mac}, {} rx queue(s), PFC frames on tx queue {}",
        ps.name,
        port.driver(),
        ps.nb_rx,
        if ctl_queue { 1 } else { 0 }
    );
    let ctl_txq = if ctl_queue { tq.pop() } else { None };
    let txq = tq.pop();
    Ok(StartedPort { port: port.with_name(&ps.name), mac, rxqs: rq, txq, ctl_txq, flow_ctrl })
}

/// A net_tap port (the kernel representors) takes frames up to its MTU: DPDK 22.11's
/// driver refuses an MTU above 1500, which is raised past it (`dpdk::raise_tap_mtu`). Where
/// that fails, or with the test knob `PFCSW_FAULT_TAP_MTU` set, the driver's limit stays
/// and larger frames to it are dropped: a representor counts them `punt_undelivered`
/// (docs/routing.md, "Jumbo frames to the kernel").
fn tap_mtu(ps: &super::PortSpec, port: &Port, mtu: u16) {
    let had = dpdk::mtu_of(port.id()).unwrap_or(0);
    if !port.driver().contains("tap") || had >= mtu {
        return;
    }
    let refused = |why: &str| {
        log::warn!(
            "port {}: MTU {mtu} not set ({why}): frames over {} B to it are dropped{}",
            ps.name,
            u32::from(had) + crate::wire::L2_OVERHEAD,
            if ps.representor_of.is_some() || ps.vlan_interface_of.is_some() { " (punt_undelivered)" } else { "" }
        )
    };
    if std::env::var_os("PFCSW_FAULT_TAP_MTU").is_some() {
        return refused("PFCSW_FAULT_TAP_MTU");
    }
    match dpdk::raise_tap_mtu(port.id(), mtu) {
        Ok(()) => log::info!("port {}: MTU {mtu} (past net_tap's 1500 in DPDK 22.11)", ps.name),
        Err(e) => refused(&e.to_string()),
    }
}

/// Per port, the receive side of PFC and the watchdog, until a worker takes them.
pub struct PfcSides {
    pub rx: Vec<Option<PfcRx>>,
    pub watchdogs: Vec<Option<Pfcwd>>,
    pub wd_stamps: Vec<Option<Arc<PfcwdRxStamps>>>,
}

impl PfcSides {
    pub fn new(spec: &SwitchSpec, tsc_hz: u64) -> PfcSides {
        // The watchdog watches what a peer can stop: the PFC priorities, and every priority
        // where 802.3x PAUSE is obeyed (a storm of those must not silence lossy classes).
        let watched = |ps: &super::spec::PortSpec, pp: &crate::plan::PortPlan| {
            if ps.obey_8023x {
                0xff
            } else {
                pp.pfc_mask
            }
        };
        let watchdogs: Vec<Option<Pfcwd>> = spec
            .ports
            .iter()
            .zip(&spec.plan.ports)
            .map(|(ps, pp)| spec.pfcwd.map(|c| Pfcwd::new(&c, tsc_hz, watched(ps, pp))))
            .collect();
        PfcSides {
            rx: spec
                .ports
                .iter()
                .zip(&spec.plan.ports)
                .map(|(ps, pp)| Some(PfcRx::new(pp.pfc_mask, ps.speed_bps).obey_8023x(ps.obey_8023x)))
                .collect(),
            wd_stamps: watchdogs.iter().map(|w| w.as_ref().map(|w| w.rx_stamps())).collect(),
            watchdogs,
        }
    }
}

/// The state every lcore shares.
pub fn shared_state(
    spec: &SwitchSpec,
    mmu: Mmu,
    ports: &Ports,
    pfc: &PfcSides,
    (pool, ctl_pool): (Arc<Mempool>, Arc<Mempool>),
    links: &[LinkAtStart],
    tsc_hz: u64,
) -> Arc<Shared> {
    let nports = spec.ports.len();
    let pfc_cfg = PfcTxConfig::default();
    let rts = spec
        .ports
        .iter()
        .zip(&spec.plan.ports)
        .enumerate()
        .map(|(i, (ps, pp))| {
            let rx = pfc.rx[i].as_ref().expect("PFC receive side not yet given to a worker");
            PortRt {
                name: ps.name.clone(),
                plan: pp.clone(),
                speed_bps: ps.speed_bps,
                mac: ports.macs[i],
                rx_pause: rx.deadlines(),
                pfc_rx_counters: rx.counters(),
                tx_enable: AtomicBool::new(ps.tx_enable),
                tx_credit: AtomicU64::new(0),
                link_up: AtomicBool::new(links[i].up),
                representor_id: spec.ports.iter().position(|r| r.representor_of == Some(i)).map(|r| ports.ids[r]),
                real_link: spec.config.ports[i].has_real_link(),
                control_txq: ports.ctl_txqs[i].is_some(),
                latency: PortLatency::new(tsc_hz),
                pfcwd: pfc.watchdogs[i].as_ref().map(|w| w.state()),
                pfc: super::pfc_live::PfcLive::new(super::pfc_live::PfcSet::of(pp)),
                tx_live: super::tx_live::TxLive::new(super::tx_live::TxParams {
                    wred: pp.wred,
                    pfcwd: spec.pfcwd,
                    watch: pfc.watchdogs[i].as_ref().map_or(0, |w| w.watch_mask()),
                }),
                obey_8023x: ps.obey_8023x,
                pause: Default::default(),
                pfc_inbox: ArrayQueue::new(256),
                refresh_ticks: crate::pfc::refresh_ticks(&pfc_cfg, ps.speed_bps, tsc_hz),
            }
        })
        .collect();
    Arc::new(Shared {
        io: Arc::new(super::io::IoSink::default()),
        running: AtomicBool::new(true),
        workers_stopped: AtomicUsize::new(0),
        workers_launched: AtomicUsize::new(spec.workers.len()),
        rx_stopped: AtomicBool::new(false),
        workers_rx_stopped: AtomicUsize::new(0),
        egress: (0..nports).map(|_| EgressPort::new(spec.egress_queue_len)).collect(),
        counters: (0..spec.workers.len()).map(|_| LcoreCounters::new(nports)).collect(),
        pool,
        mmu,
        fdb: crate::fdb::SharedFdb::new(spec.fdb_size, spec.fdb_aging_time.min(u32::MAX as u64) as u32, tsc_hz)
            .with_damping(spec.config.switch.fdb_move_damping, tsc_hz),
        vlans: crate::vlan::Vlans::new(&spec.config.vlans, nports, spec.config.qos.tc_to_dot1p),
        ports: rts,
        edges: (0..spec.workers.len()).map(|_| ArrayQueue::new(4096)).collect(),
        ctl_pool,
        pause_quanta: pfc_cfg.pause_quanta,
        tx_owner: (0..nports).map(|p| spec.workers.iter().position(|w| w.tx.contains(&p))).collect(),
        doorbells: (0..spec.workers.len()).map(|_| Default::default()).collect(),
        lldp: super::lldp_shared::LldpShared::new(spec),
        reconfig: super::reconfig_shared::ReconfigShared::new(&spec.config),
        control_bell: Default::default(),
        link_down_mask: AtomicU64::new(
            links.iter().enumerate().filter(|(i, l)| *i < 64 && !l.up).fold(0, |m, (i, _)| m | 1u64 << i),
        ),
    })
}

/// One [`Worker`] per `[[lcores.worker]]`, holding the RX queues it polls, the TX of the
/// ports it owns, and the receive side of PFC of the ports whose queue 0 it polls (NICs
/// steer non-IP frames there).
pub fn workers(
    spec: &SwitchSpec,
    shared: &Arc<Shared>,
    ports: &mut Ports,
    pfc: &mut PfcSides,
    tsc_hz: u64,
) -> Vec<Worker> {
    let now = rdtsc();
    // Test knob: the control TX queues keep sent frames as a lazily freeing PMD does.
    let lazy_free =
        std::env::var_os("PFCSW_TEST_LAZY_TX_FREE").map(|_| usize::from(spec.tx_ring_size).saturating_sub(32).max(1));
    spec.workers
        .iter()
        .enumerate()
        .map(|(wi, ws)| {
            let mut w = Worker::new(wi, shared.clone(), spec, tsc_hz);
            for &(p, q) in &ws.rx {
                if let Some(rq) = ports.rxqs[p].get_mut(q as usize).and_then(Option::take) {
                    w.add_rx_queue(p, rq);
                }
                if q == 0 {
                    if let Some(rx) = pfc.rx[p].take() {
                        w.receive_pfc(p, rx, pfc.wd_stamps[p].take());
                    }
                }
            }
            for &p in &ws.tx {
                if let Some(tq) = ports.txqs[p].take() {
                    let tx = TxPort::new(p, tq, shared, spec, pfc.watchdogs[p].take(), tsc_hz, now)
                        .with_control_queue(ports.ctl_txqs[p].take(), lazy_free);
                    w.own_tx(tx);
                }
            }
            w
        })
        .collect()
}
