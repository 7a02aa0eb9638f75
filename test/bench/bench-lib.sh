# Shared by the bench shell scripts (source it): start a host, wait for servers, make a task.

command -v wrk > /dev/null || { echo "bench: wrk is not installed (apt-get install wrk)" >&2; exit 2; }

# wait_ready OUT_FILE: until the server's output says "ready" (10 s at most).
wait_ready() {
  for _ in $(seq 100); do grep -q ready "$1" 2> /dev/null && return 0; sleep 0.1; done
  echo "bench: the server did not start: $(cat "$1")" >&2
  return 1
}

# start_host CHECKOUT DB_URL OUT_FILE: `taskplane host` of CHECKOUT with the bench agent, on a free port.
# Sets HOST_PID and HOST_URL (its JSON-RPC URL).
# It runs CHECKOUT's sources (through tsx, which also loads the .ts agent on Node 20), so neither checkout
# needs a build; a checkout from before the sources had a loader runs its bin/taskplane.js.
start_host() {
  local cli=bin/taskplane.js
  [ -f "$1/test/support/cli-from-source.mjs" ] && cli=test/support/cli-from-source.mjs
  (cd "$1" && LOG_LEVEL=warn exec node "$cli" host --port 0 --db "$2" \
    --agent test/bench/bench-agent.ts > "$3" 2>&1) &
  HOST_PID=$!
  wait_ready "$3"
  HOST_URL="$(grep -o 'ready http://[^ ]*' "$3" | head -1 | cut -d' ' -f2)/a2a/jsonrpc"
}

# new_task JSONRPC_URL: prints the id of a task made by one blocking SendMessage.
new_task() {
  curl -s -X POST "$1" -H 'content-type: application/json' -H 'A2A-Version: 1.0' \
    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"SendMessage\",\"params\":{\"message\":{\"messageId\":\"bench-$RANDOM$RANDOM\",\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"hi\"}]}}}" |
    node -e 'let s="";process.stdin.on("data",(d)=>(s+=d)).on("end",()=>console.log(JSON.parse(s).result.task.id))'
}
