import { writeFileSync } from 'node:fs';
import { InvalidArgumentError, type Command } from 'commander';
import { ROWS } from '../conformance/rows.ts';
import { intOption } from './cli-options.ts';

/** `--header name:value`, repeatable. */
function headerOption(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const at = value.indexOf(':');
  if (at <= 0) throw new InvalidArgumentError('Expected name:value (e.g. "authorization: Bearer …").');
  return { ...previous, [value.slice(0, at).trim().toLowerCase()]: value.slice(at + 1).trim() };
}

const rowList = ROWS.map((r) => `${r.number}=${r.id}`).join(', ');

/**
 * `taskplane conformance --target URL`: the failure matrix against one A2A 1.0 agent or MCP tasks server
 * (docs/conformance.md).
 * Exit status: 0 when every row that ran passed, 1 when one failed, 2 for bad flags or an agent that
 * cannot be read at all.
 */
export function registerConformanceCommand(program: Command): void {
  program
    .command('conformance')
    .description(
      'Run the failure matrix against an A2A 1.0 agent or an MCP tasks server through a fault proxy and report what survived',
    )
    .requiredOption(
      '--target <url>',
      "the A2A agent's base URL (its card is at <url>/.well-known/agent-card.json), or the MCP server's endpoint (…/mcp)",
    )
    .option(
      '--protocol <a2a|mcp>',
      'the target protocol (default: A2A when its card answers, else MCP)',
      (v: string) => {
        if (v !== 'a2a' && v !== 'mcp') throw new InvalidArgumentError('Expected a2a or mcp.');
        return v;
      },
    )
    .option(
      '--tool <name>',
      'MCP: the tool every job calls, with the test contract as its arguments (required for MCP)',
    )
    .option(
      '--header <name:value>',
      'header sent on every call to the agent, e.g. its credentials (repeatable)',
      headerOption,
    )
    .option(
      '--other-header <name:value>',
      "another caller's credentials: every job's task is also read with them and must be refused (repeatable)",
      headerOption,
    )
    .option(
      '--rows <list>',
      `rows to run, by number or id, comma-separated (default all): ${rowList}`,
      (v: string) =>
        v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
    )
    .option('--seed <n>', 'seed of the fault schedule (the same seed cuts the same frames)', intOption(0), 1)
    .option('--job-ms <ms>', 'how long each test job works (test contract durationMs)', intOption(1), 1500)
    .option(
      '--input <json>',
      'A2A: send this job input instead of the test contract (an agent without it; row 6 is then not run)',
      (v: string) => {
        try {
          return JSON.parse(v) as unknown;
        } catch {
          throw new InvalidArgumentError('Expected JSON (a string, or an object such as {"parts":[…]}).');
        }
      },
    )
    .option(
      '--restart-cmd <cmd>',
      'shell command that kills the agent and starts it again (row 9); returns when done',
    )
    .option('--deploy-cmd <cmd>', 'shell command that deploys a new agent version while tasks run (row 12)')
    .option(
      '--revoke-cmd <cmd>',
      'shell command that revokes the credentials given with --header (row 7, run last)',
    )
    .option('--hook-timeout-ms <ms>', 'bound on one hook command', intOption(1), 60000)
    .option('--row-timeout-ms <ms>', 'bound on one row', intOption(1), 60000)
    .option(
      '--timeout-ms <ms>',
      'bound on the whole run; rows that would start past it are not run',
      intOption(1),
      300000,
    )
    .option('--json', 'print the report as JSON (version 2, docs/conformance.md) instead of the table', false)
    .option('--html <file>', 'also write a self-contained HTML report (timelines, checklist) to this file')
    .addHelpText(
      'after',
      `
Each row runs the real engine (its own SQLite store in a temp dir) against the agent through a loopback
fault proxy. A row whose hook is not given, or whose capability the agent's card does not declare, is
"not run"; a row the target's protocol has nothing for is "not applicable"; neither is passed. Jobs ask
the agent for work with the test contract (A2A: a data part; MCP: the tool's arguments)
{"durationMs","steps","askInput","fail","artifactChunks","sideEffectMs","label"}: docs/conformance.md.

Exit status: 0 when at least one row ran and every row that ran passed; 1 when a row failed;
2 for a bad flag or an agent card that cannot be read.`,
    )
    .action(async (opts: Record<string, unknown>) => {
      const json = opts.json === true;
      const tty = process.stderr.isTTY === true;
      const hooks = {
        ...(opts.restartCmd ? { restart: opts.restartCmd as string } : {}),
        ...(opts.deployCmd ? { deploy: opts.deployCmd as string } : {}),
        ...(opts.revokeCmd ? { revoke: opts.revokeCmd as string } : {}),
      };
      // The runner (the engine, its stores, the fault proxy) loads only when the command runs.
      const [{ runConformance }, { formatReport, formatRowLine, progressLine }, { renderHtmlReport }] =
        await Promise.all([
          import('../conformance/run-conformance.ts'),
          import('../conformance/report-text.ts'),
          import('../conformance/report-html.ts'),
        ]);
      const report = await runConformance({
        target: opts.target as string,
        ...(opts.protocol ? { protocol: opts.protocol as 'a2a' | 'mcp' } : {}),
        ...(opts.tool ? { tool: opts.tool as string } : {}),
        headers: (opts.header as Record<string, string> | undefined) ?? {},
        ...(opts.otherHeader ? { otherHeaders: opts.otherHeader as Record<string, string> } : {}),
        hooks,
        ...(opts.rows ? { rows: opts.rows as string[] } : {}),
        seed: opts.seed as number,
        ...(opts.input !== undefined ? { input: opts.input } : {}),
        jobMs: opts.jobMs as number,
        rowTimeoutMs: opts.rowTimeoutMs as number,
        hookTimeoutMs: opts.hookTimeoutMs as number,
        totalTimeoutMs: opts.timeoutMs as number,
        progress: ({ row, index, total, result }) => {
          // Progress goes to stderr: stdout carries only the report (table or JSON).
          if (tty)
            process.stderr.write(
              `\r\x1b[K${progressLine(result ? index + 1 : index, total, result ? '' : `${row.number} ${row.id}`)}`,
            );
          if (result) process.stderr.write(`${tty ? '\r\x1b[K' : ''}${formatRowLine(result)}\n`);
        },
      });
      if (opts.html) writeFileSync(opts.html as string, renderHtmlReport(report));
      process.stdout.write(json ? JSON.stringify(report, null, 2) + '\n' : formatReport(report) + '\n');
      process.exitCode = report.passed ? 0 : 1;
    });
}
