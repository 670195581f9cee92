//! `[[port]]`: names, devices (vdev or PCI), speed, cable, MTU, trust, PFC priorities.

use super::*;

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

pub(super) fn resolve_ports(v: Option<&Value>, ctx: &mut Ctx) -> FResult<Vec<PortConfig>> {
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
    check_inflight_limits(&ports)?;
    Ok(ports)
}

/// A `tx_inflight_limit` must hold the largest frame that can reach the port on the line
/// (any port's MTU + 42: Ethernet, 802.1Q, FCS, preamble and gap): a jumbo from a 9100-MTU
/// ingress may be switched to a 1500-MTU egress.
fn check_inflight_limits(ports: &[PortConfig]) -> FResult<()> {
    let Some(big) = ports.iter().max_by_key(|p| p.mtu) else { return Ok(()) };
    let wire = u64::from(crate::wire::max_wire_len(u32::from(big.mtu)));
    for p in ports {
        if let TxInflight::Bytes(b) = p.tx_inflight {
            if b < wire {
                let from = if big.index == p.index { "this port".to_string() } else { format!("port {}", big.name) };
                return Err(FieldError::new(
                    format!("port[{}].tx_inflight_limit", p.index),
                    format!(
                        "{b} B is less than the largest frame that can reach this port ({wire} B on the wire, MTU {} of {from}): give at least that, \"auto\" or \"off\"",
                        big.mtu
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// One `[[port]]` (`path` = `port[i]`), on its own: what needs every port (duplicate
/// names, devices and MACs, the largest frame) is [`resolve_ports`]'s.
pub(super) fn resolve_port(i: usize, raw: &RawPort, path: &str, ctx: &mut Ctx) -> FResult<PortConfig> {
    let f = |k: &str| join(path, k);
    let name = raw.name.clone();
    if name.is_empty() {
        return Err(FieldError::new(f("name"), "must not be empty"));
    }
    if name.chars().any(|c| c.is_whitespace() || c == ':' || c == '|') {
        return Err(FieldError::new(f("name"), format!("'{name}' must not contain whitespace, ':' or '|'")));
    }
    let device = parse_devargs(&raw.devargs).map_err(|m| FieldError::new(f("devargs"), m))?;
    // "auto": sized for the largest common speed until the link reports its own at start.
    let speed_auto = raw.speed.text() == "auto";
    let speed_bps = if speed_auto { defaults::AUTO_SPEED_BPS } else { speed(&raw.speed, &f("speed"))? };
    let speed_mismatch_warn = match raw.speed_mismatch.as_deref() {
        None | Some("refuse") => false,
        Some("warn") => true,
        Some(other) => {
            return Err(FieldError::new(f("speed_mismatch"), format!("'{other}' is not one of \"refuse\", \"warn\"")))
        }
    };
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
    let (pfc_mask, pfc_enable) = pfc_priorities(raw, path)?;
    let shaper_bps = shaper(raw, path, speed_bps, &device)?;
    let (tx_inflight, control_tx_queue) = tx_ring(raw, path)?;
    let mac = raw.mac.as_deref().map(|m| unicast_mac(m, &f("mac"))).transpose()?;
    // 802.1Qbb: link-level PAUSE and PFC are exclusive on a link; a port with PFC ignores
    // 802.3x PAUSE unless told otherwise.
    let obey_8023x = match raw.pause_8023x.as_deref() {
        None => pfc_mask == 0,
        Some("obey") => true,
        Some("ignore") => false,
        Some(other) => {
            return Err(FieldError::new(f("pause_8023x"), format!("'{other}' is not one of \"obey\", \"ignore\"")))
        }
    };
    let tx_enable = raw.tx_enable.unwrap_or(true);
    if !tx_enable {
        ctx.warn(&f("tx_enable"), "false: this port transmits nothing (test knob)");
    }
    let port = PortConfig {
        index: i,
        name,
        devargs: raw.devargs.clone(),
        device,
        speed_bps,
        speed_auto,
        speed_mismatch_warn,
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
        obey_8023x,
        shaper_bps,
        mac,
        rx_queues: 0,
        tx_lcore: u32::MAX,
        tx_inflight,
        control_tx_queue,
        representor_of: None,
        vlan_interface_of: None,
    };
    if speed_auto && !port.has_real_link() {
        return Err(FieldError::new(
            f("speed"),
            format!(
                "\"auto\" needs a port with a real link (PCI, net_af_packet, net_af_xdp); {} reports a nominal speed: give it one",
                port.dpdk_name()
            ),
        ));
    }
    Ok(port)
}

/// `pfc_enable` (default [3, 4]): the mask and the sorted list, each priority once.
fn pfc_priorities(raw: &RawPort, path: &str) -> FResult<(u8, Vec<u8>)> {
    let f = |k: &str| join(path, k);
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
    Ok((pfc_mask, pfc_enable))
}

/// `shaper_rate`, at most the port's speed; by default a nominal vdev is shaped at its
/// speed.
fn shaper(raw: &RawPort, path: &str, speed_bps: u64, device: &PortDevice) -> FResult<Option<u64>> {
    let f = |k: &str| join(path, k);
    Ok(match &raw.shaper_rate {
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
        // A nominal vdev has no wire: its shaper at `speed` stands for the line. A real
        // link paces itself; `tx_inflight_limit` bounds what waits in its TX ring.
        None => match device {
            PortDevice::Vdev { driver, .. } if !is_kernel_link(driver) => Some(speed_bps),
            _ => None,
        },
    })
}

/// `tx_inflight_limit` and `control_tx_queue`: what may wait in the TX ring ahead of a
/// PFC frame.
fn tx_ring(raw: &RawPort, path: &str) -> FResult<(TxInflight, ControlTxQueue)> {
    let f = |k: &str| join(path, k);
    let tx_inflight = match &raw.tx_inflight_limit {
        None => TxInflight::Auto,
        Some(Human::Str(s)) if s == "auto" => TxInflight::Auto,
        Some(Human::Str(s)) if s == "off" => TxInflight::Off,
        Some(Human::Int(0)) => TxInflight::Off,
        Some(h) => {
            // Checked against the largest frame of every port once all are known.
            TxInflight::Bytes(bytes(h, &f("tx_inflight_limit"))?)
        }
    };
    let control_tx_queue = match &raw.control_tx_queue {
        None => ControlTxQueue::Auto,
        Some(toml::Value::Boolean(true)) => ControlTxQueue::On,
        Some(toml::Value::Boolean(false)) => ControlTxQueue::Off,
        Some(toml::Value::String(s)) if s == "auto" => ControlTxQueue::Auto,
        Some(other) => {
            return Err(FieldError::new(f("control_tx_queue"), format!("{other} is not one of true, false, \"auto\"")))
        }
    };
    Ok((tx_inflight, control_tx_queue))
}

/// `mac`: a unicast, non-zero address.
fn unicast_mac(s: &str, path: &str) -> FResult<[u8; 6]> {
    let m = s
        .parse::<crate::wire::MacAddr>()
        .map(|m| m.0)
        .map_err(|_| FieldError::new(path, format!("'{s}' is not a MAC address (aa:bb:cc:dd:ee:ff)")))?;
    if m[0] & 1 != 0 {
        return Err(FieldError::new(path, format!("'{s}' is a group (multicast) address")));
    }
    if m == [0; 6] {
        return Err(FieldError::new(path, "the all-zero MAC is not valid"));
    }
    Ok(m)
}

pub(super) fn port_by_name(ports: &[PortConfig], name: &str, path: &str) -> FResult<usize> {
    ports.iter().position(|p| p.name == name).ok_or_else(|| {
        let names: Vec<&str> = ports.iter().map(|p| p.name.as_str()).collect();
        FieldError::new(path, format!("unknown port '{name}' (ports: {})", names.join(", ")))
    })
}
