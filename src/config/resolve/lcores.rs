//! `[lcores]`: the control lcore and the workers' RX queues and TX ports.

use super::*;

pub(super) fn lcore_id(v: i64, path: &str) -> FResult<u32> {
    Ok(in_range(v, 0, MAX_LCORE as i64 - 1, path)? as u32)
}

/// `[lcores]`: the control lcore, idle modes and workers; sets every port's `rx_queues` and
/// `tx_lcore`. Without it: control lcore 0 and one worker on lcore 1 doing everything.
pub(super) fn resolve_lcores(v: Option<&Value>, ports: &mut [PortConfig]) -> FResult<LcoreConfig> {
    let Some(v) = v else {
        // Default: control lcore 0, one worker on lcore 1 doing everything.
        let lc = LcoreConfig {
            control: 0,
            control_idle: ControlIdle::Sleep,
            control_nap_ns: defaults::CONTROL_NAP_NS,
            worker_idle: WorkerIdle::Poll,
            workers: vec![WorkerConfig {
                lcore: 1,
                rx: (0..ports.len()).map(|port| RxQueueRef { port, queue: 0 }).collect(),
                tx: (0..ports.len()).collect(),
            }],
        };
        for p in ports.iter_mut() {
            p.rx_queues = 1;
            p.tx_lcore = 1;
        }
        return Ok(lc);
    };
    expect_table(v, "lcores")?;
    let raw: RawLcores = de(v, "lcores")?;
    let control = lcore_id(raw.control.unwrap_or(0), "lcores.control")?;
    let control_idle = match raw.control_idle.as_deref() {
        None | Some("sleep") => ControlIdle::Sleep,
        Some("poll") => ControlIdle::Poll,
        Some(o) => {
            return Err(FieldError::new("lcores.control_idle", format!("'{o}' is not one of \"sleep\", \"poll\"")))
        }
    };
    let control_nap_ns = match &raw.control_nap {
        Some(h) => {
            let ns = parse_duration_ns(&h.text()).map_err(|e| FieldError::new("lcores.control_nap", e.to_string()))?;
            if !(1_000..=10_000_000).contains(&ns) {
                return Err(FieldError::new("lcores.control_nap", format!("{ns} ns is outside 1us..10ms")));
            }
            ns
        }
        None => defaults::CONTROL_NAP_NS,
    };
    let worker_idle = match raw.worker_idle.as_deref() {
        None | Some("poll") => WorkerIdle::Poll,
        Some("adaptive") => WorkerIdle::Adaptive,
        Some(o) => {
            return Err(FieldError::new("lcores.worker_idle", format!("'{o}' is not one of \"poll\", \"adaptive\"")))
        }
    };
    let wv = raw.worker.unwrap_or_default();
    if wv.is_empty() {
        return Err(FieldError::new("lcores.worker", "at least one [[lcores.worker]] is required"));
    }
    let mut workers: Vec<WorkerConfig> = Vec::new();
    let mut polled = Polled::new();
    let mut tx_owner: Vec<Option<usize>> = vec![None; ports.len()];
    for (j, w) in wv.iter().enumerate() {
        let worker = resolve_worker(j, w, ports, control, &workers, &mut polled, &mut tx_owner)?;
        workers.push(worker);
    }
    assign_ports(ports, &polled, &tx_owner, &workers)?;
    Ok(LcoreConfig { control, control_idle, control_nap_ns, worker_idle, workers })
}

/// Where an RX queue is polled: (port, queue) → (worker index, index in its `rx`).
type Polled = HashMap<(usize, u16), (usize, usize)>;

/// `[[lcores.worker]]` number `j` (the ones before it are `workers`): its lcore, the RX
/// queues it polls and the ports whose TX it owns, each claimed in `polled`/`tx_owner`.
fn resolve_worker(
    j: usize,
    w: &Value,
    ports: &[PortConfig],
    control: u32,
    workers: &[WorkerConfig],
    polled: &mut Polled,
    tx_owner: &mut [Option<usize>],
) -> FResult<WorkerConfig> {
    let path = format!("lcores.worker[{j}]");
    expect_table(w, &path)?;
    let raw: RawWorker = de(w, &path)?;
    let lp = join(&path, "lcore");
    let lcore = lcore_id(raw.lcore, &lp)?;
    if lcore == control {
        return Err(FieldError::new(lp, format!("lcore {lcore} is the control lcore (lcores.control)")));
    }
    if let Some(k) = workers.iter().position(|w| w.lcore == lcore) {
        return Err(FieldError::new(lp, format!("lcore {lcore} is already used by lcores.worker[{k}]")));
    }
    if raw.rx.is_empty() && raw.tx.is_empty() {
        return Err(FieldError::new(&path, "worker polls no rx queue and owns no tx port"));
    }
    let mut rx = Vec::new();
    for (r, e) in raw.rx.iter().enumerate() {
        let rp = format!("{}[{r}]", join(&path, "rx"));
        let (pname, q) = e
            .rsplit_once(':')
            .ok_or_else(|| FieldError::new(&rp, format!("'{e}' is not '<port>:<queue>' (e.g. Ethernet0:0)")))?;
        let port = port_by_name(ports, pname, &rp)?;
        let queue: u16 = q
            .parse()
            .ok()
            .filter(|&q: &u16| q < 1024)
            .ok_or_else(|| FieldError::new(&rp, format!("'{q}' in '{e}' is not a queue number 0..1023")))?;
        if let Some(&(wj, wr)) = polled.get(&(port, queue)) {
            return Err(FieldError::new(
                &rp,
                format!(
                    "{e} is already polled by lcore {} (lcores.worker[{wj}].rx[{wr}])",
                    if wj == j { lcore } else { workers[wj].lcore }
                ),
            ));
        }
        polled.insert((port, queue), (j, r));
        rx.push(RxQueueRef { port, queue });
    }
    let mut tx = Vec::new();
    for (t, name) in raw.tx.iter().enumerate() {
        let tp = format!("{}[{t}]", join(&path, "tx"));
        let port = port_by_name(ports, name, &tp)?;
        if let Some(k) = tx_owner[port] {
            return Err(FieldError::new(
                &tp,
                format!("TX of {name} is already owned by lcores.worker[{k}]; a port has exactly one TX owner"),
            ));
        }
        tx_owner[port] = Some(j);
        tx.push(port);
    }
    Ok(WorkerConfig { lcore, rx, tx })
}

/// Every port needs its RX queues polled, numbered from 0 without gaps, and exactly one
/// TX owner: sets its `rx_queues` and `tx_lcore`.
fn assign_ports(
    ports: &mut [PortConfig],
    polled: &Polled,
    tx_owner: &[Option<usize>],
    workers: &[WorkerConfig],
) -> FResult<()> {
    for (i, p) in ports.iter_mut().enumerate() {
        let mut qs: Vec<(u16, (usize, usize))> =
            polled.iter().filter(|((port, _), _)| *port == i).map(|((_, q), at)| (*q, *at)).collect();
        qs.sort();
        if qs.is_empty() {
            return Err(FieldError::new(
                "lcores.worker",
                format!(
                    "port[{i}] ({}) has no rx queue polled by any worker (add \"{}:0\" to a worker's rx)",
                    p.name, p.name
                ),
            ));
        }
        for (expect, (q, (wj, wr))) in qs.iter().enumerate() {
            if *q as usize != expect {
                return Err(FieldError::new(
                    format!("lcores.worker[{wj}].rx[{wr}]"),
                    format!(
                        "{}:{q} leaves a gap: rx queues of a port are numbered from 0 without gaps, and {}:{expect} is not polled",
                        p.name, p.name
                    ),
                ));
            }
        }
        p.rx_queues = qs.len() as u16;
        match tx_owner[i] {
            Some(j) => p.tx_lcore = workers[j].lcore,
            None => {
                return Err(FieldError::new(
                    "lcores.worker",
                    format!("port[{i}] ({}) has no TX owner (list it in the tx of exactly one worker)", p.name),
                ))
            }
        }
    }
    Ok(())
}
