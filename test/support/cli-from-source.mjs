// `taskplane` as the working tree has it, so tests that start the CLI as a process exercise the code
// under test rather than whatever dist/ was last built from (bin/taskplane.js runs dist/ always): the
// compiled CLI when dist/ was built from the sources as they are now (scripts/source-stamp.mjs: no
// compiling on the way), else the TypeScript sources through tsx.
import { fileURLToPath } from 'node:url';
import { distIsCurrent } from '../../scripts/source-stamp.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
if (process.env.TASKPLANE_CLI_FROM !== 'src' && distIsCurrent(root)) {
  await import('../../dist/cli/main.js');
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../../src/cli/main.ts');
}
