// Entry of the SQLite write worker when the store runs from its TypeScript sources (worker-writes.ts).
// A worker thread does not inherit the main thread's loader on Node 20, and registering tsx in each
// worker would load and run the compiler again in every one; so the worker's own modules are bundled
// with esbuild (a dev dependency, present wherever the sources run) into node_modules/.cache/taskplane/,
// once, and again only when one of their files changed (their mtimes are kept beside the bundle).
// Where that cannot be written, the worker registers tsx instead.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const cacheDir = join(root, 'node_modules', '.cache', 'taskplane');
const manifestPath = join(cacheDir, 'write-worker.json');

/** The bundle's path when every file it was built from is unchanged since, else undefined. */
function cached() {
  try {
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
    for (const [file, mtimeMs] of Object.entries(manifest.inputs))
      if (statSync(file).mtimeMs !== mtimeMs) return undefined;
    statSync(manifest.bundle);
    return manifest.bundle;
  } catch {
    return undefined;
  }
}

/** Written under a temporary name and renamed: a worker starting meanwhile reads a whole file or none. */
function writeWhole(path, text) {
  const tmp = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}

async function build() {
  const { buildSync } = await import('esbuild');
  const result = buildSync({
    entryPoints: [join(root, 'src/store/sqlite/write-worker.ts')],
    absWorkingDir: root,
    bundle: true,
    packages: 'external',
    format: 'esm',
    platform: 'node',
    target: 'node20',
    write: false,
    metafile: true,
  });
  const code = result.outputFiles[0].text;
  const bundle = join(
    cacheDir,
    `write-worker-${createHash('sha256').update(code).digest('hex').slice(0, 16)}.mjs`,
  );
  mkdirSync(cacheDir, { recursive: true });
  writeWhole(bundle, code);
  const inputs = {};
  for (const file of Object.keys(result.metafile.inputs))
    inputs[join(root, file)] = statSync(join(root, file)).mtimeMs;
  writeWhole(manifestPath, JSON.stringify({ bundle, inputs }));
  return bundle;
}

let bundle = cached();
if (bundle === undefined) {
  try {
    bundle = await build();
  } catch {
    bundle = undefined;
  }
}
if (bundle !== undefined) {
  await import(pathToFileURL(bundle).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('./write-worker.ts');
}
