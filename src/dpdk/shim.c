/* Tiny C helpers for what bindgen cannot reach from Rust: rte_errno is a per-lcore TLS
 * macro. */
#include <rte_errno.h>
int pfcsw_rte_errno(void) { return rte_errno; }
