//! PORT (+ the port map), CABLE_LENGTH, DEVICE_METADATA, and PORT_QOS_MAP's per-port PFC
//! fields → `[[port]]` and `[lldp]`.

use super::*;

pub(super) fn ports(cx: &mut Cx) -> BResult<()> {
    let db = cx.db;
    let mut names: Vec<&str> = db.keys("PORT");
    if names.is_empty() {
        return Err(Bad::new(At::table("PORT"), "no ports: the PORT table is missing or empty"));
    }
    names.sort_by_key(|n| natural_key(n));
    // Each port's cable length, and where it was written.
    let mut cable: HashMap<&str, (String, At)> = HashMap::new();
    let mut no_cable = Vec::new();
    let mut no_admin = Vec::new();
    for key in db.keys("CABLE_LENGTH") {
        let e = db.entry("CABLE_LENGTH", key).expect("listed");
        for port in e.fields.keys() {
            let at = At::field("CABLE_LENGTH", key, port);
            let v = db.get("CABLE_LENGTH", key, port).expect("listed").to_string();
            if !names.contains(&port.as_str()) {
                return Err(Bad::new(at, format!("port '{port}' is not in PORT")));
            }
            if let Some((prev, pat)) = cable.get(port.as_str()) {
                if *prev != v {
                    return Err(Bad::new(at, format!("'{v}' differs from '{prev}' given by {pat}")));
                }
            }
            cable.insert(port, (v, at));
        }
    }
    if let Some(m) = cx.map {
        if let Some(extra) = m.ports.keys().find(|k| !names.contains(&k.as_str())) {
            return Err(Bad::new(
                At::key("PORT", extra),
                format!("port map {} names a port CONFIG_DB does not have", m.file),
            ));
        }
    }
    for (i, name) in names.iter().enumerate() {
        let path = format!("port[{i}]");
        let at = |f: &str| At::field("PORT", name, f);
        cx.prov(path.clone(), At::key("PORT", name));
        let mut t = Table::new();
        t.insert("name".into(), Value::String(name.to_string()));
        // A map naming no port (only sections) leaves every port on net_null.
        match cx.map.filter(|m| !m.ports.is_empty()).map(|m| (m, m.ports.get(*name))) {
            Some((_, Some(fields))) => {
                for (k, v) in fields {
                    t.insert(k.clone(), v.clone());
                }
            }
            Some((m, None)) => {
                return Err(Bad::new(At::key("PORT", name), format!("not in the port map {}", m.file)));
            }
            None => {
                t.insert("devargs".into(), Value::String(format!("net_null{i}")));
            }
        }
        let speed = db
            .get("PORT", name, "speed")
            .ok_or_else(|| Bad::new(at("speed"), "missing field (pfcswitch needs each port's speed)"))?;
        // CONFIG_DB speeds are Mb/s; a bare number means the same to pfcswitch.
        uint(speed, &at("speed"))?;
        t.insert("speed".into(), Value::String(speed.to_string()));
        cx.prov(format!("{path}.speed"), at("speed"));
        if let Some(m) = db.get("PORT", name, "mtu") {
            t.insert("mtu".into(), Value::Integer(uint(m, &at("mtu"))?));
            cx.prov(format!("{path}.mtu"), at("mtu"));
        }
        if let Some(a) = db.get("PORT", name, "admin_status") {
            if a != "up" && a != "down" {
                return Err(Bad::new(at("admin_status"), format!("'{a}' is not up or down")));
            }
            t.insert("admin_status".into(), Value::String(a.to_string()));
        } else {
            // SONiC's default is down; pfcswitch's is up.
            t.insert("admin_status".into(), Value::String("down".into()));
            no_admin.push(name.to_string());
        }
        cx.prov(format!("{path}.admin_status"), at("admin_status"));
        for (f, harmless) in [("pfc_asym", "off"), ("tpid", "0x8100")] {
            if db.get("PORT", name, f).is_some_and(|v| v != harmless) {
                cx.note(NoteKind::Unsupported, format!("PORT|{name}|{f}: only '{harmless}' is implemented, ignored"));
            }
        }
        match cable.get(name) {
            Some((len, cat)) => {
                t.insert("cable_length".into(), Value::String(len.clone()));
                cx.prov(format!("{path}.cable_length"), cat.clone());
            }
            None => no_cable.push(name.to_string()),
        }
        cx.ports.push(name.to_string());
        cx.port_index.insert(name.to_string(), i);
        cx.port_tables.push(t);
    }
    if !no_admin.is_empty() {
        cx.note(
            NoteKind::Approximated,
            format!(
                "PORT|*|admin_status: absent on {} port(s) (e.g. {}): down, SONiC's default (pfcswitch's is up)",
                no_admin.len(),
                no_admin[0]
            ),
        );
    }
    if !no_cable.is_empty() {
        cx.note(
            NoteKind::Approximated,
            format!(
                "CABLE_LENGTH: no length for {} port(s) (e.g. {}): pfcswitch's default {} sizes their headroom",
                no_cable.len(),
                no_cable[0],
                crate::config::defaults::CABLE_LENGTH
            ),
        );
    }
    device_metadata(cx)
}

fn device_metadata(cx: &mut Cx) -> BResult<()> {
    let db = cx.db;
    for key in db.keys("DEVICE_METADATA") {
        if key != "localhost" {
            continue; // reported as unread fields
        }
        if let Some(h) = db.get("DEVICE_METADATA", key, "hostname") {
            cx.section("lldp").insert("system_name".into(), Value::String(h.to_string()));
            cx.prov("lldp.system_name", At::field("DEVICE_METADATA", key, "hostname"));
        }
        if db.get("DEVICE_METADATA", key, "mac").is_some() {
            cx.note(
                NoteKind::Approximated,
                "DEVICE_METADATA|localhost|mac: not applied, each pfcswitch port keeps its own MAC (its device's)",
            );
        }
        // Read by --frr.
        db.get("DEVICE_METADATA", key, "bgp_asn");
        match db.get("DEVICE_METADATA", key, "buffer_model") {
            None | Some("traditional") => {}
            Some("dynamic") => cx.note(
                NoteKind::Approximated,
                "DEVICE_METADATA|localhost|buffer_model: 'dynamic': lossless headroom computed by pfcswitch's \
                 calculator (docs/lossless.md), not buffermgrd's; pool sizes must be given",
            ),
            Some(other) => {
                return Err(Bad::new(
                    At::field("DEVICE_METADATA", key, "buffer_model"),
                    format!("'{other}' is not traditional or dynamic"),
                ))
            }
        }
    }
    Ok(())
}

/// PORT_QOS_MAP's `pfc_enable` and `pfcwd_sw_enable` per port. A port without
/// `pfc_enable` has PFC off, as in SONiC (pfcswitch's own default would be 3,4).
pub(super) fn pfc(cx: &mut Cx) -> BResult<()> {
    let db = cx.db;
    for key in db.keys("PORT_QOS_MAP") {
        if key != "global" {
            cx.port(key, &At::key("PORT_QOS_MAP", key))?;
        }
    }
    for i in 0..cx.ports.len() {
        let name = cx.ports[i].clone();
        let at = At::field("PORT_QOS_MAP", &name, "pfc_enable");
        let prios = match db.get("PORT_QOS_MAP", &name, "pfc_enable") {
            Some(v) => prio_list(v, &at)?,
            None => Vec::new(),
        };
        if let Some(wd) = db.get("PORT_QOS_MAP", &name, "pfcwd_sw_enable") {
            let wat = At::field("PORT_QOS_MAP", &name, "pfcwd_sw_enable");
            let mut w = prio_list(wd, &wat)?;
            let mut p = prios.clone();
            w.sort();
            p.sort();
            if w != p {
                cx.note(
                    NoteKind::Approximated,
                    format!(
                        "{wat}: '{wd}': pfcswitch's watchdog watches every PFC-enabled priority of the port ({})",
                        p.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
                    ),
                );
            }
        }
        cx.port_tables[i].insert("pfc_enable".into(), Value::Array(prios.into_iter().map(Value::Integer).collect()));
        cx.prov(format!("port[{i}].pfc_enable"), at);
    }
    Ok(())
}
