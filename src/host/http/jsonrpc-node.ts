import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BindingOptions } from '../../protocols/a2a/http-common.ts';
import { jsonRpcCore } from '../../protocols/a2a/jsonrpc-core.ts';
import { nodeListener } from './node-http.ts';

/**
 * The JSON-RPC binding straight on node:http (`node-http.ts`), for the host's POSTs to the interface
 * URL. Behaviour is `jsonRpcCore`'s, as on the web-standard adapter; the bytes on the wire match it.
 */
export function jsonRpcNodeBinding(
  options: BindingOptions,
): (req: IncomingMessage, res: ServerResponse) => void {
  return nodeListener(jsonRpcCore(options), options);
}
