// `taskplane` run from the TypeScript sources, so tests that start the CLI as a process exercise the
// code under test rather than whatever dist/ was last built from (bin/taskplane.js runs dist/).
import { register } from 'tsx/esm/api';

register();
await import('../../src/cli/main.ts');
