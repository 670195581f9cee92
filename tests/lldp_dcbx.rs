//! LLDP with DCBX (`[lldp] enabled = true`), checked by tools that are not ours:
//! * the frames the switch sends, decoded by tshark's LLDP/DCBX dissector (every TLV, the
//!   values the configuration implies, nothing malformed);
//! * a peer's frame (built by hand here from 802.1AB/802.1Qaz) announcing PFC on priority
//!   3 only: kept as the neighbour (`show lldp neighbors`), the mismatch with our 3,4 shown
//!   by `show dcbx` and logged once; the frame is consumed (`lldp_rx`) and conserved;
//! * `lldpad` (Debian) in a network namespace on a veth: `lldptool` decodes our ETS, PFC
//!   and Application TLVs as its neighbour's, and the switch keeps lldpad as its own.

mod common;
use common::*;

use std::process::Command;
use std::time::Duration;

/// A peer's LLDPDU, byte by byte: chassis MAC 02:00:00:00:00:99, port "swp7", TTL 120,
/// system name "peer-nic", PFC willing 1 / cap 8 / enable {3}, End.
fn peer_frame() -> Vec<u8> {
    let mut f = vec![0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e, 0x02, 0, 0, 0, 0, 0x99, 0x88, 0xcc];
    f.extend_from_slice(&[0x02, 0x07, 0x04, 0x02, 0, 0, 0, 0, 0x99]); // Chassis ID, MAC
    f.extend_from_slice(&[0x04, 0x05, 0x05, b's', b'w', b'p', b'7']); // Port ID, ifname
    f.extend_from_slice(&[0x06, 0x02, 0x00, 0x78]); // TTL 120
    f.extend_from_slice(&[0x0a, 0x08]); // System Name
    f.extend_from_slice(b"peer-nic");
    f.extend_from_slice(&[0xfe, 0x06, 0x00, 0x80, 0xc2, 0x0b, 0x88, 0x08]); // PFC: willing, cap 8, {3}
    f.extend_from_slice(&[0x00, 0x00]); // End
    f.resize(60, 0); // padded to the minimum frame, as a MAC sends it
    f
}

fn lldp_section(hello: u32) -> String {
    format!("[lldp]\nenabled = true\nhello_time = {hello}\nsystem_name = \"tor1\"\nroce_priority = 3\n")
}

/// An LLDP flood is policed at the worker (unpoliced, 679,333 LLDPDUs in 6 s took the
/// control lcore's time from PAUSE refreshes): a few frames a second reach the control
/// lcore, the rest are counted `lldp_policed`, and every frame is accounted for.
#[test]
fn an_lldp_flood_is_policed_at_the_worker() {
    let d = TestDir::new("lldpflood");
    let n = 5000u64;
    write_pcap(&d.join("in0.pcap"), &vec![peer_frame(); n as usize]);
    write_pcap(&d.join("in1.pcap"), &[]);
    let cfg = pcap_pair(&d, "10G").toml(&lldp_section(1)).write(&d.join("t.toml"));
    let st = run_for(&d, &cfg, "2");
    let e0 = port(&st, "Ethernet0");
    let rx = e0["lldp_rx"].as_u64().unwrap();
    let policed = e0["drops"]["lldp_policed"].as_u64().unwrap();
    let ring_full = e0["drops"]["link_local"].as_u64().unwrap();
    assert_eq!(rx + policed + ring_full, n, "every LLDP frame counted: {e0}");
    // 10 at once, 10 a second after: the file is read within the run's first second or so.
    assert!((1..=40).contains(&rx), "{rx} LLDP frames reached the control lcore (policer: 10/s, burst 10)");
    assert!(policed >= n - 40, "{policed} policed of {n}");
    assert_conserved(&st);
}

#[test]
fn our_frames_decode_with_tshark_and_a_peer_mismatch_is_shown() {
    let d = TestDir::new("lldp");
    write_pcap(&d.join("in0.pcap"), &[peer_frame()]);
    write_pcap(&d.join("in1.pcap"), &[]);
    let cfg = pcap_pair(&d, "10G")
        .edit_port("Ethernet0", |p| p.set("trust", "\"dscp\""))
        .edit_port("Ethernet4", |p| p.set("tx_enable", "true"))
        .toml("[buffer]\ntotal_size = \"2MiB\"")
        .toml(&lldp_section(1))
        .write(&d.join("t.toml"));
    let json = d.join("stats.json");
    let mut sw = RunningSwitch::spawn(&cfg, &json, &["--duration", "30"]);
    sw.wait_forwarding(Duration::from_secs(30));
    let prefix = d.prefix();
    let show = |args: &[&str]| {
        let out = Command::new(BIN).args(["show", "--prefix", &prefix]).args(args).output().unwrap();
        assert!(out.status.success(), "show {args:?}: {}", common::show(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    // The peer's frame is the first thing in0.pcap holds: give the control lcore a moment.
    let mut dcbx = String::new();
    for _ in 0..50 {
        dcbx = show(&["dcbx"]);
        if dcbx.contains("PFC MISMATCH") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(dcbx.contains("PFC MISMATCH"), "{dcbx}");
    assert!(dcbx.contains("warning: Ethernet0: the peer's PFC enable set (3) differs from ours (3,4)"), "{dcbx}");
    assert!(dcbx.contains("udp 4791→3") && dcbx.contains("dscp 46→5"), "our Application TLV: {dcbx}");
    let nb = show(&["lldp", "neighbors"]);
    eprintln!("$ pfcswitch show dcbx\n{dcbx}$ pfcswitch show lldp neighbors\n{nb}");
    for want in
        ["Interface:    Ethernet0", "ChassisID:    02:00:00:00:00:99", "SysName:      peer-nic", "PortID:       swp7"]
    {
        assert!(nb.contains(want), "missing {want:?} in\n{nb}");
    }
    assert!(!nb.contains("Interface:    Ethernet4"), "no peer on Ethernet4: {nb}");
    let j: serde_json::Value = serde_json::from_str(&show(&["--json", "dcbx"])).unwrap();
    // DPDK telemetry has no bool: flags are 0/1.
    assert_eq!(j["Ethernet0"]["pfc_mismatch"], 1);
    assert_eq!(j["Ethernet0"]["neighbor"]["pfc"]["willing"], 1);
    assert_eq!(j["Ethernet4"]["neighbor"], serde_json::Value::Null);
    // At least three hellos (1 s apart) on each port.
    std::thread::sleep(Duration::from_millis(2500));
    let log = sw.stop();
    assert_eq!(log.matches("PFC mismatch").count(), 1, "warned once:\n{log}");
    let st = read_json(&json);
    assert_eq!(port(&st, "Ethernet0")["lldp_rx"], 1, "the peer's frame is consumed");
    assert_conserved(&st);

    // tshark, field by field, on every frame the switch sent on Ethernet0.
    let out0 = d.join("out0.pcap");
    let fields = Command::new("tshark")
        .args(["-r", out0.to_str().unwrap(), "-Y", "lldp", "-T", "fields", "-E", "separator=|"])
        .args([
            "-e",
            "lldp.chassis.id.mac",
            "-e",
            "lldp.port.id",
            "-e",
            "lldp.time_to_live",
            "-e",
            "lldp.tlv.system.name",
        ])
        .output()
        .expect("tshark (Debian package tshark)");
    let text = String::from_utf8_lossy(&fields.stdout);
    let rows: Vec<&str> = text.lines().collect();
    assert!(rows.len() >= 3, "expected ≥ 3 LLDP frames, tshark saw {}:\n{text}", rows.len());
    for r in &rows {
        let c: Vec<&str> = r.split('|').collect();
        assert_eq!(&c[1..], ["Ethernet0", "4", "tor1"], "{r}");
        assert_eq!(c[0].len(), 17, "chassis MAC: {r}");
    }
    let verbose =
        Command::new("tshark").args(["-r", out0.to_str().unwrap(), "-Y", "lldp", "-c", "1", "-V"]).output().unwrap();
    let v = String::from_utf8_lossy(&verbose.stdout);
    for want in [
        "IEEE - ETS Configuration",
        "Maximum Number of Traffic Classes: 8",
        // SONiC's default scheduler: DWRR 14/14/14/15/15/14/14, TC 7 strict.
        "Bandwidth for PGID 3: 15",
        "Bandwidth for PGID 7: 0",
        "TSA for Traffic Class 3: Enhanced Transmission Selection (2)",
        "TSA for Traffic Class 7: Strict Priority (0)",
        "IEEE - ETS Recommendation",
        "IEEE - Priority Flow Control Configuration",
        "0... .... = Willing: No",
        "Max PFC Enabled Traffic Classes: 8",
        "PFC for Priority 2: Disabled",
        "PFC for Priority 3: Enabled",
        "PFC for Priority 4: Enabled",
        "PFC for Priority 5: Disabled",
        "IEEE - Application Protocol",
        "Application Selector: Port over UDP/DCCP (3)",
        "Application Protocol Id: 0x12b7",
        "Application Protocol Id: 0x002e",
        "End of LLDPDU",
    ] {
        assert!(v.contains(want), "tshark did not show {want:?}:\n{v}");
    }
    let bad = Command::new("tshark")
        .args(["-r", out0.to_str().unwrap(), "-Y", "_ws.malformed || _ws.expert.severity >= warning"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&bad.stdout).trim().is_empty(),
        "malformed: {}",
        String::from_utf8_lossy(&bad.stdout)
    );
}

/// Removes the namespace, the veth and lldpad on drop.
struct Ns {
    name: String,
    veth: String,
    lldpad: Option<std::process::Child>,
}
impl Drop for Ns {
    fn drop(&mut self) {
        if let Some(c) = self.lldpad.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = sh(&format!("ip link del {} 2>/dev/null; ip netns del {} 2>/dev/null", self.veth, self.name));
    }
}

#[test]
fn lldpad_in_a_namespace_decodes_our_dcbx_tlvs() {
    if !is_root() || !sh("command -v lldpad && command -v lldptool").status.success() {
        eprintln!("skipped: needs root and lldpad (scripts/setup.sh installs it)");
        return;
    }
    let d = TestDir::new("lldpad");
    let tag = std::process::id() % 10000;
    let (ns, a, b) = (format!("pfclldp{tag}"), format!("pfl{tag}a"), format!("pfl{tag}b"));
    let mut guard = Ns { name: ns.clone(), veth: a.clone(), lldpad: None };
    let o = sh(&format!(
        "ip netns add {ns} && ip link add {a} type veth peer name {b} && ip link set {b} netns {ns} && \
         (sysctl -qw net.ipv6.conf.{a}.disable_ipv6=1; true) && ip link set {a} up && \
         ip netns exec {ns} ip link set {b} up && ip netns exec {ns} ip link set lo up"
    ));
    assert!(o.status.success(), "{}", common::show(&o));
    // lldpad's control socket is abstract: one per network namespace.
    let conf = d.join("lldpad.conf");
    guard.lldpad = Some(
        Command::new("ip")
            .args(["netns", "exec", &ns, "lldpad", "-p", "-t", "-f", conf.to_str().unwrap()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let lldptool = |args: &str| sh(&format!("ip netns exec {ns} lldptool {args}"));
    let mut up = false;
    for _ in 0..50 {
        if lldptool(&format!("-L -i {b} adminStatus=rxtx")).status.success() {
            up = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(up, "lldpad did not answer");
    // lldpad as a willing peer: it refuses on a veth ("Device not capable": no DCB
    // netlink in the driver), so it only receives here.
    let willing = lldptool(&format!("-T -i {b} -V PFC willing=yes"));
    eprintln!("lldptool -T -V PFC willing=yes: {}", String::from_utf8_lossy(&willing.stdout).trim());

    write_pcap(&d.join("in1.pcap"), &[]);
    let cfg = SwitchConfig::new(&d.prefix(), "0@0,1@1")
        .port(
            Port::new("Ethernet0", &format!("net_pcap0,rx_iface_in={a},tx_iface={a}"))
                .speed("10G")
                .set("trust", "\"dscp\"")
                .pfc_enable(&[3, 4]),
        )
        .port(
            Port::new("Ethernet4", &format!("net_pcap1,rx_pcap={0}/in1.pcap,tx_pcap={0}/out1.pcap", d.path.display()))
                .speed("10G"),
        )
        .one_worker()
        .toml("[buffer]\ntotal_size = \"2MiB\"")
        .toml(&lldp_section(1))
        .write(&d.join("t.toml"));
    let json = d.join("stats.json");
    let mut sw = RunningSwitch::spawn(&cfg, &json, &["--duration", "30"]);
    sw.wait_forwarding(Duration::from_secs(30));
    let mut nb = String::new();
    for _ in 0..60 {
        let o = lldptool(&format!("-t -n -i {b}"));
        nb = String::from_utf8_lossy(&o.stdout).into_owned();
        if nb.contains("PFC TLV") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    for want in [
        "Ifname: Ethernet0",
        "tor1",
        "IEEE 8021QAZ ETS Configuration TLV",
        "TC Bandwidth: 14% 14% 14% 15% 15% 14% 14% 0%",
        "TSA_MAP: 0:ets 1:ets 2:ets 3:ets 4:ets 5:ets 6:ets 7:strict",
        "IEEE 8021QAZ ETS Recommendation TLV",
        "IEEE 8021QAZ PFC TLV",
        "Willing: no",
        "PFC enabled: 3 4",
        "IEEE 8021QAZ APP TLV",
        "UDP or DCCP Port: 4791",
        "dscp:  46",
    ] {
        assert!(nb.contains(want), "lldptool -t -n: missing {want:?} in\n{nb}");
    }
    // And the other way: lldpad is the switch's neighbour (it sends no DCBX TLV from a
    // veth, which is no mismatch).
    let prefix = d.prefix();
    let mut ours = String::new();
    for _ in 0..100 {
        let o = Command::new(BIN).args(["show", "--prefix", &prefix, "lldp", "neighbors"]).output().unwrap();
        ours = String::from_utf8_lossy(&o.stdout).into_owned();
        if ours.contains("Interface:    Ethernet0") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(ours.contains("Interface:    Ethernet0") && ours.contains("TTL:          120"), "{ours}");
    let log = sw.stop();
    assert!(!log.contains("PFC mismatch"), "{log}");
    assert_conserved(&read_json(&json));
}
