//! `show lldp neighbors` and `show dcbx`: each port's peer and its DCBX TLVs.

use serde_json::{Map, Value};

use super::table::{jstr, table, truthy, yes_no};

/// lldpctl's `show neighbors` layout, one block per port with a peer.
pub(super) fn render_lldp_neighbors(ps: &[(String, Map<String, Value>)]) -> String {
    if ps.iter().all(|(_, o)| o.get("lldp").and_then(Value::as_str) == Some("off")) {
        return "LLDP is off (no [lldp] enabled = true in the configuration)\n".to_string();
    }
    let bar = "-".repeat(79);
    let mut s = format!("{bar}\nLLDP neighbors:\n{bar}\n");
    for (p, o) in ps {
        let Some(n) = o.get("neighbor").filter(|n| n.is_object()) else { continue };
        s.push_str(&format!("Interface:    {p}, via: LLDP, age: {} s\n", jstr(&n["age_s"])));
        s.push_str("  Chassis:\n");
        s.push_str(&format!("    ChassisID:    {}\n", jstr(&n["chassis_id"])));
        s.push_str(&format!("    SysName:      {}\n", jstr(&n["system_name"])));
        s.push_str(&format!("    SysDescr:     {}\n", jstr(&n["system_description"])));
        s.push_str("  Port:\n");
        s.push_str(&format!("    PortID:       {}\n", jstr(&n["port_id"])));
        s.push_str(&format!("    PortDescr:    {}\n", jstr(&n["port_description"])));
        s.push_str(&format!("    TTL:          {}\n", jstr(&n["ttl"])));
        if let Some(pfc) = n.get("pfc").filter(|v| v.is_object()) {
            s.push_str(&format!(
                "  PFC:          willing {}, MBC {}, capability {}, enabled {}\n",
                yes_no(&pfc["willing"]),
                yes_no(&pfc["mbc"]),
                jstr(&pfc["cap"]),
                jstr(&pfc["enable"])
            ));
        }
        s.push_str(&format!("{bar}\n"));
    }
    s
}

/// ETS as `TC:tsa/bw%` for the TCs in use.
fn ets_text(e: &Value) -> String {
    let (Some(bw), Some(tsa)) = (e["tc_bw"].as_array(), e["tsa"].as_array()) else { return "-".into() };
    bw.iter()
        .zip(tsa)
        .enumerate()
        .map(|(tc, (b, t))| match t.as_str() {
            Some("ets") => format!("{tc}:{}%", jstr(b)),
            Some(t) => format!("{tc}:{t}"),
            None => format!("{tc}:?"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn app_text(a: &Value) -> String {
    let Some(a) = a.as_array() else { return "-".into() };
    let e: Vec<String> = a
        .iter()
        .map(|e| {
            let what = match e["selector"].as_u64() {
                Some(1) => "ethertype",
                Some(2) => "tcp",
                Some(3) => "udp",
                Some(4) => "tcp/udp",
                Some(5) => "dscp",
                _ => "sel?",
            };
            format!("{what} {}→{}", jstr(&e["protocol"]), jstr(&e["priority"]))
        })
        .collect();
    if e.is_empty() {
        "none".into()
    } else {
        e.join(", ")
    }
}

/// `show dcbx`: per port what we send and what the peer sent (PFC, ETS, Application), the
/// PFC mismatch flagged in the table and again as a warning line below it.
pub(super) fn render_dcbx(ps: &[(String, Map<String, Value>)]) -> String {
    if ps.iter().all(|(_, o)| o.get("lldp").and_then(Value::as_str) == Some("off")) {
        return "LLDP is off (no [lldp] enabled = true in the configuration): no DCBX\n".to_string();
    }
    let h: Vec<String> =
        ["Port", "Peer", "PFC local", "PFC peer", "Peer willing", "Status"].iter().map(|s| s.to_string()).collect();
    let mut rows = Vec::new();
    let mut detail = String::new();
    let mut warnings = Vec::new();
    for (p, o) in ps {
        let local = o.get("local").cloned().unwrap_or(Value::Null);
        let peer = o.get("neighbor").cloned().unwrap_or(Value::Null);
        let mismatch = o.get("pfc_mismatch").is_some_and(truthy);
        let peer_name = if peer.is_object() {
            format!("{}/{}", jstr(&peer["system_name"]), jstr(&peer["port_id"]))
        } else {
            "-".into()
        };
        let status = if !peer.is_object() {
            "no peer"
        } else if mismatch {
            "PFC MISMATCH"
        } else {
            "ok"
        };
        rows.push(vec![
            p.clone(),
            peer_name,
            jstr(&local["pfc"]["enable"]),
            if peer["pfc"].is_object() { jstr(&peer["pfc"]["enable"]) } else { "-".into() },
            if peer["pfc"].is_object() { yes_no(&peer["pfc"]["willing"]) } else { "-".into() },
            status.into(),
        ]);
        if mismatch {
            warnings.push(format!(
                "warning: {p}: the peer's PFC enable set ({}) differs from ours ({})\n",
                jstr(&peer["pfc"]["enable"]),
                jstr(&local["pfc"]["enable"])
            ));
        }
        detail.push_str(&format!("{p}\n"));
        detail.push_str(&format!("  ETS local:  {}\n", ets_text(&local["ets_config"])));
        if peer.is_object() {
            detail.push_str(&format!("  ETS peer:   {}\n", ets_text(&peer["ets_config"])));
        }
        detail.push_str(&format!("  App local:  {}\n", app_text(&local["app"])));
        if peer.is_object() {
            detail.push_str(&format!("  App peer:   {}\n", app_text(&peer["app"])));
        }
    }
    format!("{}\n{detail}{}", table(&h, &rows), warnings.concat())
}
