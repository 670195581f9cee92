//! `config save --format sonic`: a resolved configuration → CONFIG_DB (the nested
//! `config_db.json`), the inverse of [`super::import`] for every table it reads. What
//! CONFIG_DB cannot say (pfcswitch's own knobs) is one line each, left out.

use crate::config::{Config, HeadroomPolicy, PoolMode, PoolType, Scheduler, Threshold, Trust, WredColour};
use crate::wire::NUM_TC;
use serde_json::{Map, Value};

/// Every map and scheduler is written under this name (SONiC's own default name).
const NAME: &str = "AZURE";

type Tables = Map<String, Value>;

fn put(t: &mut Tables, table: &str, key: &str, fields: Vec<(&str, String)>) {
    let tv = t.entry(table.to_string()).or_insert_with(|| Value::Object(Map::new()));
    let obj = tv.as_object_mut().expect("tables are objects");
    let e = obj.entry(key.to_string()).or_insert_with(|| Value::Object(Map::new()));
    let fm = e.as_object_mut().expect("keys are objects");
    for (f, v) in fields {
        fm.insert(f.to_string(), Value::String(v));
    }
}

fn length(m: f64) -> String {
    if m.fract() == 0.0 {
        format!("{}m", m as u64)
    } else {
        format!("{m}m")
    }
}

fn list(v: impl IntoIterator<Item = u8>) -> String {
    v.into_iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",")
}

fn map_fields(m: &[u8]) -> Vec<(String, String)> {
    m.iter().enumerate().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// The CONFIG_DB of `cfg` and the lines for what it cannot hold.
pub fn config_db(cfg: &Config) -> (Value, Vec<String>) {
    let mut t = Tables::new();
    let mut notes = Vec::new();
    let mut meta = vec![("buffer_model", "traditional".to_string())];
    if let Some(h) = &cfg.lldp.system_name {
        meta.push(("hostname", h.clone()));
    }
    put(&mut t, "DEVICE_METADATA", "localhost", meta);
    let fronts: Vec<&crate::config::PortConfig> =
        cfg.ports.iter().filter(|p| p.representor_of.is_none() && p.vlan_interface_of.is_none()).collect();
    for p in &fronts {
        let mut f = vec![
            ("speed", (p.speed_bps / 1_000_000).to_string()),
            ("mtu", p.mtu.to_string()),
            ("admin_status", if p.admin_up { "up" } else { "down" }.to_string()),
        ];
        if p.speed_auto {
            notes.push(format!(
                "PORT|{}|speed: 'auto' written as the planned {} Mb/s",
                p.name,
                p.speed_bps / 1_000_000
            ));
        }
        put(&mut t, "PORT", &p.name, std::mem::take(&mut f));
        put(&mut t, "CABLE_LENGTH", NAME, vec![(p.name.as_str(), length(p.cable_length_m))]);
        let mut q = vec![("tc_to_pg_map", NAME.to_string()), ("tc_to_queue_map", NAME.to_string())];
        match p.trust {
            Trust::Dscp => q.push(("dscp_to_tc_map", NAME.to_string())),
            Trust::Pcp => q.push(("dot1p_to_tc_map", NAME.to_string())),
        }
        if !p.pfc_enable.is_empty() {
            q.push(("pfc_enable", list(p.pfc_enable.iter().copied())));
        }
        put(&mut t, "PORT_QOS_MAP", &p.name, q);
        for (what, bad) in [
            ("shaper_rate", p.shaper_bps.is_some()),
            ("mac", p.mac.is_some()),
            ("default_tc", p.default_tc != 0),
            ("tx_enable", !p.tx_enable),
        ] {
            if bad {
                notes.push(format!("port {}: {what} has no CONFIG_DB field, left out", p.name));
            }
        }
    }
    let q = &cfg.qos;
    let maps: [(&str, &[u8]); 4] = [
        ("DSCP_TO_TC_MAP", &q.dscp_to_tc),
        ("DOT1P_TO_TC_MAP", &q.dot1p_to_tc),
        ("TC_TO_PRIORITY_GROUP_MAP", &q.tc_to_pg),
        ("TC_TO_QUEUE_MAP", &q.tc_to_queue),
    ];
    for (table, m) in maps {
        let f = map_fields(m);
        put(&mut t, table, NAME, f.iter().map(|(k, v)| (k.as_str(), v.clone())).collect());
    }
    for (tc, s) in q.scheduler.iter().enumerate() {
        let f = match s {
            Scheduler::Strict => vec![("type", "STRICT".to_string())],
            Scheduler::Dwrr(w) => vec![("type", "DWRR".to_string()), ("weight", w.to_string())],
        };
        put(&mut t, "SCHEDULER", &format!("scheduler.{tc}"), f);
    }
    for p in &fronts {
        for n in 0..NUM_TC {
            let mut f = vec![("scheduler", format!("scheduler.{n}"))];
            if let Some(w) = q.queue_wred.get(p.index).and_then(|a| a[n]) {
                f.push(("wred_profile", q.wred_profiles[w].name.clone()));
            }
            put(&mut t, "QUEUE", &format!("{}|{n}", p.name), f);
        }
    }
    for w in &q.wred_profiles {
        let mut f = vec![("ecn".to_string(), w.ecn.as_str().to_string())];
        for (c, col) in [("green", &w.green), ("yellow", &w.yellow), ("red", &w.red)] {
            colour(&mut f, c, col);
        }
        put(&mut t, "WRED_PROFILE", &w.name, f.iter().map(|(k, v)| (k.as_str(), v.clone())).collect());
    }
    buffer(cfg, &fronts, &mut t, &mut notes);
    if let Some(wd) = &cfg.pfcwd {
        // Every port: the watchdog watches whatever is lossless on it.
        for p in &fronts {
            put(
                &mut t,
                "PFC_WD",
                &p.name,
                vec![
                    ("action", wd.action.as_str().to_string()),
                    ("detection_time", wd.detection_time_ms.to_string()),
                    ("restoration_time", wd.restoration_time_ms.to_string()),
                ],
            );
        }
        put(&mut t, "PFC_WD", "GLOBAL", vec![("POLL_INTERVAL", wd.poll_interval_ms.to_string())]);
    }
    for v in &cfg.vlans.vlans {
        put(&mut t, "VLAN", &v.name, vec![("vlanid", v.vid.to_string())]);
        for m in &v.members {
            let mode = if m.tagged { "tagged" } else { "untagged" };
            put(
                &mut t,
                "VLAN_MEMBER",
                &format!("{}|{}", v.name, cfg.ports[m.port].name),
                vec![("tagging_mode", mode.into())],
            );
        }
        for a in v.interface.iter().flatten() {
            put(&mut t, "VLAN_INTERFACE", &format!("{}|{a}", v.name), vec![]);
        }
    }
    for i in &cfg.routing.interfaces {
        for a in &i.addrs {
            put(&mut t, "INTERFACE", &format!("{}|{a}", cfg.ports[i.port].name), vec![]);
        }
    }
    if cfg.lldp.enabled {
        notes.push("lldp: LLDP|GLOBAL is not written (SONiC runs lldpd from FEATURE), left out".into());
    }
    (Value::Object(t), notes)
}

fn colour(f: &mut Vec<(String, String)>, c: &str, col: &WredColour) {
    f.push((format!("wred_{c}_enable"), col.enabled.to_string()));
    if let Some(v) = col.min_threshold {
        f.push((format!("{c}_min_threshold"), v.to_string()));
    }
    if let Some(v) = col.max_threshold {
        f.push((format!("{c}_max_threshold"), v.to_string()));
    }
    f.push((format!("{c}_drop_probability"), col.drop_probability.to_string()));
}

fn buffer(cfg: &Config, fronts: &[&crate::config::PortConfig], t: &mut Tables, notes: &mut Vec<String>) {
    let b = &cfg.buffer;
    match b.headroom_policy {
        HeadroomPolicy::Dsh => notes.push("buffer.headroom_policy: 'dsh' has no CONFIG_DB form, written as static headroom".into()),
        HeadroomPolicy::SharedPool { xoff: None, .. } => notes.push(
            "buffer.headroom_policy: 'shared_pool' by over_subscribe_ratio has no CONFIG_DB form (a pool's xoff), written as static"
                .into(),
        ),
        _ => {}
    }
    let pools_total: u64 = b.pools.iter().map(|p| p.size).sum();
    if pools_total != b.total_size {
        notes.push(format!(
            "buffer.total_size: {} B is not in CONFIG_DB (an import takes the pools' sum, {pools_total} B)",
            b.total_size
        ));
    }
    for p in &b.pools {
        let mut f = vec![
            ("size", p.size.to_string()),
            ("type", if p.kind == PoolType::Ingress { "ingress" } else { "egress" }.to_string()),
            ("mode", if p.mode == PoolMode::Static { "static" } else { "dynamic" }.to_string()),
        ];
        if let (Some(x), HeadroomPolicy::SharedPool { xoff: Some(_), .. }) = (p.xoff, b.headroom_policy) {
            f.push(("xoff", x.to_string()));
        }
        put(t, "BUFFER_POOL", &p.name, f);
    }
    for p in &b.profiles {
        let mut f = vec![("pool", b.pools[p.pool].name.clone()), ("size", p.size.to_string())];
        for (k, v) in [("xon", p.xon), ("xoff", p.xoff), ("xon_offset", p.xon_offset)] {
            if let Some(v) = v {
                f.push((k, v.to_string()));
            }
        }
        match p.threshold {
            Threshold::Dynamic(a) => f.push(("dynamic_th", a.to_string())),
            Threshold::Static(s) => f.push(("static_th", s.to_string())),
        }
        put(t, "BUFFER_PROFILE", &p.name, f);
    }
    for p in fronts {
        for (table, by) in [("BUFFER_PG", &b.pg_profile), ("BUFFER_QUEUE", &b.queue_profile)] {
            for n in 0..NUM_TC {
                if let Some(prof) = by.get(p.index).and_then(|a| a[n]) {
                    put(t, table, &format!("{}|{n}", p.name), vec![("profile", b.profiles[prof].name.clone())]);
                }
            }
        }
    }
}
