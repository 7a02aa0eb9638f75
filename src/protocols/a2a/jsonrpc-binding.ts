import type { BindingOptions } from './http-common.ts';
import { jsonRpcCore } from './jsonrpc-core.ts';
import { webHandler } from './web-http.ts';

export type { BindingOptions } from './http-common.ts';

/**
 * The JSON-RPC 2.0 binding as a web-standard request handler (mount it at the interface URL); the
 * behaviour is `jsonRpcCore`'s. The host serves POSTs through the node:http adapter instead
 * (`jsonrpc-node.ts`), which skips building web Request and Response objects.
 */
export function jsonRpcBinding(options: BindingOptions): (req: Request) => Promise<Response> {
  return webHandler(jsonRpcCore(options));
}
