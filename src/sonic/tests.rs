//! The import on a small CONFIG_DB and on broken variants of it: each refused with one
//! line naming `TABLE|key|field` (and the file). The real files: tests/sonic_import.rs.

use super::*;
use serde_json::{json, Value};

/// A small, valid CONFIG_DB using every table the import reads.
fn base() -> Value {
    json!({
        "DEVICE_METADATA": {"localhost": {"hostname": "tor1", "mac": "00:11:22:33:44:55", "bgp_asn": "65100",
                                          "type": "ToRRouter", "buffer_model": "traditional", "hwsku": "x"}},
        "PORT": {
            "Ethernet0": {"speed": "100000", "mtu": "9100", "admin_status": "up", "alias": "etp1", "lanes": "0,1,2,3"},
            "Ethernet4": {"speed": "100000", "mtu": "9100", "admin_status": "up"},
            "Ethernet8": {"speed": "25000", "mtu": "9100", "admin_status": "up"}
        },
        "CABLE_LENGTH": {"AZURE": {"Ethernet0": "5m", "Ethernet4": "40m", "Ethernet8": "5m"}},
        "BUFFER_POOL": {
            "ingress_lossless_pool": {"size": "8388608", "type": "ingress", "mode": "dynamic"},
            "egress_lossy_pool": {"size": "4194304", "type": "egress", "mode": "dynamic"}
        },
        "BUFFER_PROFILE": {
            "pg_lossless_100000_5m_profile": {"pool": "[BUFFER_POOL|ingress_lossless_pool]", "size": "1248",
                                              "xon": "2288", "xoff": "96000", "dynamic_th": "-3"},
            "ingress_lossy_profile": {"pool": "ingress_lossless_pool", "size": "0", "dynamic_th": "3"},
            "egress_lossy_profile": {"pool": "egress_lossy_pool", "size": "1518", "dynamic_th": "3"}
        },
        "BUFFER_PG": {
            "Ethernet0|3-4": {"profile": "[BUFFER_PROFILE|pg_lossless_100000_5m_profile]"},
            "Ethernet0|0": {"profile": "ingress_lossy_profile"},
            "Ethernet4|0": {"profile": "ingress_lossy_profile"}
        },
        "BUFFER_QUEUE": {"Ethernet0|0-2": {"profile": "egress_lossy_profile"}},
        "BUFFER_PORT_INGRESS_PROFILE_LIST": {"Ethernet0": {"profile_list": "ingress_lossy_profile"}},
        "DSCP_TO_TC_MAP": {"AZURE": {"3": "3", "4": "4", "46": "5", "0": "1"}},
        "TC_TO_PRIORITY_GROUP_MAP": {"AZURE": {"0": "0", "3": "3", "4": "4"}},
        "TC_TO_QUEUE_MAP": {"AZURE": {"0": "0", "1": "1", "3": "3", "4": "4", "5": "5"}},
        "MAP_PFC_PRIORITY_TO_QUEUE": {"AZURE": {"3": "3", "4": "4"}},
        "PORT_QOS_MAP": {
            "Ethernet0": {"pfc_enable": "3,4", "pfcwd_sw_enable": "3,4", "dscp_to_tc_map": "[DSCP_TO_TC_MAP|AZURE]",
                          "tc_to_pg_map": "AZURE", "tc_to_queue_map": "AZURE", "pfc_to_queue_map": "AZURE"},
            "Ethernet4": {"pfc_enable": "3,4", "dscp_to_tc_map": "AZURE", "tc_to_pg_map": "AZURE", "tc_to_queue_map": "AZURE"}
        },
        "SCHEDULER": {"scheduler.0": {"type": "DWRR", "weight": "14"}, "scheduler.1": {"type": "DWRR", "weight": "15"}},
        "WRED_PROFILE": {"AZURE_LOSSLESS": {"ecn": "ecn_all", "wred_green_enable": "true", "green_min_threshold": "1048576",
                                            "green_max_threshold": "2097152", "green_drop_probability": "5"}},
        "QUEUE": {
            "Ethernet0|0": {"scheduler": "scheduler.0"},
            "Ethernet0|3": {"scheduler": "[SCHEDULER|scheduler.1]", "wred_profile": "[WRED_PROFILE|AZURE_LOSSLESS]"},
            "Ethernet4|3": {"scheduler": "scheduler.1", "wred_profile": "AZURE_LOSSLESS"}
        },
        "PFC_WD": {"Ethernet0": {"action": "drop", "detection_time": "200", "restoration_time": "200"},
                   "GLOBAL": {"POLL_INTERVAL": "200"}},
        "VLAN": {"Vlan1000": {"vlanid": "1000"}},
        "VLAN_MEMBER": {"Vlan1000|Ethernet8": {"tagging_mode": "untagged"}},
        "VLAN_INTERFACE": {"Vlan1000": {}, "Vlan1000|192.168.0.1/21": {}},
        "INTERFACE": {"Ethernet0": {}, "Ethernet0|10.0.0.0/31": {}, "Ethernet4|10.0.0.2/31": {}},
        "LOOPBACK_INTERFACE": {"Loopback0": {}, "Loopback0|10.1.0.1/32": {}},
        "BGP_NEIGHBOR": {"10.0.0.1": {"asn": "65200", "name": "T1-1", "local_addr": "10.0.0.0"}},
        "ACL_TABLE": {"DATAACL": {"type": "L3"}}
    })
}

fn run(files: &[Value]) -> Result<Import, SonicError> {
    let texts: Vec<(String, String)> =
        files.iter().enumerate().map(|(i, v)| (format!("db{i}.json"), v.to_string())).collect();
    let db = Db::from_texts(&texts)?;
    import(&db, None, "db.json")
}

#[test]
fn base_imports_every_table() {
    let imp = run(&[base()]).unwrap_or_else(|e| panic!("{e}"));
    let c = &imp.config;
    let names: Vec<&str> = c.ports[..3].iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["Ethernet0", "Ethernet4", "Ethernet8"]);
    assert_eq!(c.ports[0].speed_bps, 100_000_000_000);
    assert_eq!(c.ports[0].pfc_enable, vec![3, 4]);
    assert!(c.ports[2].pfc_enable.is_empty(), "no PORT_QOS_MAP: PFC off, as in SONiC");
    assert_eq!(c.qos.dscp_to_tc[46], 5);
    assert_eq!(c.qos.dscp_to_tc[8], 0, "unlisted DSCP: TC 0 (SAI), not pfcswitch's default");
    let b = &c.buffer;
    let lossless = b.profiles.iter().find(|p| p.name == "pg_lossless_100000_5m_profile").unwrap();
    assert_eq!((lossless.size, lossless.xoff, lossless.xon), (1248, Some(96000), Some(2288)));
    assert_eq!(lossless.threshold, crate::config::Threshold::Dynamic(-3));
    // Ethernet4's lossless PGs are not in BUFFER_PG: a generated profile, like buffermgrd's.
    let e4 = b.pg_profile[1][3].expect("Ethernet4 PG 3 bound");
    assert_eq!(b.profiles[e4].name, "pg_lossless_100000_40m_profile");
    assert_eq!(b.profiles[e4].xoff, None, "headroom computed");
    assert_eq!(c.qos.wred_profiles.len(), 1);
    assert_eq!(c.qos.queue_wred[0][3], Some(0));
    assert_eq!(c.pfcwd.as_ref().map(|w| w.poll_interval_ms), Some(200));
    assert_eq!(c.vlans.vlans.len(), 1);
    assert_eq!(c.lldp.system_name.as_deref(), Some("tor1"));
    let lines: Vec<String> = imp.notes.iter().map(|n| n.to_string()).collect();
    for want in [
        "unsupported: ACL_TABLE: table not supported, ignored (1 key)",
        "approximated: BUFFER_PROFILE|pg_lossless_100000_40m_profile: not in CONFIG_DB",
        "approximated: BGP_NEIGHBOR: 1 neighbour(s) for FRR",
        "approximated: BUFFER_PORT_INGRESS_PROFILE_LIST: checked, not applied",
    ] {
        assert!(lines.iter().any(|l| l.starts_with(want)), "missing '{want}' in {lines:#?}");
    }
    assert!(!lines.iter().any(|l| l.contains("alias") || l.contains("lanes") || l.contains("hwsku")), "{lines:#?}");
    // The text is what `import -o` writes: it validates on its own.
    crate::config::from_str(&imp.text, "out.toml").unwrap();
}

#[test]
fn later_files_override_and_flat_form_merges() {
    let patch = json!({"PORT|Ethernet8": {"speed": "10000"}, "PORT_QOS_MAP|Ethernet8": {"pfc_enable": "3"}});
    let imp = run(&[base(), patch]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(imp.config.ports[2].speed_bps, 10_000_000_000);
    assert_eq!(imp.config.ports[2].pfc_enable, vec![3]);
}

/// Sets (`Some`) or removes (`None`) `TABLE.key.field` of `v` (`key`/`field` may be absent).
fn set(v: &mut Value, path: &[&str], value: Option<Value>) {
    let (last, parents) = path.split_last().unwrap();
    let mut cur = v;
    for p in parents {
        cur = cur.as_object_mut().unwrap().entry(p.to_string()).or_insert(json!({}));
    }
    let o = cur.as_object_mut().unwrap();
    match value {
        Some(x) => {
            o.insert(last.to_string(), x);
        }
        None => {
            o.remove(*last);
        }
    }
}

#[test]
fn broken_variants_name_table_key_field() {
    type Case = (&'static [&'static str], Option<Value>, &'static str);
    let cases: Vec<Case> = vec![
        (&["PORT", "Ethernet0", "speed"], None, "PORT|Ethernet0|speed: missing field"),
        (&["PORT", "Ethernet0", "speed"], Some(json!("100G")), "PORT|Ethernet0|speed: '100G' is not"),
        (&["PORT", "Ethernet0", "mtu"], Some(json!("jumbo")), "PORT|Ethernet0|mtu:"),
        (&["PORT", "Ethernet0", "mtu"], Some(json!("20000")), "PORT|Ethernet0|mtu:"),
        (&["PORT", "Ethernet0", "admin_status"], Some(json!("enabled")), "PORT|Ethernet0|admin_status:"),
        (&["PORT"], Some(json!({})), "PORT: no ports"),
        (&["CABLE_LENGTH", "AZURE", "Ethernet0"], Some(json!("5 parsecs")), "CABLE_LENGTH|AZURE|Ethernet0:"),
        (&["CABLE_LENGTH", "AZURE", "Ethernet99"], Some(json!("5m")), "CABLE_LENGTH|AZURE|Ethernet99: port"),
        (&["BUFFER_POOL", "ingress_lossless_pool", "size"], None, "BUFFER_POOL|ingress_lossless_pool|size: missing"),
        (
            &["BUFFER_POOL", "ingress_lossless_pool", "type"],
            Some(json!("both")),
            "BUFFER_POOL|ingress_lossless_pool|type:",
        ),
        (&["BUFFER_POOL", "egress_lossy_pool", "xoff"], Some(json!("1000")), "BUFFER_POOL|egress_lossy_pool|xoff:"),
        (
            &["BUFFER_PROFILE", "pg_lossless_100000_5m_profile", "pool"],
            Some(json!("[BUFFER_POOL|nope]")),
            "BUFFER_PROFILE|pg_lossless_100000_5m_profile|pool: unknown pool 'nope'",
        ),
        (
            &["BUFFER_PROFILE", "pg_lossless_100000_5m_profile", "pool"],
            Some(json!("[BUFFER_PROFILE|x]")),
            "BUFFER_PROFILE|pg_lossless_100000_5m_profile|pool: '[BUFFER_PROFILE|x]' is not a reference",
        ),
        (
            &["BUFFER_PROFILE", "pg_lossless_100000_5m_profile", "dynamic_th"],
            Some(json!("9")),
            "BUFFER_PROFILE|pg_lossless_100000_5m_profile|dynamic_th:",
        ),
        (
            &["BUFFER_PROFILE", "pg_lossless_100000_5m_profile", "xoff"],
            Some(json!("lots")),
            "BUFFER_PROFILE|pg_lossless_100000_5m_profile|xoff:",
        ),
        (
            &["BUFFER_PROFILE", "egress_lossy_profile", "xoff"],
            Some(json!("1000")),
            "BUFFER_PROFILE|egress_lossy_profile|xoff:",
        ),
        (
            &["BUFFER_PROFILE", "ingress_lossy_profile", "dynamic_th"],
            None,
            "BUFFER_PROFILE|ingress_lossy_profile|dynamic_th: missing",
        ),
        (
            &["BUFFER_PG", "Ethernet0|0", "profile"],
            Some(json!("nope")),
            "BUFFER_PG|Ethernet0|0|profile: unknown profile",
        ),
        (
            &["BUFFER_PG", "Ethernet0|0", "profile"],
            Some(json!("egress_lossy_profile")),
            "BUFFER_PG|Ethernet0|0|profile:",
        ),
        (
            &["BUFFER_PG", "Ethernet99|0"],
            Some(json!({"profile": "ingress_lossy_profile"})),
            "BUFFER_PG|Ethernet99|0: port",
        ),
        (&["BUFFER_PG", "Ethernet4|9"], Some(json!({"profile": "ingress_lossy_profile"})), "BUFFER_PG|Ethernet4|9:"),
        (
            &["BUFFER_QUEUE", "Ethernet0|0-2", "profile"],
            Some(json!("ingress_lossy_profile")),
            "BUFFER_QUEUE|Ethernet0|0-2|profile:",
        ),
        (
            &["BUFFER_PORT_INGRESS_PROFILE_LIST", "Ethernet0", "profile_list"],
            Some(json!("ingress_lossy_profile,gone")),
            "BUFFER_PORT_INGRESS_PROFILE_LIST|Ethernet0|profile_list: unknown BUFFER_PROFILE 'gone'",
        ),
        (&["DSCP_TO_TC_MAP", "AZURE", "64"], Some(json!("1")), "DSCP_TO_TC_MAP|AZURE|64: key 64 is out of range"),
        (&["DSCP_TO_TC_MAP", "AZURE", "46"], Some(json!("8")), "DSCP_TO_TC_MAP|AZURE|46: 8 is out of range"),
        (
            &["PORT_QOS_MAP", "Ethernet0", "dscp_to_tc_map"],
            Some(json!("MISSING")),
            "PORT_QOS_MAP|Ethernet0|dscp_to_tc_map: unknown",
        ),
        (&["PORT_QOS_MAP", "Ethernet0", "pfc_enable"], Some(json!("3,9")), "PORT_QOS_MAP|Ethernet0|pfc_enable: 9"),
        (&["PORT_QOS_MAP", "Ethernet99"], Some(json!({"pfc_enable": "3"})), "PORT_QOS_MAP|Ethernet99: port"),
        (
            &["DSCP_TO_TC_MAP", "OTHER"],
            Some(json!({"46": "1"})),
            // bound below by the second variant of this case
            "",
        ),
        (
            &["MAP_PFC_PRIORITY_TO_QUEUE", "AZURE", "3"],
            Some(json!("5")),
            "MAP_PFC_PRIORITY_TO_QUEUE|AZURE|3: priority 3 → 5",
        ),
        (
            &["QUEUE", "Ethernet4|3", "scheduler"],
            Some(json!("scheduler.0")),
            "QUEUE|Ethernet4|3|scheduler: 'scheduler.0' differs",
        ),
        (&["QUEUE", "Ethernet4|3", "scheduler"], Some(json!("nope")), "QUEUE|Ethernet4|3|scheduler: unknown SCHEDULER"),
        (&["SCHEDULER", "scheduler.1", "type"], Some(json!("FAIR")), "SCHEDULER|scheduler.1|type:"),
        (&["SCHEDULER", "scheduler.1", "weight"], Some(json!("0")), "SCHEDULER|scheduler.1|weight:"),
        (
            &["QUEUE", "Ethernet4|3", "wred_profile"],
            Some(json!("nope")),
            "QUEUE|Ethernet4|3|wred_profile: unknown WRED profile",
        ),
        (
            &["WRED_PROFILE", "AZURE_LOSSLESS", "wred_green_enable"],
            Some(json!("yes")),
            "WRED_PROFILE|AZURE_LOSSLESS|wred_green_enable:",
        ),
        (
            &["WRED_PROFILE", "AZURE_LOSSLESS", "green_min_threshold"],
            Some(json!("9999999")),
            "WRED_PROFILE|AZURE_LOSSLESS|green_min_threshold:",
        ),
        (&["WRED_PROFILE", "AZURE_LOSSLESS", "ecn"], Some(json!("ecn_some")), "WRED_PROFILE|AZURE_LOSSLESS|ecn:"),
        (&["PFC_WD", "Ethernet4"], Some(json!({"action": "forward"})), "PFC_WD|Ethernet4|action: 'forward' differs"),
        (&["PFC_WD", "Ethernet0", "action"], Some(json!("explode")), "PFC_WD|Ethernet0|action:"),
        (&["PFC_WD", "Ethernet0", "detection_time"], Some(json!("soon")), "PFC_WD|Ethernet0|detection_time:"),
        (&["PFC_WD", "GLOBAL", "POLL_INTERVAL"], Some(json!("0")), "PFC_WD|GLOBAL|POLL_INTERVAL:"),
        (&["VLAN", "Vlan1000", "vlanid"], Some(json!("1001")), "VLAN|Vlan1000|vlanid:"),
        (
            &["VLAN_MEMBER", "Vlan1000|Ethernet8", "tagging_mode"],
            Some(json!("sometimes")),
            "VLAN_MEMBER|Vlan1000|Ethernet8|tagging_mode:",
        ),
        (
            &["VLAN_MEMBER", "Vlan1000|Ethernet99"],
            Some(json!({"tagging_mode": "tagged"})),
            "VLAN_MEMBER|Vlan1000|Ethernet99: port",
        ),
        (
            &["VLAN_INTERFACE", "Vlan2000|10.0.0.1/24"],
            Some(json!({})),
            "VLAN_INTERFACE|Vlan2000|10.0.0.1/24: 'Vlan2000' is not in VLAN",
        ),
        (&["INTERFACE", "Ethernet0|10.0.0.0/99"], Some(json!({})), "INTERFACE|Ethernet0"),
        (
            &["DEVICE_METADATA", "localhost", "buffer_model"],
            Some(json!("magic")),
            "DEVICE_METADATA|localhost|buffer_model:",
        ),
    ];
    let mut checked = 0;
    for (path, value, want) in cases {
        if want.is_empty() {
            continue;
        }
        let mut v = base();
        set(&mut v, path, value.clone());
        let e = match run(&[v]) {
            Ok(_) => panic!("{path:?} = {value:?}: accepted, expected an error at '{want}'"),
            Err(e) => e.to_string(),
        };
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.starts_with("db0.json: "), "{path:?}: {e}");
        assert!(e.contains(want), "{path:?} = {value:?}: '{e}' does not contain '{want}'");
        checked += 1;
    }
    assert!(checked >= 20, "{checked}");
    // Two ports binding different DSCP maps.
    let mut v = base();
    set(&mut v, &["DSCP_TO_TC_MAP", "OTHER"], Some(json!({"46": "1"})));
    set(&mut v, &["PORT_QOS_MAP", "Ethernet4", "dscp_to_tc_map"], Some(json!("OTHER")));
    let e = run(&[v]).unwrap_err().to_string();
    assert!(e.contains("PORT_QOS_MAP|Ethernet4|dscp_to_tc_map: 'OTHER' differs from 'AZURE'"), "{e}");
    // Shapes and JSON syntax, and the file named is the one the field came from.
    let texts = [
        ("a.json".to_string(), base().to_string()),
        ("b.json".to_string(), "{\"PORT|Ethernet0\": {\"mtu\": \"x\"}}".to_string()),
    ];
    let e = import(&Db::from_texts(&texts).unwrap(), None, "db").unwrap_err().to_string();
    assert!(e.starts_with("b.json: PORT|Ethernet0|mtu:"), "{e}");
    let e = Db::from_texts(&[("a.json".into(), "{\"PORT\": {\"Ethernet0\": \"fast\"}}".into())]).unwrap_err();
    assert_eq!(e.to_string(), "a.json: PORT|Ethernet0: expected an object of fields");
}

#[test]
fn port_map_devargs_and_sections() {
    let map = PortMap::from_toml(
        "Ethernet0 = \"net_ring0\"\nEthernet4 = \"net_ring1\"\nEthernet8 = { devargs = \"net_null7\", tx_enable = false }\n[eal]\nargs = [\"--no-huge\"]\n",
        "map.toml",
    )
    .unwrap();
    let db = Db::from_texts(&[("a.json".into(), base().to_string())]).unwrap();
    let imp = import(&db, Some(&map), "a").unwrap_or_else(|e| panic!("{e}"));
    let dev: Vec<&str> = imp.config.ports[..3].iter().map(|p| p.devargs.as_str()).collect();
    assert_eq!(dev, ["net_ring0", "net_ring1", "net_null7"]);
    assert_eq!(imp.config.eal.args, ["--no-huge"]);
    let partial = PortMap::from_csv("Ethernet0,net_ring0\n", "map.csv").unwrap();
    let e = import(&db, Some(&partial), "a").unwrap_err().to_string();
    assert_eq!(e, "a.json: PORT|Ethernet4: not in the port map map.csv");
    let extra = PortMap::from_csv(
        "Ethernet0,net_ring0\nEthernet4,net_ring1\nEthernet8,net_ring2\nEthernet12,net_ring3\n",
        "m.csv",
    )
    .unwrap();
    let e = import(&db, Some(&extra), "a").unwrap_err().to_string();
    assert!(e.contains("PORT|Ethernet12: port map m.csv names a port CONFIG_DB does not have"), "{e}");
}

/// What a CONFIG_DB round trip must keep: everything the tables say (not the origin, the
/// cell size or whether the buffer layout was generated, which CONFIG_DB has no word for).
fn semantic(c: &crate::config::Config) -> Value {
    // Indices into pools and profiles → names (their order is the file's).
    let b = &c.buffer;
    // Front ports only: CONFIG_DB has no representors (their binding is pfcswitch's).
    let fronts = c.ports.iter().filter(|p| p.representor_of.is_none() && p.vlan_interface_of.is_none()).count();
    let named = |by: &[[Option<usize>; 8]]| -> Value {
        by.iter()
            .take(fronts)
            .map(|a| a.iter().map(|p| p.map(|i| b.profiles[i].name.clone())).collect::<Vec<_>>())
            .collect::<Vec<_>>()
            .into()
    };
    let mut pools: Vec<Value> = b.pools.iter().map(|p| serde_json::to_value(p).unwrap()).collect();
    pools.sort_by_key(|p| p["name"].to_string());
    let mut profiles: Vec<Value> = b
        .profiles
        .iter()
        .map(|p| {
            let mut v = serde_json::to_value(p).unwrap();
            v["pool"] = json!(b.pools[p.pool].name);
            v
        })
        .collect();
    profiles.sort_by_key(|p| p["name"].to_string());
    let b = json!({
        "total_size": b.total_size, "headroom_policy": serde_json::to_value(b.headroom_policy).unwrap(),
        "pools": pools, "profiles": profiles, "pg": named(&b.pg_profile), "queue": named(&b.queue_profile),
    });
    json!({
        "ports": serde_json::to_value(&c.ports).unwrap(),
        "qos": serde_json::to_value(&c.qos).unwrap(),
        "buffer": b,
        "pfcwd": format!("{:?}", c.pfcwd),
        "vlans": serde_json::to_value(&c.vlans).unwrap(),
        "interfaces": serde_json::to_value(&c.routing.interfaces).unwrap(),
        "system_name": c.lldp.system_name,
    })
}

/// Where two JSON values first differ, and how.
fn first_difference(a: &Value, b: &Value, path: &str) -> String {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    Some(w) if w != v => return first_difference(v, w, &format!("{path}.{k}")),
                    None => return format!("{path}.{k}: missing on the right"),
                    _ => {}
                }
            }
            format!("{path}: keys {:?} vs {:?}", x.keys().collect::<Vec<_>>(), y.keys().collect::<Vec<_>>())
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            let i = (0..x.len()).find(|&i| x[i] != y[i]).unwrap_or(0);
            first_difference(&x[i], &y[i], &format!("{path}[{i}]"))
        }
        _ => format!("{path}: {a} vs {b}"),
    }
}

/// import → save as CONFIG_DB → import: the same switch, and saving again gives the same
/// file (a fixpoint).
fn round_trip(files: &[(String, String)]) {
    let db = Db::from_texts(files).unwrap();
    let first = import(&db, None, "a").unwrap_or_else(|e| panic!("{e}"));
    let (saved, _) = export::config_db(&first.config);
    let again = run(std::slice::from_ref(&saved)).unwrap_or_else(|e| panic!("re-import: {e}\n{saved:#}"));
    let (a, b) = (semantic(&first.config), semantic(&again.config));
    assert!(
        a == b,
        "{:?}: differs at {}",
        files.iter().map(|f| &f.0).collect::<Vec<_>>(),
        first_difference(&a, &b, "")
    );
    let (saved2, _) = export::config_db(&again.config);
    assert_eq!(saved, saved2);
}

#[test]
fn import_then_save_round_trips() {
    round_trip(&[("base.json".into(), base().to_string())]);
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/sonic");
    for f in [
        "s6000-t0-config_db.json",
        "z9264f-t1-config_db.json",
        "msn2700-t1-redis-dump.json",
        "t1-smartswitch-config_db.json",
    ] {
        round_trip(&[(f.into(), std::fs::read_to_string(dir.join(f)).unwrap())]);
    }
}

mod generated {
    use super::*;
    use proptest::prelude::*;

    /// A CONFIG_DB over the tables the import reads, valid by construction.
    fn config_db() -> impl Strategy<Value = Value> {
        (
            1usize..5,
            proptest::collection::vec((0usize..4, 0u32..3, any::<bool>(), 0u8..4, any::<bool>()), 4),
            proptest::collection::vec(0u8..8, 64),
            proptest::collection::vec(0u8..8, 8),
            proptest::collection::vec((any::<bool>(), 1u8..101), 8),
            (-4i8..4, 0u64..3, any::<bool>(), any::<bool>()),
            (any::<bool>(), 100u32..5000, any::<bool>()),
        )
            .prop_map(|(n, ports, dscp, tcq, sched, (th, xoff_k, shared, static_egress), (wd, det, wred))| {
                let speeds = ["10000", "25000", "40000", "100000"];
                let mut v = json!({"DEVICE_METADATA": {"localhost": {"hostname": "gen", "bgp_asn": "65000"}}});
                let set = |v: &mut Value, t: &str, k: &str, f: Value| {
                    v.as_object_mut().unwrap().entry(t).or_insert(json!({}))[k] = f;
                };
                set(&mut v, "BUFFER_POOL", "ingress_lossless_pool", json!({"size": "8388608", "type": "ingress", "mode": "dynamic"}));
                if shared {
                    v["BUFFER_POOL"]["ingress_lossless_pool"]["xoff"] = json!("1048576");
                }
                set(&mut v, "BUFFER_POOL", "egress_pool", json!({"size": "4194304", "type": "egress",
                    "mode": if static_egress { "static" } else { "dynamic" }}));
                let mut lossless = json!({"pool": "ingress_lossless_pool", "size": "2048", "dynamic_th": th.to_string()});
                if xoff_k > 0 {
                    lossless["xoff"] = json!((xoff_k * 40000).to_string());
                    lossless["xon"] = json!("4096");
                }
                set(&mut v, "BUFFER_PROFILE", "lossless", lossless);
                set(&mut v, "BUFFER_PROFILE", "lossy", json!({"pool": "ingress_lossless_pool", "size": "0", "dynamic_th": "3"}));
                let eg = if static_egress { json!({"pool": "egress_pool", "size": "0", "static_th": "4194304"}) }
                         else { json!({"pool": "egress_pool", "size": "1518", "dynamic_th": "1"}) };
                set(&mut v, "BUFFER_PROFILE", "egress", eg);
                let dmap: serde_json::Map<String, Value> = dscp.iter().enumerate().map(|(k, t)| (k.to_string(), json!(t.to_string()))).collect();
                set(&mut v, "DSCP_TO_TC_MAP", "AZURE", Value::Object(dmap));
                let qmap: serde_json::Map<String, Value> = tcq.iter().enumerate().map(|(k, q)| (k.to_string(), json!(q.to_string()))).collect();
                set(&mut v, "TC_TO_QUEUE_MAP", "AZURE", Value::Object(qmap));
                for (q, (strict, w)) in sched.iter().enumerate() {
                    let s = if *strict { json!({"type": "STRICT"}) } else { json!({"type": "DWRR", "weight": w.to_string()}) };
                    set(&mut v, "SCHEDULER", &format!("s{q}"), s);
                }
                if wred {
                    set(&mut v, "WRED_PROFILE", "W", json!({"ecn": "ecn_all", "wred_green_enable": "true",
                        "green_min_threshold": "100000", "green_max_threshold": "200000", "green_drop_probability": "7"}));
                }
                for (i, (speed, cable, pfc, lossy_pgs, up)) in ports.iter().take(n).enumerate() {
                    let name = format!("Ethernet{}", i * 4);
                    set(&mut v, "PORT", &name, json!({"speed": speeds[*speed], "mtu": "9100",
                        "admin_status": if *up { "up" } else { "down" }}));
                    set(&mut v, "CABLE_LENGTH", "AZURE", json!({}));
                    v["CABLE_LENGTH"]["AZURE"][&name] = json!(["5m", "40m", "300m"][*cable as usize]);
                    let mut q = json!({"dscp_to_tc_map": "AZURE", "tc_to_queue_map": "AZURE"});
                    if *pfc {
                        q["pfc_enable"] = json!("3,4");
                        set(&mut v, "BUFFER_PG", &format!("{name}|3-4"), json!({"profile": "lossless"}));
                    }
                    set(&mut v, "PORT_QOS_MAP", &name, q);
                    if *lossy_pgs > 0 {
                        set(&mut v, "BUFFER_PG", &format!("{name}|0-{}", lossy_pgs - 1), json!({"profile": "lossy"}));
                    }
                    set(&mut v, "BUFFER_QUEUE", &format!("{name}|0-2"), json!({"profile": "egress"}));
                    for q in 0..8 {
                        let mut f = json!({"scheduler": format!("s{q}")});
                        if wred && q == 3 {
                            f["wred_profile"] = json!("W");
                        }
                        set(&mut v, "QUEUE", &format!("{name}|{q}"), f);
                    }
                    if wd {
                        set(&mut v, "PFC_WD", &name, json!({"action": "drop", "detection_time": det.to_string(),
                            "restoration_time": "200"}));
                    }
                }
                v
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]
        #[test]
        fn generated_configs_round_trip(v in config_db()) {
            round_trip(&[("gen.json".into(), v.to_string())]);
        }
    }
}

mod mutated {
    use super::*;
    use proptest::prelude::*;

    /// Values that break things: empty, huge, negative, units, references, lists, text.
    const ODD: &[&str] = &[
        "",
        "0",
        "-1",
        "7",
        "8",
        "65536",
        "18446744073709551616",
        "1.5",
        "5m",
        "100G",
        "up",
        "down",
        "true",
        "AZURE",
        "[BUFFER_POOL|ingress_lossless_pool]",
        "[BUFFER_PROFILE|ingress_lossy_profile]",
        "NULL",
        "3,4",
        "3,3",
        "0-7",
        "Ethernet0",
        "Vlan1000",
        "DWRR",
        "STRICT",
        "ecn_all",
        "drop",
        "é|ü",
        "a b",
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]
        /// Any field of the base set to an odd value, or removed: no panic, errors and
        /// notes one line, and whatever imports saves and imports back.
        #[test]
        fn odd_values_never_panic(picks in proptest::collection::vec((any::<prop::sample::Index>(), 0usize..ODD.len() + 1), 1..4)) {
            let mut v = base();
            for (ti, oi) in picks {
                // Every (table, key, field) of the base, in order.
                let places: Vec<(String, String, String)> = v.as_object().unwrap().iter().flat_map(|(t, keys)| {
                    keys.as_object().unwrap().iter().flat_map(move |(k, fields)| {
                        let fs: Vec<String> = fields.as_object().unwrap().keys().cloned().collect();
                        let fs = if fs.is_empty() { vec!["x".to_string()] } else { fs };
                        fs.into_iter().map(move |f| (t.clone(), k.clone(), f))
                    })
                }).collect();
                let (t, k, f) = &places[ti.index(places.len())];
                let value = ODD.get(oi).map(|s| json!(s));
                set(&mut v, &[t, k, f], value);
            }
            match run(&[v]) {
                Ok(imp) => {
                    prop_assert!(imp.notes.iter().all(|n| !n.line.contains('\n')));
                    let (saved, _) = export::config_db(&imp.config);
                    let again = run(&[saved]);
                    prop_assert!(again.is_ok(), "saved does not import back: {}", again.unwrap_err());
                }
                Err(e) => prop_assert_eq!(e.to_string().lines().count(), 1, "{}", e),
            }
        }
    }
}
