//! `pfcswitch nic-check`: start EAL as `run` would, configure and start each port the way
//! `run` does (its queues, the NIC's flow control off with MAC-control forwarding), ask
//! its PMD, stop it, and judge it (`crate::nic`). The same verdicts are logged at `run`'s
//! start. docs/nic.md.

use std::sync::Arc;

use crate::dpdk::{self, Eal, Mempool, Port};
use crate::nic::{self, FlowCtrl, PortFacts, Readiness};

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
    let pools = match setup::mempools(spec) {
        Ok(p) => p,
        Err(e) => {
            out.push((Readiness::NotReady, format!("memory: {e}")));
            return Ok(());
        }
    };
    for i in 0..user_ports(spec) {
        out.push(check_port(spec, i, &pools.0));
    }
    Ok(())
}

fn check_port(spec: &SwitchSpec, i: usize, pool: &Arc<Mempool>) -> Finding {
    let ps = &spec.ports[i];
    let not_ready = |msg: String| (Readiness::NotReady, format!("{}: not ready: {msg}", ps.name));
    let id = match Port::id_by_name(ps.dev_name()) {
        Ok(id) => id,
        Err(e) => return not_ready(format!("{} not probed by EAL ({})", ps.devargs, e.msg)),
    };
    let info = match dpdk::dev_info(id) {
        Ok(i) => i,
        Err(e) => return not_ready(e.to_string()),
    };
    let need_tx = match setup::tx_queues(ps, id) {
        Ok(n) => n,
        Err(e) => return not_ready(e.msg),
    };
    let mut f = facts(spec, i, &info, need_tx);
    if f.need_rx <= f.max_rx && f.need_tx <= f.max_tx {
        match setup::start_port(spec, ps, id, pool) {
            Ok(started) => {
                f.started = Ok(());
                f.flow_ctrl = Some(flow_ctrl(&started.flow_ctrl));
                let src = LinkSource::for_port(&ps.devargs, id);
                // A NIC negotiates after start, a memif peer connects: up to 3 s, as `run`.
                let until = std::time::Instant::now() + std::time::Duration::from_secs(3);
                let mut l = src.read();
                while !l.up && std::time::Instant::now() < until {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    l = src.read();
                }
                f.link_up = l.up;
                f.link_mbps = l.speed_mbps;
            }
            Err(e) => f.started = Err(e.to_string()),
        }
    }
    let v = nic::judge(&f);
    (v.readiness, v.line(&f))
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
