/* The DPDK headers pfcswitch binds to (bindgen input). Keep this list short. */
#include <rte_config.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_launch.h>
#include <rte_cycles.h>
#include <rte_mempool.h>
#include <rte_mbuf.h>
#include <rte_ethdev.h>
#include <rte_telemetry.h>
#include <rte_pdump.h>
#include <rte_version.h>
#include <rte_rcu_qsbr.h>
#include <rte_lpm.h>
#include <rte_lpm6.h>
#include <rte_fib.h>
#include <rte_fib6.h>
