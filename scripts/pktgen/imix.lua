-- Pktgen-DPDK: IMIX through pfcswitch, lossless (DSCP 3) by default, lossy with
-- PKTGEN_CLASS=lossy. Uses pktgen's IMIX mode where the build has it (configure the classic
-- simple IMIX 7:4:1 of 64/576/1500 B in pktgen's configuration), else a 64..1500 B sweep.
package.path = package.path .. ";?.lua;scripts/pktgen/?.lua"
local common = require("common")

local tos = (os.getenv("PKTGEN_CLASS") == "lossy") and 0x00 or 0x0c
common.setup_ports({ size = 64, tos = tos, vlan = nil })
common.imix(tos)
common.run_and_report("imix (" .. ((tos == 0) and "lossy DSCP 0" or "lossless DSCP 3") .. ")")
