import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { buildLabAssets, labPageHandler, LAB_PAGE_FILES, type LabPageAssets } from '../lab/page-assets.ts';

/**
 * `/lab` on `taskplane serve`: the failure lab page (issue 5), the same assets `taskplane lab --serve`
 * serves. The page runs the simulation in the browser, so the server only hands out two files.
 *
 * Built lazily on the first request, not at start: bundling takes about a second and most starts never
 * open the lab, and a build failure must not keep the control plane from starting. When esbuild (a dev
 * dependency) is missing, the bundle last written to web/dist/lab.js (by `taskplane lab --serve`) is used.
 */
export type LabRequestHandler = (request: Request) => Promise<Response | null>;

export function labRoute(rootDir: string, logger: Logger, basePath = '/lab'): LabRequestHandler {
  let handler: Promise<((request: Request) => Response | null) | null> | null = null;
  const load = async (): Promise<LabPageAssets> => {
    try {
      return await buildLabAssets(rootDir);
    } catch (err) {
      logger.warn(
        { err: err instanceof Error ? err.message : 'error' },
        'lab page: bundling failed; using the prebuilt bundle',
      );
      const [html, script] = await Promise.all([
        readFile(join(rootDir, LAB_PAGE_FILES.html), 'utf8'),
        readFile(join(rootDir, LAB_PAGE_FILES.bundle), 'utf8'),
      ]);
      return { html, script };
    }
  };
  return async (request) => {
    handler ??= load().then(
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
