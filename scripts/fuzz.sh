#!/usr/bin/env bash
# Run every cargo-fuzz target for SECONDS each (default 60) and summarise.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# * Installs cargo-fuzz if it is missing (`cargo install cargo-fuzz`); libFuzzer needs a
#   nightly feature, enabled on a stable toolchain with RUSTC_BOOTSTRAP=1.
# * Seeds fuzz/corpus/lldp_decode with a peer's LLDPDU, and fuzz/corpus/config_load with
#   the shipped configurations (dpdk-config/*.toml) and the bad ones
#   (tests/data/bad-configs/*.toml) at every run; fuzz/corpus and
#   fuzz/artifacts are not committed (.gitignore). config_load also gets a dictionary of
#   the schema's keywords.
# * Prints, per target, executions, corpus size and crashes (files libFuzzer wrote to
#   fuzz/artifacts/<target>/); exits 1 if any target crashed, 2 on a usage/build error.
#   A crash input is reproduced with `RUSTC_BOOTSTRAP=1 cargo fuzz run <target> <file>`.
set -euo pipefail
cd "$(dirname "$0")/.."

SECS="${1:-60}"
case "$SECS" in
    ''|*[!0-9]*) echo "usage: $0 [SECONDS] [TARGET...]" >&2; exit 2 ;;
esac
shift || true
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked || cargo install cargo-fuzz
fi

mapfile -t ALL < <(cargo fuzz list)
if [ $# -gt 0 ]; then
    TARGETS=("$@")
    for t in "${TARGETS[@]}"; do
        printf '%s\n' "${ALL[@]}" | grep -qx -- "$t" || {
            echo "fuzz.sh: unknown target '$t' (targets: ${ALL[*]})" >&2; exit 2; }
    done
else
    TARGETS=("${ALL[@]}")
fi
[ ${#TARGETS[@]} -gt 0 ] || { echo "fuzz.sh: no fuzz targets" >&2; exit 2; }

# Seeds (copied, not linked: libFuzzer adds its findings to the same directory).
mkdir -p fuzz/corpus/config_load
for f in dpdk-config/*.toml tests/data/bad-configs/*.toml; do
    [ -f "$f" ] && cp -f "$f" "fuzz/corpus/config_load/seed-$(basename "$(dirname "$f")")-$(basename "$f")"
done

# lldp_decode: a peer's LLDPDU with the DCBX PFC and Application TLVs (the leading odd
# byte asks the target to put the LLDP header in front).
mkdir -p fuzz/corpus/lldp_decode
printf '\x01\x02\x07\x04\x02\x00\x00\x00\x00\x99\x04\x05\x05swp7\x06\x02\x00\x78\xfe\x06\x00\x80\xc2\x0b\x88\x08\xfe\x08\x00\x80\xc2\x0c\x00\x63\x12\xb7\x00\x00' \
    > fuzz/corpus/lldp_decode/seed-peer

LOGDIR="$(mktemp -d "${TMPDIR:-/tmp}/pfcswitch-fuzz.XXXXXX")"
DICT="$LOGDIR/config_load.dict"
# Schema keywords and value shapes (src/config/mod.rs), as libFuzzer dictionary entries.
for w in '[eal]' '[switch]' '[[port]]' '[lcores]' '[[lcores.worker]]' '[buffer]' \
         '[buffer.pool.' '[buffer.profile.' '[buffer.pg]' '[buffer.queue]' '[qos]' \
         '[qos.scheduler]' 'args' 'file_prefix' 'fdb_aging_time' 'fdb_size' 'burst_size' \
         'rx_ring_size' 'tx_ring_size' 'mbuf_count' 'name' 'devargs' 'speed' 'cable_length' \
         'mtu' 'admin_status' 'trust' 'default_tc' 'pfc_enable' 'tx_enable' 'shaper_rate' \
         'mac' 'control' 'lcore' 'rx' 'tx' 'total_size' 'cell_size' 'headroom_policy' 'size' \
         'type' 'mode' 'pool' 'xon' 'xoff' 'xon_offset' 'dynamic_th' 'static_th' \
         'dscp_to_tc' 'dot1p_to_tc' 'tc_to_pg' 'tc_to_queue' 'weight' 'STRICT' 'DWRR' \
         'ingress' 'egress' 'dynamic' 'static' 'dscp' 'pcp' 'dot1p' 'up' 'down' \
         'ingress_lossless_pool' 'egress_lossy_pool' 'pg_lossless_profile' \
         'queue_lossy_profile' 'Ethernet0' 'Ethernet4' '"Ethernet0|3-4"' '"Ethernet0:0"' \
         'net_null0' 'net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap' 'net_tap0,iface=sw0' \
         'net_memif0,role=server,socket=/tmp/x.sock' '0000:3b:00.0' '--no-huge' '--no-pci' \
         '--lcores=0@0,1@1' '-l' '-a' '--vdev=' '"100G"' '"25G"' '"10M"' '"400G"' '"5m"' \
         '"1.5km"' '"64KiB"' '"12MiB"' '"1GiB"' '9216' '9100' '65535' '4294967295' \
         '18446744073709551615' '-8' '7' '02:00:00:00:00:01' '= [3, 4]' ' = ' '"' "'''" '"""'; do
    printf '"%s"\n' "$(printf '%s' "$w" | sed 's/\\/\\\\/g; s/"/\\"/g')" >> "$DICT"
done

echo "fuzz.sh: ${#TARGETS[@]} target(s), ${SECS}s each; logs in $LOGDIR"
STATUS=0
SUMMARY=()
for t in "${TARGETS[@]}"; do
    mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
    before=$(find "fuzz/artifacts/$t" -type f | wc -l)
    extra=()
    [ "$t" = config_load ] && extra+=("-dict=$DICT")
    log="$LOGDIR/$t.log"
    echo "== $t: building and fuzzing for ${SECS}s (log $log)"
    set +e
    cargo fuzz run "$t" -- -max_total_time="$SECS" -timeout=25 -print_final_stats=1 \
        "${extra[@]}" >"$log" 2>&1
    rc=$?
    set -e
    # (no stats line after a crash: fall back to the last status line's #N)
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
    [ -n "$execs" ] || execs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#' || true)
    [ -n "$execs" ] || execs='?'
    corpus=$(find "fuzz/corpus/$t" -type f | wc -l)
    after=$(find "fuzz/artifacts/$t" -type f | wc -l)
    new=$((after - before))
    crashed=0
    if [ "$rc" -ne 0 ]; then
        crashed=1
        if ! grep -qE 'Test unit written to|SUMMARY: libFuzzer|panicked at|ERROR: libFuzzer' "$log"; then
            echo "fuzz.sh: $t: cargo fuzz failed (exit $rc) before fuzzing:" >&2
            tail -30 "$log" >&2
            SUMMARY+=("$(printf '%-14s BUILD/RUN ERROR (exit %d)' "$t" "$rc")")
            STATUS=1
            continue
        fi
    fi
    crashes=$(( new > crashed ? new : crashed ))
    SUMMARY+=("$(printf '%-14s execs %-12s corpus %-6s crashes %s' "$t" "$execs" "$corpus" "$crashes")")
    if [ "$crashed" -ne 0 ] || [ "$new" -gt 0 ]; then
        STATUS=1
        echo "fuzz.sh: $t CRASHED (exit $rc):" >&2
        grep -E 'panicked at|assertion|Test unit written to|Base64:|SUMMARY' "$log" | head -20 >&2 || true
    fi
done

echo
echo "fuzz summary (${SECS}s per target):"
printf '  %s\n' "${SUMMARY[@]}"
exit "$STATUS"
