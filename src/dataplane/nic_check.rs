//! `pfcswitch nic-check`: start EAL as `run` would, configure and start each port the way
//! `run` does (its queues, the NIC's flow control off with MAC-control forwarding), ask
//! its PMD, stop it, and judge it (`crate::nic`). The same verdicts are logged at `run`'s
//! start. docs/nic.md.

use std::sync::Arc;

use crate::dpdk::{self, Eal, Mempool, Port};
use crate::nic::{self, FlowCtrl, PfcTx, PortFacts, Readiness};
use crate::wire::MacControl;

use super::link::LinkSource;
use super::setup;
use super::spec::SwitchSpec;
use super::DataplaneError;

/// One line of the report and how bad it is.
pub type Finding = (Readiness, String);

fn flow_ctrl(o: &dpdk::FlowCtrlOutcome) -> FlowCtrl {
    match o {
        dpdk::FlowCtrlOutcome::Disabled => FlowCtrl::Off,
        dpdk::FlowCtrlOutcome::DisabledNoForward => FlowCtrl::OffNoForward,
        dpdk::FlowCtrlOutcome::NotSupported => FlowCtrl::NoOp,
        dpdk::FlowCtrlOutcome::Failed(e) => FlowCtrl::Refused(e.clone()),
    }
}

/// Port `i`'s facts before it is started: what its PMD offers and what it needs.
fn facts(spec: &SwitchSpec, i: usize, info: &dpdk::DevInfo, need_tx: u16) -> PortFacts {
    let ps = &spec.ports[i];
    let lcore_sockets = spec
        .workers
        .iter()
        .filter(|w| w.rx.iter().any(|&(p, _)| p == i) || w.tx.contains(&i))
        .map(|w| (w.lcore, dpdk::lcore_socket(w.lcore)))
        .collect();
    PortFacts {
        name: ps.name.clone(),
        devargs: ps.devargs.clone(),
        driver: info.driver.clone(),
        pci: ps.is_pci,
        pfc: spec.config.ports.get(i).is_some_and(|p| p.pfc_mask != 0),
        max_rx: info.max_rx_queues,
        max_tx: info.max_tx_queues,
        need_rx: ps.nb_rx,
        need_tx,
        rss_offloads: info.rss_offloads,
        started: Err("not started".into()),
        flow_ctrl: None,
        link_up: false,
        link_mbps: 0,
        socket: info.socket,
        lcore_sockets,
        pfc_tx: PfcTx::NotTried,
    }
}

/// The ports the user configured (not the kernel representors the switch adds).
fn user_ports(spec: &SwitchSpec) -> usize {
    spec.ports.iter().filter(|p| p.representor_of.is_none() && p.vlan_interface_of.is_none()).count()
}

/// Run the check: switch-wide lines (memory, configuration warnings), then one verdict
/// line per port.
pub fn nic_check(spec: &SwitchSpec) -> Result<Vec<Finding>, DataplaneError> {
    if let Some(ns) = &spec.config.routing.netns {
        crate::kernel::netns::enter(ns).map_err(DataplaneError::Netns)?;
    }
    let mut out = Vec::new();
    // Before EAL takes its share of the hugepages.
    let huge = nic::parse_meminfo(&std::fs::read_to_string("/proc/meminfo").unwrap_or_default());
    let no_huge = spec.eal_args.iter().any(|a| a == "--no-huge");
    let any_pci = spec.ports.iter().any(|p| p.is_pci);
    out.push(nic::memory_line(no_huge, any_pci, huge, setup::mempool_mib(spec)));
    for w in &spec.config.warnings {
        out.push((Readiness::Warnings, format!("config: {w}")));
    }
    let eal = Eal::init(&spec.eal_args).map_err(DataplaneError::Eal)?;
    let result = check_ports(spec, &mut out);
    drop(eal);
    result.map(|()| out)
}

fn check_ports(spec: &SwitchSpec, out: &mut Vec<Finding>) -> Result<(), DataplaneError> {
    let (pool, ctl_pool) = match setup::mempools(spec) {
        Ok(p) => p,
        Err(e) => {
            out.push((Readiness::NotReady, format!("memory: {e}")));
            return Ok(());
        }
    };
    // Every port started at once (as `run` has them), so that a frame one sends can be
    // seen arriving on another.
    let mut checked: Vec<Checked> = (0..user_ports(spec)).map(|i| start_one(spec, i, &pool)).collect();
    // Links, all ports started: a NIC negotiates after start, a memif peer (maybe another
    // port here) connects. Up to 3 s in all, as `run`.
    let sources: Vec<Option<LinkSource>> = checked
        .iter()
        .zip(&spec.ports)
        .map(|(c, ps)| match c {
            Ok((_, Some(sp))) => Some(LinkSource::for_port(&ps.devargs, sp.port.id())),
            _ => None,
        })
        .collect();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(3);
    loop {
        let mut all_up = true;
        for (c, src) in checked.iter_mut().zip(&sources) {
            if let (Ok((f, Some(_))), Some(src)) = (c, src) {
                let l = src.read();
                f.link_up = l.up;
                f.link_mbps = l.speed_mbps;
                all_up &= l.up;
            }
        }
        if all_up || std::time::Instant::now() >= until {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for i in 0..checked.len() {
        if matches!(&checked[i], Ok((f, Some(_))) if f.link_up) {
            let pfc_tx = probe_pfc(&mut checked, i, &ctl_pool);
            if let Ok((f, _)) = &mut checked[i] {
                f.pfc_tx = pfc_tx;
            }
        }
    }
    for c in checked {
        out.push(match c {
            Ok((f, _)) => {
                let v = nic::judge(&f);
                (v.readiness, v.line(&f))
            }
            Err(finding) => finding,
        });
    }
    Ok(())
}

/// Port `i`: its facts, and the port itself when it started.
fn start_one(spec: &SwitchSpec, i: usize, pool: &Arc<Mempool>) -> Checked {
    let ps = &spec.ports[i];
    let not_ready = |msg: String| (Readiness::NotReady, format!("{}: not ready: {msg}", ps.name));
    let id = Port::id_by_name(ps.dev_name())
        .map_err(|e| not_ready(format!("{} not probed by EAL ({})", ps.devargs, e.msg)))?;
    let info = dpdk::dev_info(id).map_err(|e| not_ready(e.to_string()))?;
    let need_tx = setup::tx_queues(ps, id).map_err(|e| not_ready(e.msg))?;
    let mut f = facts(spec, i, &info, need_tx);
    if f.need_rx > f.max_rx || f.need_tx > f.max_tx {
        return Ok((f, None));
    }
    match setup::start_port(spec, ps, id, pool) {
        Ok(started) => {
            f.started = Ok(());
            f.flow_ctrl = Some(flow_ctrl(&started.flow_ctrl));
            Ok((f, Some(started)))
        }
        Err(e) => {
            f.started = Err(e.to_string());
            Ok((f, None))
        }
    }
}

type Checked = Result<(PortFacts, Option<setup::StartedPort>), Finding>;

/// Hand one PFC RESUME for every priority (harmless to any peer: nothing it sends was
/// paused by us), from port `i`'s MAC, to its PFC frames' TX queue as the switch sends
/// them, and watch every started port's RX for it for half a second. Every port is polled
/// meanwhile, as the workers would: a memif client only gives its server room to send when
/// it polls.
fn probe_pfc(checked: &mut [Checked], i: usize, ctl_pool: &Mempool) -> PfcTx {
    let Ok((_, Some(sp))) = &checked[i] else { return PfcTx::NotTried };
    let frame = MacControl::pfc_resume(0xff).to_bytes(sp.mac);
    let mut out = dpdk::MbufBurst::new();
    let Some(mut m) = ctl_pool.alloc() else { return PfcTx::NotTried };
    match m.append(frame.len() as u16) {
        Some(d) => d.copy_from_slice(&frame),
        None => return PfcTx::NotTried,
    }
    if out.push(m).is_err() {
        return PfcTx::NotTried;
    }
    let mut sent = false;
    let mut rx = dpdk::MbufBurst::new();
    let until = std::time::Instant::now() + std::time::Duration::from_millis(500);
    while std::time::Instant::now() < until {
        if !sent {
            if let Ok((_, Some(sp))) = &mut checked[i] {
                if let Some(q) = sp.ctl_txq.as_mut().or(sp.txq.as_mut()) {
                    sent = q.tx_burst(&mut out) == 1;
                }
            }
        }
        for (f, sp) in checked.iter_mut().filter_map(|c| c.as_mut().ok()) {
            let Some(sp) = sp else { continue };
            for q in &mut sp.rxqs {
                // net_null's RX never runs dry: a few bursts are enough.
                for _ in 0..4 {
                    if q.rx_burst(&mut rx, dpdk::BURST_CAP) == 0 {
                        break;
                    }
                    let hit = sent && rx.iter().any(|m| m.data().get(..frame.len()) == Some(&frame[..]));
                    rx.clear();
                    if hit {
                        return PfcTx::Arrived(f.name.clone());
                    }
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    out.clear();
    if sent {
        PfcTx::Taken
    } else {
        PfcTx::Refused
    }
}

/// At `run`'s start: the same verdict per started port, in the log (warnings for any
/// port that is not simply ready).
pub fn log_verdicts(spec: &SwitchSpec, ports: &setup::Ports, links: &[setup::LinkAtStart]) {
    for i in 0..user_ports(spec).min(ports.ids.len()) {
        let Ok(info) = dpdk::dev_info(ports.ids[i]) else { continue };
        let mut f = facts(spec, i, &info, ports.ports[i].nb_tx());
        f.started = Ok(());
        f.flow_ctrl = ports.flow_ctrl.get(i).map(flow_ctrl);
        if let Some(l) = links.get(i) {
            f.link_up = l.up;
            f.link_mbps = dpdk::link_of(ports.ids[i]).speed_mbps;
        }
        let v = nic::judge(&f);
        match v.readiness {
            Readiness::Ready => log::info!("nic-check: {}", v.line(&f)),
            _ => log::warn!("nic-check: {}", v.line(&f)),
        }
    }
}
