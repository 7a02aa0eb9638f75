#!/usr/bin/env bash
# Runs the official MCP conformance harness (@modelcontextprotocol/conformance, pinned below) against
# `taskplane host` serving the fixture tools of test/host/mcp/conformance-agent.ts: every tasks-*
# scenario, http-header-validation and server-stateless. Fails on any failure not listed in
# test/conformance/mcp-expected-failures.yml and on any entry there that passes now.
# The harness needs Node 22+; Node 24 comes from the npm registry's `node` package, and both are kept in
# ~/.cache/taskplane/ (the first run downloads them, as test/pack/pack-smoke.sh does for Node 24).
# Usage: test/conformance/mcp-conformance.sh [scenario ...]
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/taskplane"
HARNESS_VERSION=0.2.0-alpha.12
SCENARIOS=(
  tasks-lifecycle tasks-capability-negotiation tasks-wire-fields tasks-request-state-removal
  tasks-mrtr-input tasks-request-headers tasks-dispatch-and-envelope tasks-status-notifications
  tasks-required-task-error tasks-mrtr-composition http-header-validation server-stateless
)
if [ $# -gt 0 ]; then SCENARIOS=("$@"); fi

node24="$cache/node24/node_modules/node/bin/node"
if [ ! -x "$node24" ] || [[ "$("$node24" --version 2>/dev/null)" != v24.* ]]; then
  npm install --no-save --no-audit --no-fund --loglevel=error --prefix "$cache/node24" node@24 >&2 || exit 1
fi
harness_dir="$cache/mcp-conformance-$HARNESS_VERSION"
harness="$harness_dir/node_modules/@modelcontextprotocol/conformance/dist/index.js"
if [ ! -f "$harness" ]; then
  mkdir -p "$harness_dir"
  npm install --no-save --no-audit --no-fund --loglevel=error --prefix "$harness_dir" \
    "@modelcontextprotocol/conformance@$HARNESS_VERSION" >&2 || exit 1
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/taskplane-mcp-conformance.XXXXXX")"
host_pid=""
cleanup() {
  if [ -n "$host_pid" ]; then kill "$host_pid" 2>/dev/null; wait "$host_pid" 2>/dev/null; fi
  rm -rf "$work"
}
trap cleanup EXIT

# The host from source (test/support/cli-from-source.mjs), on a free port, with an in-memory store.
node "$root/test/support/cli-from-source.mjs" host --port 0 --db memory: --log-level warn \
  --agent "$root/test/host/mcp/conformance-agent.ts" >"$work/host.out" 2>"$work/host.err" &
host_pid=$!
url=""
for _ in $(seq 1 300); do
  url="$(sed -n 's/^taskplane host ready \(http[^ ]*\).*/\1/p' "$work/host.out")"
  [ -n "$url" ] && break
  kill -0 "$host_pid" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$url" ]; then
  echo "mcp conformance: taskplane host did not start"; cat "$work/host.err"; exit 1
fi
echo "mcp conformance: harness $HARNESS_VERSION on $("$node24" --version) against $url/mcp"

# Scenarios run side by side (each spends most of its time polling tasks/get); each writes its own log.
run_one() {
  "$node24" "$harness" server --url "$url/mcp" --scenario "$1" -o "$work/results" \
    --expected-failures "$root/test/conformance/mcp-expected-failures.yml" >"$work/$1.log" 2>&1
  echo $? >"$work/$1.rc"
}
for scenario in "${SCENARIOS[@]}"; do
  run_one "$scenario" &
  while [ "$(jobs -rp | wc -l)" -gt 4 ]; do sleep 0.2; done
done
wait_pids="$(jobs -rp | grep -v "^$host_pid\$" || true)"
for p in $wait_pids; do wait "$p"; done
status=0
for scenario in "${SCENARIOS[@]}"; do
  if [ "$(cat "$work/$scenario.rc" 2>/dev/null)" != 0 ]; then
    status=1
    echo "--- $scenario: harness output"
    sed 's/\x1b\[[0-9;]*m//g' "$work/$scenario.log" | grep -vE '^\S+ \[.*\] SUCCESS' | tail -40
  fi
done

# One line per scenario from the harness's own checks.json files, then the totals.
node -e '
const fs = require("fs"), path = require("path");
const [dir, ...scenarios] = process.argv.slice(1);
const totals = { SUCCESS: 0, FAILURE: 0, WARNING: 0, SKIPPED: 0, INFO: 0 };
for (const s of scenarios) {
  const run = fs.existsSync(dir) ? fs.readdirSync(dir).find((d) => d.startsWith(`server-${s}-`)) : undefined;
  const counts = { SUCCESS: 0, FAILURE: 0, WARNING: 0, SKIPPED: 0, INFO: 0 };
  if (run) for (const c of JSON.parse(fs.readFileSync(path.join(dir, run, "checks.json"), "utf8"))) counts[c.status]++;
  for (const k in counts) totals[k] += counts[k];
  const fails = counts.FAILURE ? `  ${counts.FAILURE} FAILED` : "";
  console.log(`  ${s.padEnd(30)} ${String(counts.SUCCESS).padStart(3)} passed, ${counts.WARNING} warnings, ${counts.SKIPPED} skipped${fails}${run ? "" : "  (no results)"}`);
}
console.log(`mcp conformance: ${totals.SUCCESS} passed, ${totals.FAILURE} failed, ${totals.WARNING} warnings, ${totals.SKIPPED} skipped`);
' "$work/results" "${SCENARIOS[@]}"
if [ $status -ne 0 ]; then echo "mcp conformance: FAILED against the baseline (test/conformance/mcp-expected-failures.yml)"; fi
exit $status
