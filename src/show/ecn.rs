//! `pfcswitch ecn`: the WRED profiles of a configuration (no running switch needed).

use super::table::table;

/// `pfcswitch ecn`: the WRED profiles (SONiC `ecnconfig -l` fields) and which egress
/// queues use them.
pub fn render_ecn(cfg: &crate::config::Config) -> String {
    let q = &cfg.qos;
    if q.wred_profiles.is_empty() {
        return "No WRED profiles ([qos.wred_profile.<NAME>]): ECN marking is off.\n".to_string();
    }
    let opt = |v: Option<u64>| v.map_or("N/A".to_string(), |b| b.to_string());
    let mut s = String::new();
    for p in &q.wred_profiles {
        s.push_str(&format!("Profile: {}\n", p.name));
        let rows: Vec<Vec<String>> = [("green", &p.green), ("yellow", &p.yellow), ("red", &p.red)]
            .iter()
            .flat_map(|(c, w)| {
                [
                    vec![format!("{c}_min_threshold"), opt(w.min_threshold)],
                    vec![format!("{c}_max_threshold"), opt(w.max_threshold)],
                    vec![format!("{c}_drop_probability"), w.drop_probability.to_string()],
                    vec![format!("wred_{c}_enable"), w.enabled.to_string()],
                ]
            })
            .chain([vec!["ecn".to_string(), p.ecn.as_str().to_string()]])
            .collect();
        s.push_str(&table(&["Field".to_string(), "Value".to_string()], &rows));
        s.push('\n');
    }
    let mut rows = Vec::new();
    for (pi, qs) in q.queue_wred.iter().enumerate() {
        for (qi, b) in qs.iter().enumerate() {
            if let Some(i) = b {
                rows.push(vec![cfg.ports[pi].name.clone(), format!("UC{qi}"), q.wred_profiles[*i].name.clone()]);
            }
        }
    }
    if rows.is_empty() {
        s.push_str("No queue uses a WRED profile ([qos.queue] \"<port>|<q>\" = { wred_profile = ... }).\n");
    } else {
        s.push_str(&table(&["Port".to_string(), "TxQ".to_string(), "wred_profile".to_string()], &rows));
    }
    s
}
