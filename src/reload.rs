//! `pfcswitch config reload FILE` (the service's `ExecReload`), the pure part: the live
//! changes that turn the running configuration into FILE, one [`Change`] per table, or a
//! one-line refusal when FILE differs in anything that cannot change live (a restart's
//! business). Each change then goes through the same path as `pfcswitch config ...`
//! (docs/live-config.md), validated there again.

use crate::reconfig::{Change, Kind, Target};

/// Every live-changeable table `top` holds, by target, with the table.
fn targets(top: &toml::Table) -> Vec<(Target, &toml::Table)> {
    let mut out = Vec::new();
    let sub = |path: &[&str]| -> Option<&toml::Table> {
        let mut t = top;
        for k in path {
            t = t.get(*k)?.as_table()?;
        }
        Some(t)
    };
    for (path, make) in [
        (&["buffer", "profile"][..], Target::Profile as fn(String) -> Target),
        (&["qos", "wred_profile"][..], Target::Wred),
    ] {
        if let Some(t) = sub(path) {
            for (name, v) in t {
                if let Some(tt) = v.as_table() {
                    out.push((make(name.clone()), tt));
                }
            }
        }
    }
    if let Some(t) = sub(&["pfcwd"]) {
        out.push((Target::Pfcwd, t));
    }
    for p in top.get("port").and_then(toml::Value::as_array).into_iter().flatten() {
        if let (Some(t), Some(name)) = (p.as_table(), p.get("name").and_then(toml::Value::as_str)) {
            out.push((Target::Port(name.to_string()), t));
        }
    }
    out
}

/// The mutable table of `target` in `top`, if it has one.
fn table_mut<'a>(top: &'a mut toml::Table, target: &Target) -> Option<&'a mut toml::Table> {
    let path: Vec<&str> = match target {
        Target::Profile(n) => vec!["buffer", "profile", n],
        Target::Wred(n) => vec!["qos", "wred_profile", n],
        Target::Pfcwd => vec!["pfcwd"],
        Target::Port(n) => {
            return top
                .get_mut("port")?
                .as_array_mut()?
                .iter_mut()
                .filter_map(toml::Value::as_table_mut)
                .find(|t| t.get("name").and_then(toml::Value::as_str) == Some(n.as_str()))
        }
    };
    let mut t = top;
    for k in path {
        t = t.get_mut(k)?.as_table_mut()?;
    }
    Some(t)
}

/// `v` as `pfcswitch config` takes it on the command line, for a key of `kind`.
fn typed(kind: Kind, v: &toml::Value) -> Option<String> {
    Some(match (kind, v) {
        (Kind::Prios, toml::Value::Array(a)) if a.is_empty() => "none".to_string(),
        (Kind::Prios, toml::Value::Array(a)) => {
            a.iter().map(|p| p.as_integer().map(|i| i.to_string())).collect::<Option<Vec<_>>>()?.join(":")
        }
        (_, toml::Value::String(s)) if !s.contains(',') => s.clone(),
        (_, toml::Value::Integer(i)) => i.to_string(),
        (_, toml::Value::Float(f)) => f.to_string(),
        (_, toml::Value::Boolean(b)) => b.to_string(),
        _ => return None,
    })
}

/// The first place where `a` and `b` differ, as a TOML path (`port[1].mtu`, `eal.args`).
fn first_difference(a: &toml::Value, b: &toml::Value, path: &str) -> Option<String> {
    let join = |k: &str| if path.is_empty() { k.to_string() } else { format!("{path}.{k}") };
    match (a, b) {
        (toml::Value::Table(x), toml::Value::Table(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(va), Some(vb)) => first_difference(va, vb, &join(k)),
                _ => Some(join(k)),
            })
        }
        (toml::Value::Array(x), toml::Value::Array(y)) if x.len() == y.len() && x.iter().all(|v| v.is_table()) => {
            x.iter().zip(y).enumerate().find_map(|(i, (va, vb))| first_difference(va, vb, &format!("{path}[{i}]")))
        }
        _ if a == b => None,
        _ => Some(path.to_string()),
    }
}

/// The changes that make `running` (the switch's running text) into `file` (the new file's
/// text, named `origin` in errors), or one line saying why it cannot be done live.
pub fn reload_changes(running: &str, file: &str, origin: &str) -> Result<Vec<Change>, String> {
    // The file must be valid on its own, with the file's own one-line errors.
    crate::config::from_str(file, origin).map_err(|e| e.to_string())?;
    let new: toml::Table = toml::from_str(file).map_err(|e| format!("{origin}: {}", e.message().trim()))?;
    let mut cur: toml::Table =
        toml::from_str(running).map_err(|e| format!("running configuration: {}", e.message().trim()))?;
    let mut changes = Vec::new();
    for (target, t_new) in targets(&new) {
        // A table the running configuration lacks cannot be created live: left to the
        // comparison below, which names it.
        let Some(t_cur) = table_mut(&mut cur, &target) else { continue };
        let mut sets = Vec::new();
        for &(key, kind) in target.keys() {
            match (t_new.get(key), t_cur.get(key)) {
                (Some(vn), vc) if vc != Some(vn) => {
                    let v = typed(kind, vn).ok_or_else(|| format!("{origin}: {key}: value cannot be sent live"))?;
                    sets.push((key.to_string(), v));
                    t_cur.insert(key.to_string(), vn.clone());
                }
                // A profile holds one threshold: giving the other replaces it.
                (None, Some(_)) if key == "dynamic_th" && t_new.contains_key("static_th") => {
                    t_cur.remove(key);
                }
                (None, Some(_)) if key == "static_th" && t_new.contains_key("dynamic_th") => {
                    t_cur.remove(key);
                }
                _ => {}
            }
        }
        if !sets.is_empty() {
            changes.push(Change { target, sets });
        }
    }
    if let Some(path) = first_difference(&toml::Value::Table(cur), &toml::Value::Table(new), "") {
        return Err(format!(
            "{origin}: {path}: differs from the running configuration and cannot change live (restart the switch)"
        ));
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUNNING: &str = r#"
[eal]
args = ["--no-huge", "-m", "512", "--no-pci", "--lcores=0@0,1@1"]

[[port]]
name = "Ethernet0"
devargs = "net_null0"
speed = "100G"
mtu = 1500

[[port]]
name = "Ethernet4"
devargs = "net_null1"
speed = "100G"
mtu = 1500
cable_length = "5m"
"#;

    #[test]
    fn the_same_file_is_no_change() {
        assert_eq!(reload_changes(RUNNING, RUNNING, "f.toml"), Ok(vec![]));
    }

    #[test]
    fn live_keys_become_one_change_per_table() {
        let file = RUNNING
            .replace("cable_length = \"5m\"", "cable_length = \"300m\"\npfc_enable = [3]")
            .replace("name = \"Ethernet0\"", "name = \"Ethernet0\"\npfc_enable = []");
        let c = reload_changes(RUNNING, &file, "f.toml").unwrap();
        assert_eq!(
            c,
            vec![
                Change::new(Target::Port("Ethernet0".into()), &[("pfc_enable", "none")]),
                Change::new(Target::Port("Ethernet4".into()), &[("cable_length", "300m"), ("pfc_enable", "3")]),
            ]
        );
        // What `config interface cable-length` sends.
        assert_eq!(c[1].to_param(), "port,Ethernet4,cable_length=300m,pfc_enable=3");
    }

    #[test]
    fn anything_else_is_refused_in_one_line_naming_it() {
        let file = RUNNING.replace("mtu = 1500\ncable_length", "mtu = 9100\ncable_length");
        assert_eq!(
            reload_changes(RUNNING, &file, "f.toml"),
            Err("f.toml: port[1].mtu: differs from the running configuration and cannot change live (restart the switch)"
                .into())
        );
        let file = RUNNING.replace("\"-m\", \"512\"", "\"-m\", \"1024\"");
        assert!(reload_changes(RUNNING, &file, "f.toml").unwrap_err().starts_with("f.toml: eal.args: "));
        // A live key removed (back to its default) is not a change that can be sent.
        let file = RUNNING.replace("cable_length = \"5m\"\n", "");
        assert!(reload_changes(RUNNING, &file, "f.toml").unwrap_err().starts_with("f.toml: port[1].cable_length: "));
        // An invalid file: the file's own error.
        let file =
            RUNNING.replace("speed = \"100G\"\nmtu = 1500\ncable_length", "speed = \"100Q\"\nmtu = 1500\ncable_length");
        assert!(reload_changes(RUNNING, &file, "f.toml").unwrap_err().starts_with("f.toml: port[1].speed: "));
    }

    #[test]
    fn a_profile_switching_threshold_kind_is_one_change() {
        let running = format!(
            "{RUNNING}\n[buffer.pool.ingress_lossless_pool]\nsize = \"8MiB\"\ntype = \"ingress\"\nmode = \"dynamic\"\n\
             [buffer.profile.p]\npool = \"ingress_lossless_pool\"\nsize = 0\ndynamic_th = 0\n"
        );
        let file = running.replace("dynamic_th = 0", "static_th = 65536");
        let c = reload_changes(&running, &file, "f.toml");
        assert_eq!(c, Ok(vec![Change::new(Target::Profile("p".into()), &[("static_th", "65536")])]));
    }
}
