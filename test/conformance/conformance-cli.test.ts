import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPORT_VERSION, type ConformanceReport } from '../../src/conformance/report.ts';
import { REPO_ROOT, spawnTaskplane } from '../support/process.ts';
import { startSdkAgent, startSdkMcpServer, type AgentUnderTest } from './agent-processes.ts';

/** `taskplane conformance` as a user runs it: its help, its exit codes, its JSON and HTML outputs. */
async function run(args: string[]) {
  const p = await spawnTaskplane(['conformance', ...args]);
  const { code } = await p.exited;
  return { code, stdout: p.stdout, stderr: p.stderr };
}

describe('taskplane conformance (CLI)', () => {
  let agent: AgentUnderTest;
  let mcp: AgentUnderTest;
  beforeAll(async () => {
    [agent, mcp] = await Promise.all([startSdkAgent(), startSdkMcpServer()]);
  });
  afterAll(() => Promise.all([agent?.stop(), mcp?.stop()]));

  it('documents every flag in --help and in docs/conformance.md', async () => {
    const { code, stdout } = await run(['--help']);
    expect(code).toBe(0);
    const flags = [...stdout.matchAll(/^\s+(--[a-z-]+)/gm)].map((m) => m[1]!).filter((f) => f !== '--help');
    expect(flags).toEqual(
      expect.arrayContaining([
        '--target',
        '--rows',
        '--seed',
        '--restart-cmd',
        '--deploy-cmd',
        '--revoke-cmd',
        '--json',
        '--html',
      ]),
    );
    const docs = readFileSync(join(REPO_ROOT, 'docs/conformance.md'), 'utf8');
    for (const flag of flags) expect(docs, `docs/conformance.md names ${flag}`).toContain(`\`${flag}`);
  });

  it('refuses an unknown row and an unreadable agent with status 2 and one line naming the flag', async () => {
    const rows = await run(['--target', agent.url, '--rows', '99']);
    expect(rows.code).toBe(2);
    expect(rows.stderr).toMatch(/--rows: unknown row "99"/);
    const target = await run(['--target', 'http://127.0.0.1:1']);
    expect(target.code).toBe(2);
    expect(target.stderr).toMatch(/--target: cannot read the agent card/);
  });

  it('exits 0 when the rows that ran passed, with the versioned JSON on stdout and the HTML page written', async () => {
    const html = join(mkdtempSync(join(tmpdir(), 'taskplane-conformance-cli-')), 'report.html');
    const { code, stdout, stderr } = await run([
      '--target',
      agent.url,
      '--rows',
      '1,9',
      '--json',
      '--html',
      html,
      '--job-ms',
      '500',
    ]);
    expect(code, stderr).toBe(0);
    const report = JSON.parse(stdout) as ConformanceReport;
    expect(report.version).toBe(REPORT_VERSION);
    expect(report.rows.map((r) => [r.number, r.status])).toEqual([
      [1, 'passed'],
      [9, 'not_run'],
    ]);
    expect(report.rows[1]!.reason).toBe('needs --restart-cmd');
    // Progress goes to stderr, one line per row.
    expect(stderr).toMatch(/create-disconnect\s+pass/);
    expect(existsSync(html)).toBe(true);
    expect(readFileSync(html, 'utf8')).toContain('id="create-disconnect"');
  });

  it('exits 1 when nothing ran: a run that proved nothing does not pass', async () => {
    const { code, stdout } = await run(['--target', agent.url, '--rows', 'retention-expiry,budget']);
    expect(code).toBe(1);
    expect(stdout).toMatch(/0 passed, 0 failed, 0 not run, 2 not applicable/);
  });

  it('reads an MCP tasks server: --tool is required, --protocol is checked, and its rows run', async () => {
    const noTool = await run(['--target', mcp.url, '--rows', '1']);
    expect(noTool.code).toBe(2);
    expect(noTool.stderr).toMatch(/--tool: an MCP target needs the tool/);
    const badProtocol = await run(['--target', mcp.url, '--protocol', 'grpc']);
    expect(badProtocol.code).toBe(2);
    expect(badProtocol.stderr).toMatch(/--protocol/);
    const { code, stdout, stderr } = await run([
      '--target',
      mcp.url,
      '--tool',
      'demo_task',
      '--rows',
      '1,2',
      '--json',
      '--job-ms',
      '500',
    ]);
    expect(code, stderr).toBe(0);
    const report = JSON.parse(stdout) as ConformanceReport;
    expect(report.agent.protocol).toBe('mcp');
    expect(report.rows.map((r) => [r.number, r.status])).toEqual([
      [1, 'passed'],
      [2, 'not_applicable'],
    ]);
    // Three runs of the CLI from source, on a machine that may be loaded: a bound on failure only.
  }, 180_000);
});
