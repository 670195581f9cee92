//! The QoS maps (bound per port by PORT_QOS_MAP), QUEUE → SCHEDULER / WRED_PROFILE, and
//! PFC_WD → `[qos]`, `[pfcwd]`. pfcswitch has one map of each kind and one scheduler per
//! queue for the whole switch: ports binding maps (or schedulers) with different contents
//! are refused, naming the second binding.

use super::*;
use std::collections::BTreeSet;

/// (PORT_QOS_MAP field, table, `[qos]` key, largest key). The last two kinds are not
/// pfcswitch maps: they must agree with TC_TO_PRIORITY_GROUP_MAP / TC_TO_QUEUE_MAP.
const MAPS: &[(&str, &str, &str, u8)] = &[
    ("dscp_to_tc_map", "DSCP_TO_TC_MAP", "dscp_to_tc", 63),
    ("dot1p_to_tc_map", "DOT1P_TO_TC_MAP", "dot1p_to_tc", 7),
    ("tc_to_pg_map", "TC_TO_PRIORITY_GROUP_MAP", "tc_to_pg", 7),
    ("tc_to_queue_map", "TC_TO_QUEUE_MAP", "tc_to_queue", 7),
    ("pfc_to_pg_map", "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP", "", 7),
    ("pfc_to_queue_map", "MAP_PFC_PRIORITY_TO_QUEUE", "", 7),
];

/// A map's contents: every key 0..=max (entries it does not list: 0, SAI's default).
fn map_contents(db: &Db, table: &str, name: &str, max: u8) -> BResult<Vec<u8>> {
    let e = db.entry(table, name).expect("checked");
    let mut out = vec![0u8; max as usize + 1];
    for k in e.fields.keys() {
        let at = At::field(table, name, k);
        let v = db.get(table, name, k).expect("listed");
        let key = uint(k, &at)?;
        if key > max as i64 {
            return Err(Bad::new(at, format!("key {key} is out of range 0..={max}")));
        }
        let val = uint(v, &at)?;
        if val > 7 {
            return Err(Bad::new(at, format!("{val} is out of range 0..=7")));
        }
        out[key as usize] = val as u8;
    }
    Ok(out)
}

/// Which map of a kind the switch uses: the one its ports bind (all the same contents).
fn chosen_map(cx: &mut Cx, field: &str, table: &str, max: u8) -> BResult<Option<(String, Vec<u8>)>> {
    let db = cx.db;
    let mut chosen: Option<(String, Vec<u8>, At)> = None;
    let mut unbound = Vec::new();
    let mut keys: Vec<&str> = db.keys("PORT_QOS_MAP");
    keys.sort_by_key(|k| (*k != "global", natural_key(k)));
    for key in keys {
        let at = At::field("PORT_QOS_MAP", key, field);
        let Some(v) = db.get("PORT_QOS_MAP", key, field) else {
            if key != "global" {
                unbound.push(key.to_string());
            }
            continue;
        };
        let name = super::super::load::reference(v, table, &at)?;
        if db.entry(table, &name).is_none() {
            return Err(Bad::new(at, format!("unknown {table} '{name}'")));
        }
        let contents = map_contents(db, table, &name, max)?;
        match &chosen {
            None => chosen = Some((name, contents, at)),
            Some((first, c, fat)) if *c != contents => {
                return Err(Bad::new(
                    at,
                    format!("'{name}' differs from '{first}' bound by {fat}: pfcswitch has one {table} for every port"),
                ))
            }
            Some(_) => {}
        }
    }
    let Some((name, contents, _)) = chosen else {
        for k in db.keys(table) {
            db.use_all(table, k);
            cx.note(NoteKind::Approximated, format!("{table}|{k}: bound by no port (PORT_QOS_MAP), not used"));
        }
        return Ok(None);
    };
    unbound.retain(|p| cx.port_index.contains_key(p));
    if !unbound.is_empty() && db.entry("PORT_QOS_MAP", "global").and_then(|e| e.fields.get(field)).is_none() {
        cx.note(
            NoteKind::Approximated,
            format!(
                "PORT_QOS_MAP|*|{field}: {} port(s) without one (e.g. {}) use '{name}' too",
                unbound.len(),
                unbound[0]
            ),
        );
    }
    for k in db.keys(table) {
        if k != name {
            db.use_all(table, k);
        }
    }
    Ok(Some((name, contents)))
}

pub(super) fn qos(cx: &mut Cx) -> BResult<()> {
    let db = cx.db;
    let defaults = crate::config::QosConfig::default();
    let mut tc_to_queue = defaults.tc_to_queue;
    let mut checks = Vec::new();
    for &(field, table, key, max) in MAPS {
        let Some((name, contents)) = chosen_map(cx, field, table, max)? else { continue };
        if key.is_empty() {
            checks.push((field, table, name, contents));
            continue;
        }
        let mut m = Table::new();
        for (k, v) in contents.iter().enumerate() {
            m.insert(k.to_string(), Value::Integer(*v as i64));
            cx.prov(join(&format!("qos.{key}"), &k.to_string()), At::field(table, &name, &k.to_string()));
        }
        match key {
            "tc_to_pg" => cx.tc_to_pg.copy_from_slice(&contents),
            "tc_to_queue" => tc_to_queue.copy_from_slice(&contents),
            _ => {}
        }
        cx.section("qos").insert(key.into(), Value::Table(m));
    }
    // pfcswitch pauses priority p from PG tc_to_pg[p] and stops queue tc_to_queue[p] on a
    // received PFC for p: SONiC's PFC maps must say the same for the enabled priorities.
    for (field, table, name, contents) in checks {
        let (ours, what) = if field == "pfc_to_pg_map" {
            (cx.tc_to_pg, "TC_TO_PRIORITY_GROUP_MAP puts TC {p} in PG {o}")
        } else {
            (tc_to_queue, "TC_TO_QUEUE_MAP puts TC {p} in queue {o}")
        };
        let mut enabled = BTreeSet::new();
        for port in &cx.ports {
            if let Some(v) = db.entry("PORT_QOS_MAP", port).and_then(|e| e.fields.get("pfc_enable")) {
                let at = At::field("PORT_QOS_MAP", port, "pfc_enable");
                enabled.extend(prio_list(&v.value, &at)?);
            }
        }
        for p in enabled {
            let (theirs, o) = (contents[p as usize], ours[p as usize]);
            if theirs != o {
                return Err(Bad::new(
                    At::field(table, &name, &p.to_string()),
                    format!(
                        "priority {p} → {theirs}, but {}: pfcswitch ties PFC priority {p} to TC {p}",
                        what.replace("{p}", &p.to_string()).replace("{o}", &o.to_string())
                    ),
                ));
            }
        }
    }
    trust(cx)?;
    queues(cx)?;
    wred_profiles(cx)
}

/// A port binding a DOT1P_TO_TC_MAP and no DSCP_TO_TC_MAP classifies by PCP.
fn trust(cx: &mut Cx) -> BResult<()> {
    let db = cx.db;
    for i in 0..cx.ports.len() {
        let p = &cx.ports[i];
        let dot1p = db.entry("PORT_QOS_MAP", p).is_some_and(|e| e.fields.contains_key("dot1p_to_tc_map"));
        let dscp = db.entry("PORT_QOS_MAP", p).is_some_and(|e| e.fields.contains_key("dscp_to_tc_map"));
        if dot1p && !dscp {
            cx.port_tables[i].insert("trust".into(), Value::String("pcp".into()));
            cx.prov(format!("port[{i}].trust"), At::field("PORT_QOS_MAP", p, "dot1p_to_tc_map"));
        }
    }
    Ok(())
}

/// `0`, `3` or `0-2` → (lo, hi).
fn queue_range(s: &str, at: &At) -> BResult<(u8, u8)> {
    let (a, b) = s.split_once('-').unwrap_or((s, s));
    let (lo, hi) = (uint(a, at)?, uint(b, at)?);
    if lo > hi || hi > 7 {
        return Err(Bad::new(at.clone(), format!("'{s}' is not a queue or a range of queues within 0..=7")));
    }
    Ok((lo as u8, hi as u8))
}

/// QUEUE|port|q: its scheduler (one per queue for the whole switch) and WRED profile.
fn queues(cx: &mut Cx) -> BResult<()> {
    let db = cx.db;
    let mut sched: [Option<(String, At)>; 8] = Default::default();
    let mut used_sched = BTreeSet::new();
    let mut keys: Vec<&str> = db.keys("QUEUE");
    keys.sort_by_key(|k| natural_key(k));
    for key in keys {
        let kat = At::key("QUEUE", key);
        let (port, range) = key
            .rsplit_once('|')
            .ok_or_else(|| Bad::new(kat.clone(), "key is not '<port>|<queue>' or '<port>|<a>-<b>'"))?;
        cx.port(port, &kat)?;
        let (lo, hi) = queue_range(range, &kat)?;
        if let Some(v) = db.get("QUEUE", key, "scheduler") {
            let at = At::field("QUEUE", key, "scheduler");
            let name = super::super::load::reference(v, "SCHEDULER", &at)?;
            if db.entry("SCHEDULER", &name).is_none() {
                return Err(Bad::new(at, format!("unknown SCHEDULER '{name}'")));
            }
            for q in lo..=hi {
                match &sched[q as usize] {
                    None => sched[q as usize] = Some((name.clone(), at.clone())),
                    Some((first, fat)) if *first != name && scheduler_of(db, first) != scheduler_of(db, &name) => {
                        return Err(Bad::new(
                            at,
                            format!(
                                "'{name}' differs from '{first}' bound by {fat}: pfcswitch has one scheduler per queue for every port"
                            ),
                        ))
                    }
                    Some(_) => {}
                }
            }
            used_sched.insert(name);
        }
        if let Some(v) = db.get("QUEUE", key, "wred_profile") {
            let at = At::field("QUEUE", key, "wred_profile");
            let name = super::super::load::reference(v, "WRED_PROFILE", &at)?;
            let mut b = Table::new();
            b.insert("wred_profile".into(), Value::String(name));
            let k = if lo == hi { format!("{port}|{lo}") } else { format!("{port}|{lo}-{hi}") };
            cx.prov(join("qos.queue", &k), at);
            section(cx.section("qos"), "queue").insert(k, Value::Table(b));
        }
    }
    for (q, s) in sched.iter().enumerate() {
        let Some((name, _)) = s else { continue };
        let at = At::key("SCHEDULER", name);
        let mut t = Table::new();
        let kind = db.get("SCHEDULER", name, "type").unwrap_or("");
        t.insert("type".into(), Value::String(kind.to_string()));
        if let Some(w) = db.get("SCHEDULER", name, "weight") {
            t.insert("weight".into(), Value::String(w.to_string()));
        }
        let path = join("qos.scheduler", &q.to_string());
        cx.prov(path.clone(), at);
        cx.prov(format!("{path}.type"), At::field("SCHEDULER", name, "type"));
        cx.prov(format!("{path}.weight"), At::field("SCHEDULER", name, "weight"));
        section(cx.section("qos"), "scheduler").insert(q.to_string(), Value::Table(t));
    }
    for k in db.keys("SCHEDULER") {
        if !used_sched.contains(k) {
            db.use_all("SCHEDULER", k);
            cx.note(NoteKind::Unsupported, format!("SCHEDULER|{k}: referenced by no QUEUE, not used"));
        }
    }
    Ok(())
}

fn scheduler_of(db: &Db, name: &str) -> Option<(String, Option<String>)> {
    let e = db.entry("SCHEDULER", name)?;
    Some((e.fields.get("type")?.value.to_ascii_lowercase(), e.fields.get("weight").map(|w| w.value.clone())))
}

const WRED_FIELDS: &[&str] = &[
    "green_min_threshold",
    "green_max_threshold",
    "green_drop_probability",
    "yellow_min_threshold",
    "yellow_max_threshold",
    "yellow_drop_probability",
    "red_min_threshold",
    "red_max_threshold",
    "red_drop_probability",
    "ecn",
];

fn wred_profiles(cx: &mut Cx) -> BResult<()> {
    let db = cx.db;
    for name in db.keys("WRED_PROFILE") {
        let path = join("qos.wred_profile", name);
        cx.prov(path.clone(), At::key("WRED_PROFILE", name));
        let mut t = Table::new();
        for f in WRED_FIELDS {
            if let Some(v) = db.get("WRED_PROFILE", name, f) {
                t.insert(f.to_string(), Value::String(v.to_string()));
                cx.prov(join(&path, f), At::field("WRED_PROFILE", name, f));
            }
        }
        for c in ["green", "yellow", "red"] {
            let f = format!("wred_{c}_enable");
            if let Some(v) = db.get("WRED_PROFILE", name, &f) {
                let at = At::field("WRED_PROFILE", name, &f);
                let b = match v {
                    "true" => true,
                    "false" => false,
                    other => return Err(Bad::new(at, format!("'{other}' is not true or false"))),
                };
                t.insert(f.clone(), Value::Boolean(b));
                cx.prov(join(&path, &f), at);
            }
        }
        section(cx.section("qos"), "wred_profile").insert(name.to_string(), Value::Table(t));
    }
    Ok(())
}

/// `PFC_WD|<port>` (`action`, `detection_time`, `restoration_time`) and
/// `PFC_WD|GLOBAL|POLL_INTERVAL` → `[pfcwd]`, one setting for the switch.
pub(super) fn pfcwd(cx: &mut Cx) -> BResult<()> {
    let db = cx.db;
    let mut t = Table::new();
    let mut first: HashMap<&str, (String, At)> = HashMap::new();
    let mut watched = BTreeSet::new();
    let mut keys: Vec<&str> = db.keys("PFC_WD");
    keys.sort_by_key(|k| natural_key(k));
    for key in keys {
        if key == "GLOBAL" {
            if let Some(v) = db.get("PFC_WD", key, "POLL_INTERVAL") {
                let at = At::field("PFC_WD", key, "POLL_INTERVAL");
                t.insert("poll_interval".into(), Value::Integer(uint(v, &at)?));
                cx.prov("pfcwd.poll_interval", at);
            }
            continue;
        }
        cx.port(key, &At::key("PFC_WD", key))?;
        watched.insert(key.to_string());
        for f in ["action", "detection_time", "restoration_time"] {
            let Some(v) = db.get("PFC_WD", key, f) else { continue };
            let at = At::field("PFC_WD", key, f);
            if let Some((prev, pat)) = first.get(f) {
                if prev != v {
                    return Err(Bad::new(
                        at,
                        format!("'{v}' differs from '{prev}' given by {pat}: pfcswitch has one watchdog setting for every port"),
                    ));
                }
                continue;
            }
            let value = if f == "action" { Value::String(v.to_string()) } else { Value::Integer(uint(v, &at)?) };
            t.insert(f.into(), value);
            cx.prov(format!("pfcwd.{f}"), at.clone());
            first.insert(f, (v.to_string(), at));
        }
    }
    if watched.is_empty() {
        return Ok(());
    }
    let unwatched: Vec<&String> = cx
        .ports
        .iter()
        .enumerate()
        .filter(|(i, p)| {
            !watched.contains(*p)
                && cx.port_tables[*i].get("pfc_enable").and_then(Value::as_array).is_some_and(|a| !a.is_empty())
        })
        .map(|(_, p)| p)
        .collect();
    if !unwatched.is_empty() {
        cx.note(
            NoteKind::Approximated,
            format!(
                "PFC_WD: {} PFC-enabled port(s) without an entry (e.g. {}) are watched too: pfcswitch's watchdog covers every lossless queue",
                unwatched.len(),
                unwatched[0]
            ),
        );
    }
    cx.out.insert("pfcwd".into(), Value::Table(t));
    Ok(())
}
