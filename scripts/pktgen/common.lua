-- Shared helpers for the pfcswitch Pktgen-DPDK scripts (Pktgen-DPDK >= 21.x Lua API).
local M = {}

local ports = "0,1"
local seconds = tonumber(os.getenv("PKTGEN_SECONDS") or "30")
local rate = tonumber(os.getenv("PKTGEN_RATE") or "100")

-- Source/destination MACs are pktgen's own port MACs, so each port's frames are addressed
-- to the other pktgen port: the switch learns both and forwards known unicast (no flood).
function M.setup_ports(o)
    pktgen.stop(ports)
    pktgen.clr()
    for p = 0, 1 do
        local peer = 1 - p
        pktgen.set(p, "size", o.size)
        pktgen.set(p, "rate", rate)
        pktgen.set(p, "count", 0)
        pktgen.set(p, "burst", 32)
        pktgen.set_proto(p, "udp")
        pktgen.set_type(p, "ipv4")
        pktgen.set_ipaddr(p, "src", string.format("10.0.%d.1/24", p))
        pktgen.set_ipaddr(p, "dst", string.format("10.0.%d.1", peer))
        -- Destination MAC: the other pktgen port's MAC, so the switch forwards known unicast
        -- after learning. Give it as PKTGEN_DST_MAC0 / PKTGEN_DST_MAC1 (pktgen prints its
        -- port MACs at start); without it pktgen's default destination is used and the
        -- switch floods (with two switch ports a flood is one copy: same cost class).
        local dst = os.getenv("PKTGEN_DST_MAC" .. p)
        if dst then
            pktgen.set_mac(p, "dst", dst)
        end
        pktgen.set(p, "sport", 1234)
        pktgen.set(p, "dport", 5678)
        -- DSCP is the top six bits of the TOS byte: 0x0c = DSCP 3.
        pktgen.set(p, "tos", o.tos)
        if o.vlan then
            pktgen.vlan(p, "on")
            pktgen.set(p, "vlanid", o.vlan)
            pktgen.set(p, "prio", o.prio or 0)
        else
            pktgen.vlan(p, "off")
        end
    end
end

function M.imix(tos)
    -- Prefer pktgen's own IMIX mode where the build has it (`enable <ports> imix`); its
    -- size/weight table is in the pktgen configuration. Otherwise fall back to range mode,
    -- sweeping 64..1500 bytes (an average of ~780 B: not a true IMIX, say so in results).
    local ok = pcall(function() pktgen.enable(ports, "imix") end)
    if not ok then
        printf("pktgen without IMIX support: range sweep 64..1500 B instead\n")
        for p = 0, 1 do
            pktgen.range.pkt_size(p, "start", 64)
            pktgen.range.pkt_size(p, "min", 64)
            pktgen.range.pkt_size(p, "max", 1500)
            pktgen.range.pkt_size(p, "inc", 4)
            pktgen.set_range(p, "on")
        end
    end
end

function M.run_and_report(name)
    printf("pfcswitch %s: %d s at %d%% rate on ports %s\n", name, seconds, rate, ports)
    pktgen.start(ports)
    local rx_pps = { 0, 0 }
    local n = 0
    for i = 1, seconds do
        pktgen.delay(1000)
        if i > 2 then  -- skip start-up
            local r = pktgen.portStats(ports, "rate")
            for p = 0, 1 do
                rx_pps[p + 1] = rx_pps[p + 1] + r[p]["pkts_rx"]
            end
            n = n + 1
        end
    end
    pktgen.stop(ports)
    pktgen.delay(500)
    local s = pktgen.portStats(ports, "port")
    local total = 0
    for p = 0, 1 do
        local avg = (n > 0) and rx_pps[p + 1] / n or 0
        total = total + avg
        printf("port %d: rx %.3f Mpps avg, ipackets %d opackets %d ierrors %d imissed %d\n",
            p, avg / 1e6, s[p]["ipackets"], s[p]["opackets"], s[p]["ierrors"], s[p]["imissed"])
    end
    printf("RESULT %s forwarded_mpps_both_ports=%.3f\n", name, total / 1e6)
end

return M
