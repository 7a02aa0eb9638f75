import type { IncomingMessage, ServerResponse } from 'node:http';
import { restCore, type RestBindingOptions } from '../../protocols/a2a/rest-core.ts';
import { nodeListener } from './node-http.ts';

/**
 * The HTTP+JSON binding straight on node:http (`node-http.ts`), for the host's requests under the
 * interface URL. Behaviour is `restCore`'s, as on the web-standard adapter; the bytes on the wire match it.
 */
export function restNodeBinding(
  options: RestBindingOptions,
): (req: IncomingMessage, res: ServerResponse) => void {
  return nodeListener(restCore(options), options);
}
