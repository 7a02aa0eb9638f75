#!/bin/bash
# One server alone under wrk, sends only, for RUNS consecutive 5 s phases (default 12, one minute):
#   test/bench/sends-over-time.sh host|sdk
# `host` is `taskplane host` on a fresh SQLite file with the bench agent, `sdk` the @a2a-js/sdk server of
# `npm run bench:host` (test/bench/sdk-server.ts). Per phase: sends/s, the server's CPU (all threads), its
# RSS, and how idle the whole machine was (/proc/stat), to see how a server's rate moves with its age and
# whether it is CPU-bound. wrk: 1 thread, 32 connections, test/bench/wrk-a2a.lua. Needs wrk.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/../.." && pwd)
which=${1:?usage: sends-over-time.sh host|sdk}
source "$HERE/test/bench/bench-lib.sh"
tmp=$(mktemp -d)
pid=
trap 'kill -INT $pid 2> /dev/null || true; rm -rf "$tmp"' EXIT
cd "$HERE"
case $which in
  host)
    start_host "$HERE" "sqlite:$tmp/soak.db" "$tmp/out"
    pid=$HOST_PID url=$HOST_URL ;;
  sdk)
    LOG_LEVEL=warn node --import tsx test/bench/sdk-server.ts > "$tmp/out" 2>&1 &
    pid=$!
    wait_ready "$tmp/out"
    url="$(grep -o 'http://[^ ]*' "$tmp/out" | head -1)/a2a/jsonrpc" ;;
  *) echo "sends-over-time: host or sdk, not $which" >&2; exit 2 ;;
esac
TCK=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
idle() { awk '/^cpu /{print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat; }
for r in $(seq "${RUNS:-12}"); do
  c0=$(cpu); read -r i0 t0 <<< "$(idle)"
  rps=$(BENCH_MODE=send BENCH_PREFIX="soak$r" wrk -t1 -c32 -d5s -s test/bench/wrk-a2a.lua "$url" |
    awk '/^Requests\/sec/{print $2}')
  c1=$(cpu); read -r i1 t1 <<< "$(idle)"
  echo "$which phase $r: $rps sends/s, CPU $(( (c1 - c0) * 1000 / TCK )) ms, RSS $(awk '/VmRSS/{print int($2/1024)}' /proc/$pid/status) MB, machine idle $(( 100 * (i1 - i0) / (t1 - t0) )) %"
done
