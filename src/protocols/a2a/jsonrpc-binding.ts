import { readBodyLimited } from './http-common.ts';
import { jsonRpcCore, type BindingOptions, type RpcHttpRequest } from './jsonrpc-core.ts';
import { sseReadableStream } from './sse.ts';

export type { BindingOptions } from './jsonrpc-core.ts';

/**
 * The JSON-RPC 2.0 binding as a web-standard request handler (mount it at the interface URL); the
 * behaviour is `jsonRpcCore`'s. The host serves POSTs through the node:http adapter instead
 * (`jsonrpc-node.ts`), which skips building web Request and Response objects.
 */
export function jsonRpcBinding(options: BindingOptions): (req: Request) => Promise<Response> {
  const core = jsonRpcCore(options);
  return async (req) => {
    const reply = await core(webRequest(req));
    if (reply.kind === 'json')
      return new Response(reply.body, { status: reply.status, headers: reply.headers });
    return new Response(sseReadableStream(reply.frames, reply.sse), { status: 200, headers: reply.headers });
  };
}

function webRequest(req: Request): RpcHttpRequest {
  return {
    method: req.method,
    headers: req.headers,
    text: (limit) => readBodyLimited(req, limit),
    query: (name) => new URL(req.url).searchParams.get(name),
    get signal() {
      return req.signal;
    },
  };
}
