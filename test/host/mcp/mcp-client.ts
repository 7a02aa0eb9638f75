import { requestMeta } from '../../../src/protocols/mcp/encode.ts';
import { requestHeaders } from '../../../src/protocols/mcp/headers.ts';
import type { Wire } from '../in-process.ts';

/** One raw 2026-07-28 JSON-RPC call over HTTP, with the headers and `_meta` a modern client sends. */
export interface McpReply {
  status: number;
  body: { id?: unknown; result?: Wire; error?: { code: number; message: string; data?: Wire } };
}

export interface CallOptions {
  /** Declare the tasks extension on this request. @default true */
  tasks?: boolean;
  /** Extra or replacing headers. */
  headers?: Record<string, string>;
  /** Leave these headers out. */
  omit?: string[];
  capabilities?: Record<string, unknown>;
}

let nextId = 1;

export async function mcp(
  url: string,
  method: string,
  params: Record<string, unknown> = {},
  o: CallOptions = {},
): Promise<McpReply> {
  const body = {
    jsonrpc: '2.0' as const,
    id: nextId++,
    method,
    params: {
      ...params,
      _meta: requestMeta({
        tasks: o.tasks ?? true,
        clientInfo: { name: 'taskplane-test', version: '1' },
        ...(o.capabilities ? { capabilities: o.capabilities as never } : {}),
      }),
    },
  };
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    ...requestHeaders(body, '2026-07-28'),
    ...(o.headers ?? {}),
  };
  for (const h of o.omit ?? []) delete headers[h];
  const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as McpReply['body'] };
}

/** Polls tasks/get until `done` holds (the server's own answer each time; bounded as a failure bound). */
export async function pollTask(
  url: string,
  taskId: string,
  done: (task: Wire) => boolean,
  o: CallOptions = {},
  boundMs = 20_000,
): Promise<Wire> {
  const until = Date.now() + boundMs;
  for (;;) {
    const r = await mcp(url, 'tasks/get', { taskId }, o);
    if (r.body.error) throw new Error(`tasks/get: ${JSON.stringify(r.body.error)}`);
    if (done(r.body.result)) return r.body.result;
    if (Date.now() > until)
      throw new Error(`task ${taskId} never reached the condition: ${JSON.stringify(r.body.result)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
