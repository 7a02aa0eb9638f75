#!/bin/bash
# A/B runs of the host alone, for changes too small for `npm run bench:host` to show between runs:
#   test/bench/host-ab.sh [checkout…]   (default: this checkout; give two to alternate them)
# Per checkout and round: `taskplane host` on a fresh SQLite file, 3 s of warm-up sends, then wrk
# (1 thread, 32 connections) for 5 s of non-blocking SendMessage and 5 s of GetTask. Prints req/s, the
# host's CPU per request (all threads, from /proc) and, for sends, the event-loop thread's share ("loop"). ROUNDS=N rounds (default 5), alternating the
# checkouts within each round, because this machine's speed drifts from minute to minute: compare
# medians over rounds. Needs wrk (`apt-get install wrk`). The checkouts share this one's node_modules
# when they have none (a `git worktree` does not).
set -euo pipefail
HERE=$(cd "$(dirname "$0")/../.." && pwd)
DIRS=("$@")
[ ${#DIRS[@]} -eq 0 ] && DIRS=("$HERE")
source "$HERE/test/bench/bench-lib.sh"
TCK=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# The main (event-loop) thread's CPU: its task id is the process id.
loop() { awk '{print $14 + $15}' "/proc/$1/task/$1/stat"; }

one() {
  local dir=$1 tmp
  tmp=$(mktemp -d)
  [ -e "$dir/node_modules" ] || ln -s "$HERE/node_modules" "$dir/node_modules"
  start_host "$dir" "sqlite:$tmp/ab.db" "$tmp/out"
  local pid=$HOST_PID url=$HOST_URL lua=$HERE/test/bench/wrk-a2a.lua
  BENCH_MODE=send BENCH_PREFIX=warm wrk -t1 -c32 -d3s -s "$lua" "$url" > /dev/null
  local task
  task=$(new_task "$url")
  local c0 c1 c2 l0 l1 sends gets
  c0=$(cpu $pid)
  l0=$(loop $pid)
  sends=$(BENCH_MODE=send BENCH_PREFIX=run wrk -t1 -c32 -d5s -s "$lua" "$url" | awk '/^Requests\/sec/{print $2}')
  c1=$(cpu $pid)
  l1=$(loop $pid)
  gets=$(BENCH_MODE=get BENCH_BODY="{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"GetTask\",\"params\":{\"id\":\"$task\"}}" \
    wrk -t1 -c32 -d5s -s "$lua" "$url" | awk '/^Requests\/sec/{print $2}')
  c2=$(cpu $pid)
  kill -INT $pid; wait $pid 2> /dev/null || true
  rm -rf "$tmp"
  node -e 'const [d,s,g,c0,c1,c2,l0,l1,t]=process.argv.slice(1);const us=(a,b,r)=>((1e6*(b-a))/t/(r*5)).toFixed(0);
    console.log(`${d}  send ${Number(s).toFixed(0)}/s ${us(c0,c1,s)} µs (loop ${us(l0,l1,s)})   get ${Number(g).toFixed(0)}/s ${us(c1,c2,g)} µs`)' \
    "$dir" "$sends" "$gets" "$c0" "$c1" "$c2" "$l0" "$l1" "$TCK"
}

for _ in $(seq "${ROUNDS:-5}"); do
  for dir in "${DIRS[@]}"; do one "$dir"; done
done
