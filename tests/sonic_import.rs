//! `pfcswitch import sonic` and `run --config-db` on real SONiC files (tests/data/sonic/,
//! SOURCE.md): each imports and validates, the notes name what is not supported, a
//! broken file is one line naming TABLE|key|field with exit 2, `thresholds` on the
//! imported configuration agrees with SONiC's tables (size, xoff, dynamic_th → the
//! Dynamic Threshold limit), and one file runs on net_null vdevs.

mod common;

use common::*;
use serde_json::Value;
use std::path::PathBuf;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/sonic").join(name)
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Import `files` into `dir/<out>`; the output must be exit 0 and `check-config` ok.
fn import(dir: &TestDir, files: &[&str], out: &str) -> (PathBuf, String) {
    let out = dir.join(out);
    let mut args: Vec<String> = vec!["import".into(), "sonic".into()];
    args.extend(files.iter().map(|f| data(f).display().to_string()));
    args.extend(["-o".to_string(), out.display().to_string()]);
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = run_switch(&a);
    assert!(o.status.success(), "{}", show(&o));
    let c = run_switch(&["check-config", out.to_str().unwrap()]);
    assert!(c.status.success(), "{}", show(&c));
    (out, stderr(&o))
}

#[test]
fn real_files_import_validate_and_report() {
    let dir = TestDir::new("sonic-real");
    let expect: &[(&str, &[&str])] = &[
        (
            "s6000-t0-config_db.json",
            &[
                "unsupported: PORTCHANNEL: table not supported, ignored (4 keys)",
                "unsupported: ACL_TABLE: table not supported, ignored (5 keys)",
                "unsupported: VLAN|Vlan1000|dhcp_servers: field not supported, ignored",
                "approximated: BGP_NEIGHBOR: 8 neighbour(s) for FRR",
            ],
        ),
        ("z9264f-t1-config_db.json", &["unsupported: BUFFER_PROFILE|egress_lossy_profile|mode: field not supported"]),
        (
            "msn2700-t1-redis-dump.json",
            &[
                "unsupported: PORT|*|fec: field not supported, ignored (30 keys",
                "approximated: BUFFER_PORT_INGRESS_PROFILE_LIST",
            ],
        ),
        (
            "t1-smartswitch-config_db.json",
            &["unsupported: DPUS: table not supported", "approximated: LOOPBACK_INTERFACE"],
        ),
    ];
    for (file, lines) in expect {
        let (out, err) = import(&dir, &[file], &format!("{file}.toml"));
        for l in *lines {
            assert!(err.lines().any(|x| x.starts_with(l)), "{file}: no line starting '{l}' in:\n{err}");
        }
        // Every report line is one table or field, and says which kind.
        for l in err.lines().filter(|l| !l.ends_with(", ok")) {
            assert!(
                l.starts_with("unsupported: ") || l.starts_with("approximated: ") || l.starts_with("warning: "),
                "{l}"
            );
        }
        let text = std::fs::read_to_string(&out).unwrap();
        let ports = pfcswitch::config::from_str(&text, "x").unwrap().ports.len();
        let sonic_ports = count_ports(&data(file));
        assert!(ports >= sonic_ports, "{file}: {ports} ports for {sonic_ports} in PORT");
    }
}

fn count_ports(p: &std::path::Path) -> usize {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    let o = v.as_object().unwrap();
    match o.get("PORT") {
        Some(t) => t.as_object().unwrap().len(),
        None => o.keys().filter(|k| k.starts_with("PORT|")).count(),
    }
}

#[test]
fn strict_refuses_unsupported_and_broken_files_are_one_line() {
    let dir = TestDir::new("sonic-strict");
    let f = data("s6000-t0-config_db.json");
    let o = run_switch(&["import", "sonic", f.to_str().unwrap(), "--strict"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let last = stderr(&o).lines().last().unwrap_or("").to_string();
    assert!(last.contains("--strict:") && last.contains("unsupported table(s) or field(s)"), "{last}");
    assert!(o.stdout.is_empty(), "nothing written under --strict");
    let o = run_switch(&["run", "--config-db", f.to_str().unwrap(), "--strict", "--duration", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(!stderr(&o).contains("EAL:"), "refused before EAL: {}", show(&o));

    // Broken copies of a real file: one line naming TABLE|key|field, exit 2, also for run.
    let orig: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
    let cases: &[(&[&str], Value, &str)] = &[
        (
            &["BUFFER_PROFILE", "pg_lossless_40000_5m_profile", "dynamic_th"],
            "12".into(),
            "BUFFER_PROFILE|pg_lossless_40000_5m_profile|dynamic_th: 12 is out of range -8..=7",
        ),
        (
            &["BUFFER_PG", "Ethernet4|3-4", "profile"],
            "pg_lossless_40000_1km_profile".into(),
            "BUFFER_PG|Ethernet4|3-4|profile: unknown profile 'pg_lossless_40000_1km_profile'",
        ),
        (&["PORT", "Ethernet8", "speed"], "40G".into(), "PORT|Ethernet8|speed: '40G' is not a non-negative integer"),
        (
            &["PORT_QOS_MAP", "Ethernet4", "dscp_to_tc_map"],
            "AZURE_V6".into(),
            "PORT_QOS_MAP|Ethernet4|dscp_to_tc_map: unknown DSCP_TO_TC_MAP 'AZURE_V6'",
        ),
    ];
    for (i, (path, value, want)) in cases.iter().enumerate() {
        let mut v = orig.clone();
        let mut cur = &mut v;
        for p in &path[..path.len() - 1] {
            cur = cur.get_mut(*p).unwrap_or_else(|| panic!("{p} in {path:?}"));
        }
        cur[path[path.len() - 1]] = value.clone();
        let bad = dir.join(&format!("bad{i}.json"));
        std::fs::write(&bad, serde_json::to_string_pretty(&v).unwrap()).unwrap();
        for args in [
            vec!["import", "sonic", bad.to_str().unwrap()],
            vec!["run", "--config-db", bad.to_str().unwrap(), "--duration", "1"],
        ] {
            let o = run_switch(&args);
            assert_eq!(o.status.code(), Some(2), "{}", show(&o));
            let err = stderr(&o);
            let errs: Vec<&str> =
                err.lines().filter(|l| !l.starts_with("unsupported:") && !l.starts_with("approximated:")).collect();
            // `run` logs through env_logger; the error line is the last, on its own.
            let line = errs.last().copied().unwrap_or("");
            assert!(line.starts_with(&format!("{}: {want}", bad.display())), "{}", show(&o));
        }
    }
}

/// The PGs a SONiC file makes lossless, read from its own tables (independently of the
/// import): (port, pg) → (size, xoff, dynamic_th, pool).
fn sonic_lossless(v: &Value) -> std::collections::BTreeMap<(String, u8), (u64, u64, i32, String)> {
    let num = |x: &Value| x.as_str().unwrap().parse::<i64>().unwrap();
    let strip = |s: &str| s.trim_matches(|c| c == '[' || c == ']').rsplit('|').next().unwrap().to_string();
    let tc_to_pg = |p: i64| -> u8 {
        let m = v["TC_TO_PRIORITY_GROUP_MAP"].as_object().and_then(|t| t.values().next().cloned());
        m.and_then(|m| m.get(p.to_string()).map(|x| num(x) as u8)).unwrap_or(p as u8)
    };
    let mut out = std::collections::BTreeMap::new();
    for (port, q) in v["PORT_QOS_MAP"].as_object().unwrap() {
        let Some(pfc) = q.get("pfc_enable") else { continue };
        for p in pfc.as_str().unwrap().split(',') {
            let pg = tc_to_pg(p.parse().unwrap());
            let (_, e) = v["BUFFER_PG"]
                .as_object()
                .unwrap()
                .iter()
                .find(|(k, _)| {
                    let (kp, r) = k.rsplit_once('|').unwrap();
                    let (a, b) = r.split_once('-').unwrap_or((r, r));
                    kp == port && (a.parse::<u8>().unwrap()..=b.parse().unwrap()).contains(&pg)
                })
                .unwrap_or_else(|| panic!("{port} PG {pg}: no BUFFER_PG"));
            let prof = &v["BUFFER_PROFILE"][strip(e["profile"].as_str().unwrap())];
            let pool = strip(prof["pool"].as_str().unwrap());
            out.insert(
                (port.clone(), pg),
                (num(&prof["size"]) as u64, num(&prof["xoff"]) as u64, num(&prof["dynamic_th"]) as i32, pool),
            );
        }
    }
    out
}

#[test]
fn thresholds_agree_with_sonic_tables() {
    let dir = TestDir::new("sonic-thr");
    const FRAME: u64 = 1000;
    for file in ["s6000-t0-config_db.json", "z9264f-t1-config_db.json"] {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(data(file)).unwrap()).unwrap();
        let lossless = sonic_lossless(&v);
        assert!(!lossless.is_empty(), "{file}");
        // SONiC's ingress pools; the shared headroom pool (its xoff) or, without one, every
        // lossless PG's xoff is reserved, with every lossless PG's size: the rest is shared.
        let pools = v["BUFFER_POOL"].as_object().unwrap();
        let num = |x: &Value| x.as_str().unwrap().parse::<u64>().unwrap();
        let ingress: u64 = pools.values().filter(|p| p["type"] == "ingress").map(|p| num(&p["size"])).sum();
        let shared_headroom: Option<u64> = pools.values().find_map(|p| p.get("xoff").map(num));
        let private: u64 = lossless.values().map(|l| l.0).sum();
        let headroom = shared_headroom.unwrap_or_else(|| lossless.values().map(|l| l.1).sum());
        let shared = ingress - private - headroom;

        let (toml, _) = import(&dir, &[file], &format!("{file}.toml"));
        let o = run_switch(&["thresholds", "-c", toml.to_str().unwrap(), "--json", "--frame-size", &FRAME.to_string()]);
        assert!(o.status.success(), "{}", show(&o));
        let rows: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(rows.len(), lossless.len(), "{file}: one row per lossless PG");
        for r in &rows {
            let key = (r["port"].as_str().unwrap().to_string(), r["pg"].as_u64().unwrap() as u8);
            let (size, xoff, th, _) = &lossless[&key];
            // One PG filling alone: it pauses where its shared use s meets α·(shared − s).
            let alpha = 2f64.powi(*th);
            let dt = alpha * shared as f64 / (1.0 + alpha);
            let want = *size as f64 + dt;
            let pause = r["pause_occupancy_bytes"].as_u64().unwrap() as f64;
            assert!(
                (pause - want).abs() <= 2.0 * FRAME as f64,
                "{file} {key:?}: PAUSE at {pause} B, SONiC's tables say {want:.0}"
            );
            // Then the headroom, xoff bytes, until the first drop.
            let after = (r["first_drop"].as_u64().unwrap() - 1 - r["pause_at"].as_u64().unwrap()) * FRAME;
            assert!(after <= *xoff && after + 2 * FRAME > *xoff, "{file} {key:?}: {after} B after PAUSE, xoff {xoff}");
        }
    }
}

#[test]
fn runs_on_net_null_from_a_real_file() {
    let dir = TestDir::new("sonic-run");
    // No port entries: every port is net_null<i>; the map carries what CONFIG_DB has not
    // (EAL, ring sizes that fit 32 ports in a small mbuf pool).
    let eal = SwitchConfig::new(&dir.prefix(), "0@0,1@1").eal_section();
    let map = dir.join("ports.toml");
    std::fs::write(&map, format!("{eal}[switch]\nrx_ring_size = 256\ntx_ring_size = 256\nmbuf_count = 32768\n"))
        .unwrap();
    let json = dir.join("stats.json");
    let f = data("msn2700-t1-redis-dump.json");
    let o = run_switch(&[
        "run",
        "--config-db",
        f.to_str().unwrap(),
        "--ports",
        map.to_str().unwrap(),
        "--duration",
        "2",
        "--stats-json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", show(&o));
    let j = read_json(&json);
    assert_eq!(j["ports"].as_array().unwrap().len(), 32);
    // net_null receives at line rate: the imported switch forwards.
    assert!(n(port(&j, "Ethernet124"), "rx_packets") > 0, "{}", port(&j, "Ethernet124"));
    assert_conserved(&j);
    // The converted configuration lived as long as the switch.
    let err = stderr(&o);
    let written = err.split("written to ").nth(1).and_then(|r| r.lines().next()).expect("the converted file is logged");
    assert!(!std::path::Path::new(written.trim()).exists(), "{written} left behind");
}

/// `bgpd`/`zebra --dryrun` on a file: the lines FRR refused (empty when FRR takes it all).
fn frr_refuses(daemon: &str, conf: &std::path::Path, dir: &TestDir) -> Vec<String> {
    let out = std::process::Command::new(format!("/usr/lib/frr/{daemon}"))
        .arg("--dryrun")
        .arg("-f")
        .arg(conf)
        .arg("-i")
        .arg(dir.join(&format!("{daemon}.pid")))
        .arg("-z")
        .arg(dir.join("zserv.api"))
        .arg("--vty_socket")
        .arg(&dir.path)
        .output()
        .expect("run FRR");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    text.lines().filter(|l| l.contains("Config Failed") || l.contains("Unknown command")).map(str::to_string).collect()
}

#[test]
fn frr_config_from_a_real_file() {
    let dir = TestDir::new("sonic-frr");
    let f = data("t1-smartswitch-config_db.json");
    let frr = dir.join("frr");
    let o = run_switch(&[
        "import",
        "sonic",
        f.to_str().unwrap(),
        "-o",
        dir.join("t1.toml").to_str().unwrap(),
        "--frr",
        frr.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", show(&o));
    let bgpd = std::fs::read_to_string(frr.join("bgpd.conf")).unwrap();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
    let peers = v["BGP_NEIGHBOR"].as_object().unwrap();
    for (ip, p) in peers {
        let line = format!("  neighbor {ip} remote-as {}", p["asn"].as_str().unwrap());
        assert!(bgpd.lines().any(|l| l == line), "no '{line}'");
        assert!(bgpd.lines().any(|l| l == format!("    neighbor {ip} activate")), "{ip} not activated");
    }
    assert!(bgpd.contains("router bgp 65100\n") && bgpd.contains("  bgp router-id 10.1.0.1\n"), "{bgpd}");
    assert!(bgpd.contains("    network 10.1.0.1/32\n"), "{bgpd}");
    if !std::path::Path::new("/usr/lib/frr/bgpd").exists() {
        eprintln!("FRR not installed (scripts/setup.sh installs it): the dry run is skipped");
        return;
    }
    assert_eq!(frr_refuses("bgpd", &frr.join("bgpd.conf"), &dir), Vec::<String>::new());
    assert_eq!(frr_refuses("zebra", &frr.join("zebra.conf"), &dir), Vec::<String>::new());
    // The dry run does catch a bad line.
    let bad = dir.join("bad-bgpd.conf");
    std::fs::write(&bad, bgpd.replacen(" remote-as ", " remote-az ", 1)).unwrap();
    let refused = frr_refuses("bgpd", &bad, &dir);
    assert!(
        refused.first().is_some_and(|l| l.contains("remote-az")),
        "a misspelt neighbour line is refused: {refused:?}"
    );
}

#[test]
fn running_switch_saves_a_config_db_that_imports_back() {
    let dir = TestDir::new("sonic-save");
    let prefix = dir.prefix();
    let eal = SwitchConfig::new(&prefix, "0@0,1@1").eal_section();
    let map = dir.join("ports.toml");
    std::fs::write(&map, format!("{eal}[switch]\nrx_ring_size = 256\ntx_ring_size = 256\nmbuf_count = 32768\n"))
        .unwrap();
    // The real SN2700 dump cut to its first four ports: a running configuration's reply
    // over telemetry is capped at 16 KiB, more than 32 ports of it.
    let keep = ["Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"];
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(data("msn2700-t1-redis-dump.json")).unwrap()).unwrap();
    let o = v.as_object_mut().unwrap();
    o.retain(|k, _| k.split('|').nth(1).is_none_or(|p| !p.starts_with("Ethernet") || keep.contains(&p)));
    for (k, e) in o.iter_mut() {
        if k.starts_with("CABLE_LENGTH|") {
            e.as_object_mut().unwrap().retain(|p, _| keep.contains(&p.as_str()));
        }
    }
    let f = dir.join("sn2700-4.json");
    std::fs::write(&f, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let cfg = dir.join("sw.toml");
    let o = run_switch(&[
        "import",
        "sonic",
        f.to_str().unwrap(),
        "--ports",
        map.to_str().unwrap(),
        "-o",
        cfg.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", show(&o));
    let json = dir.join("stats.json");
    let mut sw = RunningSwitch::spawn(&cfg, &json, &["--duration", "60"]);
    sw.wait_forwarding(std::time::Duration::from_secs(30));
    let config = |args: &[&str]| {
        std::process::Command::new(BIN).args(["config", "--prefix", &prefix]).args(args).output().unwrap()
    };
    let o = config(&["buffer", "profile", "pg_lossless_10000_300m_profile", "--dynamic-th", "-2"]);
    assert!(o.status.success(), "{}", show(&o));
    let saved = dir.join("saved_config_db.json");
    let o = config(&["save", "--format", "sonic", saved.to_str().unwrap()]);
    assert!(o.status.success(), "{}", show(&o));
    sw.stop();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    // The live change is in it, in CONFIG_DB's words.
    assert_eq!(v["BUFFER_PROFILE"]["pg_lossless_10000_300m_profile"]["dynamic_th"], "-2");
    assert_eq!(v["BUFFER_PROFILE"]["pg_lossless_10000_300m_profile"]["xoff"], "36864");
    assert_eq!(v["PORT"].as_object().unwrap().len(), 4);
    // And it imports back to the same switch (with the change).
    let again = dir.join("again.toml");
    let o = run_switch(&["import", "sonic", saved.to_str().unwrap(), "-o", again.to_str().unwrap()]);
    assert!(o.status.success(), "{}", show(&o));
    let a = pfcswitch::config::load(&cfg).unwrap();
    let b = pfcswitch::config::load(&again).unwrap();
    let ports = |c: &pfcswitch::config::Config| -> Vec<(String, u64, u16, bool, Vec<u8>)> {
        c.ports.iter().map(|p| (p.name.clone(), p.speed_bps, p.mtu, p.admin_up, p.pfc_enable.clone())).collect()
    };
    assert_eq!(ports(&a), ports(&b));
    let prof = |c: &pfcswitch::config::Config, n: &str| c.buffer.profiles[c.buffer.profile_index(n).unwrap()].clone();
    let mut changed = prof(&a, "pg_lossless_10000_300m_profile");
    changed.threshold = pfcswitch::config::Threshold::Dynamic(-2);
    assert_eq!(prof(&b, "pg_lossless_10000_300m_profile"), changed);
    assert_eq!(a.qos, b.qos);
}

#[test]
fn more_ports_than_dpdk_probes_is_refused_before_eal() {
    // The Z9264f T1 has 66 ports; Debian's DPDK probes 32.
    let f = data("z9264f-t1-config_db.json");
    let o = run_switch(&["run", "--config-db", f.to_str().unwrap(), "--duration", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let err = stderr(&o);
    let last = err.lines().last().unwrap_or("");
    assert!(
        last.starts_with(&format!("{}: port: 66 ports", f.display())) && last.contains("RTE_MAX_ETHPORTS"),
        "{last}"
    );
    assert!(!err.contains("EAL:"), "EAL started:\n{err}");
}

/// `scripts/fabric.sh clos-2-4-4 --config-db`: every switch's generated config_db.json
/// (scripts/clos_topo.py) imports with its port map under `--strict`, and the imported
/// configuration has the same thresholds (and, with ECN marking, the same WRED bindings)
/// as the TOML the fabric otherwise runs; the FRR files name every BGP neighbour and a
/// ToR announces its hosts' /24 without needing a covering route.
#[test]
fn clos_fabric_config_dbs_import_like_their_toml() {
    let dir = TestDir::new("sonic-clos");
    let w = dir.join("clos");
    let gen = std::process::Command::new("python3")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/clos_topo.py"))
        .arg(&w)
        .output()
        .unwrap();
    assert!(gen.status.success(), "{}", show(&gen));
    let p = |name: String| w.join(name).to_str().unwrap().to_string();
    let switches = ["s1", "s2", "l1", "l2", "l3", "l4", "t1", "t2", "t3", "t4"];
    for sw in switches {
        for (tag, check) in [("", "thresholds"), (".ecn", "ecn")] {
            let frr = p(format!("frr-{sw}{tag}"));
            let imported = p(format!("{sw}{tag}.imported.toml"));
            let o = run_switch(&[
                "import",
                "sonic",
                &p(format!("{sw}{tag}.config_db.json")),
                "--ports",
                &p(format!("{sw}.ports.toml")),
                "--strict",
                "-o",
                &imported,
                "--frr",
                &frr,
            ]);
            assert!(o.status.success(), "{sw}{tag}: {}", show(&o));
            let toml = run_switch(&[check, "-c", &p(format!("{sw}{tag}.toml"))]);
            let cdb = run_switch(&[check, "-c", &imported]);
            assert!(toml.status.success() && cdb.status.success(), "{}{}", show(&toml), show(&cdb));
            assert!(!toml.stdout.is_empty());
            assert_eq!(
                String::from_utf8_lossy(&cdb.stdout),
                String::from_utf8_lossy(&toml.stdout),
                "{sw}{tag}: `{check}` of the config_db import differs from the TOML's"
            );
            let v: Value =
                serde_json::from_str(&std::fs::read_to_string(p(format!("{sw}{tag}.config_db.json"))).unwrap())
                    .unwrap();
            let bgpd = std::fs::read_to_string(format!("{frr}/bgpd.conf")).unwrap();
            let peers = v["BGP_NEIGHBOR"].as_object().unwrap();
            // A spine has four leaves, a leaf two spines and two ToRs, a ToR two leaves.
            assert_eq!(peers.len(), if sw.starts_with('t') { 2 } else { 4 }, "{sw}");
            for (ip, n) in peers {
                let line = format!("  neighbor {ip} remote-as {}", n["asn"].as_str().unwrap());
                assert!(bgpd.lines().any(|l| l == line), "{sw}: no '{line}' in\n{bgpd}");
                assert!(bgpd.lines().any(|l| l == format!("  neighbor {ip} timers 1 3")), "{sw}: {ip} timers");
            }
            assert!(bgpd.lines().any(|l| l == "  no bgp network import-check"), "{sw}: {bgpd}");
            let net = format!("    network 198.18.{}.0/24", &sw[1..]);
            assert_eq!(bgpd.lines().any(|l| l == net), sw.starts_with('t'), "{sw}: {bgpd}");
        }
    }
}
