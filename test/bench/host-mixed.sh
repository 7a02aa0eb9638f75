#!/bin/bash
# Sends and reads at once against the host alone: `test/bench/host-mixed.sh [store-URL query]`, e.g.
# `test/bench/host-mixed.sh '?writeThread=event-loop'` to compare the SQLite write worker (the default)
# with writes on the event loop. `taskplane host` on a fresh SQLite file, 3 s of warm-up sends, then for
# 5 s wrk sends non-blocking SendMessages on 16 connections while a second wrk sends GetTask for one task
# on 16 more. Prints both rates. ROUNDS=N repeats (default 3). Needs wrk (`apt-get install wrk`).
set -euo pipefail
HERE=$(cd "$(dirname "$0")/../.." && pwd)
QUERY=${1:-}
command -v wrk > /dev/null || { echo "host-mixed: wrk is not installed (apt-get install wrk)" >&2; exit 2; }
lua=$HERE/test/bench/wrk-a2a.lua

one() {
  local port=$((4600 + RANDOM % 300)) tmp
  tmp=$(mktemp -d)
  (cd "$HERE" && LOG_LEVEL=warn exec node bin/taskplane.js host --port $port --db "sqlite:$tmp/mixed.db$QUERY" \
    --agent test/bench/bench-agent.ts > "$tmp/out" 2>&1) &
  local pid=$!
  for _ in $(seq 100); do grep -q ready "$tmp/out" && break; sleep 0.1; done
  local url=http://127.0.0.1:$port/a2a/jsonrpc task
  BENCH_MODE=send BENCH_PREFIX=warm wrk -t1 -c32 -d3s -s "$lua" "$url" > /dev/null
  task=$(curl -s -X POST "$url" -H 'content-type: application/json' -H 'A2A-Version: 1.0' \
    -d '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"mixed","role":"ROLE_USER","parts":[{"text":"hi"}]}}}' |
    node -e 'let s="";process.stdin.on("data",(d)=>(s+=d)).on("end",()=>console.log(JSON.parse(s).result.task.id))')
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
