#!/bin/bash
# Sends and reads at once against the host alone: `test/bench/host-mixed.sh [store-URL query]`, e.g.
# `test/bench/host-mixed.sh '?writeThread=event-loop'` to compare the SQLite write worker (the default)
# with writes on the event loop. `taskplane host` on a fresh SQLite file, 3 s of warm-up sends, then for
# 5 s wrk sends non-blocking SendMessages on 16 connections while a second wrk sends GetTask for one task
# on 16 more. Prints both rates. ROUNDS=N repeats (default 3). Needs wrk (`apt-get install wrk`).
set -euo pipefail
HERE=$(cd "$(dirname "$0")/../.." && pwd)
QUERY=${1:-}
source "$HERE/test/bench/bench-lib.sh"
lua=$HERE/test/bench/wrk-a2a.lua

one() {
  local tmp task
  tmp=$(mktemp -d)
  start_host "$HERE" "sqlite:$tmp/mixed.db$QUERY" "$tmp/out"
  local pid=$HOST_PID url=$HOST_URL
  BENCH_MODE=send BENCH_PREFIX=warm wrk -t1 -c32 -d3s -s "$lua" "$url" > /dev/null
  task=$(new_task "$url")
  BENCH_MODE=send BENCH_PREFIX=run wrk -t1 -c16 -d5s -s "$lua" "$url" > "$tmp/sends" &
  local sender=$!
  BENCH_MODE=get BENCH_BODY="{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"GetTask\",\"params\":{\"id\":\"$task\"}}" \
    wrk -t1 -c16 -d5s -s "$lua" "$url" > "$tmp/gets"
  wait $sender
  echo "store ${QUERY:-(default)}  sends $(awk '/^Requests\/sec/{print $2}' "$tmp/sends")/s  GetTask $(awk '/^Requests\/sec/{print $2}' "$tmp/gets")/s"
  kill -INT $pid; wait $pid 2> /dev/null || true
  rm -rf "$tmp"
}

for _ in $(seq "${ROUNDS:-3}"); do one; done
