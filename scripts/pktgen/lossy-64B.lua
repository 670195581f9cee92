-- Pktgen-DPDK: 64-byte line-rate test of a LOSSY class: DSCP 0 -> TC1 (SONiC default
-- "others -> 1"), admitted by the egress Dynamic Threshold and dropped, never paused.
package.path = package.path .. ";?.lua;scripts/pktgen/?.lua"
local common = require("common")

common.setup_ports({ size = 64, tos = 0x00, vlan = nil })
common.run_and_report("lossy-64B (DSCP 0 -> TC1)")
