-- Pktgen-DPDK: 64-byte lossless test classified on 802.1Q PCP 3 (switch ports with
-- trust = "pcp"; DOT1P_TO_TC_MAP identity: PCP 3 -> TC3, lossless with pfc_enable = [3, 4]).
-- The VLAN tag adds 4 bytes: a 64-byte frame carries a 60-byte untagged payload.
package.path = package.path .. ";?.lua;scripts/pktgen/?.lua"
local common = require("common")

common.setup_ports({ size = 64, tos = 0, vlan = 100, prio = 3 })
common.run_and_report("lossless-64B-vlan (PCP 3 -> TC3)")
