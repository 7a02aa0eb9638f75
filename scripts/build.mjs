// `npm run build`: compiles src/ to dist/ (JavaScript and declaration files) and bundles the lab page
// into dist/web/lab.js, the file `taskplane serve` and `taskplane lab --serve` hand out at /lab.
import { spawnSync } from 'node:child_process';
import { cpSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { newestSourceMtime, writeDistStamp } from './source-stamp.mjs';

const root = fileURLToPath(new URL('../', import.meta.url));
// Read before compiling: a source changed during the build makes the result stale, not current.
const sourcesMtime = newestSourceMtime(root);
// A stale file from a deleted source would otherwise ship.
rmSync(new URL('../dist/', import.meta.url), { recursive: true, force: true });

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const compiled = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], {
  cwd: root,
  stdio: 'inherit',
});
if (compiled.status !== 0) process.exit(compiled.status ?? 1);

// tsc copies no .proto: the gRPC binding loads its schema from beside its compiled module.
for (const file of readdirSync(new URL('../src/', import.meta.url), { recursive: true })) {
  if (String(file).endsWith('.proto'))
    cpSync(new URL(`../src/${file}`, import.meta.url), new URL(`../dist/${file}`, import.meta.url));
}

// The bundler settings live in one place, page-assets.ts; its compiled copy runs here.
const { buildLabAssets } = await import('../dist/lab/page-assets.js');
await buildLabAssets(root, { write: true });
writeDistStamp(root, sourcesMtime);
