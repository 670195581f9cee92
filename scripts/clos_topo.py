"""The routed leaf-spine `clos-2-4-4` as data: switches, ports, links, addresses, AS
numbers, and the configuration files each switch gets (FRR's zebra/bgpd; pfcswitch's TOML
for the `pfcswitch` dataplane). Pure: nothing here touches the machine.

As published: spines S1, S2; leaves L1-L4 in two pods (L1/L2 with ToRs T1/T2, L3/L4 with
T3/T4); each ToR dual-homed to its pod's two leaves, each leaf to both spines; two hosts per
ToR (h11, h12 ... h41, h42). Every link 5 Mbit/s.

Addresses (docs/fabric.md, "Addresses and AS numbers"):
  S<s>-L<l>   10.1.<s>.<2(l-1)>/31      spine even, leaf odd
  L<l>-T<t>   10.2.<l>.<2(t-1)>/31      leaf even, ToR odd
  h<t><i>     198.18.<t>.<10t+i>/31     ToR t's /24 is 198.18.<t>.0/24; each host port is
                                         a routed port with a /31 of it (the ToR the other
                                         address), announced as the /24
  router id   10.255.<tier>.<n>
AS numbers as RFC 7938 section 5.2.1 lays out: one AS for the spine tier (65000), one per
pod for its leaves (65001, 65002), one per ToR (65101-65104): paths are valley-free by AS
path loop detection (a leaf never re-learns its own pod through a spine).

Port names are SONiC's, in steps of 4: a spine's Ethernet<4(l-1)> goes to L<l>; a leaf's
Ethernet0/4 to S1/S2 and Ethernet8/12 to its pod's first/second ToR; a ToR's Ethernet0/4 to
its pod's first/second leaf and Ethernet8/12 to its hosts h<t>1/h<t>2.
"""
import ipaddress

NAME = "clos-2-4-4"
SPINES = ("s1", "s2")
PODS = ((("l1", "l2"), ("t1", "t2")), (("l3", "l4"), ("t3", "t4")))
HOSTS_PER_TOR = 2
LOSSLESS_TC = 3
# Every link's rate, as published.
LINK_BPS = 5_000_000
SPINE_AS, POD_AS, TOR_AS = 65000, 65000, 65100


class Port:
    """One end of a link: `name` on switch `switch`, address `addr` (a /31), the far end
    `peer` (a switch or a host) with `peer_addr`."""

    def __init__(self, switch, name, peer, peer_port, addr, peer_addr):
        self.switch, self.name, self.peer, self.peer_port = switch, name, peer, peer_port
        self.addr, self.peer_addr = addr, peer_addr

    @property
    def to_host(self):
        return self.peer.startswith("h")

    def raw_iface(self):
        """The switch's end of the veth when pfcswitch drives the port (af_packet on it;
        the port's own name is the switch's kernel representor): `s1e0`, `t4e12`."""
        return f"{self.switch}e{self.name[len('Ethernet'):]}"


class Switch:
    def __init__(self, name, tier, asn, router_id):
        self.name, self.tier, self.asn, self.router_id = name, tier, asn, router_id
        self.ports = []

    def port(self, name):
        return next(p for p in self.ports if p.name == name)

    def port_to(self, peer):
        return next(p for p in self.ports if p.peer == peer)


class Host:
    def __init__(self, name, tor, port, addr, gateway):
        self.name, self.tor, self.port, self.addr, self.gateway = name, tor, port, addr, gateway

    @property
    def ip(self):
        return self.addr.split("/")[0]


class Link:
    """A switch-to-switch link, `a` the upper tier."""

    def __init__(self, a, a_port, b, b_port):
        self.a, self.a_port, self.b, self.b_port = a, a_port, b, b_port

    @property
    def name(self):
        return f"{self.a}-{self.b}"


def tor_subnet(t):
    return f"198.18.{t}.0/24"


class Clos:
    """The whole topology: `switches` by name (spines, leaves, ToRs, in start order: each
    link's upper end first), `hosts` by name, `links` between switches."""

    def __init__(self):
        self.switches, self.hosts, self.links = {}, {}, []
        for s, name in enumerate(SPINES, 1):
            self.switches[name] = Switch(name, "spine", SPINE_AS, f"10.255.1.{s}")
        for pod, (leaves, _) in enumerate(PODS, 1):
            for name in leaves:
                self.switches[name] = Switch(name, "leaf", POD_AS + pod, f"10.255.2.{name[1:]}")
        for _, tors in PODS:
            for name in tors:
                t = int(name[1:])
                self.switches[name] = Switch(name, "tor", TOR_AS + t, f"10.255.3.{t}")
        for s, sp in enumerate(SPINES, 1):
            for _, (leaves, _) in enumerate(PODS):
                for leaf in leaves:
                    lnum = int(leaf[1:])
                    self._link(sp, f"Ethernet{4 * (lnum - 1)}", leaf, f"Ethernet{4 * (s - 1)}",
                               f"10.1.{s}.{2 * (lnum - 1)}")
        for leaves, tors in PODS:
            for li, leaf in enumerate(leaves):
                for ti, tor in enumerate(tors):
                    t = int(tor[1:])
                    self._link(leaf, f"Ethernet{8 + 4 * ti}", tor, f"Ethernet{4 * li}",
                               f"10.2.{leaf[1:]}.{2 * (t - 1)}")
        for _, tors in PODS:
            for tor in tors:
                t = int(tor[1:])
                for i in range(1, HOSTS_PER_TOR + 1):
                    h = f"h{t}{i}"
                    last = 10 * t + i
                    # The /31 holding the host's address; the ToR has the other half.
                    net = ipaddress.ip_network(f"198.18.{t}.{last}/31", strict=False)
                    gw = next(a for a in (net.network_address, net.broadcast_address) if int(a) & 0xFF != last)
                    port = f"Ethernet{4 + 4 * i}"
                    self.switches[tor].ports.append(Port(tor, port, h, "eth0", f"{gw}/31", f"198.18.{t}.{last}"))
                    self.hosts[h] = Host(h, tor, port, f"198.18.{t}.{last}/31", str(gw))

    def _link(self, a, a_port, b, b_port, even):
        lo = ipaddress.ip_address(even)
        hi = lo + 1
        self.switches[a].ports.append(Port(a, a_port, b, b_port, f"{lo}/31", str(hi)))
        self.switches[b].ports.append(Port(b, b_port, a, a_port, f"{hi}/31", str(lo)))
        self.links.append(Link(a, a_port, b, b_port))

    def link(self, a, b):
        return next(lk for lk in self.links if {lk.a, lk.b} == {a, b})

    def tors(self):
        return [n for n, s in self.switches.items() if s.tier == "tor"]


def zebra_conf(sw, log_path, kernel_nhg=True):
    """zebra's configuration; `kernel_nhg` false: routes go to the kernel with their next
    hops inline, not as kernel nexthop groups. FRR 8.4 with groups does not survive a link
    that goes down and comes back: the kernel drops the dead member from the group, zebra
    still counts it in and never puts it back, so the route keeps one path for good."""
    nhg = "" if kernel_nhg else "no zebra nexthop kernel enable\n"
    return f"hostname {sw.name}\nlog file {log_path}\n{nhg}!\n"


# BFD on every BGP session: a pulled link is detected in BFD_TX_MS x BFD_MULT (not BGP's 3 s
# hold time: the representors stay up when their port's link falls, so neither the kernel
# nor zebra sees it). 200 ms x 3: switches and daemons descheduled on a loaded two-CPU
# machine must not flap a session.
BFD_TX_MS, BFD_MULT = 200, 3


def bfdd_conf(sw, log_path):
    return (f"hostname {sw.name}\nlog file {log_path}\n!\nbfd\n profile fabric\n  detect-multiplier {BFD_MULT}\n"
            f"  receive-interval {BFD_TX_MS}\n  transmit-interval {BFD_TX_MS}\n !\n!\n")


def bgpd_conf(sw, log_path, bfd=True):
    """eBGP to every neighbour switch over its /31, RFC 7938 style: fast timers, ECMP over
    every equal path (`maximum-paths`), no policy required (a lab fabric), and the ToR
    announces its /24; BFD on every session unless `bfd` is false (then a dead link ends
    its session when the switch takes its representor down, or in the 3 s hold time)."""
    lines = [f"hostname {sw.name}", f"log file {log_path}", "!", f"router bgp {sw.asn}",
             f" bgp router-id {sw.router_id}", " no bgp ebgp-requires-policy", " no bgp network import-check",
             " bgp bestpath as-path multipath-relax", " timers bgp 1 3"]
    for p in sw.ports:
        if not p.to_host:
            lines.append(f" neighbor {p.peer_addr} remote-as {peer_asn(p.peer)}")
            lines.append(f" neighbor {p.peer_addr} timers connect 1")
            if TIERS.index(sw.tier) < TIERS.index(tier_of(p.peer)):
                # Only the lower tier connects: when a link comes back, both ends opening
                # at once collide (RFC 4271 6.8), and FRR 8.4 then kept the new session's
                # routes unresolved (FRRouting/frr#12025): the path never came back.
                lines.append(f" neighbor {p.peer_addr} passive")
            if bfd:
                lines.append(f" neighbor {p.peer_addr} bfd profile fabric")
    lines += [" !", " address-family ipv4 unicast", "  maximum-paths 16"]
    if sw.tier == "tor":
        lines.append(f"  network {tor_subnet(int(sw.name[1:]))}")
    lines += [" exit-address-family", "!"]
    return "\n".join(lines) + "\n"


TIERS = ("spine", "leaf", "tor")


def tier_of(name):
    if name in SPINES:
        return "spine"
    return "leaf" if any(name in leaves for leaves, _ in PODS) else "tor"


def peer_asn(name):
    if name in SPINES:
        return SPINE_AS
    for pod, (leaves, tors) in enumerate(PODS, 1):
        if name in leaves:
            return POD_AS + pod
        if name in tors:
            return TOR_AS + int(name[1:])
    raise KeyError(name)


# pfcswitch's buffer per switch: small, so that a run of the incast outlasts what every
# buffer on the paths could hold (docs/fabric.md, "Buffers"). Headroom per lossless PG: 64
# KiB (105 ms at the links' 5 Mbit/s) on switch links, for switches that share two CPUs with
# nine others; 128 KiB on a ToR's host ports, whose sender is a pfcgen process that a loaded
# machine can deschedule longer (a 60 s incast once filled 64 KiB there and lost 28 frames).
# A ToR reserves 2 x (4 + 64) + 2 x (4 + 128) KiB of the lossless pool, a leaf or spine
# 4 x (4 + 64) KiB; the rest is shared.
BUFFER_TOTAL = 640 * 1024
LOSSLESS_POOL = 576 * 1024
LOSSY_POOL = 64 * 1024
XOFF = 64 * 1024
XOFF_HOST = 128 * 1024
PG_MIN = 4096           # a lossless PG's reserved bytes (its profile's `size`)
DYNAMIC_TH = -3         # alpha = 2^-3 of the free shared pool per lossless PG
TX_INFLIGHT = 16 * 1024  # a port's frames handed to its veth, not yet out
TBF_LIMIT = 64 * 1024   # the tbf queue on hosts' eth0 (and kernel routers' ports): 100 ms at 5 Mbit/s
# mbufs per switch: the rings (8 ports x 256) and lcore caches need ~2900, and the buffer
# holds at most ~640 of the incast's 1000-byte frames. The computed default assumes
# minimum-size frames filling the buffer (~13 000 mbufs of 9 KiB: 120 MB a switch, and
# more than -m 512 once the FIBs are allocated); so this warns at start, on purpose.
MBUFS = 4096
# A port's nominal speed (PFC quanta: a PAUSE lasts up to 335 ms at 100M, so a descheduled
# control lcore still refreshes it in time); the shaper sets the real rate.
NOMINAL_SPEED = "100M"


# DCQCN-style marking (RED on the instantaneous queue) on every lossless queue when `ecn`:
# the paper's Kmin 5 KB / Kmax 200 KB / Pmax 1 % are for 40G switches with MBs of buffer;
# here a congested ToR's PG crosses Xoff at ~18 KB (its shared pool at alpha = 1/8 over two
# PGs), so marking starts at 2 frames and is certain at 10, with a Pmax of 20 %
# (docs/dcqcn.md, "The switch side").
ECN_KMIN, ECN_KMAX, ECN_PMAX = 2000, 10000, 20


def pfcswitch_toml(sw, ns, cpus, pfc=True, ecn=False):
    """pfcswitch's configuration of switch `sw` in namespace `ns`: every port an af_packet
    port on the switch's end of a veth (its raw_iface), a router interface with its /31 (the
    representor, named like the port, is where FRR talks BGP), shaped to the link rate, PFC
    on the lossless TC 3. No route: FRR programs the namespace's kernel and the switch
    mirrors it over netlink. `cpus`: (control lcore's CPU, worker's CPU)."""
    out = [f"# {NAME}: switch {sw.name} ({sw.tier}, AS {sw.asn}), written by scripts/clos_topo.py", "",
           "[eal]", f'args = ["--no-huge", "-m", "512", "--no-pci", "--lcores=0@{cpus[0]},1@{cpus[1]}"]',
           f'file_prefix = "{ns}"', "", "[switch]", "rx_ring_size = 128", "tx_ring_size = 128",
           f"mbuf_count = {MBUFS}", "",
           "[control_plane]", f'netns = "{ns}"', ""]
    for k, p in enumerate(sw.ports):
        out += ["[[port]]", f'name = "{p.name}"', f'devargs = "net_af_packet{k},iface={p.raw_iface()}"',
                f'tx_inflight_limit = "{TX_INFLIGHT // 1024}K"    # a veth: a few frames ahead of a PAUSE is plenty',
                f'speed = "{NOMINAL_SPEED}"', 'speed_mismatch = "warn"       # a veth reports 10G',
                "mtu = 9100                   # the shaper's bucket is two frames: 5M needs more than 2 x 1500 B",
                f"pfc_enable = [{LOSSLESS_TC}]" if pfc else "pfc_enable = []",
                f'shaper_rate = "{LINK_BPS // 1_000_000}M"', ""]
    out += ["[interface]"] + [f'"{p.name}" = ["{p.addr}"]' for p in sw.ports] + [""]
    out += ["[buffer]", f'total_size = "{BUFFER_TOTAL // 1024}KiB"',
            "[buffer.pool.ingress_lossless_pool]", f'size = "{LOSSLESS_POOL // 1024}KiB"', 'type = "ingress"',
            "[buffer.pool.egress_lossy_pool]", f'size = "{LOSSY_POOL // 1024}KiB"', 'type = "egress"',
            "[buffer.profile.pg_lossless_profile]", 'pool = "ingress_lossless_pool"', f"size = {PG_MIN}",
            f'xoff = "{XOFF // 1024}KiB"', "xon = 4096", "xon_offset = 12288", f"dynamic_th = {DYNAMIC_TH}",
            "[buffer.profile.pg_lossless_host_profile]", 'pool = "ingress_lossless_pool"', f"size = {PG_MIN}",
            f'xoff = "{XOFF_HOST // 1024}KiB"', "xon = 4096", "xon_offset = 12288", f"dynamic_th = {DYNAMIC_TH}",
            "[buffer.profile.queue_lossy_profile]", 'pool = "egress_lossy_pool"', "dynamic_th = -2",
            "[buffer.pg]"]
    out += [f'"{p.name}|{LOSSLESS_TC}" = "pg_lossless_{"host_" if p.to_host else ""}profile"' for p in sw.ports]
    out += ["[buffer.queue]"]
    for p in sw.ports:
        out += [f'"{p.name}|0-2" = "queue_lossy_profile"', f'"{p.name}|4-7" = "queue_lossy_profile"']
    if ecn:
        out += ["[qos.wred_profile.DCQCN]", f"green_min_threshold = {ECN_KMIN}", f"green_max_threshold = {ECN_KMAX}",
                f"green_drop_probability = {ECN_PMAX}", "wred_green_enable = true", 'ecn = "ecn_all"', "[qos.queue]"]
        out += [f'"{p.name}|{LOSSLESS_TC}" = {{ wred_profile = "DCQCN" }}' for p in sw.ports]
    names = ", ".join(f'"{p.name}:0"' for p in sw.ports)
    tx = ", ".join(f'"{p.name}"' for p in sw.ports)
    out += ["", "[lcores]", "control = 0", 'worker_idle = "adaptive"', "[[lcores.worker]]", "lcore = 1",
            f"rx = [{names}]", f"tx = [{tx}]", ""]
    return "\n".join(out)


# The incast's lossless frames (h11 -> t1 -> l1/l2 -> s1/s2 -> l3/l4 -> t4 -> h41 and
# h31 -> t3 -> l3/l4 -> t4 -> h41) can only wait in these ingress PGs: per switch, the
# neighbours whose frames it may hold.
INCAST_PGS = {"t1": ("h11",), "l1": ("t1",), "l2": ("t1",), "s1": ("l1", "l2"), "s2": ("l1", "l2"),
              "l3": ("s1", "s2", "t3"), "l4": ("s1", "s2", "t3"), "t3": ("h31",), "t4": ("l3", "l4")}


def incast_buffer_bound(clos=None):
    """An upper bound, bytes, of what the fabric can hold of the incast's excess: every
    lossless PG on its paths full (reserved + its share of the shared pool + all of its
    headroom) plus what each link's sender has handed to its veth (TX_INFLIGHT per hop,
    and the last one to h41) and the senders' own tbf queues. n PGs of one switch all at the Dynamic Threshold
    (x = alpha * (S - n x)) hold n alpha S / (1 + n alpha) of its shared pool S, S being
    the lossless pool less every PG's reserved bytes and headroom (docs/fabric.md,
    "Buffers"). With PFC the excess past this must have stayed in the senders."""
    clos = clos or Clos()
    alpha = 2.0 ** DYNAMIC_TH
    total = TX_INFLIGHT + 2 * TBF_LIMIT
    for name, peers in INCAST_PGS.items():
        sw = clos.switches[name]
        xoff = {p.peer: XOFF_HOST if p.to_host else XOFF for p in sw.ports}
        shared = LOSSLESS_POOL - sum(PG_MIN + x for x in xoff.values())
        n = len(peers)
        total += sum(PG_MIN + xoff[p] + TX_INFLIGHT for p in peers) + n * alpha * shared / (1 + n * alpha)
    return int(total)


# ---- the same switch as SONiC's CONFIG_DB (--config-db): `pfcswitch run --config-db` and
# `pfcswitch import sonic --frr` read these; docs/fabric.md, "Started from config_db.json".

TIER_TYPE = {"spine": "SpineRouter", "leaf": "LeafRouter", "tor": "ToRRouter"}


def config_db(sw, pfc=True, ecn=False):
    """Switch `sw` as a SONiC config_db.json (a dict): what pfcswitch_toml says about ports,
    buffers, PFC and router interfaces, in CONFIG_DB's tables, and for FRR the AS number,
    Loopback0 (router-id), one BGP_NEIGHBOR per switch link (timers 1/3 s) and, on a ToR,
    its hosts' /24 (BGP_GLOBALS_AF_NETWORK, announced without a covering route:
    network_import_check false, as bgpd_conf's `no bgp network import-check`). What
    CONFIG_DB has no field for (devargs, shaper, EAL, lcores, netns) is in port_map_toml."""
    ports = sw.ports
    n = int(sw.name[1:])
    db = {
        "DEVICE_METADATA": {"localhost": {
            "hostname": sw.name, "bgp_asn": str(sw.asn), "type": TIER_TYPE[sw.tier], "buffer_model": "traditional",
            "hwsku": "pfcswitch-clos-2-4-4", "mac": f"02:00:00:{list(TIER_TYPE).index(sw.tier):02x}:00:{n:02x}"}},
        "PORT": {p.name: {"speed": str(int(NOMINAL_SPEED.rstrip("M"))), "mtu": "9100", "admin_status": "up",
                          "alias": p.raw_iface(), "description": p.peer} for p in ports},
        "CABLE_LENGTH": {"AZURE": {p.name: "5m" for p in ports}},
        "BUFFER_POOL": {"ingress_lossless_pool": {"size": str(LOSSLESS_POOL), "type": "ingress", "mode": "dynamic"},
                        "egress_lossy_pool": {"size": str(LOSSY_POOL), "type": "egress", "mode": "dynamic"}},
        "BUFFER_PROFILE": {
            "pg_lossless_profile": {"pool": "ingress_lossless_pool", "size": str(PG_MIN), "xoff": str(XOFF),
                                    "xon": "4096", "xon_offset": "12288", "dynamic_th": str(DYNAMIC_TH)},
            "pg_lossless_host_profile": {"pool": "ingress_lossless_pool", "size": str(PG_MIN), "xoff": str(XOFF_HOST),
                                         "xon": "4096", "xon_offset": "12288", "dynamic_th": str(DYNAMIC_TH)},
            "queue_lossy_profile": {"pool": "egress_lossy_pool", "size": "0", "dynamic_th": "-2"}},
        "BUFFER_PG": {f"{p.name}|{LOSSLESS_TC}": {"profile": "pg_lossless_host_profile" if p.to_host
                                                  else "pg_lossless_profile"} for p in ports},
        "BUFFER_QUEUE": {f"{p.name}|{q}": {"profile": "queue_lossy_profile"} for p in ports for q in ("0-2", "4-7")},
        "PORT_QOS_MAP": {p.name: {"pfc_enable": str(LOSSLESS_TC) if pfc else ""} for p in ports},
        "INTERFACE": {**{p.name: {} for p in ports}, **{f"{p.name}|{p.addr}": {} for p in ports}},
        "LOOPBACK_INTERFACE": {"Loopback0": {}, f"Loopback0|{sw.router_id}/32": {}},
        "BGP_NEIGHBOR": {p.peer_addr: {"asn": str(peer_asn(p.peer)), "name": p.peer, "keepalive": "1",
                                       "holdtime": "3", "admin_status": "up"} for p in ports if not p.to_host},
        "BGP_GLOBALS": {"default": {"network_import_check": "false"}},
    }
    if sw.tier == "tor":
        db["BGP_GLOBALS_AF_NETWORK"] = {f"default|ipv4_unicast|{tor_subnet(n)}": {}}
    if ecn:
        db["WRED_PROFILE"] = {"DCQCN": {"green_min_threshold": str(ECN_KMIN), "green_max_threshold": str(ECN_KMAX),
                                        "green_drop_probability": str(ECN_PMAX), "wred_green_enable": "true",
                                        "ecn": "ecn_all"}}
        db["QUEUE"] = {f"{p.name}|{LOSSLESS_TC}": {"wred_profile": "DCQCN"} for p in ports}
    return db


def port_map_toml(sw, ns, cpus):
    """The port map (`--ports`) beside config_db(sw): each SONiC port's devargs (af_packet on
    its raw veth end) and the [[port]] fields CONFIG_DB has not (tx_inflight_limit,
    speed_mismatch, shaper_rate), and the [eal], [switch], [control_plane] and [lcores]
    sections, all as pfcswitch_toml writes them."""
    out = [f"# {NAME}: switch {sw.name}'s port map, written by scripts/clos_topo.py", ""]
    for k, p in enumerate(sw.ports):
        out.append(f'{p.name} = {{ devargs = "net_af_packet{k},iface={p.raw_iface()}", '
                   f'tx_inflight_limit = "{TX_INFLIGHT // 1024}K", speed_mismatch = "warn", '
                   f'shaper_rate = "{LINK_BPS // 1_000_000}M" }}')
    names = ", ".join(f'"{p.name}:0"' for p in sw.ports)
    tx = ", ".join(f'"{p.name}"' for p in sw.ports)
    out += ["", "[eal]", f'args = ["--no-huge", "-m", "512", "--no-pci", "--lcores=0@{cpus[0]},1@{cpus[1]}"]',
            f'file_prefix = "{ns}"', "", "[switch]", "rx_ring_size = 128", "tx_ring_size = 128",
            f"mbuf_count = {MBUFS}", "", "[control_plane]", f'netns = "{ns}"', "",
            "[lcores]", "control = 0", 'worker_idle = "adaptive"', "[[lcores.worker]]", "lcore = 1",
            f"rx = [{names}]", f"tx = [{tx}]", ""]
    return "\n".join(out)


def write_configs(out_dir):
    """Every switch's files as the fabric writes them (the ones `Fabric` starts from, with
    each switch's CPUs and namespace): <name>.toml, <name>.config_db.json and
    <name>.ports.toml, and the same with ECN marking (<name>.ecn.*). tests/sonic_import.rs
    checks that the config_db files import to what the TOML says."""
    import json
    import os
    os.makedirs(out_dir, exist_ok=True)
    for i, (name, sw) in enumerate(Clos().switches.items()):
        ns, cpus = "clos-" + name, (i % 2, (i + 1) % 2)
        for tag, ecn in (("", False), (".ecn", True)):
            with open(os.path.join(out_dir, f"{name}{tag}.toml"), "w") as f:
                f.write(pfcswitch_toml(sw, ns, cpus, ecn=ecn))
            with open(os.path.join(out_dir, f"{name}{tag}.config_db.json"), "w") as f:
                json.dump(config_db(sw, ecn=ecn), f, indent=2)
        with open(os.path.join(out_dir, f"{name}.ports.toml"), "w") as f:
            f.write(port_map_toml(sw, ns, cpus))


if __name__ == "__main__":
    import sys
    if len(sys.argv) != 2:
        raise SystemExit("usage: clos_topo.py OUT_DIR   (writes every switch's TOML, config_db.json and port map)")
    write_configs(sys.argv[1])
