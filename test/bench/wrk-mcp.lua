-- wrk script for the MCP rows of `npm run bench:host` (wrk mode): the fixed 2026-07-28 JSON-RPC body in
-- BENCH_BODY (tools/call or tasks/get), POSTed to /mcp with the routing headers that must mirror it.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = os.getenv("BENCH_MCP_METHOD") or "tools/call"
wrk.headers["Mcp-Name"] = os.getenv("BENCH_MCP_NAME") or ""
wrk.body = os.getenv("BENCH_BODY") or "{}"
