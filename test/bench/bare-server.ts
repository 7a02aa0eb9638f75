/**
 * The ceiling for `npm run bench:host`: a bare node:http server doing no A2A work. POST /a2a/jsonrpc
 * answers a fixed small JSON-RPC result; GET /sse holds an SSE stream; POST /bench/go writes N events
 * (`?n=`) to every open stream and closes them. Prints `bare server ready <url>`.
 */
import { createServer, type ServerResponse } from 'node:http';

const streams = new Set<ServerResponse>();
const server = createServer((req, res) => {
  if (req.method === 'POST' && req.url === '/a2a/jsonrpc') {
    req.resume();
    req.on('end', () => {
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        result: { task: { id: 't', contextId: 'c', status: { state: 'TASK_STATE_SUBMITTED' } } },
      });
      res
        .writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
        .end(body);
    });
    return;
  }
  if (req.method === 'GET' && req.url === '/sse') {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(': open\n\n');
    streams.add(res);
    req.on('close', () => streams.delete(res));
    return;
  }
  if (req.method === 'POST' && req.url?.startsWith('/bench/go')) {
    req.resume();
    const n = Number(new URL(req.url, 'http://x').searchParams.get('n') ?? 1000);
    res.writeHead(204).end();
    const targets = [...streams];
    streams.clear();
    for (let i = 1; i <= n; i++) {
      const frame = `id: ${i}\ndata: {"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"m${i}","role":"ROLE_AGENT","parts":[{"text":"s${i}"}]}}}}\n\n`;
      for (const s of targets) s.write(frame);
    }
    for (const s of targets) s.end();
    return;
  }
  res.writeHead(404).end();
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const a = server.address();
  console.log(`bare server ready http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`);
});
process.on('SIGTERM', () => {
  for (const s of streams) s.destroy();
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
