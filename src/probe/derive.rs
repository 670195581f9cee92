//! The configuration a probe runs: the user's file with every port on a net_pcap vdev
//! (burst in, frames out, all in the probe's directory), the stalled egress with
//! `tx_enable = false`, one worker polling the egress port first (so that the sink is
//! learned before the burst arrives), lossless unknown unicast dropped rather than
//! flooded (a flood would charge the PG once per copy), and optionally another headroom
//! mode. The buffer, QoS maps, speeds, cable lengths and MTUs stay as written: they are
//! what the thresholds depend on.

use std::path::Path;

use toml::{Table, Value};

/// What to run.
#[derive(Debug, Clone)]
pub struct Derive<'a> {
    /// Directory for the pcap files.
    pub dir: &'a Path,
    /// EAL file prefix of this run.
    pub file_prefix: &'a str,
    /// Index (in file order) of the port that stays stalled.
    pub egress: usize,
    /// `static`, `shared_pool` or `dsh` in place of the file's `[buffer] headroom_policy`.
    pub policy: Option<&'a str>,
    /// The EAL `--lcores` mapping (control lcore 0, worker lcore 1).
    pub lcores: &'a str,
}

/// Port keys that name things of the original device (its queues, its NIC).
const DEVICE_KEYS: [&str; 2] = ["control_tx_queue", "speed_mismatch"];

/// Sections the probe's bridged pcap run leaves out (see [`derive()`]).
const ROUTING_AND_L2_SECTIONS: [&str; 6] =
    ["interface", "control_plane", "vlan", "vlan_member", "vlan_interface", "lldp"];

/// The derived configuration, or what in the file prevents it.
pub fn derive(orig: &Table, d: &Derive) -> Result<Table, String> {
    let mut t = orig.clone();
    let eal = Table::from_iter([
        (
            "args".to_string(),
            Value::Array(
                ["--no-huge", "-m", "1024", "--no-pci", &format!("--lcores={}", d.lcores)]
                    .iter()
                    .map(|s| Value::String(s.to_string()))
                    .collect(),
            ),
        ),
        ("file_prefix".to_string(), Value::String(d.file_prefix.to_string())),
    ]);
    t.insert("eal".into(), Value::Table(eal));
    // The probe measures the lossless class on bridged pcap ports: routing (its kernel
    // namespace and representors), VLAN domains and LLDP are left out of the derived file.
    for k in ROUTING_AND_L2_SECTIONS {
        t.remove(k);
    }

    let ports = match t.get_mut("port") {
        Some(Value::Array(a)) if !a.is_empty() => a,
        _ => return Err("no [[port]] in the configuration".into()),
    };
    let mut names = Vec::new();
    for (i, p) in ports.iter_mut().enumerate() {
        let Value::Table(p) = p else { return Err(format!("port[{i}] is not a table")) };
        let name = p.get("name").and_then(Value::as_str).ok_or(format!("port[{i}] has no name"))?.to_string();
        let dir = d.dir.display();
        p.insert(
            "devargs".into(),
            Value::String(format!("net_pcap{i},rx_pcap={dir}/in{i}.pcap,tx_pcap={dir}/out{i}.pcap")),
        );
        for k in DEVICE_KEYS {
            p.remove(k);
        }
        p.remove("tx_enable");
        if i == d.egress {
            p.insert("tx_enable".into(), Value::Boolean(false));
        }
        names.push(name);
    }
    if d.egress >= names.len() {
        return Err(format!("egress port index {} out of range", d.egress));
    }

    // One worker: the egress port's queue first.
    let mut lcores = match t.remove("lcores") {
        Some(Value::Table(l)) => l,
        _ => Table::new(),
    };
    lcores.insert("control".into(), Value::Integer(0));
    let mut rx = vec![Value::String(format!("{}:0", names[d.egress]))];
    rx.extend(names.iter().enumerate().filter(|(i, _)| *i != d.egress).map(|(_, n)| Value::String(format!("{n}:0"))));
    let worker = Table::from_iter([
        ("lcore".to_string(), Value::Integer(1)),
        ("rx".to_string(), Value::Array(rx)),
        ("tx".to_string(), Value::Array(names.iter().map(|n| Value::String(n.clone())).collect())),
    ]);
    lcores.insert("worker".into(), Value::Array(vec![Value::Table(worker)]));
    t.insert("lcores".into(), Value::Table(lcores));

    let sw = t.entry("switch").or_insert_with(|| Value::Table(Table::new()));
    if let Value::Table(sw) = sw {
        sw.insert("flood_lossless".into(), Value::Boolean(false));
    }

    if let Some(policy) = d.policy {
        set_policy(&mut t, policy)?;
    }
    Ok(t)
}

/// `[buffer] headroom_policy = policy`, with what that mode needs: only `shared_pool`
/// keeps a pool `xoff` or `over_subscribe_ratio`; `shared_pool` without either gets
/// `over_subscribe_ratio = 2`.
fn set_policy(t: &mut Table, policy: &str) -> Result<(), String> {
    if !["static", "shared_pool", "dsh"].contains(&policy) {
        return Err(format!("--headroom-policy: '{policy}' is not one of static, shared_pool, dsh"));
    }
    let Value::Table(b) = t.entry("buffer").or_insert_with(|| Value::Table(Table::new())) else {
        return Err("[buffer] is not a table".into());
    };
    b.insert("headroom_policy".into(), Value::String(policy.into()));
    let mut pool_xoff = false;
    if let Some(Value::Table(pools)) = b.get_mut("pool") {
        for (_, p) in pools.iter_mut() {
            if let Value::Table(p) = p {
                if policy == "shared_pool" {
                    pool_xoff |= p.contains_key("xoff");
                } else {
                    p.remove("xoff");
                }
            }
        }
    }
    if policy != "shared_pool" {
        b.remove("over_subscribe_ratio");
    } else if !pool_xoff && !b.contains_key("over_subscribe_ratio") {
        b.insert("over_subscribe_ratio".into(), Value::Integer(2));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
[eal]
args = ["-l", "0,2"]
[[port]]
name = "Ethernet0"
devargs = "0000:3b:00.0"
speed = "100G"
control_tx_queue = true
[[port]]
name = "Ethernet4"
devargs = "0000:3b:00.1"
speed = "100G"
[lcores]
control = 0
control_nap = "1ms"
[[lcores.worker]]
lcore = 2
rx = ["Ethernet0:0", "Ethernet4:0"]
tx = ["Ethernet0", "Ethernet4"]
[buffer]
headroom_policy = "shared_pool"
[buffer.pool.ingress_lossless_pool]
size = "8MiB"
type = "ingress"
xoff = "1MiB"
"#;

    #[test]
    fn ports_on_pcap_egress_stalled_and_polled_first() {
        let orig: Table = FILE.parse().unwrap();
        let d = Derive { dir: Path::new("/tmp/x"), file_prefix: "p1", egress: 1, policy: None, lcores: "0@0,1@1" };
        let t = derive(&orig, &d).unwrap();
        let ports = t["port"].as_array().unwrap();
        assert_eq!(ports[0]["devargs"].as_str(), Some("net_pcap0,rx_pcap=/tmp/x/in0.pcap,tx_pcap=/tmp/x/out0.pcap"));
        assert!(ports[0].get("control_tx_queue").is_none() && ports[0].get("tx_enable").is_none());
        assert_eq!(ports[1]["tx_enable"].as_bool(), Some(false));
        let w = &t["lcores"]["worker"].as_array().unwrap()[0];
        assert_eq!(w["rx"].as_array().unwrap()[0].as_str(), Some("Ethernet4:0"));
        assert_eq!(t["lcores"]["control_nap"].as_str(), Some("1ms"));
        assert_eq!(t["switch"]["flood_lossless"].as_bool(), Some(false));
        assert_eq!(t["eal"]["file_prefix"].as_str(), Some("p1"));
        // A routed T0 file: no namespace, representors or VLAN domains in the probe's run.
        let mut routed = orig.clone();
        for k in ROUTING_AND_L2_SECTIONS {
            routed.insert(k.into(), Value::Table(Table::new()));
        }
        let t = derive(&routed, &d).unwrap();
        assert!(ROUTING_AND_L2_SECTIONS.iter().all(|k| !t.contains_key(*k)));
        assert_eq!(t["buffer"]["pool"]["ingress_lossless_pool"]["xoff"].as_str(), Some("1MiB"));
    }

    #[test]
    fn policy_override_keeps_only_what_the_mode_takes() {
        let orig: Table = FILE.parse().unwrap();
        let mut d =
            Derive { dir: Path::new("/tmp/x"), file_prefix: "p", egress: 0, policy: Some("dsh"), lcores: "0@0,1@0" };
        let t = derive(&orig, &d).unwrap();
        assert_eq!(t["buffer"]["headroom_policy"].as_str(), Some("dsh"));
        assert!(t["buffer"]["pool"]["ingress_lossless_pool"].get("xoff").is_none());
        let plain: Table = "[[port]]\nname = \"a\"\ndevargs = \"x\"\nspeed = \"10G\"\n".parse().unwrap();
        d.policy = Some("shared_pool");
        let t = derive(&plain, &d).unwrap();
        assert_eq!(t["buffer"]["over_subscribe_ratio"].as_integer(), Some(2));
        d.policy = Some("dynamic");
        assert!(derive(&plain, &d).unwrap_err().contains("not one of"));
    }
}
