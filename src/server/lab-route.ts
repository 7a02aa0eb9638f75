import type { Logger } from '../core/logger.ts';
import { labPageHandler, readLabAssets } from '../lab/page-assets.ts';

/**
 * `/lab` on `taskplane serve`: the failure lab page, the same assets `taskplane lab --serve` serves. The
 * page runs the simulation in the browser, so the server only hands out two files, both made by
 * `npm run build` (lab/page-assets.ts). They are read on the first request: most starts never open the
 * lab, and a missing file must not keep the control plane from starting.
 */
export type LabRequestHandler = (request: Request) => Promise<Response | null>;

export function labRoute(rootDir: string, logger: Logger, basePath = '/lab'): LabRequestHandler {
  let handler: Promise<((request: Request) => Response | null) | null> | null = null;
  return async (request) => {
    handler ??= readLabAssets(rootDir).then(
      (assets) => labPageHandler(assets, basePath),
      (err: unknown) => {
        logger.error({ err: err instanceof Error ? err.message : 'error' }, 'lab page unavailable');
        handler = null; // try again on the next request
        return null;
      },
    );
    const handle = await handler;
    return handle ? handle(request) : new Response('lab page unavailable', { status: 503 });
  };
}
