import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SystemClock } from '../../src/core/clock.ts';
import { startServer, type RunningServer } from '../../src/server/start-server.ts';
import { FakeRemote } from '../plane/fake-remote.ts';
import { spawnTaskplane } from '../support/process.ts';

/**
 * `taskplane workflows budget|show` and `tasks create --workflow/--parent` as a person runs them: the
 * real CLI process against a running plane.
 */
const KEY = 'key-cli-workflows-0001';
let server: RunningServer;

beforeAll(async () => {
  server = await startServer({
    port: 0,
    db: 'memory:',
    connectors: { fake: new FakeRemote(new SystemClock()).connector('fake') },
    apiKeys: `default:${KEY}`,
    defaultMetrics: false,
    dashboard: false,
    lab: false,
    logger: pino({ level: 'silent' }),
  });
});
afterAll(() => server?.close());

async function cli(...args: string[]) {
  const proc = await spawnTaskplane([
    ...args.slice(0, 2),
    '--url',
    server.url,
    '--key',
    KEY,
    ...args.slice(2),
  ]);
  const { code } = await proc.exited;
  return { code, stdout: proc.stdout, stderr: proc.stderr };
}

describe('taskplane workflows', () => {
  it('sets a budget, refuses the task past it naming the budget, and shows the workflow', async () => {
    const set = await cli('workflows', 'budget', 'wf-cli', '--tasks', '1', '--usage', 'cents=500');
    expect(set.stderr).toBe('');
    expect(set.code).toBe(0);
    expect(set.stdout).toMatch(/usage\.cents\s+500\s+0/);
    expect(set.stdout).toMatch(/tasks\s+1\s+0/);

    const first = await cli(
      'tasks',
      'create',
      '--target',
      'fake',
      '--text',
      'one',
      '--workflow',
      'wf-cli',
      '--json',
    );
    expect(first.code).toBe(0);
    const parent = JSON.parse(first.stdout) as { id: string; workflowId: string };
    expect(parent.workflowId).toBe('wf-cli');
    const child = await cli('tasks', 'create', '--target', 'fake', '--text', 'two', '--parent', parent.id);
    expect(child.code).not.toBe(0);
    expect(child.stderr).toMatch(/409 failed_precondition: workflow budget exhausted: tasks/);

    const shown = await cli('workflows', 'show', 'wf-cli');
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/tasks:\s+1 \(0 accepted, 0 rejected\)/);
    expect(shown.stdout).toMatch(/exhausted:\s+tasks/);
    const secret = await cli('tasks', 'verifier-secret');
    expect(secret.stdout.trim()).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    const bad = await cli('workflows', 'budget', 'wf-cli', '--usage', 'cents');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--usage: "cents" is not unit=number/);
  });
});
