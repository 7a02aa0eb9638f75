-- wrk script for `npm run bench:host` (wrk mode): JSON-RPC POSTs to /a2a/jsonrpc.
-- BENCH_MODE=send: non-blocking SendMessage, a unique messageId per request (BENCH_PREFIX-counter;
--   run wrk with one thread so the counter is unique).
-- BENCH_MODE=get: the fixed body in BENCH_BODY (GetTask on a known task id).
-- No response() callback: wrk then does not keep response bodies, so the client stays cheap.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["A2A-Version"] = "1.0"

local mode = os.getenv("BENCH_MODE") or "send"
local fixed = os.getenv("BENCH_BODY") or "{}"
local prefix = os.getenv("BENCH_PREFIX") or "w"
local n = 0

request = function()
  if mode == "get" then
    return wrk.format(nil, nil, nil, fixed)
  end
  n = n + 1
  return wrk.format(nil, nil, nil,
    '{"jsonrpc":"2.0","id":' .. n .. ',"method":"SendMessage","params":{"message":{"messageId":"'
      .. prefix .. '-' .. n .. '","role":"ROLE_USER","parts":[{"text":"hi"}]},"configuration":{"returnImmediately":true}}}')
end
