//! BUFFER_POOL, BUFFER_PROFILE, BUFFER_PG, BUFFER_QUEUE and the port profile lists →
//! `[buffer]`; the lossless PG profiles buffermgrd would make are generated.

use super::*;
use crate::config::defaults;
use std::collections::BTreeSet;

const TABLES: &[&str] = &["BUFFER_POOL", "BUFFER_PROFILE", "BUFFER_PG", "BUFFER_QUEUE"];

pub(super) fn buffer(cx: &mut Cx) -> BResult<()> {
    let db = cx.db;
    if !TABLES.iter().any(|t| db.has(t)) {
        cx.note(
            NoteKind::Approximated,
            "BUFFER_POOL, BUFFER_PROFILE, BUFFER_PG, BUFFER_QUEUE: absent: pfcswitch's generated SONiC-like layout \
             (12 MiB, lossless PGs for pfc_enable, headroom computed)",
        );
        return Ok(());
    }
    let mut buf = Table::new();
    let mut total: u64 = 0;
    let mut pools = Table::new();
    let mut ingress_pools = Vec::new();
    for name in db.keys("BUFFER_POOL") {
        let at = |f: &str| At::field("BUFFER_POOL", name, f);
        let path = join("buffer.pool", name);
        cx.prov(path.clone(), At::key("BUFFER_POOL", name));
        let mut t = Table::new();
        let size = db.get("BUFFER_POOL", name, "size").ok_or_else(|| {
            Bad::new(
                at("size"),
                "missing field (pfcswitch needs every pool's size; the dynamic model computes it at run time)",
            )
        })?;
        total += uint(size, &at("size"))? as u64;
        t.insert("size".into(), Value::String(size.to_string()));
        cx.prov(join(&path, "size"), at("size"));
        let kind = db.get("BUFFER_POOL", name, "type").unwrap_or("");
        if kind != "ingress" && kind != "egress" {
            return Err(Bad::new(at("type"), format!("'{kind}' is not ingress or egress")));
        }
        t.insert("type".into(), Value::String(kind.to_string()));
        cx.prov(join(&path, "type"), at("type"));
        if kind == "ingress" {
            ingress_pools.push(name.to_string());
        }
        if let Some(m) = db.get("BUFFER_POOL", name, "mode") {
            t.insert("mode".into(), Value::String(m.to_string()));
            cx.prov(join(&path, "mode"), at("mode"));
        }
        if let Some(x) = db.get("BUFFER_POOL", name, "xoff") {
            // SONiC's shared headroom pool: lossless PGs draw their headroom from it.
            t.insert("xoff".into(), Value::String(x.to_string()));
            cx.prov(join(&path, "xoff"), at("xoff"));
            buf.insert("headroom_policy".into(), Value::String("shared_pool".into()));
            cx.prov("buffer.headroom_policy", at("xoff"));
        }
        pools.insert(name.to_string(), Value::Table(t));
    }
    if total > 0 {
        buf.insert("total_size".into(), Value::Integer(total as i64));
        cx.note(
            NoteKind::Approximated,
            format!("BUFFER_POOL: buffer.total_size = the pools' sizes added up ({total} B); SONiC has no total, the ASIC's buffer is"),
        );
    }
    cx.prov("buffer.pool", At::table("BUFFER_POOL"));
    cx.prov("buffer", At::table("BUFFER_POOL"));
    buf.insert("pool".into(), Value::Table(pools));

    let mut profiles = Table::new();
    for name in db.keys("BUFFER_PROFILE") {
        let path = join("buffer.profile", name);
        cx.prov(path.clone(), At::key("BUFFER_PROFILE", name));
        let mut t = Table::new();
        if let Some(p) = db.get("BUFFER_PROFILE", name, "pool") {
            let at = At::field("BUFFER_PROFILE", name, "pool");
            t.insert("pool".into(), Value::String(super::super::load::reference(p, "BUFFER_POOL", &at)?));
            cx.prov(join(&path, "pool"), at);
        }
        for f in ["size", "xon", "xoff", "xon_offset", "dynamic_th", "static_th"] {
            if let Some(v) = db.get("BUFFER_PROFILE", name, f) {
                t.insert(f.into(), Value::String(v.to_string()));
                cx.prov(join(&path, f), At::field("BUFFER_PROFILE", name, f));
            }
        }
        if db.get("BUFFER_PROFILE", name, "headroom_type") == Some("dynamic") && !t.contains_key("xoff") {
            cx.note(
                NoteKind::Approximated,
                format!(
                    "BUFFER_PROFILE|{name}|headroom_type: 'dynamic': xoff/xon from pfcswitch's headroom calculator"
                ),
            );
        }
        profiles.insert(name.to_string(), Value::Table(t));
    }

    // Bindings; a PG bound to NULL (dynamic model) is left to the generated profile.
    let mut bound: BTreeSet<(usize, u8)> = BTreeSet::new();
    for (table, section_name) in [("BUFFER_PG", "pg"), ("BUFFER_QUEUE", "queue")] {
        let mut out = Table::new();
        for key in db.keys(table) {
            let kat = At::key(table, key);
            let (ports, range) = key
                .rsplit_once('|')
                .ok_or_else(|| Bad::new(kat.clone(), "key is not '<port>|<n>' or '<port>|<a>-<b>'"))?;
            let (lo, hi) = range_of(range, &kat)?;
            let at = At::field(table, key, "profile");
            let prof = db.get(table, key, "profile").ok_or_else(|| Bad::new(at.clone(), "missing field"))?;
            let prof = if prof == "NULL" || prof == "[BUFFER_PROFILE|NULL]" {
                None
            } else {
                Some(super::super::load::reference(prof, "BUFFER_PROFILE", &at)?)
            };
            for port in ports.split(',') {
                let pi = cx.port(port, &kat)?;
                let Some(prof) = &prof else { continue };
                if table == "BUFFER_PG" {
                    bound.extend((lo..=hi).map(|n| (pi, n)));
                }
                let k = format!("{port}|{range}");
                cx.prov(join(&format!("buffer.{section_name}"), &k), at.clone());
                out.insert(k, Value::String(prof.clone()));
            }
        }
        buf.insert(section_name.into(), Value::Table(out));
    }
    lossless_pgs(cx, &mut profiles, &mut buf, &bound, &ingress_pools)?;
    buf.insert("profile".into(), Value::Table(profiles));
    profile_lists(cx)?;
    cx.out.insert("buffer".into(), Value::Table(buf));
    Ok(())
}

fn range_of(s: &str, at: &At) -> BResult<(u8, u8)> {
    let (a, b) = s.split_once('-').unwrap_or((s, s));
    let (lo, hi) = (uint(a, at)?, uint(b, at)?);
    if lo > hi || hi > 7 {
        return Err(Bad::new(at.clone(), format!("'{s}' is not a number or a range within 0..=7")));
    }
    Ok((lo as u8, hi as u8))
}

/// Each PFC-enabled priority's PG that BUFFER_PG leaves unbound gets the profile
/// buffermgrd would give it, `pg_lossless_<speed>_<cable>_profile`: the file's own when it
/// defines one of that name, else one generated with the headroom left to pfcswitch's
/// calculator (buffermgrd reads it from the platform's pg_profile_lookup.ini).
fn lossless_pgs(
    cx: &mut Cx,
    profiles: &mut Table,
    buf: &mut Table,
    bound: &BTreeSet<(usize, u8)>,
    ingress_pools: &[String],
) -> BResult<()> {
    for i in 0..cx.ports.len() {
        let t = &cx.port_tables[i];
        let prios: Vec<i64> = t
            .get("pfc_enable")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_integer).collect())
            .unwrap_or_default();
        let pgs: BTreeSet<u8> = prios.iter().map(|&p| cx.tc_to_pg[p as usize] & 7).collect();
        let speed = t.get("speed").and_then(Value::as_str).unwrap_or("").to_string();
        let cable = t.get("cable_length").and_then(Value::as_str).unwrap_or(defaults::CABLE_LENGTH).to_string();
        let port = cx.ports[i].clone();
        for pg in pgs {
            if bound.contains(&(i, pg)) {
                continue;
            }
            let name = format!("pg_lossless_{speed}_{cable}_profile");
            if !profiles.contains_key(&name) {
                let pool =
                    ingress_pools.iter().find(|p| *p == "ingress_lossless_pool").or(ingress_pools.first()).ok_or_else(
                        || {
                            Bad::new(
                                At::table("BUFFER_POOL"),
                                format!(
                                "no ingress pool for the lossless PG {pg} of {port} (PORT_QOS_MAP|{port}|pfc_enable)"
                            ),
                            )
                        },
                    )?;
                let mut p = Table::new();
                p.insert("pool".into(), Value::String(pool.clone()));
                p.insert("size".into(), Value::Integer(defaults::LOSSLESS_PRIVATE as i64));
                p.insert("dynamic_th".into(), Value::Integer(defaults::LOSSLESS_DYNAMIC_TH as i64));
                profiles.insert(name.clone(), Value::Table(p));
                cx.note(
                    NoteKind::Approximated,
                    format!(
                        "BUFFER_PROFILE|{name}: not in CONFIG_DB (buffermgrd makes it from the platform's pg_profile_lookup.ini): \
                         generated in '{pool}' with size {}, dynamic_th {}, xon/xoff from pfcswitch's headroom calculator",
                        defaults::LOSSLESS_PRIVATE,
                        defaults::LOSSLESS_DYNAMIC_TH
                    ),
                );
            }
            let k = format!("{port}|{pg}");
            cx.prov(join("buffer.pg", &k), At::field("PORT_QOS_MAP", &port, "pfc_enable"));
            section(buf, "pg").insert(k, Value::String(name));
        }
    }
    Ok(())
}

/// BUFFER_PORT_INGRESS/EGRESS_PROFILE_LIST: checked (ports and profiles exist), not
/// applied: pfcswitch has no per-port pool reservation.
fn profile_lists(cx: &mut Cx) -> BResult<()> {
    let db = cx.db;
    for table in ["BUFFER_PORT_INGRESS_PROFILE_LIST", "BUFFER_PORT_EGRESS_PROFILE_LIST"] {
        if !db.has(table) {
            continue;
        }
        for key in db.keys(table) {
            let at = At::field(table, key, "profile_list");
            for port in key.split(',') {
                cx.port(port, &At::key(table, key))?;
            }
            let list = db.get(table, key, "profile_list").ok_or_else(|| Bad::new(at.clone(), "missing field"))?;
            for p in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let name = super::super::load::reference(p, "BUFFER_PROFILE", &at)?;
                if db.entry("BUFFER_PROFILE", &name).is_none() {
                    return Err(Bad::new(at, format!("unknown BUFFER_PROFILE '{name}'")));
                }
            }
        }
        cx.note(
            NoteKind::Approximated,
            format!("{table}: checked, not applied: pfcswitch has no per-port pool reservation (the PG/queue profiles still apply)"),
        );
    }
    Ok(())
}
