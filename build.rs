//! Generates the DPDK bindings (the crate's `dpdk-sys` layer) against the system DPDK found
//! with pkg-config, and compiles bindgen's wrappers for DPDK's `static inline` fast path.
//! Skipped entirely without the `dpdk` feature, so the pure engine builds anywhere.

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=src/dpdk/wrapper.h");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/dpdk/shim.c");
    if env::var_os("CARGO_FEATURE_DPDK").is_none() {
        return;
    }

    let lib = pkg_config::Config::new()
        .atleast_version("22.11")
        .probe("libdpdk")
        .unwrap_or_else(|e| {
            panic!("libdpdk >= 22.11 not found with pkg-config ({e}); run scripts/setup.sh (Debian: apt-get install libdpdk-dev)")
        });
    // Every cflags token, verbatim (includes `-include rte_config.h` and `-march=...`).
    let cflags_out = std::process::Command::new("pkg-config")
        .args(["--cflags", "libdpdk"])
        .output()
        .expect("pkg-config --cflags libdpdk");
    let cflags: Vec<String> =
        String::from_utf8_lossy(&cflags_out.stdout).split_whitespace().map(str::to_owned).collect();
    let _ = lib;

    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let wrap_c = out.join("dpdk_static_wrappers.c");

    let bindings = bindgen::Builder::default()
        .header("src/dpdk/wrapper.h")
        .clang_args(&cflags)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .wrap_static_fns(true)
        .wrap_static_fns_path(out.join("dpdk_static_wrappers"))
        // Packed + aligned types that Rust cannot represent: keep them opaque.
        .opaque_type("rte_arp_ipv4")
        .opaque_type("rte_arp_hdr")
        .opaque_type("rte_l2tpv2_combined_msg_hdr")
        .opaque_type("rte_gtp_psc_generic_hdr")
        // Routing tables and RCU: used through pointers only (rte_lpm embeds its 2^24-entry
        // tbl24, which must never be instantiated or derived on the Rust side).
        .opaque_type("rte_lpm")
        .opaque_type("rte_rcu_qsbr")
        .allowlist_function("rte_lpm_create")
        .allowlist_function("rte_lpm_free")
        .allowlist_function("rte_lpm_add")
        .allowlist_function("rte_lpm_delete")
        .allowlist_function("rte_lpm_lookup")
        .allowlist_function("rte_lpm_lookup_bulk_func")
        .allowlist_function("rte_lpm_rcu_qsbr_add")
        .allowlist_function("rte_lpm6_create")
        .allowlist_function("rte_lpm6_free")
        .allowlist_function("rte_lpm6_add")
        .allowlist_function("rte_lpm6_delete")
        .allowlist_function("rte_lpm6_lookup")
        .allowlist_function("rte_lpm6_lookup_bulk_func")
        .allowlist_function("rte_fib_create")
        .allowlist_function("rte_fib_free")
        .allowlist_function("rte_fib_add")
        .allowlist_function("rte_fib_delete")
        .allowlist_function("rte_fib_lookup_bulk")
        .allowlist_function("rte_fib6_create")
        .allowlist_function("rte_fib6_free")
        .allowlist_function("rte_fib6_add")
        .allowlist_function("rte_fib6_delete")
        .allowlist_function("rte_fib6_lookup_bulk")
        .allowlist_function("rte_malloc_get_socket_stats")
        .allowlist_type("rte_malloc_socket_stats")
        .allowlist_function("rte_rcu_qsbr_get_memsize")
        .allowlist_function("rte_rcu_qsbr_init")
        .allowlist_function("rte_rcu_qsbr_thread_register")
        .allowlist_function("rte_rcu_qsbr_thread_unregister")
        .allowlist_function("rte_rcu_qsbr_thread_online")
        .allowlist_function("rte_rcu_qsbr_thread_offline")
        .allowlist_function("rte_rcu_qsbr_quiescent")
        .allowlist_function("rte_rcu_qsbr_start")
        .allowlist_function("rte_rcu_qsbr_check")
        .allowlist_function("rte_rcu_qsbr_synchronize")
        .allowlist_type("rte_lpm_config")
        .allowlist_type("rte_lpm_rcu_config")
        .allowlist_type("rte_lpm6_config")
        .allowlist_type("rte_fib_conf")
        .allowlist_type("rte_fib6_conf")
        .allowlist_var("RTE_LPM_.*")
        .allowlist_var("RTE_QSBR_THRID_INVALID")
        .allowlist_function("rte_eal_init")
        .allowlist_function("rte_eal_cleanup")
        .allowlist_function("rte_eal_get_runtime_dir")
        .allowlist_function("rte_eal_process_type")
        .allowlist_function("rte_eal_remote_launch")
        .allowlist_function("rte_eal_wait_lcore")
        .allowlist_function("rte_lcore_id")
        .allowlist_function("rte_lcore_count")
        .allowlist_function("rte_get_main_lcore")
        .allowlist_function("rte_lcore_is_enabled")
        .allowlist_function("rte_lcore_to_socket_id")
        .allowlist_function("rte_socket_id")
        .allowlist_function("rte_eth_dev_socket_id")
        .allowlist_function("rte_eth_dev_default_mac_addr_set")
        .allowlist_function("rte_get_tsc_hz")
        .allowlist_function("rte_rdtsc")
        .allowlist_function("rte_rdtsc_precise")
        .allowlist_function("rte_get_tsc_cycles")
        .allowlist_function("rte_delay_us_block")
        .allowlist_function("rte_strerror")
        .allowlist_function("rte_errno_get")
        .allowlist_function("per_lcore__rte_errno")
        .allowlist_function("rte_version")
        .allowlist_function("rte_pktmbuf_pool_create")
        .allowlist_function("rte_mempool_free")
        .allowlist_function("rte_mempool_avail_count")
        .allowlist_function("rte_mempool_in_use_count")
        .allowlist_function("rte_pktmbuf_alloc")
        .allowlist_function("rte_pktmbuf_alloc_bulk")
        .allowlist_function("rte_pktmbuf_free")
        .allowlist_function("rte_pktmbuf_free_bulk")
        .allowlist_function("rte_pktmbuf_append")
        .allowlist_function("rte_pktmbuf_reset")
        .allowlist_function("rte_mbuf_prefetch_part1")
        .allowlist_function("rte_eth_dev_count_avail")
        .allowlist_function("rte_eth_dev_get_port_by_name")
        .allowlist_function("rte_eth_dev_get_name_by_port")
        .allowlist_function("rte_eth_dev_info_get")
        .allowlist_function("rte_eth_dev_configure")
        .allowlist_function("rte_eth_rx_queue_setup")
        .allowlist_function("rte_eth_tx_queue_setup")
        .allowlist_function("rte_eth_dev_start")
        .allowlist_function("rte_eth_dev_stop")
        .allowlist_function("rte_eth_dev_close")
        .allowlist_function("rte_eth_dev_set_mtu")
        .allowlist_function("rte_eth_dev_get_mtu")
        .allowlist_function("rte_eth_dev_set_link_up")
        .allowlist_function("rte_eth_dev_set_link_down")
        .allowlist_function("rte_eth_promiscuous_enable")
        .allowlist_function("rte_eth_macaddr_get")
        .allowlist_function("rte_eth_link_get_nowait")
        .allowlist_function("rte_eth_stats_get")
        .allowlist_function("rte_eth_stats_reset")
        .allowlist_function("rte_eth_dev_flow_ctrl_get")
        .allowlist_function("rte_eth_dev_flow_ctrl_set")
        .allowlist_function("rte_eth_rx_burst")
        .allowlist_function("rte_eth_tx_burst")
        .allowlist_function("rte_eth_tx_done_cleanup")
        .allowlist_function("rte_mbuf_refcnt_update")
        .allowlist_function("rte_telemetry_register_cmd")
        .allowlist_function("rte_tel_data_.*")
        .allowlist_function("rte_pdump_init")
        .allowlist_function("rte_pdump_uninit")
        .allowlist_type("rte_mbuf")
        .allowlist_type("rte_eth_conf")
        .allowlist_type("rte_eth_dev_info")
        .allowlist_type("rte_eth_stats")
        .allowlist_type("rte_eth_link")
        .allowlist_type("rte_eth_fc_conf")
        .allowlist_type("rte_ether_addr")
        .allowlist_var("RTE_MAX_LCORE")
        .allowlist_var("RTE_MAX_NUMA_NODES")
        .allowlist_var("RTE_MAX_ETHPORTS")
        .allowlist_var("RTE_MBUF_DEFAULT_BUF_SIZE")
        .allowlist_var("RTE_PKTMBUF_HEADROOM")
        .allowlist_var("RTE_ETH_LINK_.*")
        .allowlist_var("RTE_ETH_RX_OFFLOAD_.*")
        .allowlist_var("RTE_ETH_TX_OFFLOAD_.*")
        .allowlist_var("SOCKET_ID_ANY")
        .allowlist_var("RTE_TEL_MAX_.*")
        .derive_default(true)
        .layout_tests(false)
        .generate_comments(false)
        .generate()
        .expect("bindgen failed on src/dpdk/wrapper.h");
    bindings.write_to_file(out.join("dpdk_bindings.rs")).expect("write bindings");

    // bindgen writes the C shims for static inline functions; compile them with the same flags.
    let mut build = cc::Build::new();
    build.file(&wrap_c).include(env::current_dir().unwrap());
    build.flag("-O3").warnings(false);
    let mut it = cflags.iter();
    while let Some(f) = it.next() {
        if f == "-include" {
            if let Some(h) = it.next() {
                build.flag("-include").flag(h);
            }
        } else {
            build.flag(f);
        }
    }
    // The wrappers #include the header by relative path.
    build.flag("-include").flag("src/dpdk/wrapper.h");
    build.file("src/dpdk/shim.c");
    build.compile("dpdk_static_wrappers");
}
