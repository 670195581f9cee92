use super::*;

const MIN: &str = r#"
[eal]
args = ["--no-huge", "-m", "512", "--no-pci", "--lcores=0@0,1@1"]

[[port]]
name = "Ethernet0"
devargs = "net_null0"
speed = "100G"

[[port]]
name = "Ethernet4"
devargs = "net_null1,size=64"
speed = "25G"
cable_length = "40m"
pfc_enable = []
"#;

fn err(text: &str) -> ConfigError {
    from_str(text, "t.toml").expect_err("should fail")
}

fn assert_err(text: &str, path: &str, needle: &str) {
    let e = err(text);
    let s = e.to_string();
    assert!(!s.contains('\n'), "multi-line: {s}");
    assert_eq!(e.field_path(), Some(path), "{s}");
    assert!(s.starts_with(&format!("t.toml: {path}: ")), "{s}");
    assert!(s.contains(needle), "'{needle}' not in: {s}");
}

#[test]
fn minimal_resolves_with_defaults() {
    let c = from_str(MIN, "t.toml").unwrap();
    assert_eq!(c.ports.len(), 2);
    let p0 = &c.ports[0];
    assert_eq!(p0.speed_bps, 100_000_000_000);
    assert_eq!(p0.cable_length_m, 5.0);
    assert_eq!(p0.mtu, 9100);
    assert_eq!(p0.pfc_enable, vec![3, 4]);
    assert_eq!(p0.pfc_mask, 0b11000);
    assert_eq!(p0.shaper_bps, Some(100_000_000_000));
    assert_eq!(p0.rx_queues, 1);
    assert_eq!(p0.tx_lcore, 1);
    assert_eq!(p0.dpdk_name(), "net_null0");
    assert_eq!(c.ports[1].dpdk_name(), "net_null1");
    assert_eq!(c.ports[1].cable_length_m, 40.0);
    assert!(c.ports[1].pfc_enable.is_empty());
    assert_eq!(c.switch.fdb_aging_time, 600);
    assert_eq!(c.switch.fdb_move_damping, crate::fdb::MoveDamping { max_moves: 5, window_s: 10, hold_s: 60 });
    assert_eq!(c.lcores.control, 0);
    assert_eq!(c.lcores.workers.len(), 1);
    assert_eq!(c.qos, QosConfig::default());
    assert_eq!(c.qos.dscp_to_tc[46], 5);
    assert_eq!(c.qos.dscp_to_tc[0], 1);
    // Generated buffer.
    let b = &c.buffer;
    assert!(b.generated);
    assert_eq!(b.total_size, 12 << 20);
    assert_eq!(b.cell_size, 256);
    assert_eq!(b.pools[0].size, 8 << 20);
    assert_eq!(b.pools[1].size, 4 << 20);
    let lossless = b.profile_index("pg_lossless_profile").unwrap();
    let lossy_pg = b.profile_index("ingress_lossy_profile").unwrap();
    let lossy_q = b.profile_index("queue_lossy_profile").unwrap();
    assert_eq!(b.pg_profile[0][3], Some(lossless));
    assert_eq!(b.pg_profile[0][4], Some(lossless));
    assert_eq!(b.pg_profile[0][0], Some(lossy_pg));
    assert_eq!(b.pg_profile[0][1], None);
    assert_eq!(b.queue_profile[0][3], None);
    assert_eq!(b.queue_profile[0][0], Some(lossy_q));
    assert_eq!(b.pg_profile[1][3], Some(lossy_pg), "no PFC on port 1: TC 3 → PG 3 is lossy");
    assert_eq!(b.queue_profile[1][3], Some(lossy_q));
    // mbufs: 12MiB/256 + 2 × (1024 + 1024) + 1×32×2 + 2×384
    assert_eq!(c.switch.mbuf_count, 49152 + 4096 + 64 + 768);
    assert!(c.switch.mbuf_count_computed);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    // The resolved config serialises (for check-config --json).
    let j = serde_json::to_string(&c).unwrap();
    assert!(j.contains("Ethernet4"));
}

#[test]
fn eal_args_order() {
    let c = from_str(MIN, "t.toml").unwrap();
    let a = c.eal_args("pfcswitch");
    assert_eq!(a[0], "pfcswitch");
    assert_eq!(&a[1..6], &["--no-huge", "-m", "512", "--no-pci", "--lcores=0@0,1@1"]);
    assert!(a[6].starts_with("--file-prefix=pfcswitch-"));
    assert_eq!(a[7], "--main-lcore=0");
    assert_eq!(&a[8..], &["--vdev=net_null0", "--vdev=net_null1,size=64"]);

    let t = MIN.replace("[eal]", "[eal]\nfile_prefix = \"sw1\"");
    let c = from_str(&t, "t.toml").unwrap();
    assert_eq!(c.file_prefix(), "sw1");
    assert!(c.eal_args("x").contains(&"--file-prefix=sw1".to_string()));

    let t = MIN.replace("\"--no-pci\",", "\"--no-pci\", \"--file-prefix\", \"abc\",");
    let c = from_str(&t, "t.toml").unwrap();
    assert_eq!(c.file_prefix(), "abc");
    assert_eq!(c.eal_args("x").iter().filter(|a| a.contains("file-prefix")).count(), 1);
}

#[test]
fn pci_ports() {
    let t = r#"
[[port]]
name = "Ethernet0"
devargs = "0000:3B:00.0"
speed = 100000
[[port]]
name = "Ethernet8"
devargs = "3b:00.1,rxq_cqe_comp_en=0"
speed = "100G"
"#;
    let c = from_str(t, "t.toml").unwrap();
    assert_eq!(c.ports[0].speed_bps, 100_000_000_000);
    assert_eq!(c.ports[0].dpdk_name(), "0000:3b:00.0");
    assert_eq!(c.ports[1].dpdk_name(), "0000:3b:00.1");
    assert_eq!(c.ports[0].shaper_bps, None);
    let a = c.eal_args("p");
    let n = a.len();
    assert_eq!(&a[n - 4..], &["-a", "0000:3B:00.0", "-a", "3b:00.1,rxq_cqe_comp_en=0"]);
}

#[test]
fn devargs_recognition() {
    assert!(matches!(parse_devargs("net_tap0,iface=x"), Ok(PortDevice::Vdev { .. })));
    assert!(matches!(parse_devargs("eth_pcap0"), Ok(PortDevice::Vdev { .. })));
    assert!(parse_devargs("").is_err());
    assert!(parse_devargs("net_foo0").is_err());
    assert!(parse_devargs("0000:3b:20.0").is_err(), "device > 0x1f");
    assert!(parse_devargs("0000:3b:00.8").is_err());
    assert!(parse_devargs("net_null0, size=64").is_err());
    assert_eq!(parse_bdf("3b:00.1").as_deref(), Some("0000:3b:00.1"));
    use crate::wire::MacAddr;
    assert_eq!("02-00-00-00-00-0A".parse::<MacAddr>().map(|m| m.0), Ok([2, 0, 0, 0, 0, 10]));
    assert!("02:00:00:00:00".parse::<MacAddr>().is_err());
}

#[test]
fn lcore_sets() {
    let s = parse_lcore_set("0-2,5").unwrap();
    assert_eq!(s.into_iter().collect::<Vec<_>>(), vec![0, 1, 2, 5]);
    let s = parse_lcore_set("0@0,(1-2)@(1,3),4@5").unwrap();
    assert_eq!(s.into_iter().collect::<Vec<_>>(), vec![0, 1, 2, 4]);
    assert!(parse_lcore_set("x").is_none());
}

#[test]
fn syntax_error_has_line_and_column() {
    let e = err("[switch]\nfdb_size = 1\n\n[[port]\nname = 1\n");
    let s = e.to_string();
    assert!(s.starts_with("t.toml: line 4, column "), "{s}");
    assert!(!s.contains('\n'));
}

#[test]
fn field_errors() {
    assert_err(&format!("{MIN}\n[foo]\n"), "foo", "unknown section");
    // One burst limit, the dataplane's: refused here, never clamped later.
    assert_err(
        &format!("{MIN}[switch]\nburst_size = 512\nrx_ring_size = 1024\n"),
        "switch.burst_size",
        "512 is out of range 1..=256",
    );
    assert_err(&MIN.replace("speed = \"25G\"", "speed = \"25X\""), "port[1].speed", "unknown unit 'X' in '25X'");
    assert_err(&MIN.replace("speed = \"25G\"", "speed = \"25G\"\nspede = 1"), "port[1].spede", "unknown field");
    assert_err(&MIN.replace("devargs = \"net_null0\"\n", ""), "port[0].devargs", "missing field");
    assert_err(
        &MIN.replace("cable_length = \"40m\"", "cable_length = \"40ft\""),
        "port[1].cable_length",
        "unknown unit",
    );
    assert_err(&MIN.replace("pfc_enable = []", "mtu = 9300"), "port[1].mtu", "out of range 68..=9216");
    assert_err(&MIN.replace("pfc_enable = []", "mtu = \"big\""), "port[1].mtu", "invalid type");
    assert_err(
        &MIN.replace("pfc_enable = []", "pfc_enable = [3, 9]"),
        "port[1].pfc_enable[1]",
        "9 is out of range 0..=7",
    );
    assert_err(&MIN.replace("pfc_enable = []", "pfc_enable = [3, 3]"), "port[1].pfc_enable[1]", "twice");
    assert_err(&MIN.replace("pfc_enable = []", "default_tc = 8"), "port[1].default_tc", "out of range");
    assert_err(&MIN.replace("pfc_enable = []", "trust = \"ip\""), "port[1].trust", "unknown variant");
    assert_err(&MIN.replace("Ethernet4", "Ethernet0"), "port[1].name", "duplicate port name");
    assert_err(&MIN.replace("net_null1,size=64", "net_null0,size=64"), "port[1].devargs", "already used");
    assert_err(&MIN.replace("net_null1,size=64", "null1"), "port[1].devargs", "neither a known vdev");
    assert_err(
        &MIN.replace("pfc_enable = []", "shaper_rate = \"40G\""),
        "port[1].shaper_rate",
        "exceeds the port speed",
    );
    assert_err(&MIN.replace("pfc_enable = []", "mac = \"01:00:5e:00:00:01\""), "port[1].mac", "group");
    assert_err(
        &MIN.replace("\"--no-pci\",", "\"--no-pci\", \"--vdev=net_null1\","),
        "eal.args[4]",
        "added to the EAL arguments",
    );
    assert_err(&MIN.replace("--lcores=0@0,1@1", "-l0"), "lcores", "lcore 1 is not enabled");
    assert_err("[eal]\nargs=[]\n", "port", "at least one");
    assert_err(&format!("{MIN}\n[switch]\nfdb_size = 1000\n"), "switch.fdb_size", "power of two");
    assert_err(&format!("{MIN}\n[switch]\nburst_size = 0\n"), "switch.burst_size", "out of range");
    assert_err(&format!("{MIN}\n[switch]\nfdb_move_limit = 256\n"), "switch.fdb_move_limit", "out of range 0..=255");
    assert_err(&format!("{MIN}\n[switch]\nfdb_move_hold = 0\n"), "switch.fdb_move_hold", "out of range 1..=86400");
    assert_err(&format!("{MIN}\n[switch]\nmbuf_count = 100\n"), "switch.mbuf_count", "cannot even fill");
    assert_err(&format!("{MIN}\n[qos]\ndscp_to_tc = {{ \"64\" = 1 }}\n"), "qos.dscp_to_tc.64", "out of range 0..=63");
    assert_err(&format!("{MIN}\n[qos]\ntc_to_pg = {{ \"1\" = \"9\" }}\n"), "qos.tc_to_pg.1", "out of range 0..=7");
    assert_err(
        &format!("{MIN}\n[qos.scheduler]\n\"3\" = {{ type = \"DWRR\", weight = 0 }}\n"),
        "qos.scheduler.3.weight",
        "out of range 1..=100",
    );
    assert_err(
        &format!("{MIN}\n[qos.scheduler]\n\"3\" = {{ type = \"FAIR\" }}\n"),
        "qos.scheduler.3.type",
        "unknown scheduler",
    );
}

const LCORES: &str = r#"
[lcores]
control = 0
[[lcores.worker]]
lcore = 1
rx = ["Ethernet0:0", "Ethernet4:0"]
tx = ["Ethernet0"]
[[lcores.worker]]
lcore = 2
rx = ["Ethernet0:1"]
tx = ["Ethernet4"]
"#;

fn with_lcores(l: &str) -> String {
    format!("{}\n{l}", MIN.replace("--lcores=0@0,1@1", "-l0-3"))
}

#[test]
fn lcores_resolve() {
    let c = from_str(&with_lcores(LCORES), "t.toml").unwrap();
    assert_eq!(c.ports[0].rx_queues, 2);
    assert_eq!(c.ports[1].rx_queues, 1);
    assert_eq!(c.ports[1].tx_lcore, 2);
    assert_eq!(c.lcores.workers[1].rx, vec![RxQueueRef { port: 0, queue: 1 }]);
    assert_eq!(c.lcores.workers[1].tx, vec![1]);
    assert_eq!(c.all_lcores(), vec![0, 1, 2]);
}

#[test]
fn lcores_errors() {
    let e = |from: &str, to: &str, path: &str, needle: &str| {
        assert_err(&with_lcores(&LCORES.replace(from, to)), path, needle)
    };
    e("lcore = 2", "lcore = 0", "lcores.worker[1].lcore", "control lcore");
    e("lcore = 2", "lcore = 1", "lcores.worker[1].lcore", "already used");
    e("lcore = 2", "lcore = 128", "lcores.worker[1].lcore", "out of range 0..=127");
    e("lcore = 2", "lcore = 5", "lcores.worker[1].lcore", "not enabled by eal.args[4] '-l0-3'");
    e("\"Ethernet0:1\"", "\"Ethernet9:1\"", "lcores.worker[1].rx[0]", "unknown port 'Ethernet9'");
    e("\"Ethernet0:1\"", "\"Ethernet0\"", "lcores.worker[1].rx[0]", "'<port>:<queue>'");
    e(
        "\"Ethernet0:1\"",
        "\"Ethernet0:0\"",
        "lcores.worker[1].rx[0]",
        "already polled by lcore 1 (lcores.worker[0].rx[0])",
    );
    e("\"Ethernet0:1\"", "\"Ethernet0:2\"", "lcores.worker[1].rx[0]", "Ethernet0:1 is not polled");
    e("tx = [\"Ethernet4\"]", "tx = [\"Ethernet0\"]", "lcores.worker[1].tx[0]", "already owned");
    e("tx = [\"Ethernet4\"]", "tx = []", "lcores.worker", "port[1] (Ethernet4) has no TX owner");
    e("rx = [\"Ethernet0:0\", \"Ethernet4:0\"]", "rx = [\"Ethernet0:0\"]", "lcores.worker", "no rx queue polled");
    e("lcore = 2\n", "lcore = 2\nrxq = 1\n", "lcores.worker[1].rxq", "unknown field");
}

const BUF: &str = r#"
[buffer]
total_size = "12MiB"
cell_size = 256
[buffer.pool.ingress_lossless_pool]
size = "8MiB"
type = "ingress"
mode = "dynamic"
[buffer.pool.egress_lossy_pool]
size = "4MiB"
type = "egress"
[buffer.profile.pg_lossless_profile]
pool = "ingress_lossless_pool"
size = 4096
xon = 4608
xoff = 38000
xon_offset = 2496
dynamic_th = -2
[buffer.profile.queue_lossy_profile]
pool = "egress_lossy_pool"
size = 0
dynamic_th = 3
[buffer.pg]
"Ethernet0|3-4" = "pg_lossless_profile"
[buffer.queue]
"Ethernet0|0-2" = "queue_lossy_profile"
"Ethernet4|5" = "queue_lossy_profile"
"#;

#[test]
fn buffer_explicit() {
    let c = from_str(&format!("{MIN}\n{BUF}"), "t.toml").unwrap();
    let b = &c.buffer;
    assert!(!b.generated);
    assert_eq!(b.pools.len(), 2);
    let lossless = b.profile_index("pg_lossless_profile").unwrap();
    let p = &b.profiles[lossless];
    assert_eq!(p.xoff, Some(38000));
    assert_eq!(p.threshold, Threshold::Dynamic(-2));
    assert_eq!(p.threshold.alpha(), Some(0.25));
    assert_eq!(b.pg_profile[0][3], Some(lossless));
    assert_eq!(b.pg_profile[0][0], None);
    assert_eq!(b.queue_profile[1][5], b.profile_index("queue_lossy_profile"));
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    // Without the PG binding: warning for the PFC priorities of Ethernet0.
    let t = format!("{MIN}\n{}", BUF.replace("\"Ethernet0|3-4\" = \"pg_lossless_profile\"", ""));
    let c = from_str(&t, "t.toml").unwrap();
    assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
    assert!(c.warnings[0].starts_with("t.toml: buffer.pg: Ethernet0 has PFC enabled on priority 3"));
}

#[test]
fn buffer_only_total_generates_scaled_layout() {
    let c = from_str(&format!("{MIN}\n[buffer]\ntotal_size = \"3MiB\"\n"), "t.toml").unwrap();
    assert!(c.buffer.generated);
    assert_eq!(c.buffer.cell_size, 0);
    assert_eq!(c.buffer.pools[0].size, 2 << 20);
    assert_eq!(c.buffer.pools[1].size, 1 << 20);
}

#[test]
fn buffer_errors() {
    let e = |from: &str, to: &str, path: &str, needle: &str| {
        let b = BUF.replace(from, to);
        assert_ne!(b, BUF, "replacement of {from:?} did nothing");
        assert_err(&format!("{MIN}\n{b}"), path, needle)
    };
    e(
        "size = \"4MiB\"",
        "size = \"5MiB\"",
        "buffer.pool",
        "pool sizes add up to 13.00 MiB (13631488 B), more than buffer.total_size 12.00 MiB",
    );
    e("size = \"4MiB\"", "size = \"4XB\"", "buffer.pool.egress_lossy_pool.size", "unknown unit");
    e("type = \"egress\"", "type = \"both\"", "buffer.pool.egress_lossy_pool.type", "unknown variant");
    e("dynamic_th = -2", "dynamic_th = 9", "buffer.profile.pg_lossless_profile.dynamic_th", "out of range -8..=7");
    e(
        "dynamic_th = -2",
        "dynamic_th = -2\nstatic_th = 1000",
        "buffer.profile.pg_lossless_profile.static_th",
        "not both",
    );
    e("dynamic_th = 3", "", "buffer.profile.queue_lossy_profile.dynamic_th", "missing field");
    e(
        "pool = \"egress_lossy_pool\"",
        "pool = \"egress_pool\"",
        "buffer.profile.queue_lossy_profile.pool",
        "unknown pool 'egress_pool'",
    );
    e(
        "size = 0\ndynamic_th = 3",
        "size = 0\nxoff = 100\ndynamic_th = 3",
        "buffer.profile.queue_lossy_profile.xoff",
        "ingress pool",
    );
    e(
        "\"Ethernet0|3-4\" = \"pg_lossless_profile\"",
        "\"Ethernet9|3-4\" = \"pg_lossless_profile\"",
        "buffer.pg.\"Ethernet9|3-4\"",
        "unknown port 'Ethernet9'",
    );
    e(
        "\"Ethernet0|3-4\" = \"pg_lossless_profile\"",
        "\"Ethernet0|3-8\" = \"pg_lossless_profile\"",
        "buffer.pg.\"Ethernet0|3-8\"",
        "out of range 0..=7",
    );
    e(
        "\"Ethernet0|3-4\" = \"pg_lossless_profile\"",
        "\"Ethernet0|3-4\" = \"queue_lossy_profile\"",
        "buffer.pg.\"Ethernet0|3-4\"",
        "a PG needs an ingress pool",
    );
    e(
        "\"Ethernet0|3-4\" = \"pg_lossless_profile\"",
        "\"Ethernet0|3-4\" = \"nope\"",
        "buffer.pg.\"Ethernet0|3-4\"",
        "unknown profile 'nope'",
    );
    e(
        "\"Ethernet4|5\"",
        "\"Ethernet0|2\"",
        "buffer.queue.\"Ethernet0|2\"",
        "already bound by buffer.queue.\"Ethernet0|0-2\"",
    );
    e("cell_size = 256", "cell_size = 8", "buffer.cell_size", "out of range");
}

#[test]
fn sw_response_default_explicit_and_refused() {
    let c = from_str(MIN, "t.toml").unwrap();
    assert_eq!(c.switch.sw_response_ns, crate::headroom::DEFAULT_SW_RESPONSE_NS);
    let c = from_str(&format!("{MIN}\n[switch]\nsw_response = \"3.5us\"\n"), "t.toml").unwrap();
    assert_eq!(c.switch.sw_response_ns, 3_500);
    let c = from_str(&format!("{MIN}\n[switch]\nsw_response = \"800ns\"\n"), "t.toml").unwrap();
    assert_eq!(c.switch.sw_response_ns, 800);
    assert_err(&format!("{MIN}\n[switch]\nsw_response = 10\n"), "switch.sw_response", "has no unit");
    assert_err(&format!("{MIN}\n[switch]\nsw_response = \"fast\"\n"), "switch.sw_response", "not a number");
    assert_err(&format!("{MIN}\n[switch]\nsw_response = \"5s\"\n"), "switch.sw_response", "out of range");
}

#[test]
fn control_nap_default_explicit_and_refused() {
    let lc = |extra: &str| {
        format!("{MIN}\n[lcores]\ncontrol = 0\n{extra}\n[[lcores.worker]]\nlcore = 1\nrx = [\"Ethernet0:0\", \"Ethernet4:0\"]\ntx = [\"Ethernet0\", \"Ethernet4\"]\n")
    };
    let c = from_str(MIN, "t.toml").unwrap();
    assert_eq!(c.lcores.control_nap_ns, defaults::CONTROL_NAP_NS);
    let c = from_str(&lc(""), "t.toml").unwrap();
    assert_eq!(c.lcores.control_nap_ns, defaults::CONTROL_NAP_NS);
    let c = from_str(&lc("control_nap = \"200us\""), "t.toml").unwrap();
    assert_eq!(c.lcores.control_nap_ns, 200_000);
    assert_err(&lc("control_nap = \"20ms\""), "lcores.control_nap", "outside 1us..10ms");
    assert_err(&lc("control_nap = \"500ns\""), "lcores.control_nap", "outside 1us..10ms");
    assert_err(&lc("control_nap = 5"), "lcores.control_nap", "has no unit");
}

const WRED: &str = r#"
[qos.wred_profile.AZURE_LOSSLESS]
green_min_threshold = "1MiB"
green_max_threshold = 2097152
green_drop_probability = 5
wred_green_enable = true
ecn = "ecn_all"
[qos.wred_profile.MARK_ONLY]
green_min_threshold = 50000
green_max_threshold = 51000
ecn = "ecn_green"
[qos.queue]
"Ethernet0|3-4" = { wred_profile = "AZURE_LOSSLESS" }
"Ethernet4|3" = { wred_profile = "MARK_ONLY" }
"#;

#[test]
fn wred_profiles_and_queue_bindings_resolve() {
    let c = from_str(&format!("{MIN}{WRED}"), "t.toml").unwrap();
    let q = &c.qos;
    assert_eq!(q.wred_profiles.len(), 2);
    let az = q.wred_profiles.iter().position(|p| p.name == "AZURE_LOSSLESS").unwrap();
    let mo = q.wred_profiles.iter().position(|p| p.name == "MARK_ONLY").unwrap();
    assert_eq!(q.queue_wred[0][3], Some(az));
    assert_eq!(q.queue_wred[0][4], Some(az));
    assert_eq!(q.queue_wred[0][2], None);
    assert_eq!(q.queue_wred[1][3], Some(mo));
    let e = q.wred_profiles[az].engine().unwrap();
    assert_eq!((e.min_bytes, e.max_bytes, e.probability_pct, e.mark, e.drop), (1 << 20, 2 << 20, 5, true, true));
    // Probability absent on a marked colour: 100, as SONiC writes it.
    let e = q.wred_profiles[mo].engine().unwrap();
    assert_eq!((e.min_bytes, e.max_bytes, e.probability_pct, e.mark, e.drop), (50000, 51000, 100, true, false));
}

#[test]
fn wred_errors_name_the_field() {
    let p = "[qos.wred_profile.P]\n";
    assert_err(
        &format!("{MIN}{p}green_min_threshold = 2000\ngreen_max_threshold = 1000\necn = \"ecn_all\"\n"),
        "qos.wred_profile.P.green_min_threshold",
        "above green_max_threshold",
    );
    assert_err(
        &format!("{MIN}{p}green_min_threshold = 1\ngreen_max_threshold = 2\ngreen_drop_probability = 101\n"),
        "qos.wred_profile.P.green_drop_probability",
        "101",
    );
    assert_err(&format!("{MIN}{p}ecn = \"ecn_blue\"\n"), "qos.wred_profile.P.ecn", "ecn_all");
    assert_err(&format!("{MIN}{p}ecn = \"ecn_all\"\n"), "qos.wred_profile.P.green_min_threshold", "missing");
    // Yellow/red are validated too.
    assert_err(
        &format!("{MIN}{p}red_min_threshold = 5\nred_max_threshold = 4\n"),
        "qos.wred_profile.P.red_min_threshold",
        "above",
    );
    assert_err(
        &format!("{MIN}[qos.queue]\n\"Ethernet0|3\" = {{ wred_profile = \"NOPE\" }}\n"),
        "qos.queue.\"Ethernet0|3\".wred_profile",
        "unknown WRED profile 'NOPE'",
    );
    assert_err(
        &format!("{MIN}[qos.queue]\n\"Ethernet9|3\" = {{ wred_profile = \"X\" }}\n"),
        "qos.queue.\"Ethernet9|3\"",
        "Ethernet9",
    );
}

#[test]
fn eal_plugins_need_opt_in() {
    let with_d = MIN.replace(r#""--no-pci","#, r#""--no-pci", "-d", "/tmp/x.so","#);
    assert_err(&with_d, "eal.args[4]", "allow_eal_plugins");
    let glued = MIN.replace(r#""--no-pci","#, r#""--no-pci", "-d/tmp/x.so","#);
    assert_err(&glued, "eal.args[4]", "allow_eal_plugins");
    let allowed = with_d.replace("[eal]\n", "[eal]\nallow_eal_plugins = true\n");
    from_str(&allowed, "t.toml").expect("opt-in accepted");
}

#[test]
fn memif_without_secret_or_in_abstract_namespace_warns() {
    let memif = MIN.replace(r#"devargs = "net_null0""#, r#"devargs = "net_memif0,role=server,socket=/tmp/m.sock""#);
    let c = from_str(&memif, "t.toml").unwrap();
    assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
    assert!(c.warnings[0].starts_with("t.toml: port[0].devargs: memif without 'secret'"), "{:?}", c.warnings);
    assert!(c.warnings[1].contains("abstract namespace"), "{:?}", c.warnings);
    let safe = memif.replace("m.sock", "m.sock,secret=s3cr3t,socket-abstract=no");
    let c = from_str(&safe, "t.toml").unwrap();
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
}

#[test]
fn config_writable_by_others_warns() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("pfcsw-cfgmode-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("c.toml");
    std::fs::write(&f, MIN).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(load(&f).unwrap().warnings.is_empty());
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o666)).unwrap();
    let w = load(&f).unwrap().warnings;
    assert!(w.len() == 1 && w[0].contains("writable by everyone"), "{w:?}");
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o664)).unwrap();
    let w = load(&f).unwrap().warnings;
    assert!(w.len() == 1 && w[0].contains("writable by its group"), "{w:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn generated_buffer_follows_tc_to_pg() {
    // PFC on priority 3, whose TC maps to PG 6 and queue 5: PG 6 gets the lossless profile,
    // PG 3 nothing (no TC uses it), queue 5 is lossless (no lossy queue profile).
    let text = format!("{MIN}\n[qos]\ntc_to_pg = {{ \"3\" = 6 }}\ntc_to_queue = {{ \"3\" = 5, \"5\" = 3 }}\n");
    let c = from_str(&text, "t.toml").unwrap();
    let b = &c.buffer;
    let lossless = b.profiles.iter().position(|p| p.name == "pg_lossless_profile");
    let lossy_pg = b.profiles.iter().position(|p| p.name == "ingress_lossy_profile");
    assert_eq!(b.pg_profile[0][6], lossless, "PG of TC 3");
    assert_eq!(b.pg_profile[0][4], lossless, "PG of TC 4 (default map)");
    assert_eq!(b.pg_profile[0][3], None, "no TC maps to PG 3");
    assert_eq!(b.pg_profile[0][0], lossy_pg);
    assert_eq!(b.queue_profile[0][5], None, "queue of TC 3 is lossless");
    assert!(b.queue_profile[0][3].is_some(), "queue 3 carries TC 5, lossy");
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
}

#[test]
fn pause_8023x_policy() {
    let c = from_str(MIN, "t.toml").unwrap();
    assert!(!c.ports[0].obey_8023x, "PFC on (default [3, 4]): ignore 802.3x");
    assert!(c.ports[1].obey_8023x, "no PFC: obey 802.3x");
    let obey = MIN.replacen("speed = \"100G\"", "speed = \"100G\"\npause_8023x = \"obey\"", 1);
    assert!(from_str(&obey, "t.toml").unwrap().ports[0].obey_8023x);
    assert_err(
        &MIN.replacen("speed = \"100G\"", "speed = \"100G\"\npause_8023x = \"yes\"", 1),
        "port[0].pause_8023x",
        "not one of",
    );
}

#[test]
fn speed_auto_and_mismatch_policy() {
    // A nominal-speed vdev cannot take its speed from the link.
    assert_err(
        &MIN.replacen("speed = \"100G\"", "speed = \"auto\"", 1),
        "port[0].speed",
        "needs a port with a real link",
    );
    let pci = MIN.replacen("devargs = \"net_null0\"", "devargs = \"0000:3b:00.0\"", 1).replace("\"--no-pci\", ", "");
    let auto = pci.replacen("speed = \"100G\"", "speed = \"auto\"", 1);
    let c = from_str(&auto, "t.toml").unwrap();
    assert!(c.ports[0].speed_auto && c.ports[0].has_real_link());
    assert_eq!(c.ports[0].speed_bps, 100_000_000_000, "planned as 100G until the link says");
    let warn = pci.replacen("speed = \"100G\"", "speed = \"100G\"\nspeed_mismatch = \"warn\"", 1);
    assert!(from_str(&warn, "t.toml").unwrap().ports[0].speed_mismatch_warn);
    assert_err(
        &pci.replacen("speed = \"100G\"", "speed = \"100G\"\nspeed_mismatch = \"maybe\"", 1),
        "port[0].speed_mismatch",
        "not one of",
    );
}

#[test]
fn worker_idle_and_flood_lossless() {
    let c = from_str(MIN, "t.toml").unwrap();
    assert_eq!(c.lcores.worker_idle, WorkerIdle::Poll);
    assert!(c.switch.flood_lossless);
    let t = format!("{MIN}\n[switch]\nflood_lossless = false\n");
    assert!(!from_str(&t, "t.toml").unwrap().switch.flood_lossless);
    let lc = "[lcores]\ncontrol = 0\nworker_idle = \"adaptive\"\n[[lcores.worker]]\nlcore = 1\nrx = [\"Ethernet0:0\", \"Ethernet4:0\"]\ntx = [\"Ethernet0\", \"Ethernet4\"]\n";
    assert_eq!(from_str(&format!("{MIN}\n{lc}"), "t.toml").unwrap().lcores.worker_idle, WorkerIdle::Adaptive);
    assert_err(&format!("{MIN}\n{}", lc.replace("adaptive", "lazy")), "lcores.worker_idle", "not one of");
}

#[test]
fn tx_inflight_limit_and_control_tx_queue() {
    let c = from_str(MIN, "t.toml").unwrap();
    assert_eq!(c.ports[0].tx_inflight, TxInflight::Auto);
    assert_eq!(c.ports[0].control_tx_queue, ControlTxQueue::Auto);
    // A nominal vdev: no limit by default (its shaper at `speed` is the line).
    assert_eq!(crate::plan::tx_inflight_limit(&c.ports[0], 32), None);
    let pci = MIN.replacen("devargs = \"net_null0\"", "devargs = \"0000:3b:00.0\"", 1).replace("\"--no-pci\", ", "");
    let c = from_str(&pci, "t.toml").unwrap();
    // 100G, MTU 9100: 32 frames of 9122 B (291 904) is above 4 µs (50 000 B)...
    assert_eq!(crate::plan::tx_inflight_limit(&c.ports[0], 32), Some(291_904));
    // ... and 4 µs wins over 4 frames.
    assert_eq!(crate::plan::tx_inflight_limit(&c.ports[0], 4), Some(50_000));
    assert_eq!(c.ports[0].shaper_bps, None, "a real link is paced by its ring limit, not a shaper");
    let set = |v: &str| pci.replacen("speed = \"100G\"", &format!("speed = \"100G\"\n{v}"), 1);
    let c = from_str(&set("tx_inflight_limit = \"16K\"\ncontrol_tx_queue = true"), "t.toml").unwrap();
    assert_eq!(c.ports[0].tx_inflight, TxInflight::Bytes(16384));
    assert_eq!(c.ports[0].control_tx_queue, ControlTxQueue::On);
    assert_eq!(from_str(&set("tx_inflight_limit = \"off\""), "t.toml").unwrap().ports[0].tx_inflight, TxInflight::Off);
    assert_eq!(from_str(&set("tx_inflight_limit = 0"), "t.toml").unwrap().ports[0].tx_inflight, TxInflight::Off);
    assert_err(&set("tx_inflight_limit = 100"), "port[0].tx_inflight_limit", "less than the largest frame");
    // A full 1500-MTU frame is 1542 B on the line (with 802.1Q, FCS, preamble and gap):
    // 1522 (MTU + 22) used to pass, and the port never sent a full frame.
    let both = |v: &str| {
        set(v).replace("speed = \"25G\"", "speed = \"25G\"\nmtu = 1500").replacen(
            "speed = \"100G\"",
            "speed = \"100G\"\nmtu = 1500",
            1,
        )
    };
    assert_err(&both("tx_inflight_limit = 1522"), "port[0].tx_inflight_limit", "1542 B on the wire");
    assert_eq!(
        from_str(&both("tx_inflight_limit = 1542"), "t.toml").unwrap().ports[0].tx_inflight,
        TxInflight::Bytes(1542)
    );
    // A jumbo port elsewhere raises the floor of every limit: its frames may come here.
    let jumbo = set("tx_inflight_limit = 1542").replacen("speed = \"100G\"", "speed = \"100G\"\nmtu = 1500", 1);
    assert_err(&jumbo, "port[0].tx_inflight_limit", "MTU 9100 of port Ethernet4");
    assert_err(&set("control_tx_queue = \"yes\""), "port[0].control_tx_queue", "not one of");
}

#[test]
fn shared_headroom_pool() {
    let with = |extra_buffer: &str, pool_extra: &str| {
        let b = BUF
            .replace("cell_size = 256\n", &format!("cell_size = 256\n{extra_buffer}"))
            .replace("mode = \"dynamic\"\n", &format!("mode = \"dynamic\"\n{pool_extra}"));
        format!("{MIN}\n{b}")
    };
    let c = from_str(&with("headroom_policy = \"shared_pool\"\n", "xoff = \"64KiB\"\n"), "t.toml").unwrap();
    assert_eq!(c.buffer.headroom_policy, HeadroomPolicy::SharedPool { xoff: Some(65536), over_subscribe_ratio: None });
    let plan = crate::plan::plan(&c, c.switch.sw_response_ns).unwrap();
    assert_eq!(plan.mmu.headroom_policy, crate::mmu::HeadroomPolicy::SharedPool { size: 65536 });
    // Sized from Σ xoff / ratio: Ethernet0 PGs 3 and 4, 38000 each → 76000 / 2.
    let c = from_str(&with("headroom_policy = \"shared_pool\"\nover_subscribe_ratio = 2\n", ""), "t.toml").unwrap();
    let plan = crate::plan::plan(&c, c.switch.sw_response_ns).unwrap();
    assert_eq!(plan.mmu.headroom_policy, crate::mmu::HeadroomPolicy::SharedPool { size: 38000 });
    assert_err(
        &with("headroom_policy = \"shared_pool\"\n", ""),
        "buffer.headroom_policy",
        "needs the ingress lossless pool's xoff",
    );
    assert_err(
        &with("", "xoff = \"64KiB\"\n"),
        "buffer.pool.ingress_lossless_pool.xoff",
        "headroom_policy = \"shared_pool\"",
    );
    assert_err(&with("over_subscribe_ratio = 2\n", ""), "buffer.over_subscribe_ratio", "only applies");
    assert_err(&with("headroom_policy = \"shared\"\n", ""), "buffer.headroom_policy", "unknown variant");
    let c = from_str(&with("headroom_policy = \"dsh\"\n", ""), "t.toml").unwrap();
    let plan = crate::plan::plan(&c, c.switch.sw_response_ns).unwrap();
    assert_eq!(plan.mmu.headroom_policy, crate::mmu::HeadroomPolicy::Dsh);
    assert_err(
        &with("headroom_policy = \"dsh\"\n", "xoff = \"64KiB\"\n"),
        "buffer.pool.ingress_lossless_pool.xoff",
        "shared_pool",
    );
    assert_err(
        &with("headroom_policy = \"dsh\"\nover_subscribe_ratio = 2\n", ""),
        "buffer.over_subscribe_ratio",
        "only applies",
    );
    assert_err(
        &with("headroom_policy = \"shared_pool\"\n", "xoff = \"9MiB\"\n"),
        "buffer.pool.ingress_lossless_pool.xoff",
        "more than the pool's size",
    );
}
