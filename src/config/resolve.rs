//! Validation and resolution: raw TOML → [`Config`]. Every error names its field.

use super::duration::parse_duration_ns;
use super::error::{join, FResult, FieldError};
use super::raw::*;
use super::types::*;
use crate::units::{format_speed, parse_bytes, parse_length_m, parse_speed};
use std::collections::{BTreeSet, HashMap};
use toml::{Table, Value};

/// Known vdev driver prefixes (a vdev's devargs must start with one of them).
pub const VDEV_PREFIXES: &[&str] = &[
    "net_null",
    "net_ring",
    "net_pcap",
    "net_tap",
    "net_memif",
    "net_af_packet",
    "net_af_xdp",
    "net_vhost",
    "net_virtio_user",
    "eth_",
];

/// Defaults, documented in the module docs.
pub mod defaults {
    pub const FDB_AGING_TIME: u32 = 600;
    pub const FDB_SIZE: usize = 65536;
    pub const BURST_SIZE: u16 = 32;
    pub const RX_RING_SIZE: u16 = 1024;
    pub const TX_RING_SIZE: u16 = 1024;
    pub const CABLE_LENGTH: &str = "5m";
    pub const MTU: u16 = 9100;
    pub const PFC_ENABLE: [u8; 2] = [3, 4];
    pub const TOTAL_SIZE: u64 = 12 << 20;
    /// Cell size when `[buffer]` is absent altogether.
    pub const CELL_SIZE: u32 = 256;
    pub const LOSSLESS_PRIVATE: u64 = 4096;
    pub const LOSSLESS_DYNAMIC_TH: i8 = 0;
    pub const LOSSY_DYNAMIC_TH: i8 = 3;
}

struct Ctx<'a> {
    origin: &'a str,
    warnings: Vec<String>,
}

impl Ctx<'_> {
    fn warn(&mut self, path: &str, msg: impl AsRef<str>) {
        self.warnings.push(format!("{}: {}: {}", self.origin, path, super::error::one_line(msg.as_ref())));
    }
}

pub(crate) fn in_range(v: i64, lo: i64, hi: i64, path: &str) -> FResult<i64> {
    if v < lo || v > hi {
        Err(FieldError::new(path, format!("{v} is out of range {lo}..={hi}")))
    } else {
        Ok(v)
    }
}

fn pow2_in(v: i64, lo: i64, hi: i64, path: &str) -> FResult<i64> {
    in_range(v, lo, hi, path)?;
    if (v as u64).is_power_of_two() {
        Ok(v)
    } else {
        Err(FieldError::new(path, format!("{v} is not a power of two")))
    }
}

fn speed(h: &Human, path: &str) -> FResult<u64> {
    parse_speed(&h.text()).map_err(|e| FieldError::new(path, e.to_string()))
}

pub(crate) fn bytes(h: &Human, path: &str) -> FResult<u64> {
    if let Human::Int(i) = h {
        if *i < 0 {
            return Err(FieldError::new(path, format!("{i} is negative")));
        }
    }
    parse_bytes(&h.text()).map_err(|e| FieldError::new(path, e.to_string()))
}

fn fmt_bytes(b: u64) -> String {
    if b >= 1 << 20 && b & 1023 == 0 {
        format!("{:.2} MiB ({b} B)", b as f64 / (1u64 << 20) as f64)
    } else {
        format!("{b} B")
    }
}

/// Parse a PCI address `dddd:bb:dd.f` or `bb:dd.f`; returns it normalised.
pub fn parse_bdf(s: &str) -> Option<String> {
    let hex = |p: &str, n: usize| p.len() == n && p.chars().all(|c| c.is_ascii_hexdigit());
    let parts: Vec<&str> = s.split(':').collect();
    let (dom, bus, devfn) = match parts.as_slice() {
        [d, b, df] => (*d, *b, *df),
        [b, df] => ("0000", *b, *df),
        _ => return None,
    };
    let (dev, func) = devfn.split_once('.')?;
    if !hex(dom, 4) || !hex(bus, 2) || !hex(dev, 2) || func.len() != 1 {
        return None;
    }
    let devn = u8::from_str_radix(dev, 16).ok()?;
    let f = func.chars().next()?.to_digit(8)?;
    if devn > 0x1f {
        return None;
    }
    Some(format!("{}:{}:{}.{}", dom, bus, dev, f).to_ascii_lowercase())
}

/// Recognise a port's devargs.
pub fn parse_devargs(s: &str) -> Result<PortDevice, String> {
    if s.trim().is_empty() {
        return Err("must not be empty".into());
    }
    if s.chars().any(char::is_whitespace) {
        return Err(format!("'{s}' must not contain whitespace"));
    }
    let name = s.split(',').next().unwrap_or("");
    if let Some(bdf) = parse_bdf(name) {
        return Ok(PortDevice::Pci { bdf });
    }
    for p in VDEV_PREFIXES {
        if name.starts_with(p) && name.len() > p.len().min(4) {
            if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!("'{name}' is not a valid vdev name"));
            }
            return Ok(PortDevice::Vdev { driver: p.trim_end_matches('_').to_string(), name: name.to_string() });
        }
    }
    Err(format!(
        "'{s}' is neither a known vdev ({}) nor a PCI address (dddd:bb:dd.f or bb:dd.f)",
        VDEV_PREFIXES.join(", ")
    ))
}

/// Parse `aa:bb:cc:dd:ee:ff` (or with `-`).
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let parts: Vec<&str> = s.split([':', '-']).collect();
    if parts.len() != 6 {
        return None;
    }
    let mut m = [0u8; 6];
    for (i, p) in parts.iter().enumerate() {
        if p.len() != 2 {
            return None;
        }
        m[i] = u8::from_str_radix(p, 16).ok()?;
    }
    Some(m)
}

/// Entry point: the parsed document → validated config.
pub(crate) fn resolve(top: &Table, origin: &str) -> FResult<Config> {
    let mut ctx = Ctx { origin, warnings: Vec::new() };
    for k in top.keys() {
        if !SECTIONS.contains(&k.as_str()) {
            return Err(FieldError::new(
                join("", k),
                format!("unknown section, expected one of {}", SECTIONS.join(", ")),
            ));
        }
    }
    let eal: RawEal = match top.get("eal") {
        Some(v) => {
            expect_table(v, "eal")?;
            de(v, "eal")?
        }
        None => RawEal { args: Vec::new(), file_prefix: None },
    };
    let sw: RawSwitch = match top.get("switch") {
        Some(v) => {
            expect_table(v, "switch")?;
            de(v, "switch")?
        }
        None => RawSwitch::default(),
    };
    let mut switch = resolve_switch(&sw)?;
    let mut ports = resolve_ports(top.get("port"), &mut ctx)?;
    let mut qos = match top.get("qos") {
        Some(v) => {
            expect_table(v, "qos")?;
            resolve_qos(&de::<RawQos>(v, "qos")?)?
        }
        None => QosConfig::default(),
    };
    let qos_table = top.get("qos").and_then(|v| v.as_table()).cloned().unwrap_or_default();
    (qos.wred_profiles, qos.queue_wred) = super::wred::resolve(&qos_table, &ports)?;
    let pfcwd = match top.get("pfcwd") {
        Some(v) => {
            expect_table(v, "pfcwd")?;
            Some(resolve_pfcwd(&de::<RawPfcwd>(v, "pfcwd")?)?)
        }
        None => None,
    };
    let lcores = resolve_lcores(top.get("lcores"), &mut ports)?;
    let buffer = resolve_buffer(top.get("buffer"), &ports, &qos, &mut ctx)?;
    check_eal(&eal, &ports, &lcores, top.contains_key("lcores"))?;
    compute_mbufs(&mut switch, &sw, &ports, &lcores, &buffer, &mut ctx)?;
    Ok(Config {
        origin: origin.to_string(),
        eal: EalConfig { args: eal.args, file_prefix: eal.file_prefix },
        switch,
        ports,
        lcores,
        buffer,
        qos,
        pfcwd,
        warnings: ctx.warnings,
    })
}

fn resolve_pfcwd(raw: &RawPfcwd) -> FResult<crate::pfcwd::PfcwdConfig> {
    let mut c = crate::pfcwd::PfcwdConfig::default();
    if let Some(a) = &raw.action {
        c.action = crate::pfcwd::Action::parse(a)
            .ok_or_else(|| FieldError::new("pfcwd.action", format!("'{a}' is not one of drop, forward, alert")))?;
    }
    let ms = |v: Option<i64>, name: &str, default: u32| -> FResult<u32> {
        match v {
            Some(x) => Ok(in_range(x, 1, 600_000, name)? as u32),
            None => Ok(default),
        }
    };
    c.detection_time_ms = ms(raw.detection_time, "pfcwd.detection_time", c.detection_time_ms)?;
    c.restoration_time_ms = ms(raw.restoration_time, "pfcwd.restoration_time", c.restoration_time_ms)?;
    c.poll_interval_ms = ms(raw.poll_interval, "pfcwd.poll_interval", c.poll_interval_ms)?;
    c.validate().map_err(|(field, msg)| FieldError::new(format!("pfcwd.{field}"), msg))?;
    Ok(c)
}

fn resolve_switch(sw: &RawSwitch) -> FResult<SwitchConfig> {
    let fdb_aging_time = match sw.fdb_aging_time {
        Some(v) => in_range(v, 0, 1_000_000, "switch.fdb_aging_time")? as u32,
        None => defaults::FDB_AGING_TIME,
    };
    let fdb_size = match sw.fdb_size {
        Some(v) => pow2_in(v, 16, 1 << 24, "switch.fdb_size")? as usize,
        None => defaults::FDB_SIZE,
    };
    let rx_ring_size = match sw.rx_ring_size {
        Some(v) => pow2_in(v, 32, 32768, "switch.rx_ring_size")? as u16,
        None => defaults::RX_RING_SIZE,
    };
    let tx_ring_size = match sw.tx_ring_size {
        Some(v) => pow2_in(v, 32, 32768, "switch.tx_ring_size")? as u16,
        None => defaults::TX_RING_SIZE,
    };
    let burst_size = match sw.burst_size {
        Some(v) => in_range(v, 1, 512, "switch.burst_size")? as u16,
        None => defaults::BURST_SIZE,
    };
    if burst_size > rx_ring_size {
        return Err(FieldError::new(
            "switch.burst_size",
            format!("{burst_size} is larger than rx_ring_size {rx_ring_size}"),
        ));
    }
    if let Some(v) = sw.mbuf_count {
        in_range(v, 0, u32::MAX as i64, "switch.mbuf_count")?;
    }
    let sw_response_ns = match &sw.sw_response {
        Some(h) => parse_duration_ns(&h.text()).map_err(|e| FieldError::new("switch.sw_response", e.to_string()))?,
        None => crate::headroom::DEFAULT_SW_RESPONSE_NS,
    };
    Ok(SwitchConfig {
        fdb_aging_time,
        fdb_size,
        burst_size,
        rx_ring_size,
        tx_ring_size,
        mbuf_count: 0,
        mbuf_count_computed: true,
        sw_response_ns,
    })
}

fn resolve_ports(v: Option<&Value>, ctx: &mut Ctx) -> FResult<Vec<PortConfig>> {
    let arr = match v {
        None => return Err(FieldError::new("port", "missing: at least one [[port]] is required")),
        Some(Value::Array(a)) => a,
        Some(_) => return Err(FieldError::new("port", "expected an array of tables: write [[port]], not [port]")),
    };
    if arr.is_empty() {
        return Err(FieldError::new("port", "at least one [[port]] is required"));
    }
    let mut ports: Vec<PortConfig> = Vec::with_capacity(arr.len());
    for (i, v) in arr.iter().enumerate() {
        let path = format!("port[{i}]");
        expect_table(v, &path)?;
        let raw: RawPort = de(v, &path)?;
        let p = resolve_port(i, &raw, &path, ctx)?;
        for q in &ports {
            if q.name == p.name {
                return Err(FieldError::new(
                    join(&path, "name"),
                    format!("duplicate port name '{}' (also port[{}])", p.name, q.index),
                ));
            }
            if q.dpdk_name() == p.dpdk_name() {
                return Err(FieldError::new(
                    join(&path, "devargs"),
                    format!("device '{}' is already used by port[{}] ({})", p.dpdk_name(), q.index, q.name),
                ));
            }
            if p.mac.is_some() && q.mac == p.mac {
                return Err(FieldError::new(
                    join(&path, "mac"),
                    format!("MAC already used by port[{}] ({})", q.index, q.name),
                ));
            }
        }
        ports.push(p);
    }
    Ok(ports)
}

fn resolve_port(i: usize, raw: &RawPort, path: &str, ctx: &mut Ctx) -> FResult<PortConfig> {
    let f = |k: &str| join(path, k);
    let name = raw.name.clone();
    if name.is_empty() {
        return Err(FieldError::new(f("name"), "must not be empty"));
    }
    if name.chars().any(|c| c.is_whitespace() || c == ':' || c == '|') {
        return Err(FieldError::new(f("name"), format!("'{name}' must not contain whitespace, ':' or '|'")));
    }
    let device = parse_devargs(&raw.devargs).map_err(|m| FieldError::new(f("devargs"), m))?;
    let speed_bps = speed(&raw.speed, &f("speed"))?;
    let cable_length_m = match &raw.cable_length {
        Some(h) => parse_length_m(&h.text()).map_err(|e| FieldError::new(f("cable_length"), e.to_string()))?,
        None => parse_length_m(defaults::CABLE_LENGTH).expect("default cable length"),
    };
    let mtu = match raw.mtu {
        Some(m) => in_range(m, 68, 9216, &f("mtu"))? as u16,
        None => defaults::MTU,
    };
    let default_tc = match raw.default_tc {
        Some(t) => in_range(t, 0, 7, &f("default_tc"))? as u8,
        None => 0,
    };
    let mut pfc_mask = 0u8;
    let pfc_list: Vec<i64> = match &raw.pfc_enable {
        Some(l) => l.clone(),
        None => defaults::PFC_ENABLE.iter().map(|&p| p as i64).collect(),
    };
    for (j, &p) in pfc_list.iter().enumerate() {
        let pp = format!("{}[{j}]", f("pfc_enable"));
        let p = in_range(p, 0, 7, &pp)? as u8;
        if pfc_mask & (1 << p) != 0 {
            return Err(FieldError::new(pp, format!("priority {p} listed twice")));
        }
        pfc_mask |= 1 << p;
    }
    let pfc_enable: Vec<u8> = (0..8).filter(|p| pfc_mask & (1 << p) != 0).collect();
    let shaper_bps = match &raw.shaper_rate {
        Some(h) => {
            let r = speed(h, &f("shaper_rate"))?;
            if r > speed_bps {
                return Err(FieldError::new(
                    f("shaper_rate"),
                    format!("{} exceeds the port speed {}", format_speed(r), format_speed(speed_bps)),
                ));
            }
            Some(r)
        }
        None => match device {
            PortDevice::Vdev { .. } => Some(speed_bps),
            PortDevice::Pci { .. } => None,
        },
    };
    let mac = match &raw.mac {
        Some(s) => {
            let m = parse_mac(s)
                .ok_or_else(|| FieldError::new(f("mac"), format!("'{s}' is not a MAC address (aa:bb:cc:dd:ee:ff)")))?;
            if m[0] & 1 != 0 {
                return Err(FieldError::new(f("mac"), format!("'{s}' is a group (multicast) address")));
            }
            if m == [0; 6] {
                return Err(FieldError::new(f("mac"), "the all-zero MAC is not valid"));
            }
            Some(m)
        }
        None => None,
    };
    let tx_enable = raw.tx_enable.unwrap_or(true);
    if !tx_enable {
        ctx.warn(&f("tx_enable"), "false: this port transmits nothing (test knob)");
    }
    Ok(PortConfig {
        index: i,
        name,
        devargs: raw.devargs.clone(),
        device,
        speed_bps,
        cable_length_m,
        mtu,
        admin_up: raw.admin_status != Some(RawAdmin::Down),
        trust: match raw.trust {
            Some(RawTrust::Pcp) => Trust::Pcp,
            _ => Trust::Dscp,
        },
        default_tc,
        pfc_enable,
        pfc_mask,
        tx_enable,
        shaper_bps,
        mac,
        rx_queues: 0,
        tx_lcore: u32::MAX,
    })
}

fn port_by_name(ports: &[PortConfig], name: &str, path: &str) -> FResult<usize> {
    ports.iter().position(|p| p.name == name).ok_or_else(|| {
        let names: Vec<&str> = ports.iter().map(|p| p.name.as_str()).collect();
        FieldError::new(path, format!("unknown port '{name}' (ports: {})", names.join(", ")))
    })
}

fn lcore_id(v: i64, path: &str) -> FResult<u32> {
    Ok(in_range(v, 0, MAX_LCORE as i64 - 1, path)? as u32)
}

/// `lcores.control_nap` default: ~1 % of a CPU in wake-ups; a RESUME after a quiet
/// spell waits at most this long (workers send the PAUSE and refresh it meanwhile).
pub const DEFAULT_CONTROL_NAP_NS: u64 = 1_000_000;

fn resolve_lcores(v: Option<&Value>, ports: &mut [PortConfig]) -> FResult<LcoreConfig> {
    let Some(v) = v else {
        // Default: control lcore 0, one worker on lcore 1 doing everything.
        let lc = LcoreConfig {
            control: 0,
            control_idle: ControlIdle::Sleep,
            control_nap_ns: DEFAULT_CONTROL_NAP_NS,
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
        None => DEFAULT_CONTROL_NAP_NS,
    };
    let wv = raw.worker.unwrap_or_default();
    if wv.is_empty() {
        return Err(FieldError::new("lcores.worker", "at least one [[lcores.worker]] is required"));
    }
    let mut workers: Vec<WorkerConfig> = Vec::new();
    // (port, queue) → (worker index, rx index)
    let mut polled: HashMap<(usize, u16), (usize, usize)> = HashMap::new();
    let mut tx_owner: Vec<Option<usize>> = vec![None; ports.len()];
    for (j, w) in wv.iter().enumerate() {
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
        workers.push(WorkerConfig { lcore, rx, tx });
    }
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
    Ok(LcoreConfig { control, control_idle, control_nap_ns, workers })
}

fn qos_map<const N: usize>(
    t: &Option<Table>,
    path: &str,
    out: &mut [u8; N],
    key_max: i64,
    val_max: i64,
) -> FResult<()> {
    let Some(t) = t else { return Ok(()) };
    for (k, v) in t {
        let kp = join(path, k);
        let key: i64 =
            k.trim().parse().map_err(|_| FieldError::new(&kp, format!("key '{k}' is not an integer 0..={key_max}")))?;
        let key = in_range(key, 0, key_max, &kp)?;
        let IntLike(val) = de(v, &kp)?;
        out[key as usize] = in_range(val, 0, val_max, &kp)? as u8;
    }
    Ok(())
}

fn resolve_qos(raw: &RawQos) -> FResult<QosConfig> {
    let mut q = QosConfig::default();
    qos_map(&raw.dscp_to_tc, "qos.dscp_to_tc", &mut q.dscp_to_tc, 63, 7)?;
    qos_map(&raw.dot1p_to_tc, "qos.dot1p_to_tc", &mut q.dot1p_to_tc, 7, 7)?;
    qos_map(&raw.tc_to_pg, "qos.tc_to_pg", &mut q.tc_to_pg, 7, 7)?;
    qos_map(&raw.tc_to_queue, "qos.tc_to_queue", &mut q.tc_to_queue, 7, 7)?;
    if let Some(s) = raw.wred_seed {
        q.wred_seed = Some(in_range(s.0, 0, i64::MAX, "qos.wred_seed")? as u64);
    }
    if let Some(t) = &raw.scheduler {
        for (k, v) in t {
            let kp = join("qos.scheduler", k);
            let tc: i64 = k.trim().parse().map_err(|_| FieldError::new(&kp, format!("key '{k}' is not a TC 0..=7")))?;
            let tc = in_range(tc, 0, 7, &kp)? as usize;
            expect_table(v, &kp)?;
            let s: RawScheduler = de(v, &kp)?;
            q.scheduler[tc] = match s.kind.to_ascii_lowercase().as_str() {
                "strict" => {
                    if s.weight.is_some() {
                        return Err(FieldError::new(join(&kp, "weight"), "a STRICT scheduler has no weight"));
                    }
                    Scheduler::Strict
                }
                "dwrr" | "wrr" => {
                    let w = s.weight.ok_or_else(|| {
                        FieldError::new(join(&kp, "weight"), "missing field (DWRR needs a weight 1..=100)")
                    })?;
                    Scheduler::Dwrr(in_range(w.0, 1, 100, &join(&kp, "weight"))? as u8)
                }
                other => {
                    return Err(FieldError::new(
                        join(&kp, "type"),
                        format!("unknown scheduler type '{other}', expected STRICT or DWRR"),
                    ))
                }
            };
        }
    }
    Ok(q)
}

/// `<port>|<n>` or `<port>|<a>-<b>` → (port index, lo, hi).
pub(crate) fn parse_binding_key(k: &str, ports: &[PortConfig], path: &str) -> FResult<(usize, u8, u8)> {
    let (pname, range) = k
        .rsplit_once('|')
        .ok_or_else(|| FieldError::new(path, format!("key '{k}' is not '<port>|<n>' or '<port>|<a>-<b>'")))?;
    let port = port_by_name(ports, pname, path)?;
    let num = |s: &str| -> FResult<u8> {
        let n: i64 =
            s.trim().parse().map_err(|_| FieldError::new(path, format!("'{s}' in key '{k}' is not a number 0..=7")))?;
        Ok(in_range(n, 0, 7, path)? as u8)
    };
    let (lo, hi) = match range.split_once('-') {
        Some((a, b)) => (num(a)?, num(b)?),
        None => {
            let n = num(range)?;
            (n, n)
        }
    };
    if lo > hi {
        return Err(FieldError::new(path, format!("empty range {lo}-{hi} in key '{k}'")));
    }
    Ok((port, lo, hi))
}

fn generated_buffer(
    total_size: u64,
    cell_size: u32,
    headroom_policy: HeadroomPolicy,
    ports: &[PortConfig],
    qos: &QosConfig,
) -> BufferConfig {
    let egress = total_size / 3;
    let ingress = total_size - egress;
    let pools = vec![
        PoolConfig {
            name: "ingress_lossless_pool".into(),
            size: ingress,
            kind: PoolType::Ingress,
            mode: PoolMode::Dynamic,
        },
        PoolConfig { name: "egress_lossy_pool".into(), size: egress, kind: PoolType::Egress, mode: PoolMode::Dynamic },
    ];
    let profiles = vec![
        ProfileConfig {
            name: "pg_lossless_profile".into(),
            pool: 0,
            size: defaults::LOSSLESS_PRIVATE,
            xon: None,
            xoff: None,
            xon_offset: None,
            threshold: Threshold::Dynamic(defaults::LOSSLESS_DYNAMIC_TH),
        },
        ProfileConfig {
            name: "ingress_lossy_profile".into(),
            pool: 0,
            size: 0,
            xon: None,
            xoff: None,
            xon_offset: None,
            threshold: Threshold::Dynamic(defaults::LOSSY_DYNAMIC_TH),
        },
        ProfileConfig {
            name: "queue_lossy_profile".into(),
            pool: 1,
            size: 0,
            xon: None,
            xoff: None,
            xon_offset: None,
            threshold: Threshold::Dynamic(defaults::LOSSY_DYNAMIC_TH),
        },
    ];
    let used_pgs: u8 = qos.tc_to_pg.iter().fold(0, |m, &pg| m | (1 << pg));
    let mut pg_profile = Vec::new();
    let mut queue_profile = Vec::new();
    for p in ports {
        let mut pg = [None; NUM_TC];
        let mut q = [None; NUM_TC];
        for n in 0..NUM_TC as u8 {
            if p.pfc_enabled(n) {
                pg[n as usize] = Some(0);
            } else {
                if used_pgs & (1 << n) != 0 {
                    pg[n as usize] = Some(1);
                }
                q[n as usize] = Some(2);
            }
        }
        pg_profile.push(pg);
        queue_profile.push(q);
    }
    BufferConfig { total_size, cell_size, headroom_policy, pools, profiles, pg_profile, queue_profile, generated: true }
}

fn resolve_buffer(v: Option<&Value>, ports: &[PortConfig], qos: &QosConfig, ctx: &mut Ctx) -> FResult<BufferConfig> {
    let Some(v) = v else {
        return Ok(generated_buffer(defaults::TOTAL_SIZE, defaults::CELL_SIZE, HeadroomPolicy::Static, ports, qos));
    };
    expect_table(v, "buffer")?;
    let raw: RawBuffer = de(v, "buffer")?;
    let total_size = match &raw.total_size {
        Some(h) => bytes(h, "buffer.total_size")?,
        None => defaults::TOTAL_SIZE,
    };
    if total_size == 0 {
        return Err(FieldError::new("buffer.total_size", "must be greater than zero"));
    }
    let cell_size = match raw.cell_size {
        Some(0) | None => 0,
        Some(c) => in_range(c, 32, 16384, "buffer.cell_size")? as u32,
    };
    let headroom_policy = match raw.headroom_policy {
        Some(RawHeadroomPolicy::Shared) => {
            ctx.warn("buffer.headroom_policy", "\"shared\" (DSH) is reserved and may not be implemented by this build");
            HeadroomPolicy::Shared
        }
        _ => HeadroomPolicy::Static,
    };
    if raw.pool.is_none() && raw.profile.is_none() && raw.pg.is_none() && raw.queue.is_none() {
        return Ok(generated_buffer(total_size, cell_size, headroom_policy, ports, qos));
    }

    // Pools.
    let mut pools = Vec::new();
    let mut sum = 0u64;
    for (name, pv) in raw.pool.iter().flatten() {
        let path = join("buffer.pool", name);
        expect_table(pv, &path)?;
        let rp: RawPool = de(pv, &path)?;
        let size = bytes(&rp.size, &join(&path, "size"))?;
        if size == 0 {
            return Err(FieldError::new(join(&path, "size"), "must be greater than zero"));
        }
        sum += size;
        pools.push(PoolConfig {
            name: name.clone(),
            size,
            kind: match rp.kind {
                RawPoolType::Ingress => PoolType::Ingress,
                RawPoolType::Egress => PoolType::Egress,
            },
            mode: match rp.mode {
                Some(RawPoolMode::Static) => PoolMode::Static,
                _ => PoolMode::Dynamic,
            },
        });
    }
    if sum > total_size {
        return Err(FieldError::new(
            "buffer.pool",
            format!("pool sizes add up to {}, more than buffer.total_size {}", fmt_bytes(sum), fmt_bytes(total_size)),
        ));
    }
    let pool_names = || {
        let v: Vec<&str> = pools.iter().map(|p| p.name.as_str()).collect();
        if v.is_empty() {
            "none defined".to_string()
        } else {
            v.join(", ")
        }
    };

    // Profiles.
    let mut profiles = Vec::new();
    for (name, pv) in raw.profile.iter().flatten() {
        let path = join("buffer.profile", name);
        expect_table(pv, &path)?;
        let rp: RawProfile = de(pv, &path)?;
        let pool = pools.iter().position(|p| p.name == rp.pool).ok_or_else(|| {
            FieldError::new(join(&path, "pool"), format!("unknown pool '{}' (pools: {})", rp.pool, pool_names()))
        })?;
        let size = match &rp.size {
            Some(h) => bytes(h, &join(&path, "size"))?,
            None => 0,
        };
        if size > pools[pool].size {
            return Err(FieldError::new(
                join(&path, "size"),
                format!(
                    "private size {} exceeds pool '{}' ({})",
                    fmt_bytes(size),
                    pools[pool].name,
                    fmt_bytes(pools[pool].size)
                ),
            ));
        }
        let opt = |h: &Option<Human>, k: &str| -> FResult<Option<u64>> {
            match h {
                None => Ok(None),
                Some(h) => {
                    if pools[pool].kind != PoolType::Ingress {
                        return Err(FieldError::new(
                            join(&path, k),
                            format!(
                                "{k} applies only to profiles of an ingress pool ('{}' is an egress pool)",
                                pools[pool].name
                            ),
                        ));
                    }
                    Ok(Some(bytes(h, &join(&path, k))?))
                }
            }
        };
        let xon = opt(&rp.xon, "xon")?;
        let xoff = opt(&rp.xoff, "xoff")?;
        let xon_offset = opt(&rp.xon_offset, "xon_offset")?;
        let threshold = match (&rp.dynamic_th, &rp.static_th) {
            (Some(_), Some(_)) => {
                return Err(FieldError::new(join(&path, "static_th"), "give dynamic_th or static_th, not both"))
            }
            (Some(IntLike(d)), None) => Threshold::Dynamic(in_range(*d, -8, 7, &join(&path, "dynamic_th"))? as i8),
            (None, Some(h)) => Threshold::Static(bytes(h, &join(&path, "static_th"))?),
            (None, None) => {
                return Err(FieldError::new(
                    join(&path, "dynamic_th"),
                    "missing field (a profile needs dynamic_th or static_th)",
                ))
            }
        };
        profiles.push(ProfileConfig { name: name.clone(), pool, size, xon, xoff, xon_offset, threshold });
    }

    // PG / queue bindings.
    let bind = |t: &Option<Table>, section: &str, want: PoolType| -> FResult<Vec<[Option<usize>; NUM_TC]>> {
        let mut out = vec![[None; NUM_TC]; ports.len()];
        let mut by: HashMap<(usize, u8), String> = HashMap::new();
        for (k, pv) in t.iter().flatten() {
            let path = join(section, k);
            let (port, lo, hi) = parse_binding_key(k, ports, &path)?;
            let pname: String = match pv {
                Value::String(s) => s.clone(),
                other => {
                    return Err(FieldError::new(&path, format!("expected a profile name (string), found {other}")))
                }
            };
            let prof = profiles.iter().position(|p| p.name == pname).ok_or_else(|| {
                let v: Vec<&str> = profiles.iter().map(|p| p.name.as_str()).collect();
                FieldError::new(&path, format!("unknown profile '{pname}' (profiles: {})", v.join(", ")))
            })?;
            let pool = &pools[profiles[prof].pool];
            if pool.kind != want {
                return Err(FieldError::new(
                    &path,
                    format!(
                        "profile '{pname}' uses {} pool '{}', a {} needs an {} pool",
                        match pool.kind {
                            PoolType::Ingress => "ingress",
                            PoolType::Egress => "egress",
                        },
                        pool.name,
                        if want == PoolType::Ingress { "PG" } else { "queue" },
                        match want {
                            PoolType::Ingress => "ingress",
                            PoolType::Egress => "egress",
                        }
                    ),
                ));
            }
            for n in lo..=hi {
                if let Some(prev) = by.get(&(port, n)) {
                    return Err(FieldError::new(
                        &path,
                        format!(
                            "{} {n} of {} is already bound by {}",
                            if want == PoolType::Ingress { "PG" } else { "queue" },
                            ports[port].name,
                            prev
                        ),
                    ));
                }
                by.insert((port, n), path.clone());
                out[port][n as usize] = Some(prof);
            }
        }
        Ok(out)
    };
    let pg_profile = bind(&raw.pg, "buffer.pg", PoolType::Ingress)?;
    let queue_profile = bind(&raw.queue, "buffer.queue", PoolType::Egress)?;
    for p in ports {
        for &prio in &p.pfc_enable {
            if pg_profile[p.index][prio as usize].is_none() {
                ctx.warn(
                    "buffer.pg",
                    format!(
                        "{} has PFC enabled on priority {prio} but no profile for PG {prio}: it will never send PAUSE",
                        p.name
                    ),
                );
            }
        }
    }
    Ok(BufferConfig {
        total_size,
        cell_size,
        headroom_policy,
        pools,
        profiles,
        pg_profile,
        queue_profile,
        generated: false,
    })
}

/// Parse an lcore list `0-3,5` (as `-l`) or an lcore map `0@0,(1-2)@(1,2)` (as `--lcores`).
pub fn parse_lcore_set(s: &str) -> Option<BTreeSet<u32>> {
    let mut set = BTreeSet::new();
    let mut elems = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                elems.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    elems.push(&s[start..]);
    for e in elems {
        let lc = e.split('@').next()?;
        let lc = lc.trim_start_matches('(').trim_end_matches(')');
        for item in lc.split(',') {
            let (a, b) = match item.split_once('-') {
                Some((a, b)) => (a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?),
                None => {
                    let n = item.trim().parse::<u32>().ok()?;
                    (n, n)
                }
            };
            if a > b || b > 4096 {
                return None;
            }
            set.extend(a..=b);
        }
    }
    Some(set)
}

/// `(index of the argument, its text, the enabled lcores)` from `-l`, `--lcores` or `-c`.
fn eal_lcores(args: &[String]) -> Option<(usize, String, BTreeSet<u32>)> {
    let mut found = None;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let next = args.get(i + 1).map(|s| s.as_str());
        let (val, shown) = if a == "-l" || a == "--lcores" || a == "-c" {
            (next, format!("{a} {}", next.unwrap_or("")))
        } else if let Some(v) = a.strip_prefix("--lcores=") {
            (Some(v), a.to_string())
        } else if a.starts_with("-l") && a.len() > 2 && !a.starts_with("--") {
            (Some(&a[2..]), a.to_string())
        } else {
            i += 1;
            continue;
        };
        let set = if a == "-c" {
            val.and_then(|v| u128::from_str_radix(v.trim_start_matches("0x").trim_start_matches("0X"), 16).ok())
                .map(|m| (0..128).filter(|b| m & (1u128 << b) != 0).collect())
        } else {
            val.and_then(parse_lcore_set)
        };
        if let Some(set) = set {
            found = Some((i, shown, set));
        }
        i += 1;
    }
    found
}

fn check_eal(eal: &RawEal, ports: &[PortConfig], lcores: &LcoreConfig, lcores_written: bool) -> FResult<()> {
    let args = &eal.args;
    let has_prefix_arg = args.iter().position(|a| a == "--file-prefix" || a.starts_with("--file-prefix="));
    if let Some(p) = &eal.file_prefix {
        if p.is_empty() || p.contains('/') || p.chars().any(char::is_whitespace) {
            return Err(FieldError::new(
                "eal.file_prefix",
                format!("'{p}' must be non-empty, without '/' or whitespace"),
            ));
        }
        if let Some(i) = has_prefix_arg {
            return Err(FieldError::new(
                "eal.file_prefix",
                format!("also given in eal.args[{i}]; set it in one place"),
            ));
        }
    }
    // Devices given twice, --no-pci with PCI ports.
    for (i, a) in args.iter().enumerate() {
        let path = format!("eal.args[{i}]");
        if a == "--no-pci" {
            if let Some(p) = ports.iter().find(|p| p.is_pci()) {
                return Err(FieldError::new(
                    path,
                    format!("--no-pci conflicts with PCI port port[{}] ({}, {})", p.index, p.name, p.devargs),
                ));
            }
        }
        let dev = if ["--vdev", "-a", "--allow", "-w", "--pci-whitelist"].contains(&a.as_str()) {
            args.get(i + 1).map(|s| s.as_str())
        } else if let Some(v) = a
            .strip_prefix("--vdev=")
            .or_else(|| a.strip_prefix("--allow="))
            .or_else(|| a.strip_prefix("--pci-whitelist="))
        {
            Some(v)
        } else if a.starts_with("-a") && a.len() > 2 && !a.starts_with("--") {
            Some(&a[2..])
        } else {
            None
        };
        if let Some(dev) = dev {
            let name = dev.split(',').next().unwrap_or("");
            let norm = parse_bdf(name).unwrap_or_else(|| name.to_string());
            if let Some(p) = ports.iter().find(|p| p.dpdk_name() == norm) {
                return Err(FieldError::new(
                    path,
                    format!(
                        "device '{name}' is port[{}] ({}); ports are added to the EAL arguments from [[port]] automatically, remove it here",
                        p.index, p.name
                    ),
                ));
            }
        }
    }
    // Lcores enabled.
    if let Some((i, shown, set)) = eal_lcores(args) {
        let check = |lc: u32, path: String| -> FResult<()> {
            if set.contains(&lc) {
                Ok(())
            } else {
                Err(FieldError::new(path, format!("lcore {lc} is not enabled by eal.args[{i}] '{shown}'")))
            }
        };
        let p = |s: &str| {
            if lcores_written {
                s.to_string()
            } else {
                "lcores".to_string()
            }
        };
        check(lcores.control, p("lcores.control"))?;
        for (j, w) in lcores.workers.iter().enumerate() {
            check(w.lcore, p(&format!("lcores.worker[{j}].lcore")))?;
        }
    }
    for (i, a) in args.iter().enumerate() {
        let v = if a == "--main-lcore" || a == "--master-lcore" {
            args.get(i + 1).map(|s| s.as_str())
        } else {
            a.strip_prefix("--main-lcore=").or_else(|| a.strip_prefix("--master-lcore="))
        };
        if let Some(v) = v {
            if v.parse::<u32>().ok() != Some(lcores.control) {
                return Err(FieldError::new(
                    format!("eal.args[{i}]"),
                    format!(
                        "main lcore '{v}' differs from lcores.control {}; the control lcore is the main lcore (pfcswitch adds --main-lcore itself)",
                        lcores.control
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn compute_mbufs(
    switch: &mut SwitchConfig,
    raw: &RawSwitch,
    ports: &[PortConfig],
    lcores: &LcoreConfig,
    buffer: &BufferConfig,
    ctx: &mut Ctx,
) -> FResult<()> {
    let per_pkt = (buffer.cell_size as u64).max(64);
    let buffered = buffer.total_size.div_ceil(per_pkt);
    let rings: u64 =
        ports.iter().map(|p| p.rx_queues as u64 * switch.rx_ring_size as u64 + switch.tx_ring_size as u64).sum();
    let inflight = lcores.workers.len() as u64 * switch.burst_size as u64 * 2;
    let cache = (lcores.workers.len() as u64 + 1) * MBUF_CACHE_SIZE as u64 * 3 / 2;
    let floor = rings + inflight + cache;
    let needed = buffered + floor;
    match raw.mbuf_count {
        Some(n) if n > 0 => {
            let n = n as u64;
            if n < floor {
                return Err(FieldError::new(
                    "switch.mbuf_count",
                    format!(
                        "{n} mbufs cannot even fill the RX/TX rings, bursts and lcore caches (needs at least {floor})"
                    ),
                ));
            }
            if n < needed {
                ctx.warn(
                    "switch.mbuf_count",
                    format!(
                        "{n} mbufs < {needed} needed to fill the buffer with minimum-size packets plus rings: the NIC may drop at RX before the MMU pauses"
                    ),
                );
            }
            switch.mbuf_count = n as u32;
            switch.mbuf_count_computed = false;
        }
        _ => {
            if needed > u32::MAX as u64 {
                return Err(FieldError::new(
                    "switch.mbuf_count",
                    format!("computed mbuf count {needed} is too large; reduce buffer.total_size or set mbuf_count"),
                ));
            }
            switch.mbuf_count = needed as u32;
            switch.mbuf_count_computed = true;
        }
    }
    Ok(())
}
