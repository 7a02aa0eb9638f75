import { restCore, type RestBindingOptions } from './rest-core.ts';
import { webHandler } from './web-http.ts';

export type { RestBindingOptions } from './rest-core.ts';

/**
 * The HTTP+JSON binding as a web-standard handler for everything under the interface URL; the behaviour
 * is `restCore`'s. The host serves it through the node:http adapter instead (`rest-node.ts`), which
 * skips building web Request and Response objects.
 */
export function restBinding(options: RestBindingOptions): (req: Request) => Promise<Response> {
  return webHandler(restCore(options));
}
