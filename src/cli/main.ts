import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { TaskplaneError } from '../core/errors.ts';
import { cliErrors, commanderExit } from './cli-options.ts';
import { registerConformanceCommand } from './conformance-command.ts';
import { registerExportCommand } from './export-command.ts';
import { registerHostCommand } from './host-command.ts';
import { registerKeysCommand } from './keys-command.ts';
import { registerLabCommand } from './lab-command.ts';
import { registerServeCommand } from './serve-command.ts';
import { registerTasksCommand } from './tasks-command.ts';
import { registerWorkflowsCommand } from './workflows-command.ts';

/**
 * `taskplane` entry point. Each command lives in its own file and adds itself here. Errors a person can
 * act on (bad flags, unreachable database, newer schema) print one line and exit non-zero; only a bug
 * prints a stack.
 */
// package.json sits two levels up both from src/cli/ and from the compiled dist/cli/.
const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

const program = cliErrors(new Command())
  .name('taskplane')
  .description('Durable control plane and agent host for long-running AI-agent work')
  .version(version);

const commands: Array<(program: Command) => void> = [
  // commands register here, one line each
  registerConformanceCommand,
  registerExportCommand,
  registerHostCommand,
  registerKeysCommand,
  registerLabCommand,
  registerServeCommand,
  registerTasksCommand,
  registerWorkflowsCommand,
];
for (const register of commands) register(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    const { status, hint } = commanderExit(err);
    if (hint) console.error('(add --help for usage)');
    process.exit(status);
  }
  if (err instanceof TaskplaneError) {
    console.error(`taskplane: ${err.message}`);
    process.exit(2);
  }
  throw err;
}
