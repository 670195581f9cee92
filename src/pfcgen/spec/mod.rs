//! What `pfcgen` runs: ports and streams, from a TOML file and/or the command line, in
//! pktgen's vocabulary (rate, size, count, src/dst MAC and IP ranges, ports, DSCP/ECN,
//! VLAN/PCP). Resolved before EAL starts; every error is one line naming the field.
//!
//! A stream given on the command line is `key=value,key=value` with the same keys as a
//! `[[stream]]` table (`--stream "port=0,rate=3Mbit/s,size=1000,dst_port=4791"`).

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use crate::config::{parse_cli_duration_ns, parse_devargs, PortDevice};
use crate::wire::MacAddr;

mod dcqcn;
use dcqcn::{resolve_cnp, resolve_dcqcn};
pub use dcqcn::{CnpSpec, DcqcnSpec};

/// Frame sizes count the 4-byte FCS, as pktgen does: `size = 64` is a 60-byte frame the
/// NIC completes with its FCS. This is the smallest.
pub const MIN_SIZE: u16 = 64;
/// The largest frame size a stream may ask for (a 9216-byte MTU jumbo, tagged, with FCS).
pub const MAX_SIZE: u16 = 9238;
/// Streams per generator (the payload's stream id is 16 bits; the receive table is
/// allocated up front).
pub const MAX_STREAMS: usize = 4096;

/// A spec error: `<origin>: <field>: <what>`, always one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}: {path}: {msg}")]
pub struct SpecError {
    /// The file, or `--stream[1]` / `--port[0]` for the command line.
    pub origin: String,
    /// `stream[2].rate`, `port[0].devargs`, …
    pub path: String,
    pub msg: String,
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn err(origin: &str, path: impl Into<String>, msg: impl Into<String>) -> SpecError {
    SpecError { origin: one_line(origin), path: one_line(&path.into()), msg: one_line(&msg.into()) }
}

/// How fast a stream sends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RateSpec {
    /// As fast as the TX ring takes frames (and PFC allows).
    Max,
    /// Frames per second.
    Pps(f64),
    /// Bits per second on the wire: (size + 20) × 8 per frame (FCS in `size`, plus
    /// preamble, SFD and inter-frame gap), as pktgen and the switch's shaper count.
    Bps(f64),
    /// Percent of the port's speed, in wire bits as [`RateSpec::Bps`].
    Percent(f64),
}

impl RateSpec {
    /// `"max"`, `"25%"`, `"1000pps"`, `"1.5Mpps"`, `"3Mbit/s"`, `"3Mbps"`, `"3M"`,
    /// `"10G"`, `"5000bps"`. A bare number is refused (pps or Mb/s would be a guess).
    pub fn parse(s: &str) -> Result<RateSpec, String> {
        let t = s.trim();
        let lower = t.to_ascii_lowercase();
        if lower == "max" || lower == "line" {
            return Ok(RateSpec::Max);
        }
        let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let n: f64 = num
            .parse()
            .map_err(|_| format!("'{s}' is not a rate (e.g. \"3Mbit/s\", \"1000pps\", \"50%\", \"max\")"))?;
        if !n.is_finite() || n <= 0.0 {
            return Err(format!("'{s}' must be greater than zero"));
        }
        let unit = unit.trim();
        let r = match unit.to_ascii_lowercase().as_str() {
            "" => return Err(format!("'{s}' has no unit (pps, kpps, Mpps, bit/s with k/M/G, or %)")),
            "%" => {
                if n > 100.0 {
                    return Err(format!("'{s}' is more than 100 % of the link"));
                }
                RateSpec::Percent(n)
            }
            "pps" => RateSpec::Pps(n),
            "kpps" => RateSpec::Pps(n * 1e3),
            "mpps" => RateSpec::Pps(n * 1e6),
            u => {
                let bits = u.trim_end_matches("bit/s").trim_end_matches("bps").trim_end_matches("b/s");
                let mult = match bits {
                    "" if u != bits => 1.0,
                    "k" => 1e3,
                    "m" => 1e6,
                    "g" => 1e9,
                    "t" => 1e12,
                    _ => {
                        return Err(format!(
                            "unknown unit '{unit}' in '{s}' (pps, kpps, Mpps, k/M/G/T[bit/s|bps], %, max)"
                        ))
                    }
                };
                RateSpec::Bps(n * mult)
            }
        };
        if let RateSpec::Pps(p) | RateSpec::Bps(p) = r {
            if !(1e-3..=1e13).contains(&p) {
                return Err(format!("'{s}' is out of range"));
            }
        }
        Ok(r)
    }
}

/// Frame sizes of a stream (FCS included, see [`MIN_SIZE`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SizeSpec {
    Fixed(u16),
    /// Uniform over `lo..=hi`, drawn from the sequence number (deterministic).
    Range(u16, u16),
    /// Sizes with weights, drawn from the sequence number; `"imix"` is the simple IMIX
    /// 64:594:1518 at 7:4:1.
    Imix(Vec<(u16, u32)>),
}

/// The simple IMIX (7 × 64, 4 × 594, 1 × 1518 bytes with FCS).
pub const SIMPLE_IMIX: [(u16, u32); 3] = [(64, 7), (594, 4), (1518, 1)];

impl SizeSpec {
    /// `1000`, `"64-1518"`, `"imix"`, `"imix:64x7/594x4/1518x1"`.
    pub fn parse(s: &str) -> Result<SizeSpec, String> {
        let t = s.trim();
        let one = |x: &str| -> Result<u16, String> {
            let v: u32 = x.trim().parse().map_err(|_| format!("'{x}' is not a frame size in bytes"))?;
            if !(u32::from(MIN_SIZE)..=u32::from(MAX_SIZE)).contains(&v) {
                return Err(format!("{v} is outside {MIN_SIZE}..={MAX_SIZE} (bytes, FCS included)"));
            }
            Ok(v as u16)
        };
        if t.eq_ignore_ascii_case("imix") {
            return Ok(SizeSpec::Imix(SIMPLE_IMIX.to_vec()));
        }
        if let Some(list) = t.strip_prefix("imix:") {
            let mut v = Vec::new();
            for part in list.split('/') {
                let (size, w) =
                    part.split_once('x').ok_or_else(|| format!("'{part}' is not SIZExWEIGHT (e.g. 64x7)"))?;
                let w: u32 = w.trim().parse().map_err(|_| format!("'{w}' is not a weight"))?;
                if w == 0 || w > 1_000_000 {
                    return Err(format!("weight {w} is outside 1..=1000000"));
                }
                v.push((one(size)?, w));
            }
            return Ok(SizeSpec::Imix(v));
        }
        if let Some((a, b)) = t.split_once('-') {
            let (lo, hi) = (one(a)?, one(b)?);
            if lo > hi {
                return Err(format!("range '{t}' is empty"));
            }
            return Ok(if lo == hi { SizeSpec::Fixed(lo) } else { SizeSpec::Range(lo, hi) });
        }
        Ok(SizeSpec::Fixed(one(t)?))
    }

    pub fn max(&self) -> u16 {
        match self {
            SizeSpec::Fixed(s) => *s,
            SizeSpec::Range(_, hi) => *hi,
            SizeSpec::Imix(v) => v.iter().map(|x| x.0).max().unwrap_or(MIN_SIZE),
        }
    }

    /// Mean size, for rates given in frames that must become bits (and back).
    pub fn mean(&self) -> f64 {
        match self {
            SizeSpec::Fixed(s) => f64::from(*s),
            SizeSpec::Range(lo, hi) => (f64::from(*lo) + f64::from(*hi)) / 2.0,
            SizeSpec::Imix(v) => {
                let w: f64 = v.iter().map(|x| f64::from(x.1)).sum();
                v.iter().map(|x| f64::from(x.0) * f64::from(x.1)).sum::<f64>() / w.max(1.0)
            }
        }
    }
}

/// A field that takes consecutive values: `start + (seq mod count)`, one step per frame,
/// each field on its own (as pktgen's range mode increments every field by its step).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub start: u64,
    pub count: u64,
}

impl Range {
    pub const fn one(v: u64) -> Range {
        Range { start: v, count: 1 }
    }
    #[inline]
    pub fn at(&self, seq: u64) -> u64 {
        if self.count <= 1 {
            self.start
        } else {
            self.start + seq % self.count
        }
    }
    fn new(lo: u64, hi: u64, what: &str) -> Result<Range, String> {
        if lo > hi {
            return Err(format!("{what} range is empty (start above end)"));
        }
        Ok(Range { start: lo, count: hi - lo + 1 })
    }
}

fn mac_range(s: &str) -> Result<Range, String> {
    let v = |x: &str| -> Result<u64, String> {
        let m: MacAddr = x.parse().map_err(|_| format!("'{x}' is not a MAC address (aa:bb:cc:dd:ee:ff)"))?;
        Ok(m.0.iter().fold(0u64, |a, &b| a << 8 | u64::from(b)))
    };
    match s.split_once('-').filter(|_| s.contains(':')) {
        Some((a, b)) => Range::new(v(a)?, v(b)?, "MAC"),
        None => Ok(Range::one(v(s)?)),
    }
}

fn ip_range(s: &str) -> Result<Range, String> {
    let v = |x: &str| -> Result<u64, String> {
        let a: Ipv4Addr = x.trim().parse().map_err(|_| format!("'{x}' is not an IPv4 address"))?;
        Ok(u64::from(u32::from(a)))
    };
    match s.split_once('-') {
        Some((a, b)) => Range::new(v(a)?, v(b)?, "IP"),
        None => Ok(Range::one(v(s)?)),
    }
}

fn port_range(s: &str) -> Result<Range, String> {
    let v = |x: &str| -> Result<u64, String> {
        x.trim().parse::<u16>().map(u64::from).map_err(|_| format!("'{x}' is not a UDP port (0..=65535)"))
    };
    match s.split_once('-') {
        Some((a, b)) => Range::new(v(a)?, v(b)?, "port"),
        None => Ok(Range::one(v(s)?)),
    }
}

/// On/off pattern: the stream sends for `on_ns`, then is silent for `off_ns`, from its
/// start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Burst {
    pub on_ns: u64,
    pub off_ns: u64,
}

/// One stream, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamSpec {
    pub name: String,
    /// Carried in every frame's payload; the receive side counts per id.
    pub id: u16,
    /// Index into [`GenSpec::ports`].
    pub port: usize,
    pub rate: RateSpec,
    pub size: SizeSpec,
    pub count: Option<u64>,
    pub duration_ns: Option<u64>,
    pub start_ns: u64,
    pub burst: Option<Burst>,
    /// None: the port's own MAC.
    pub src_mac: Option<Range>,
    pub dst_mac: Range,
    pub src_ip: Range,
    pub dst_ip: Range,
    pub src_port: Range,
    pub dst_port: Range,
    pub dscp: u8,
    pub ecn: u8,
    /// 802.1Q tag (PCP, VID) when the stream is tagged.
    pub vlan: Option<(u8, u16)>,
    /// The PFC priority whose PAUSE stops this stream.
    pub priority: u8,
    /// RoCEv2: a BTH after UDP (its QP is the flow) and an ICRC at the end.
    pub roce: bool,
    /// DCQCN: the stream's rate follows the CNPs it gets (a RoCEv2 stream only).
    pub dcqcn: bool,
}

impl StreamSpec {
    /// Bytes of the Ethernet, tag, IPv4 and UDP headers (and BTH) before the payload.
    pub fn header_len(&self) -> usize {
        14 + if self.vlan.is_some() { 4 } else { 0 } + 20 + 8 + if self.roce { super::roce::BTH_LEN } else { 0 }
    }
}

/// One port of the generator.
#[derive(Debug, Clone, PartialEq)]
pub struct GenPortSpec {
    pub name: String,
    pub devargs: String,
    pub device: PortDevice,
    /// Link speed for PFC quanta and `%` rates; None: the link's, else 10G.
    pub speed_bps: Option<u64>,
    /// Priorities whose PFC frames are obeyed (bit n = priority n). 0: PFC ignored.
    pub pfc_enable: u8,
    /// Obey 802.3x PAUSE (all priorities).
    pub pause_8023x: bool,
    pub mac: Option<MacAddr>,
}

impl GenPortSpec {
    /// The name DPDK gives the device.
    pub fn dpdk_name(&self) -> &str {
        match &self.device {
            PortDevice::Vdev { name, .. } => name,
            PortDevice::Pci { bdf } => bdf,
        }
    }
}

/// Everything `pfcgen run` needs.
#[derive(Debug, Clone, PartialEq)]
pub struct GenSpec {
    /// EAL arguments from the file (`[eal] args`), without the ports' devices.
    pub eal_args: Vec<String>,
    pub ports: Vec<GenPortSpec>,
    pub streams: Vec<StreamSpec>,
    /// Receive slots (stream ids `0..rx_streams`): at least every stream's id + 1.
    pub rx_streams: usize,
    pub dcqcn: DcqcnSpec,
    pub cnp: CnpSpec,
}

impl GenSpec {
    /// The full EAL argument list: program name, the given arguments (or defaults: no
    /// hugepages, 512 MiB, no PCI unless a port is PCI, lcore 0 on CPU 0), a unique
    /// `--file-prefix` unless given, and one `--vdev`/`-a` per port.
    pub fn eal_argv(&self, extra: &[String]) -> Vec<String> {
        let mut v = vec!["pfcgen".to_string()];
        let given: Vec<String> = self.eal_args.iter().chain(extra).cloned().collect();
        if given.is_empty() {
            v.extend(["--no-huge", "-m", "512"].map(String::from));
            if !self.ports.iter().any(|p| matches!(p.device, PortDevice::Pci { .. })) {
                v.push("--no-pci".into());
            }
            v.push("--lcores=0@0".into());
        } else {
            v.extend(given.iter().cloned());
        }
        if !given.iter().any(|a| a == "--file-prefix" || a.starts_with("--file-prefix=")) {
            v.push(format!("--file-prefix=pfcgen-{}", std::process::id()));
        }
        for p in &self.ports {
            match p.device {
                PortDevice::Vdev { .. } => v.push(format!("--vdev={}", p.devargs)),
                PortDevice::Pci { .. } => v.extend(["-a".to_string(), p.devargs.clone()]),
            }
        }
        v
    }
}

/// A key's value before resolution: what TOML gives, or a `key=value` of the command line
/// read as an integer or boolean when it is one, else as a string.
type Table = BTreeMap<String, toml::Value>;

/// `key=value,key=value` → a table (the command line's stream and port syntax).
pub fn parse_kv(s: &str) -> Result<Table, String> {
    let mut t = Table::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = part.split_once('=').ok_or_else(|| format!("'{part}' is not key=value"))?;
        let v = v.trim();
        let val = if let Ok(i) = v.parse::<i64>() {
            toml::Value::Integer(i)
        } else if v == "true" || v == "false" {
            toml::Value::Boolean(v == "true")
        } else if v.starts_with('[') && v.ends_with(']') {
            let items: Result<Vec<toml::Value>, String> = v[1..v.len() - 1]
                .split(['/', ' ', ';'])
                .filter(|x| !x.is_empty())
                .map(|x| {
                    x.parse::<i64>().map(toml::Value::Integer).map_err(|_| format!("'{x}' in {k} is not a number"))
                })
                .collect();
            toml::Value::Array(items?)
        } else {
            toml::Value::String(v.to_string())
        };
        if t.insert(k.trim().to_string(), val).is_some() {
            return Err(format!("'{k}' given twice"));
        }
    }
    Ok(t)
}

/// Reads a table's fields, remembering which were used (the rest are unknown fields).
struct Fields<'a> {
    t: &'a Table,
    origin: &'a str,
    path: String,
}

impl<'a> Fields<'a> {
    fn p(&self, k: &str) -> String {
        format!("{}.{k}", self.path)
    }
    fn e(&self, k: &str, msg: impl Into<String>) -> SpecError {
        err(self.origin, self.p(k), msg)
    }
    fn check_known(&self, known: &[&str]) -> Result<(), SpecError> {
        match self.t.keys().find(|k| !known.contains(&k.as_str())) {
            Some(k) => Err(self.e(k, format!("unknown field (expected one of: {})", known.join(", ")))),
            None => Ok(()),
        }
    }
    /// A value as text (strings as they are, integers and floats in decimal).
    fn text(&self, k: &str) -> Result<Option<String>, SpecError> {
        Ok(match self.t.get(k) {
            None => None,
            Some(toml::Value::String(s)) => Some(s.clone()),
            Some(toml::Value::Integer(i)) => Some(i.to_string()),
            Some(toml::Value::Float(f)) => Some(f.to_string()),
            Some(v) => return Err(self.e(k, format!("expected a string or a number, got {}", v.type_str()))),
        })
    }
    fn int(&self, k: &str, lo: i64, hi: i64) -> Result<Option<i64>, SpecError> {
        match self.t.get(k) {
            None => Ok(None),
            Some(toml::Value::Integer(i)) if (lo..=hi).contains(i) => Ok(Some(*i)),
            Some(toml::Value::Integer(i)) => Err(self.e(k, format!("{i} is outside {lo}..={hi}"))),
            Some(v) => Err(self.e(k, format!("expected an integer, got {}", v.type_str()))),
        }
    }
    fn boolean(&self, k: &str) -> Result<Option<bool>, SpecError> {
        match self.t.get(k) {
            None => Ok(None),
            Some(toml::Value::Boolean(b)) => Ok(Some(*b)),
            Some(v) => Err(self.e(k, format!("expected true or false, got {}", v.type_str()))),
        }
    }
    fn parsed<T>(&self, k: &str, f: impl Fn(&str) -> Result<T, String>) -> Result<Option<T>, SpecError> {
        self.text(k)?.map(|s| f(&s).map_err(|m| self.e(k, m))).transpose()
    }
    fn duration(&self, k: &str) -> Result<Option<u64>, SpecError> {
        self.parsed(k, |s| parse_cli_duration_ns(s).map_err(|e| e.to_string()))
    }
}

const PORT_KEYS: &[&str] = &["name", "devargs", "speed", "pfc_enable", "pause_8023x", "mac"];

/// One `[[port]]` table (or `--port` key=value list) → a port.
pub fn resolve_port(t: &Table, index: usize, origin: &str, path: &str) -> Result<GenPortSpec, SpecError> {
    let f = Fields { t, origin, path: path.to_string() };
    f.check_known(PORT_KEYS)?;
    let devargs = f
        .text("devargs")?
        .ok_or_else(|| f.e("devargs", "missing (e.g. \"net_memif0,role=client,socket=/tmp/a.sock\")"))?;
    let device = parse_devargs(&devargs).map_err(|m| f.e("devargs", m))?;
    let name = f.text("name")?.unwrap_or_else(|| format!("p{index}"));
    let speed_bps = f.parsed("speed", |s| crate::units::parse_speed(s).map_err(|e| e.to_string()))?;
    let pfc_enable = match t.get("pfc_enable") {
        None => 0xff,
        Some(toml::Value::Array(a)) => {
            let mut m = 0u8;
            for (i, v) in a.iter().enumerate() {
                match v.as_integer() {
                    Some(p @ 0..=7) => m |= 1 << p,
                    _ => return Err(err(origin, format!("{path}.pfc_enable[{i}]"), "expected a priority 0..=7")),
                }
            }
            m
        }
        Some(v) => return Err(f.e("pfc_enable", format!("expected a list of priorities, got {}", v.type_str()))),
    };
    let pause_8023x = f.boolean("pause_8023x")?.unwrap_or(false);
    let mac = f.parsed("mac", |s| s.parse::<MacAddr>().map_err(|e| e.to_string()))?;
    Ok(GenPortSpec { name, devargs, device, speed_bps, pfc_enable, pause_8023x, mac })
}

const STREAM_KEYS: &[&str] = &[
    "name",
    "id",
    "port",
    "rate",
    "size",
    "count",
    "duration",
    "start",
    "burst_on",
    "burst_off",
    "src_mac",
    "dst_mac",
    "src_ip",
    "dst_ip",
    "src_port",
    "dst_port",
    "dscp",
    "ecn",
    "vlan",
    "pcp",
    "priority",
    "roce",
    "dcqcn",
];

fn ecn_value(s: &str) -> Result<u8, String> {
    match s.to_ascii_lowercase().as_str() {
        "0" | "not-ect" | "not_ect" => Ok(0),
        "1" | "ect1" | "ect(1)" => Ok(1),
        "2" | "ect0" | "ect(0)" => Ok(2),
        "3" | "ce" => Ok(3),
        _ => Err(format!("'{s}' is not an ECN codepoint (0-3, not-ect, ect0, ect1, ce)")),
    }
}

/// One `[[stream]]` table (or `--stream` list) → a stream, against the ports.
pub fn resolve_stream(
    t: &Table,
    index: usize,
    ports: &[GenPortSpec],
    origin: &str,
    path: &str,
) -> Result<StreamSpec, SpecError> {
    let f = Fields { t, origin, path: path.to_string() };
    f.check_known(STREAM_KEYS)?;
    let port = match t.get("port") {
        None if ports.is_empty() => return Err(f.e("port", "no port to send on (give a [[port]] or --port)")),
        None => 0,
        Some(toml::Value::Integer(i)) => usize::try_from(*i)
            .ok()
            .filter(|&i| i < ports.len())
            .ok_or_else(|| f.e("port", format!("port {i} does not exist ({} port(s))", ports.len())))?,
        Some(toml::Value::String(s)) => ports
            .iter()
            .position(|p| &p.name == s || p.dpdk_name() == s)
            .ok_or_else(|| f.e("port", format!("no port named '{s}'")))?,
        Some(v) => return Err(f.e("port", format!("expected a port name or index, got {}", v.type_str()))),
    };
    let rate = f.parsed("rate", RateSpec::parse)?.unwrap_or(RateSpec::Max);

    let count = f.int("count", 1, i64::MAX)?.map(|c| c as u64);
    let duration_ns = f.duration("duration")?;
    let start_ns = f.duration("start")?.unwrap_or(0);
    let burst = match (f.duration("burst_on")?, f.duration("burst_off")?) {
        (None, None) => None,
        (Some(on), Some(off)) if on > 0 => Some(Burst { on_ns: on, off_ns: off }),
        (Some(_), Some(_)) => return Err(f.e("burst_on", "must be longer than 0")),
        (Some(_), None) => return Err(f.e("burst_off", "missing: burst_on and burst_off go together")),
        (None, Some(_)) => return Err(f.e("burst_on", "missing: burst_on and burst_off go together")),
    };
    let dcqcn = f.boolean("dcqcn")?.unwrap_or(false);
    let roce = f.boolean("roce")?.unwrap_or(dcqcn);
    if dcqcn && !roce {
        return Err(f.e("dcqcn", "DCQCN needs a RoCEv2 stream (roce = true)"));
    }
    // RoCEv2 by default: a 1024-byte message (the common RoCE MTU) in a 1086-byte frame.
    let size = f.parsed("size", SizeSpec::parse)?.unwrap_or(SizeSpec::Fixed(if roce { 1086 } else { MIN_SIZE }));
    let src_mac = f.parsed("src_mac", mac_range)?;
    let dst_mac = f.parsed("dst_mac", mac_range)?.unwrap_or(Range::one(0xffff_ffff_ffff));
    let src_ip = f.parsed("src_ip", ip_range)?.unwrap_or(Range::one(0xc0a8_0001)); // 192.168.0.1
    let dst_ip = f.parsed("dst_ip", ip_range)?.unwrap_or(Range::one(0xc0a8_0101)); // 192.168.1.1
    let src_port = f.parsed("src_port", port_range)?.unwrap_or(Range::one(1234));
    let dst_port = f.parsed("dst_port", port_range)?.unwrap_or(Range::one(if roce { 4791 } else { 5678 }));
    if roce && dst_port != Range::one(u64::from(super::roce::UDP_PORT)) {
        return Err(f.e("dst_port", "a RoCEv2 stream goes to UDP port 4791"));
    }
    let dscp = f.int("dscp", 0, 63)?.unwrap_or(0) as u8;
    let ecn = f.parsed("ecn", ecn_value)?.unwrap_or(0);
    let pcp = f.int("pcp", 0, 7)?.map(|p| p as u8);
    let vid = f.int("vlan", 0, 4095)?.map(|v| v as u16);
    let vlan = (pcp.is_some() || vid.is_some()).then(|| (pcp.unwrap_or(0), vid.unwrap_or(0)));
    // The priority a switch's PFC names for this traffic: the PCP when tagged, else the
    // TC SONiC's default DSCP map gives (PFC priority n = TC n with the default maps).
    let priority = f
        .int("priority", 0, 7)?
        .map(|p| p as u8)
        .unwrap_or_else(|| pcp.unwrap_or(crate::classify::SONIC_DSCP_TO_TC[usize::from(dscp)]));
    let id = match f.int("id", 0, MAX_STREAMS as i64 - 1)? {
        Some(i) => i as u16,
        None => u16::try_from(index).map_err(|_| f.e("id", "too many streams"))?,
    };
    let name = f.text("name")?.unwrap_or_else(|| format!("s{id}"));
    // RoCEv2: BTH and ICRC, and the payload rounded up to the BTH's 4-byte alignment.
    let roce_bytes = if roce { super::roce::OVERHEAD + 2 } else { 0 };
    let hdr = 14 + if vlan.is_some() { 4 } else { 0 } + 20 + 8 + super::payload::LEN + 4 + roce_bytes;
    let min = match &size {
        SizeSpec::Fixed(s) | SizeSpec::Range(s, _) => *s,
        SizeSpec::Imix(v) => v.iter().map(|x| x.0).min().unwrap_or(MIN_SIZE),
    };
    if usize::from(min) < hdr {
        return Err(f.e(
            "size",
            format!(
                "{min} is smaller than the headers and the pfcgen payload ({hdr} bytes{})",
                if roce { " with RoCEv2" } else { "" }
            ),
        ));
    }
    Ok(StreamSpec {
        name,
        id,
        port,
        rate,
        size,
        count,
        duration_ns,
        start_ns,
        burst,
        src_mac,
        dst_mac,
        src_ip,
        dst_ip,
        src_port,
        dst_port,
        dscp,
        ecn,
        vlan,
        priority,
        roce,
        dcqcn,
    })
}

/// What the command line adds to (or gives instead of) a file.
#[derive(Debug, Clone, Default)]
pub struct CliSpec {
    /// `--port DEVARGS` (the whole text is the devargs; the port is named `p<N>`), or
    /// `--port name=...,devargs=...` is not possible because devargs contain commas: use
    /// a file for per-port options.
    pub ports: Vec<String>,
    /// `--stream key=value,...`
    pub streams: Vec<String>,
    /// `--speed`: every port's speed unless the file gives one.
    pub speed: Option<String>,
    /// `--pfc-enable 3,4` (or `none`): every port's obeyed priorities unless the file
    /// gives them.
    pub pfc_enable: Option<String>,
    /// `--count N`: at most N frames per stream (caps the file's counts: keeps CI runs of a
    /// long soak short).
    pub count: Option<u64>,
    /// `--rx-streams N`: receive slots for streams this process does not send.
    pub rx_streams: Option<usize>,
    /// `--roce`: every stream is RoCEv2.
    pub roce: bool,
    /// `--dcqcn`: every stream is RoCEv2 with DCQCN.
    pub dcqcn: bool,
    /// `--cnp`: answer CE-marked RoCEv2 frames with CNPs.
    pub cnp: bool,
    /// `--dcqcn-time-scale X`: overrides `[dcqcn] time_scale`.
    pub dcqcn_time_scale: Option<f64>,
}

/// A table of the file or the command line, with its origin and path for errors.
type Origin = (Table, String, String);

/// What a file gives before its tables are resolved.
#[derive(Default)]
struct FileTables {
    eal_args: Vec<String>,
    ports: Vec<Origin>,
    streams: Vec<Origin>,
    rx_streams: Option<usize>,
    dcqcn: DcqcnSpec,
    cnp: CnpSpec,
}

/// Build the spec from an optional TOML text (its origin for errors) and the command line.
pub fn resolve(file: Option<(&str, &str)>, cli: &CliSpec) -> Result<GenSpec, SpecError> {
    let mut tables = match file {
        Some((origin, text)) => file_tables(origin, text, cli)?,
        None => FileTables::default(),
    };
    for (i, d) in cli.ports.iter().enumerate() {
        let mut t = Table::new();
        t.insert("devargs".into(), toml::Value::String(d.clone()));
        tables.ports.push((t, format!("--port[{i}]"), "port".into()));
    }
    for (i, s) in cli.streams.iter().enumerate() {
        let origin = format!("--stream[{i}]");
        let t = parse_kv(s).map_err(|m| err(&origin, "stream", m))?;
        tables.streams.push((t, origin, "stream".into()));
    }
    for (t, _, _) in &mut tables.streams {
        if cli.roce || cli.dcqcn {
            t.entry("roce".into()).or_insert(toml::Value::Boolean(true));
        }
        if cli.dcqcn {
            t.entry("dcqcn".into()).or_insert(toml::Value::Boolean(true));
        }
    }
    let whole = file.map_or("pfcgen", |f| f.0);
    let ports = resolve_ports(tables.ports, cli, whole)?;
    if tables.streams.len() > MAX_STREAMS {
        return Err(err(whole, "stream", format!("more than {MAX_STREAMS} streams")));
    }
    let mut streams: Vec<StreamSpec> = Vec::new();
    for (i, (t, origin, path)) in tables.streams.iter().enumerate() {
        let mut s = resolve_stream(t, i, &ports, origin, path)?;
        if let Some(c) = cli.count {
            s.count = Some(s.count.map_or(c, |x| x.min(c)));
        }
        if let Some(o) = streams.iter().find(|o| o.id == s.id) {
            return Err(err(origin, format!("{path}.id"), format!("id {} is also stream '{}'", s.id, o.name)));
        }
        streams.push(s);
    }
    let need = streams.iter().map(|s| usize::from(s.id) + 1).max().unwrap_or(0);
    let rx_streams = cli.rx_streams.or(tables.rx_streams).unwrap_or(0);
    let mut dcqcn = tables.dcqcn;
    if let Some(x) = cli.dcqcn_time_scale {
        if !(x.is_finite() && x > 0.0 && x <= 1e9) {
            return Err(err("--dcqcn-time-scale", "dcqcn-time-scale", format!("{x} is not in (0, 1e9]")));
        }
        dcqcn.time_scale = x;
    }
    let mut cnp = tables.cnp;
    cnp.enable |= cli.cnp;
    Ok(GenSpec { eal_args: tables.eal_args, ports, streams, rx_streams: rx_streams.max(need), dcqcn, cnp })
}

/// The file's `[eal]`, `[[port]]`, `[[stream]]` and `rx_streams`, unresolved.
fn file_tables(origin: &str, text: &str, cli: &CliSpec) -> Result<FileTables, SpecError> {
    let mut out = FileTables::default();
    let top: toml::Table = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| text[..s.start.min(text.len())].lines().count().max(1)).unwrap_or(1);
        err(origin, format!("line {line}"), e.message())
    })?;
    for (k, v) in &top {
        match (k.as_str(), v) {
            ("eal", toml::Value::Table(t)) => {
                for (ek, ev) in t {
                    match (ek.as_str(), ev) {
                        ("args", toml::Value::Array(a)) => {
                            for (i, x) in a.iter().enumerate() {
                                let s = x
                                    .as_str()
                                    .ok_or_else(|| err(origin, format!("eal.args[{i}]"), "expected a string"))?;
                                out.eal_args.push(s.to_string());
                            }
                        }
                        ("file_prefix", toml::Value::String(s)) => out.eal_args.push(format!("--file-prefix={s}")),
                        _ => {
                            return Err(err(
                                origin,
                                format!("eal.{ek}"),
                                "unknown field or wrong type (expected args = [..], file_prefix = \"..\")",
                            ))
                        }
                    }
                }
            }
            ("rx_streams", toml::Value::Integer(n)) if cli.rx_streams.is_none() => {
                out.rx_streams = Some(
                    usize::try_from(*n)
                        .ok()
                        .filter(|&n| n <= MAX_STREAMS)
                        .ok_or_else(|| err(origin, "rx_streams", format!("expected 0..={MAX_STREAMS}")))?,
                );
            }
            ("rx_streams", toml::Value::Integer(_)) => {}
            ("dcqcn", toml::Value::Table(t)) => {
                out.dcqcn = resolve_dcqcn(&t.iter().map(|(a, b)| (a.clone(), b.clone())).collect(), origin)?;
            }
            ("cnp", toml::Value::Table(t)) => {
                out.cnp = resolve_cnp(&t.iter().map(|(a, b)| (a.clone(), b.clone())).collect(), origin)?;
            }
            ("port" | "stream", toml::Value::Array(a)) => {
                for (i, x) in a.iter().enumerate() {
                    let path = format!("{k}[{i}]");
                    let t =
                        x.as_table().ok_or_else(|| err(origin, &path, "expected a table ([[port]] / [[stream]])"))?;
                    let t: Table = t.iter().map(|(a, b)| (a.clone(), b.clone())).collect();
                    if k == "port" { &mut out.ports } else { &mut out.streams }.push((t, origin.to_string(), path));
                }
            }
            _ => {
                return Err(err(
                    origin,
                    k,
                    "unknown field or wrong type (expected [eal], [[port]], [[stream]], [dcqcn], [cnp], rx_streams)",
                ))
            }
        }
    }
    Ok(out)
}

/// The ports, with the command line's `--speed` and `--pfc-enable` where a port gives none.
fn resolve_ports(tables: Vec<Origin>, cli: &CliSpec, whole: &str) -> Result<Vec<GenPortSpec>, SpecError> {
    let mut ports = Vec::new();
    for (i, (mut t, origin, path)) in tables.into_iter().enumerate() {
        if let Some(s) = &cli.speed {
            t.entry("speed".into()).or_insert_with(|| toml::Value::String(s.clone()));
        }
        if let Some(p) = &cli.pfc_enable {
            let list: Result<Vec<toml::Value>, _> = if p == "none" {
                Ok(Vec::new())
            } else {
                p.split(',').map(|x| x.trim().parse::<i64>().map(toml::Value::Integer)).collect()
            };
            let list = list.map_err(|_| {
                err("--pfc-enable", "pfc-enable", format!("'{p}' is not a list of priorities or 'none'"))
            })?;
            t.entry("pfc_enable".into()).or_insert(toml::Value::Array(list));
        }
        let p = resolve_port(&t, i, &origin, &path)?;
        if let Some(o) = ports.iter().find(|q: &&GenPortSpec| q.name == p.name || q.dpdk_name() == p.dpdk_name()) {
            return Err(err(
                &origin,
                format!("{path}.name"),
                format!("port '{}' ({}) given twice", o.name, o.dpdk_name()),
            ));
        }
        ports.push(p);
    }
    if ports.is_empty() {
        return Err(err(whole, "port", "no port (give [[port]] in the file or --port DEVARGS)"));
    }
    Ok(ports)
}

#[cfg(test)]
mod tests;
