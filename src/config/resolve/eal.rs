//! `[eal]`: the lcore set EAL is given, checked against `[lcores]`.

use super::*;

/// Parse an lcore list `0-3,5` (as `-l`) or an lcore map `0@0,(1-2)@(1,2)` (as `--lcores`).
pub fn parse_lcore_set(s: &str) -> Option<BTreeSet<u32>> {
    let mut set = BTreeSet::new();
    let mut elems = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                elems.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    elems.push(&s[start..]);
    for e in elems {
        let lc = e.split('@').next()?;
        let lc = lc.trim_start_matches('(').trim_end_matches(')');
        for item in lc.split(',') {
            let (a, b) = match item.split_once('-') {
                Some((a, b)) => (a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?),
                None => {
                    let n = item.trim().parse::<u32>().ok()?;
                    (n, n)
                }
            };
            if a > b || b > 4096 {
                return None;
            }
            set.extend(a..=b);
        }
    }
    Some(set)
}

/// `(index of the argument, its text, the enabled lcores)` from `-l`, `--lcores` or `-c`.
pub(super) fn eal_lcores(args: &[String]) -> Option<(usize, String, BTreeSet<u32>)> {
    let mut found = None;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let next = args.get(i + 1).map(|s| s.as_str());
        let (val, shown) = if a == "-l" || a == "--lcores" || a == "-c" {
            (next, format!("{a} {}", next.unwrap_or("")))
        } else if let Some(v) = a.strip_prefix("--lcores=") {
            (Some(v), a.to_string())
        } else if a.starts_with("-l") && a.len() > 2 && !a.starts_with("--") {
            (Some(&a[2..]), a.to_string())
        } else {
            i += 1;
            continue;
        };
        let set = if a == "-c" {
            val.and_then(|v| u128::from_str_radix(v.trim_start_matches("0x").trim_start_matches("0X"), 16).ok())
                .map(|m| (0..128).filter(|b| m & (1u128 << b) != 0).collect())
        } else {
            val.and_then(parse_lcore_set)
        };
        if let Some(set) = set {
            found = Some((i, shown, set));
        }
        i += 1;
    }
    found
}

pub(super) fn check_eal(eal: &RawEal, ports: &[PortConfig], lcores: &LcoreConfig, lcores_written: bool) -> FResult<()> {
    let args = &eal.args;
    let has_prefix_arg = args.iter().position(|a| a == "--file-prefix" || a.starts_with("--file-prefix="));
    if let Some(p) = &eal.file_prefix {
        if p.is_empty() || p.contains('/') || p.chars().any(char::is_whitespace) {
            return Err(FieldError::new(
                "eal.file_prefix",
                format!("'{p}' must be non-empty, without '/' or whitespace"),
            ));
        }
        if let Some(i) = has_prefix_arg {
            return Err(FieldError::new(
                "eal.file_prefix",
                format!("also given in eal.args[{i}]; set it in one place"),
            ));
        }
    }
    // Devices given twice, --no-pci with PCI ports, shared objects loaded without opt-in.
    for (i, a) in args.iter().enumerate() {
        let path = format!("eal.args[{i}]");
        if (a == "-d" || (a.starts_with("-d") && !a.starts_with("--"))) && !eal.allow_eal_plugins.unwrap_or(false) {
            return Err(FieldError::new(
                path,
                "'-d' makes EAL load a shared object, i.e. run its code as the switch's user; set eal.allow_eal_plugins = true to allow it",
            ));
        }
        if a == "--no-pci" {
            if let Some(p) = ports.iter().find(|p| p.is_pci()) {
                return Err(FieldError::new(
                    path,
                    format!("--no-pci conflicts with PCI port port[{}] ({}, {})", p.index, p.name, p.devargs),
                ));
            }
        }
        let dev = if ["--vdev", "-a", "--allow", "-w", "--pci-whitelist"].contains(&a.as_str()) {
            args.get(i + 1).map(|s| s.as_str())
        } else if let Some(v) = a
            .strip_prefix("--vdev=")
            .or_else(|| a.strip_prefix("--allow="))
            .or_else(|| a.strip_prefix("--pci-whitelist="))
        {
            Some(v)
        } else if a.starts_with("-a") && a.len() > 2 && !a.starts_with("--") {
            Some(&a[2..])
        } else {
            None
        };
        if let Some(dev) = dev {
            let name = dev.split(',').next().unwrap_or("");
            let norm = parse_bdf(name).unwrap_or_else(|| name.to_string());
            if let Some(p) = ports.iter().find(|p| p.dpdk_name() == norm) {
                return Err(FieldError::new(
                    path,
                    format!(
                        "device '{name}' is port[{}] ({}); ports are added to the EAL arguments from [[port]] automatically, remove it here",
                        p.index, p.name
                    ),
                ));
            }
        }
    }
    // Lcores enabled.
    if let Some((i, shown, set)) = eal_lcores(args) {
        let check = |lc: u32, path: String| -> FResult<()> {
            if set.contains(&lc) {
                Ok(())
            } else {
                Err(FieldError::new(path, format!("lcore {lc} is not enabled by eal.args[{i}] '{shown}'")))
            }
        };
        let p = |s: &str| {
            if lcores_written {
                s.to_string()
            } else {
                "lcores".to_string()
            }
        };
        check(lcores.control, p("lcores.control"))?;
        for (j, w) in lcores.workers.iter().enumerate() {
            check(w.lcore, p(&format!("lcores.worker[{j}].lcore")))?;
        }
    }
    for (i, a) in args.iter().enumerate() {
        let v = if a == "--main-lcore" || a == "--master-lcore" {
            args.get(i + 1).map(|s| s.as_str())
        } else {
            a.strip_prefix("--main-lcore=").or_else(|| a.strip_prefix("--master-lcore="))
        };
        if let Some(v) = v {
            if v.parse::<u32>().ok() != Some(lcores.control) {
                return Err(FieldError::new(
                    format!("eal.args[{i}]"),
                    format!(
                        "main lcore '{v}' differs from lcores.control {}; the control lcore is the main lcore (pfcswitch adds --main-lcore itself)",
                        lcores.control
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Warnings about devices a peer can reach: a memif socket without a `secret` accepts any
/// peer that can open it, and DPDK 22.11 puts memif sockets in the abstract namespace by
/// default, where file permissions do not apply.
pub(super) fn warn_devargs(ports: &[PortConfig], ctx: &mut Ctx) {
    for p in ports.iter().filter(|p| p.dpdk_name().starts_with("net_memif")) {
        let kv: Vec<(&str, &str)> =
            p.devargs.split(',').skip(1).map(|a| a.split_once('=').unwrap_or((a, ""))).collect();
        let path = format!("port[{}].devargs", p.index);
        if !kv.iter().any(|(k, _)| *k == "secret") {
            ctx.warn(&path, "memif without 'secret': any peer that reaches the socket may connect");
        }
        if !kv.iter().any(|(k, v)| *k == "socket-abstract" && *v == "no") {
            ctx.warn(
                &path,
                "memif socket in the abstract namespace (DPDK's default; 'socket-abstract=no' makes it a file with permissions)",
            );
        }
    }
}

/// EAL's memory in MiB when the arguments give it: `-m N` / `-mN`, or the sum of
/// `--socket-mem a,b,…`; with its argument's index.
fn eal_memory_mib(args: &[String]) -> Option<(usize, u64)> {
    let mut found = None;
    for (i, a) in args.iter().enumerate() {
        let v = match a.as_str() {
            "-m" | "--socket-mem" => args.get(i + 1).map(|s| s.as_str()),
            _ => a.strip_prefix("--socket-mem=").or_else(|| a.strip_prefix("-m").filter(|v| !v.starts_with('-'))),
        };
        if let Some(v) = v.filter(|v| !v.is_empty()) {
            let sum: Option<u64> = v.split(',').map(|x| x.trim().parse::<u64>().ok()).sum();
            if let Some(n) = sum {
                found = Some((i, n));
            }
        }
    }
    found
}

/// What a switch takes from EAL's memory besides its packet mempool and routing tables (EAL,
/// rings, the control pool, PMDs): a lower bound, well below the 160 MiB measured for two
/// net_null ports (`/eal/heap_info`), so that the clos fabric's `-m 512` switches (4096
/// mbufs of MTU 9100, the default tables) pass.
const BASE_MIB: u64 = 96;

/// A routed switch whose EAL memory (`-m`, `--socket-mem`) cannot hold its routing tables
/// beside the packet mempool and the rest: one line before EAL, instead of
/// `rte_fib6_create` failing with ENOMEM in `run`. Every figure is a lower bound, so a
/// configuration refused here cannot start; one accepted may still be short.
pub(super) fn check_memory(
    args: &[String],
    routing: &RoutingConfig,
    switch: &SwitchConfig,
    ports: &[PortConfig],
) -> FResult<()> {
    if !routing.enabled() {
        return Ok(());
    }
    let Some((i, have)) = eal_memory_mib(args) else { return Ok(()) };
    let v4 = routing.max_ipv4_routes.unwrap_or(crate::route::memory::DEFAULT_V4_ROUTES);
    let tables = crate::route::memory::tables_bytes(v4, routing.max_ipv6_routes) >> 20;
    // The packet mempool as `run` creates it: one data room for the largest frame, + headers.
    let max_mtu = ports.iter().map(|p| u32::from(p.mtu)).max().unwrap_or(1500);
    let room = u64::from((max_mtu + crate::wire::L2_OVERHEAD + 128).clamp(2048 + 128, u32::from(u16::MAX)));
    let mempool = (u64::from(switch.mbuf_count) * (room + 192)) >> 20;
    if tables + mempool + BASE_MIB > have {
        return Err(FieldError::new(
            format!("eal.args[{i}]"),
            format!(
                "{have} MiB of EAL memory cannot hold the routing tables (about {tables} MiB for {v4} IPv4 routes and the IPv6 \
                 FIB, two copies each) beside the packet mempool (about {mempool} MiB) and EAL's own (at least {BASE_MIB} MiB): \
                 give more than {} MiB, or lower control_plane.max_ipv4_routes or switch.mbuf_count",
                tables + mempool + BASE_MIB
            ),
        ));
    }
    Ok(())
}
