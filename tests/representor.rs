//! A router interface's kernel representor: the switch's `net_tap` vdev (devargs from
//! `kernel::representor`) in a network namespace, configured over rtnetlink (MAC, MTU, up,
//! the `[interface]` address). A frame the kernel sends on `Ethernet0` comes out of the
//! tap's DPDK RX, and a frame sent on its DPDK TX reaches the kernel, which answers; with
//! its MTU raised past net_tap's 1500 (DPDK 22.11), jumbo frames too. Needs root; skipped
//! otherwise.

mod common;
use common::*;

use std::sync::Arc;
use std::time::{Duration, Instant};

use pfcswitch::dpdk::{Eal, MbufBurst, Mempool, Port};
use pfcswitch::kernel::{netlink::RtNetlink, netns, representor};
use pfcswitch::wire::MacAddr;

const PORT_MAC: [u8; 6] = [2, 0, 0, 0, 0xaa, 1];
const PEER_MAC: [u8; 6] = [2, 0, 0, 0, 0xbb, 1];

/// An ARP frame (60 bytes): `op` 1 request, 2 reply.
fn arp(op: u16, dst: [u8; 6], src: [u8; 6], sender: [u8; 4], target_mac: [u8; 6], target: [u8; 4]) -> Vec<u8> {
    let mut f = Vec::with_capacity(60);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4]);
    f.extend_from_slice(&op.to_be_bytes());
    f.extend_from_slice(&src);
    f.extend_from_slice(&sender);
    f.extend_from_slice(&target_mac);
    f.extend_from_slice(&target);
    f.resize(60, 0);
    f
}

fn is_arp(f: &[u8], op: u16) -> bool {
    f.len() >= 42 && f[12..14] == [0x08, 0x06] && f[20..22] == op.to_be_bytes()
}

fn checksum(b: &[u8]) -> u16 {
    let mut sum: u32 = b.chunks(2).map(|c| u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0))).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An IPv4 ICMP echo request with `payload` bytes of data, DF set.
fn echo_request(dst: [u8; 6], src: [u8; 6], from: [u8; 4], to: [u8; 4], payload: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(42 + payload);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&[0x08, 0x00]);
    let total = (20 + 8 + payload) as u16;
    let mut ip = vec![0x45, 0];
    ip.extend_from_slice(&total.to_be_bytes());
    ip.extend_from_slice(&[0, 1, 0x40, 0, 64, 1, 0, 0]);
    ip.extend_from_slice(&from);
    ip.extend_from_slice(&to);
    let c = checksum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let mut icmp = vec![8, 0, 0, 0, 0x12, 0x34, 0, 1];
    icmp.extend((0..payload).map(|i| i as u8));
    let c = checksum(&icmp);
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&icmp);
    f
}

#[test]
fn representor_carries_frames_both_ways() {
    if !is_root() {
        eprintln!("SKIP: needs root for network namespaces");
        return;
    }
    let d = TestDir::new("representor");
    let ns = Netns::add(&format!("pfcswrep{}", std::process::id() % 100_000));
    let cfg = pfcswitch::config::from_str(
        &format!(
            r#"
[[port]]
name = "Ethernet0"
devargs = "net_null0"
speed = "10G"
mtu = 1500
[control_plane]
netns = "{}"
[interface]
Ethernet0 = ["10.0.0.0/31"]
"#,
            ns.0
        ),
        "t.toml",
    )
    .unwrap();
    let reps = representor::representors(&cfg);
    // The switch enters its namespace before EAL: the tap is born there.
    netns::enter(&ns.0).unwrap();
    let mut args = in_process_eal_args(&d, 256);
    args.push("--vdev=net_null0".into());
    args.extend(representor::eal_args(&reps));
    let eal = Eal::init(&args).expect("EAL");
    let id = Port::id_by_name(&reps[0].vdev).unwrap();
    // Mbufs for a 9000-byte MTU, as the switch sizes them (MTU + 22 + headroom).
    let pool = Arc::new(Mempool::new("rep_pool", 1023, 0, 9000 + 22 + 128, -1).unwrap());
    let (mut port, mut rxq, mut txq) = Port::configure(id, 1, 1, 256, 256, pool.clone(), None).unwrap();
    port.start().unwrap();

    let mut nl = RtNetlink::open().unwrap();
    representor::configure(&mut nl, &reps[0].ifname, MacAddr(PORT_MAC), 1500, &reps[0].addrs).unwrap();
    let out = sh(&format!("ip -n {} addr show Ethernet0", ns.0));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.contains("inet 10.0.0.0/31"), "{text}");
    assert!(text.contains("02:00:00:00:aa:01"), "{text}");
    assert!(text.contains("mtu 1500") && text.contains(",UP"), "{text}");

    let mut burst = MbufBurst::new();
    let mut rx_until = |want: &dyn Fn(&[u8]) -> bool, what: &str| {
        let t0 = Instant::now();
        loop {
            let n = rxq[0].rx_burst(&mut burst, 32);
            let hit = (0..n).any(|i| burst.get(i).is_some_and(|m| want(m.data())));
            burst.clear();
            if hit {
                return;
            }
            assert!(t0.elapsed() < Duration::from_secs(5), "{what}: nothing on the representor's DPDK RX");
            std::thread::sleep(Duration::from_millis(1));
        }
    };

    // Kernel → DPDK: the kernel resolves 10.0.0.1 on Ethernet0; its ARP request is what the
    // switch would send out the port.
    let mut ping = std::process::Command::new("ip")
        .args(["netns", "exec", &ns.0, "ping", "-c", "3", "-i", "0.3", "-W", "1", "10.0.0.1"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    rx_until(
        &|f| is_arp(f, 1) && f[6..12] == PORT_MAC && f[38..42] == [10, 0, 0, 1],
        "the kernel's ARP request for 10.0.0.1",
    );
    let _ = ping.wait();

    // DPDK → kernel: a punted ARP request for the switch's address arrives in the kernel,
    // which answers on the representor (and learns the neighbour).
    let req = arp(1, [0xff; 6], PEER_MAC, [10, 0, 0, 1], [0; 6], [10, 0, 0, 0]);
    let mut m = pool.alloc().unwrap();
    m.append(req.len() as u16).unwrap().copy_from_slice(&req);
    let mut tx = MbufBurst::new();
    tx.push(m).ok().unwrap();
    assert_eq!(txq[0].tx_burst(&mut tx), 1);
    rx_until(
        &|f| is_arp(f, 2) && f[0..6] == PEER_MAC && f[6..12] == PORT_MAC && f[28..32] == [10, 0, 0, 0],
        "the kernel's ARP reply",
    );
    let neigh = sh(&format!("ip -n {} neigh show 10.0.0.1", ns.0));
    assert!(String::from_utf8_lossy(&neigh.stdout).contains("02:00:00:00:bb:01"), "{}", show(&neigh));

    // Jumbo both ways, MTU 9000: DPDK 22.11's net_tap refuses it through
    // rte_eth_dev_set_mtu, so it is raised past the driver (its TX drops longer frames than
    // ethdev's MTU + 22 B), and the kernel netdev's over netlink. An 8000-byte echo request
    // to the switch's address written on the DPDK TX reaches the kernel, whose 8042-byte
    // reply comes out of the DPDK RX whole.
    if pfcswitch::dpdk::mtu_of(id) != Some(9000) {
        pfcswitch::dpdk::raise_tap_mtu(id, 9000).expect("raise the tap's MTU");
    }
    assert_eq!(pfcswitch::dpdk::mtu_of(id), Some(9000));
    representor::configure(&mut nl, &reps[0].ifname, MacAddr(PORT_MAC), 9000, &reps[0].addrs).unwrap();
    // (The kernel resolves 10.0.0.1 again after the change; nothing here answers its ARP.)
    let o = sh(&format!("ip -n {} neigh replace 10.0.0.1 lladdr 02:00:00:00:bb:01 dev Ethernet0", ns.0));
    assert!(o.status.success(), "{}", show(&o));
    let req = echo_request(PORT_MAC, PEER_MAC, [10, 0, 0, 1], [10, 0, 0, 0], 8000);
    let mut m = pool.alloc().unwrap();
    m.append(req.len() as u16).unwrap().copy_from_slice(&req);
    tx.push(m).ok().unwrap();
    assert_eq!(txq[0].tx_burst(&mut tx), 1);
    let oerrors = port.stats().oerrors;
    rx_until(
        &|f| f.len() == req.len() && f[0..6] == PEER_MAC && f[12..14] == [0x08, 0] && f[34] == 0,
        "the kernel's 8000-byte echo reply",
    );
    assert_eq!(oerrors, 0, "the tap refused the jumbo");

    port.stop().unwrap();
    drop(port);
    drop(rxq);
    drop(txq);
    drop(pool);
    drop(eal);
}
