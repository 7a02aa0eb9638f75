import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, spawnHost, type TestProcess } from '../support/process.ts';
import { mcpPlane, TERMINAL, type McpPlane } from '../peers/mcp-plane.ts';

/**
 * The plane tracks tasks on our own host's MCP surface while the host process is SIGKILLed mid-task and
 * started again on the same port and database: `taskplane host` as a real process (its demo agent's
 * `demo_task` tool), the plane in this process with an MCP target on it. What the plane ends with must
 * be what the host says, and each job must stay one remote task: nothing is called again.
 */
const dir = mkdtempSync(join(tmpdir(), 'taskplane-mcp-restart-'));
const procs: TestProcess[] = [];
let plane: McpPlane | undefined;
afterAll(async () => {
  await plane?.close();
  await Promise.all(procs.map((p) => p.kill('SIGKILL').catch(() => {})));
  rmSync(dir, { recursive: true, force: true });
});

interface HostTask {
  id: string;
  status: { state: string };
  metadata?: Record<string, unknown>;
}

async function startHostOn(port: number): Promise<{ url: string; proc: TestProcess }> {
  const host = await spawnHost([
    '--port',
    String(port),
    // A stable id: the restarted host owns its unfinished tasks at once (no lease to wait out).
    '--host-id',
    'mcp-restart-host',
    '--db',
    `sqlite:${join(dir, 'host.db')}`,
    '--mcp-poll-interval-ms',
    '100',
  ]);
  procs.push(host.proc);
  return host;
}

/** The host's own record of its tasks (MCP tool tasks are visible to A2A reads of the same caller). */
async function hostTasks(url: string): Promise<HostTask[]> {
  const res = await fetch(`${url}/a2a/rest/tasks`, { headers: { 'A2A-Version': '1.0' } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { tasks: HostTask[] }).tasks;
}

describe('the plane on taskplane host /mcp, host SIGKILLed mid-task', () => {
  it('ends each job as the host says, input answered after the restart, one remote task per job', async () => {
    const port = await freePort();
    const first = await startHostOn(port);
    plane = await mcpPlane(
      { kind: 'mcp', url: `${first.url}/mcp`, tool: 'demo_task' },
      {
        // Notifications first (the listen stream breaks with the host), polling beside them.
        delivery: { stream: true, push: false, poll: true },
        poll: {
          intervalMs: 50,
          maximumIntervalMs: 200,
          jitterRatio: 0.1,
          errorBackoff: { initialIntervalMs: 50, maximumIntervalMs: 300 },
        },
      },
    );
    const p = plane;
    const running = await p.create({ durationMs: 3_000, steps: 6 });
    const asking = await p.create({ durationMs: 200, steps: 2, askInput: 'Which edition?' });
    const before = {
      running: await p.until(running.id, (t) => t.state === 'running' && t.remoteId !== null, 'running'),
      asking: await p.until(asking.id, (t) => t.state === 'waiting_for_input', 'waiting for input'),
    };

    await first.proc.kill('SIGKILL');
    const second = await startHostOn(port);
    // Both unfinished tasks are the restarted host's own: one resumed, one still waiting for its answer.
    const [recovered] = await second.proc.waitForLine(/recovered:.*/);
    expect(recovered).toMatch(/1 resumed/);
    expect(recovered).toMatch(/1 waiting/);

    // The question asked before the crash is answered after it.
    const key = before.asking.pendingInput!.requests![0]!.requestId;
    const answered = await p.answer(asking.id, key, 'second');
    expect(answered.status).toBeLessThan(300);

    const done = {
      running: await p.until(running.id, (t) => TERMINAL.has(t.state), 'terminal'),
      asking: await p.until(asking.id, (t) => TERMINAL.has(t.state), 'terminal'),
    };
    expect(done.running.state).toBe('succeeded');
    expect(JSON.stringify(done.running.result)).toContain('done after 6 steps');
    expect(done.asking.state).toBe('succeeded');
    expect(JSON.stringify(done.asking.result)).toContain('done after 2 steps (second)');

    // One remote task per job: the same id before and after the crash, never lost, resubmitted or bound
    // to another (the one `bound` is the start's).
    expect(done.running.remoteId).toBe(before.running.remoteId);
    expect(done.asking.remoteId).toBe(before.asking.remoteId);
    for (const id of [running.id, asking.id]) {
      const rebinding = (await p.history(id)).filter((e) =>
        ['bound', 'lost', 'resubmitted'].includes(e.type),
      );
      expect(rebinding.map((e) => e.type)).toEqual(['bound']);
    }
    // The host's side: exactly these two tasks, both completed, as the plane recorded.
    const onHost = await hostTasks(second.url);
    expect(onHost.map((t) => t.id).sort()).toEqual([done.running.remoteId, done.asking.remoteId].sort());
    expect(onHost.every((t) => t.status.state === 'TASK_STATE_COMPLETED')).toBe(true);
  }, 60_000);
});
