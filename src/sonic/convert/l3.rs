//! VLAN, VLAN_MEMBER, VLAN_INTERFACE, INTERFACE → `[vlan]`, `[vlan_member]`,
//! `[vlan_interface]`, `[interface]`; LOOPBACK_INTERFACE, BGP_NEIGHBOR, BGP_GLOBALS and
//! BGP_GLOBALS_AF_NETWORK are FRR's
//! (`--frr`), the switch's configuration has no place for them.

use super::*;

pub(super) fn l3(cx: &mut Cx) -> BResult<()> {
    let db = cx.db;
    for name in db.keys("VLAN") {
        let mut t = Table::new();
        if let Some(id) = db.get("VLAN", name, "vlanid") {
            t.insert("vlanid".into(), Value::String(id.to_string()));
            cx.prov(join(&join("vlan", name), "vlanid"), At::field("VLAN", name, "vlanid"));
        }
        // The older member list; VLAN_MEMBER is what counts.
        db.get("VLAN", name, "members");
        cx.prov(join("vlan", name), At::key("VLAN", name));
        cx.section("vlan").insert(name.to_string(), Value::Table(t));
    }
    for key in db.keys("VLAN_MEMBER") {
        let kat = At::key("VLAN_MEMBER", key);
        let (_, port) = key.split_once('|').ok_or_else(|| Bad::new(kat.clone(), "key is not '<Vlan>|<port>'"))?;
        if port.starts_with("PortChannel") {
            db.use_all("VLAN_MEMBER", key);
            cx.note(
                NoteKind::Unsupported,
                format!("VLAN_MEMBER|{key}: a PortChannel member, ignored (no PORTCHANNEL)"),
            );
            continue;
        }
        cx.port(port, &kat)?;
        let at = At::field("VLAN_MEMBER", key, "tagging_mode");
        let mode = db.get("VLAN_MEMBER", key, "tagging_mode").ok_or_else(|| Bad::new(at.clone(), "missing field"))?;
        let mut t = Table::new();
        t.insert("tagging_mode".into(), Value::String(mode.to_string()));
        cx.prov(join("vlan_member", key), at);
        cx.section("vlan_member").insert(key.to_string(), Value::Table(t));
    }
    addresses(cx, "VLAN_INTERFACE", "vlan_interface", false)?;
    addresses(cx, "INTERFACE", "interface", true)?;
    namespace(cx);
    let loopbacks: Vec<&str> = db.keys("LOOPBACK_INTERFACE");
    if !loopbacks.is_empty() {
        for k in &loopbacks {
            db.use_all("LOOPBACK_INTERFACE", k);
        }
        cx.note(
            NoteKind::Approximated,
            "LOOPBACK_INTERFACE: not in the switch's configuration (no loopback port); FRR's router-id and \
             announced loopback (--frr)",
        );
    }
    let peers = db.keys("BGP_NEIGHBOR");
    if !peers.is_empty() {
        for k in &peers {
            db.use_all("BGP_NEIGHBOR", k);
        }
        cx.note(
            NoteKind::Approximated,
            format!("BGP_NEIGHBOR: {} neighbour(s) for FRR (--frr); pfcswitch itself runs no BGP", peers.len()),
        );
    }
    for table in ["BGP_GLOBALS", "BGP_GLOBALS_AF_NETWORK"] {
        let keys = db.keys(table);
        if !keys.is_empty() {
            for k in &keys {
                db.use_all(table, k);
            }
            cx.note(NoteKind::Approximated, format!("{table}: {} key(s) for FRR (--frr)", keys.len()));
        }
    }
    Ok(())
}

/// Routing needs `[control_plane] netns` or `allow_root_namespace` (docs/routing.md,
/// "Namespace"). SONiC routes in the host's namespace, so without either in the port map
/// that is what the import writes, and says so (the switch warns again at start).
fn namespace(cx: &mut Cx) {
    let routes = ["interface", "vlan_interface"].iter().any(|s| cx.out.contains_key(*s));
    let cp = cx.section("control_plane");
    if !routes || cp.contains_key("netns") || cp.contains_key("allow_root_namespace") {
        if cp.is_empty() {
            cx.out.remove("control_plane");
        }
        return;
    }
    cp.insert("allow_root_namespace".into(), Value::Boolean(true));
    cx.note(
        NoteKind::Approximated,
        "INTERFACE: SONiC routes in the host's network namespace: control_plane.allow_root_namespace = true \
         (a [control_plane] netns in the port map gives the switch a namespace of its own, recommended)",
    );
}

/// `TABLE|<name>|<prefix>` keys → `section.<name> = [prefixes]`; `TABLE|<name>` keys carry
/// attributes only (each unread field is reported).
fn addresses(cx: &mut Cx, table: &str, section_name: &str, is_port: bool) -> BResult<()> {
    let db = cx.db;
    let mut out: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for key in db.keys(table) {
        let kat = At::key(table, key);
        let (name, prefix) = match key.split_once('|') {
            Some((n, p)) => (n, Some(p)),
            None => (key, None),
        };
        if is_port {
            cx.port(name, &kat)?;
        } else if db.entry("VLAN", name).is_none() {
            return Err(Bad::new(kat, format!("'{name}' is not in VLAN")));
        }
        cx.prov(join(section_name, name), kat);
        let list = out.entry(name.to_string()).or_default();
        if let Some(p) = prefix {
            list.push(Value::String(p.to_string()));
        }
    }
    for (name, list) in out {
        if !list.is_empty() {
            cx.section(section_name).insert(name, Value::Array(list));
        }
    }
    Ok(())
}
