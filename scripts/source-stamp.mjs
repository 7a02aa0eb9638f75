// Whether dist/ was built from the sources as they are now. `npm run build` records the newest
// modification time under src/ as it starts; the compiled CLI is current while no file under src/ is
// newer than that. Tests use it to run the CLI as a process from dist/ when that is the same code
// (test/support/cli-from-source.mjs), which starts without compiling the sources through tsx.
import { mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const stampPath = (root) => join(root, 'node_modules', '.cache', 'taskplane', 'dist-stamp.json');

/** The newest mtime (ms) of any file under `root`/src. */
export function newestSourceMtime(root) {
  let newest = 0;
  for (const entry of readdirSync(join(root, 'src'), { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const mtime = statSync(join(entry.parentPath ?? entry.path, entry.name)).mtimeMs;
    if (mtime > newest) newest = mtime;
  }
  return newest;
}

/** Records that dist/ now holds a build of the sources as they were at `sourcesMtime`. */
export function writeDistStamp(root, sourcesMtime) {
  mkdirSync(join(root, 'node_modules', '.cache', 'taskplane'), { recursive: true });
  writeFileSync(stampPath(root), JSON.stringify({ sourcesMtime }));
}

/** True when dist/ was built from the sources as they are now. */
export function distIsCurrent(root) {
  try {
    const { sourcesMtime } = JSON.parse(readFileSync(stampPath(root), 'utf8'));
    statSync(join(root, 'dist', 'cli', 'main.js'));
    return newestSourceMtime(root) <= sourcesMtime;
  } catch {
    return false;
  }
}
