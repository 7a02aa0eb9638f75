/**
 * The lab page's assets and a fetch-style handler, so `taskplane lab --serve` and, later, the control
 * plane's server (`/lab` on `taskplane serve`) serve the same thing:
 *
 * ```ts
 * const assets = await readLabAssets(packageRoot);        // web/lab/index.html and dist/web/lab.js
 * const handle = labPageHandler(assets);                   // (request: Request) => Response | null
 * app.get('/lab/*', (c) => handle(c.req.raw) ?? c.notFound());   // Hono
 * ```
 *
 * The bundle is made once, by `npm run build` (buildLabAssets with `write`), and shipped in the package;
 * serving it needs no bundler. The simulation itself runs in the browser (the bundle holds lab/, plane/,
 * store/memory and core/), so serving it needs no work per run either. Only the two loaders touch the
 * file system, through dynamic imports, so nothing the browser bundle imports depends on node: modules.
 */
export const LAB_PAGE_FILES = {
  html: 'web/lab/index.html',
  entry: 'web/lab/lab-page.ts',
  bundle: 'dist/web/lab.js',
} as const;

export interface LabPageAssets {
  html: string;
  script: string;
}

/** Serves `<base>` and `<base>/` (the page) and `<base>/lab.js` (the bundle); null for anything else. */
export function labPageHandler(
  assets: LabPageAssets,
  basePath = '/lab',
): (request: Request) => Response | null {
  const base = basePath.replace(/\/+$/, '');
  return (request) => {
    const path = new URL(request.url).pathname;
    if (request.method !== 'GET' && request.method !== 'HEAD') return null;
    // The page loads `lab.js` relative to itself, so it must be served under a trailing slash.
    if (path === base) return new Response(null, { status: 301, headers: { location: `${base}/` } });
    if (path === `${base}/` || path === `${base}/index.html`) {
      return new Response(assets.html, {
        headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache' },
      });
    }
    if (path === `${base}/lab.js`) {
      return new Response(assets.script, {
        headers: { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-cache' },
      });
    }
    return null;
  };
}

/**
 * The page and its bundle as a package or a clone carries them after `npm run build`. When running
 * from source (`.ts` modules: tests, tsx) no build has necessarily run, or ran before the last edit, so
 * there the bundle is made from the current sources instead, with esbuild from the dev dependencies.
 */
export async function readLabAssets(rootDir: string): Promise<LabPageAssets> {
  if (import.meta.url.endsWith('.ts')) return buildLabAssets(rootDir);
  const fs = await import('node:fs/promises');
  const path = await import('node:path');
  const [html, script] = await Promise.all([
    fs.readFile(path.join(rootDir, LAB_PAGE_FILES.html), 'utf8'),
    fs.readFile(path.join(rootDir, LAB_PAGE_FILES.bundle), 'utf8'),
  ]);
  return { html, script };
}

/**
 * Bundles the page entry with esbuild (a dev dependency, loaded only here) and reads the HTML. With
 * `write`, also writes the bundle to dist/web/lab.js (the build does).
 */
export async function buildLabAssets(
  rootDir: string,
  options: { write?: boolean } = {},
): Promise<LabPageAssets> {
  const fs = await import('node:fs/promises');
  const path = await import('node:path');
  const esbuild = await import('esbuild');
  const result = await esbuild.build({
    entryPoints: [path.join(rootDir, LAB_PAGE_FILES.entry)],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    // Node-only, imported lazily by the A2A connector: grpc-js when a card's gRPC interface is used,
    // node:http for event streams when no fetch of the caller's is given (the lab always gives one), and
    // DNS when a card names an interface on another host than its own (the lab's never do).
    external: ['./grpc-transport.ts', '../http-stream.ts', './interface-reach.ts'],
    // Card signature keys are read with node:crypto when a target configures them, which the lab's
    // simulated targets never do: in the browser the module is a stub that says so if it is ever called.
    plugins: [
      {
        name: 'node-crypto-stub',
        setup(build) {
          build.onResolve({ filter: /^node:crypto$/ }, () => ({ path: 'node:crypto', namespace: 'stub' }));
          build.onLoad({ filter: /.*/, namespace: 'stub' }, () => ({
            contents:
              "export function createPublicKey() { throw new Error('card signature keys are not read in the browser'); }",
            loader: 'js',
          }));
        },
      },
    ],
    write: false,
    minify: true,
    legalComments: 'none',
    logLevel: 'silent',
  });
  const script = result.outputFiles[0]!.text;
  if (options.write) {
    const out = path.join(rootDir, LAB_PAGE_FILES.bundle);
    await fs.mkdir(path.dirname(out), { recursive: true });
    await fs.writeFile(out, script);
  }
  const html = await fs.readFile(path.join(rootDir, LAB_PAGE_FILES.html), 'utf8');
  return { html, script };
}
