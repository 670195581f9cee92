/* Tiny C helpers for what bindgen cannot reach from Rust: rte_errno is a per-lcore TLS
 * macro. */
#include <rte_errno.h>
int pfcsw_rte_errno(void) { return rte_errno; }

/* The ethdev data every process shares (one rte_eth_dev_data per port; memzone name from
 * lib/ethdev, unchanged since primary/secondary processes exist): for tap_mtu.rs. */
#include <rte_memzone.h>
const void *pfcsw_ethdev_data(size_t *len)
{
	const struct rte_memzone *mz = rte_memzone_lookup("rte_eth_dev_data");
	if (mz == NULL)
		return NULL;
	*len = mz->len;
	return mz->addr;
}
