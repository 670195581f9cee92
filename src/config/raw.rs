//! The file as written: serde structs (`deny_unknown_fields`) and a path-aware
//! deserializer that turns serde's messages into `<field path>: <message>`.
//!
//! Nested tables whose keys are user-chosen names (`[buffer.pool.<name>]`,
//! `[buffer.pg]`, `[qos.dscp_to_tc]`, `[[lcores.worker]]`, `[[port]]`) are kept as
//! `toml::Value`/`toml::Table` here and deserialized one entry at a time by the resolver,
//! so that every error names its full path.

use super::error::{join, FResult, FieldError};
use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde::Deserialize;
use std::fmt;
use toml::{Table, Value};

/// A value written either as a number or as a string with a unit ("100G", 100000, "5m",
/// 40, "12MiB", 4096).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Human {
    Str(String),
    Int(i64),
    Float(f64),
}

impl Human {
    /// The text handed to the unit parsers.
    pub fn text(&self) -> String {
        match self {
            Human::Str(s) => s.clone(),
            Human::Int(i) => i.to_string(),
            Human::Float(f) => f.to_string(),
        }
    }
}

impl<'de> Deserialize<'de> for Human {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Human, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Human;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number or a string with a unit")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Human, E> {
                Ok(Human::Str(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Human, E> {
                Ok(Human::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Human, E> {
                i64::try_from(v).map(Human::Int).map_err(|_| E::custom(format!("{v} is too large")))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Human, E> {
                Ok(Human::Float(v))
            }
        }
        d.deserialize_any(V)
    }
}

/// An integer written as a TOML integer or as a string of digits (SONiC's CONFIG_DB keeps
/// everything as strings: `"46" = "5"` is accepted like `"46" = 5`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct IntLike(pub i64);

impl<'de> Deserialize<'de> for IntLike {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<IntLike, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = IntLike;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an integer")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<IntLike, E> {
                v.trim().parse().map(IntLike).map_err(|_| E::custom(format!("'{v}' is not an integer")))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<IntLike, E> {
                Ok(IntLike(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<IntLike, E> {
                i64::try_from(v).map(IntLike).map_err(|_| E::custom(format!("{v} is too large")))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEal {
    #[serde(default)]
    pub args: Vec<String>,
    pub file_prefix: Option<String>,
    pub allow_eal_plugins: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSwitch {
    pub fdb_aging_time: Option<i64>,
    pub fdb_size: Option<i64>,
    pub fdb_move_limit: Option<i64>,
    pub fdb_move_window: Option<i64>,
    pub fdb_move_hold: Option<i64>,
    pub burst_size: Option<i64>,
    pub rx_ring_size: Option<i64>,
    pub tx_ring_size: Option<i64>,
    pub mbuf_count: Option<i64>,
    pub sw_response: Option<Human>,
    pub flood_lossless: Option<bool>,
    pub ecmp_seed: Option<IntLike>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum RawAdmin {
    Up,
    Down,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum RawTrust {
    Dscp,
    #[serde(alias = "dot1p")]
    Pcp,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPort {
    pub name: String,
    pub devargs: String,
    pub speed: Human,
    pub cable_length: Option<Human>,
    pub mtu: Option<i64>,
    pub admin_status: Option<RawAdmin>,
    pub trust: Option<RawTrust>,
    pub default_tc: Option<i64>,
    pub pfc_enable: Option<Vec<i64>>,
    pub tx_enable: Option<bool>,
    pub shaper_rate: Option<Human>,
    pub mac: Option<String>,
    pub pause_8023x: Option<String>,
    pub speed_mismatch: Option<String>,
    pub tx_inflight_limit: Option<Human>,
    pub control_tx_queue: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLcores {
    pub control: Option<i64>,
    pub control_idle: Option<String>,
    pub control_nap: Option<Human>,
    pub worker_idle: Option<String>,
    /// `[[lcores.worker]]`, deserialized one by one as [`RawWorker`].
    pub worker: Option<Vec<Value>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWorker {
    pub lcore: i64,
    #[serde(default)]
    pub rx: Vec<String>,
    #[serde(default)]
    pub tx: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum RawHeadroomPolicy {
    Static,
    #[serde(rename = "shared_pool")]
    SharedPool,
    Dsh,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawBuffer {
    pub total_size: Option<Human>,
    pub cell_size: Option<i64>,
    pub headroom_policy: Option<RawHeadroomPolicy>,
    pub over_subscribe_ratio: Option<i64>,
    pub pool: Option<Table>,
    pub profile: Option<Table>,
    pub pg: Option<Table>,
    pub queue: Option<Table>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum RawPoolType {
    Ingress,
    Egress,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum RawPoolMode {
    Dynamic,
    Static,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPool {
    pub size: Human,
    #[serde(rename = "type")]
    pub kind: RawPoolType,
    pub mode: Option<RawPoolMode>,
    pub xoff: Option<Human>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawProfile {
    pub pool: String,
    pub size: Option<Human>,
    pub xon: Option<Human>,
    pub xoff: Option<Human>,
    pub xon_offset: Option<Human>,
    pub dynamic_th: Option<IntLike>,
    pub static_th: Option<Human>,
}

/// `[pfcwd]`: SONiC `PFC_WD` (times in milliseconds).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPfcwd {
    pub action: Option<String>,
    pub detection_time: Option<i64>,
    pub restoration_time: Option<i64>,
    pub poll_interval: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawQos {
    pub dscp_to_tc: Option<Table>,
    pub dot1p_to_tc: Option<Table>,
    pub tc_to_pg: Option<Table>,
    pub tc_to_queue: Option<Table>,
    pub tc_to_dot1p: Option<Table>,
    pub scheduler: Option<Table>,
    /// Accepted here (`deny_unknown_fields`), resolved from the table by `config::resolve::wred`
    /// (the bindings need the ports).
    #[allow(dead_code)]
    pub wred_profile: Option<Table>,
    #[allow(dead_code)]
    pub queue: Option<Table>,
    pub wred_seed: Option<IntLike>,
}

/// `[qos.wred_profile.<NAME>]` as written (SONiC `WRED_PROFILE`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWredProfile {
    pub green_min_threshold: Option<Human>,
    pub green_max_threshold: Option<Human>,
    pub green_drop_probability: Option<IntLike>,
    pub wred_green_enable: Option<bool>,
    pub yellow_min_threshold: Option<Human>,
    pub yellow_max_threshold: Option<Human>,
    pub yellow_drop_probability: Option<IntLike>,
    pub wred_yellow_enable: Option<bool>,
    pub red_min_threshold: Option<Human>,
    pub red_max_threshold: Option<Human>,
    pub red_drop_probability: Option<IntLike>,
    pub wred_red_enable: Option<bool>,
    pub ecn: Option<String>,
}

/// `[qos.queue] "<port>|<q>"` as written (SONiC `QUEUE|<port>|<q>`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawQueueBinding {
    pub wred_profile: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawScheduler {
    #[serde(rename = "type")]
    pub kind: String,
    pub weight: Option<IntLike>,
}

/// `[lldp]`: SONiC `LLDP|GLOBAL` (`enabled`, `hello_time`, `multiplier`, `system_name`),
/// and the DCBX Application TLV's RoCE entry.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLldp {
    pub enabled: Option<bool>,
    pub hello_time: Option<i64>,
    pub multiplier: Option<i64>,
    pub system_name: Option<String>,
    pub roce_priority: Option<i64>,
}

/// Names of the top-level sections, for "unknown section" errors.
pub(crate) const SECTIONS: &[&str] = &[
    "eal",
    "switch",
    "port",
    "lcores",
    "buffer",
    "qos",
    "pfcwd",
    "lldp",
    "control_plane",
    "interface",
    "vlan",
    "vlan_member",
    "vlan_interface",
];

/// `[vlan.<name>]` as written (SONiC `VLAN|Vlan1000`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawVlan {
    pub vlanid: Option<IntLike>,
}

/// `[vlan_member] "<vlan>|<port>"` as written (SONiC `VLAN_MEMBER|Vlan1000|Ethernet0`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawVlanMember {
    pub tagging_mode: RawTaggingMode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum RawTaggingMode {
    Tagged,
    Untagged,
}

/// `[control_plane]`: where the kernel side of the router lives.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawControlPlane {
    pub netns: Option<String>,
    /// Route without `netns`, in the namespace the switch starts in (warned about).
    pub allow_root_namespace: Option<bool>,
    /// Router interfaces that route IPv4 martian sources (RFC 1812 5.3.7 relaxed).
    pub accept_martian_sources: Option<Vec<String>>,
    /// Deserialized on its own, so its errors name `control_plane.copp.<key>`.
    pub copp: Option<Value>,
    /// Neighbours mirrored into the FIB, all interfaces / one interface.
    pub max_neighbours: Option<IntLike>,
    pub max_neighbours_per_interface: Option<IntLike>,
    /// IPv4 prefixes the FIB holds (its size, fixed at start).
    pub max_ipv4_routes: Option<IntLike>,
    /// IPv6 prefixes the FIB holds (its size and tbl8 pool, fixed at start).
    pub max_ipv6_routes: Option<IntLike>,
}

/// `[control_plane.copp]`: punt rate limits per trap group and port, packets per second.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCopp {
    pub arp_nd: Option<IntLike>,
    pub bgp_bfd: Option<IntLike>,
    pub ip2me: Option<IntLike>,
    pub ttl_error: Option<IntLike>,
    pub neigh_miss: Option<IntLike>,
    pub mtu: Option<IntLike>,
    pub default: Option<IntLike>,
}

fn field_between<'a>(msg: &'a str, prefix: &str) -> Option<(&'a str, &'a str)> {
    let rest = msg.strip_prefix(prefix)?;
    let end = rest.find('`')?;
    Some((&rest[..end], &rest[end + 1..]))
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a datetime",
        Value::Array(_) => "an array",
        Value::Table(_) => "a table",
    }
}

/// The table at `path`, or an error saying what was found instead.
pub(crate) fn expect_table<'a>(v: &'a Value, path: &str) -> FResult<&'a Table> {
    match v {
        Value::Table(t) => Ok(t),
        other => Err(FieldError::new(path, format!("expected a table, found {}", type_name(other)))),
    }
}

/// Deserialize `v` (found at `path`) as `T`, turning serde's message into a field error
/// naming the exact field:
///
/// * `unknown field `x`, …` → `path.x: unknown field, expected one of …`;
/// * `missing field `x`` → `path.x: missing field`;
/// * any other error (wrong type or value) in a struct: the offending field is found by
///   deserializing growing prefixes of the table (fields are visited in order, missing
///   fields are only reported at the end, so the first prefix that fails with something
///   else than a missing field ends with the culprit).
pub(crate) fn de<T: DeserializeOwned>(v: &Value, path: &str) -> FResult<T> {
    let err = match v.clone().try_into::<T>() {
        Ok(t) => return Ok(t),
        Err(e) => e.message().to_string(),
    };
    if let Some((field, rest)) = field_between(&err, "unknown field `") {
        return Err(FieldError::new(join(path, field), format!("unknown field{rest}")));
    }
    if let Some((field, _)) = field_between(&err, "missing field `") {
        return Err(FieldError::new(join(path, field), "missing field"));
    }
    if let Value::Table(t) = v {
        let mut prefix = Table::new();
        for (k, val) in t {
            prefix.insert(k.clone(), val.clone());
            if let Err(e) = Value::Table(prefix.clone()).try_into::<T>() {
                let m = e.message();
                if !m.starts_with("missing field `") {
                    return Err(FieldError::new(join(path, k), m));
                }
            }
        }
    }
    Err(FieldError::new(path, err))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(s: &str) -> Value {
        Value::Table(toml::from_str::<Table>(s).unwrap())
    }

    #[test]
    fn paths_of_serde_errors() {
        let e = de::<RawPort>(&value("name='a'\ndevargs='x'\nspeed='1G'\nspede=1"), "port[0]").unwrap_err();
        assert_eq!(e.path, "port[0].spede");
        assert!(e.msg.starts_with("unknown field, expected one of"), "{}", e.msg);

        let e = de::<RawPort>(&value("name='a'\nspeed='1G'"), "port[2]").unwrap_err();
        assert_eq!(e, FieldError::new("port[2].devargs", "missing field"));

        let e = de::<RawPort>(&value("name='a'\nspeed='1G'\nmtu='big'\ndevargs='x'"), "port[0]").unwrap_err();
        assert_eq!(e.path, "port[0].mtu");

        let e = de::<RawPort>(&value("name='a'\nspeed='1G'\ntrust='dsc'"), "port[0]").unwrap_err();
        assert_eq!(e.path, "port[0].trust");
        assert!(e.msg.contains("unknown variant"), "{}", e.msg);

        let e = de::<RawPort>(&value("name='a'\nspeed=true\ndevargs='x'"), "port[0]").unwrap_err();
        assert_eq!(e.path, "port[0].speed");
        assert!(e.msg.contains("a number or a string with a unit"), "{}", e.msg);
    }

    #[test]
    fn join_quotes_non_bare_keys() {
        assert_eq!(join("buffer.pg", "Ethernet0|3-4"), "buffer.pg.\"Ethernet0|3-4\"");
        assert_eq!(join("", "eal"), "eal");
        assert_eq!(join("qos.dscp_to_tc", "46"), "qos.dscp_to_tc.46");
    }
}
