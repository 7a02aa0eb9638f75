import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

/**
 * The HTTP side of an MCP server built on the official SDK, as its own examples do it: one Streamable
 * HTTP transport per session, made on `initialize`, found again by `Mcp-Session-Id`. A session id the
 * server does not know is answered 404 (the client then opens a new session, Streamable HTTP), a request
 * with none that is not `initialize` 400. `before` runs before each request is read (a slow server);
 * `beforeHandle` may wrap the response of a request about to be handled (a lost answer).
 */
export function mcpSessions(
  build: () => McpServer,
  hooks: {
    before?: () => Promise<void>;
    beforeHandle?: (req: IncomingMessage, res: ServerResponse, body: unknown) => void;
  } = {},
): { handle: (req: IncomingMessage, res: ServerResponse) => void; close: () => Promise<void> } {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        await hooks.before?.();
        const text = Buffer.concat(chunks).toString('utf8');
        const body: unknown = text ? JSON.parse(text) : undefined;
        const sid = req.headers['mcp-session-id'];
        let transport = typeof sid === 'string' ? transports.get(sid) : undefined;
        if (!transport && req.method === 'POST' && isInitializeRequest(body)) {
          const t = new StreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            onsessioninitialized: (id) => void transports.set(id, t),
          });
          await build().connect(t);
          transport = t;
        }
        if (!transport) {
          res.writeHead(typeof sid === 'string' ? 404 : 400, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              jsonrpc: '2.0',
              id: null,
              error: { code: -32000, message: 'No valid session' },
            }),
          );
          return;
        }
        hooks.beforeHandle?.(req, res, body);
        await transport.handleRequest(req, res, body);
      })().catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
    });
  };
  const close = async () => {
    for (const t of transports.values()) await t.close().catch(() => {});
  };
  return { handle, close };
}
