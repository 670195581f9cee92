-- Pktgen-DPDK: 64-byte line-rate test of the LOSSLESS class through pfcswitch.
-- Two ports (pktgen port 0 -> switch Ethernet0, pktgen port 1 -> switch Ethernet4),
-- bidirectional. Frames are untagged IPv4/UDP with DSCP 3 (TOS 0x0c): SONiC's default
-- DSCP_TO_TC_MAP puts them in TC3, lossless when the switch port has pfc_enable = [3, 4].
-- Use lossless-64B-vlan.lua to classify on 802.1Q PCP 3 instead (trust = "pcp").
--
-- Run:  pktgen <EAL args> -- -P -m "[2:3].0,[4:5].1" -f scripts/pktgen/lossless-64B.lua
-- Knobs (environment): PKTGEN_SECONDS (default 30), PKTGEN_RATE (percent, default 100).
package.path = package.path .. ";?.lua;scripts/pktgen/?.lua"
local common = require("common")

common.setup_ports({ size = 64, tos = 0x0c, vlan = nil })
common.run_and_report("lossless-64B (DSCP 3 -> TC3)")
