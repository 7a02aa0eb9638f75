import { afterEach, describe, expect, it } from 'vitest';
import { defineAgent, type ExecutionContext } from '../../src/host/agent-api.ts';
import type { RunningHost } from '../../src/host/start-host.ts';
import { runStep, StepFailedError } from '../../src/host/steps.ts';
import { TaskClosedError } from '../../src/host/task-context.ts';
import type { TaskDraft } from '../../src/host/task-writer.ts';
import { CryptoRandom } from '../../src/core/random.ts';
import { stepHistory } from './helpers.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import type { Store } from '../../src/store/store.ts';
import { VirtualClock } from '../../src/core/clock.ts';
import { call, startTestHost, waitForTask, type Wire } from './in-process.ts';
import { mcp, pollTask } from './mcp/mcp-client.ts';
import { defineTool } from '../../src/host/tool-api.ts';

/**
 * ctx.step in one process: the journal answers a resumed execute, a step cut off by a shutdown runs
 * again under the same key, retries back off on the host's clock, and a step's failure is the agent's
 * to handle. The crash proof over real processes is steps-crash.test.ts.
 */
const hosts: RunningHost[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
});

let seq = 0;
async function send(h: RunningHost, data: Record<string, unknown>): Promise<string> {
  const { body } = await call(h.url, 'SendMessage', {
    message: { messageId: `steps-${process.pid}-${++seq}`, role: 'ROLE_USER', parts: [{ data }] },
    configuration: { returnImmediately: true },
  });
  return (body.result as Wire).task.id as string;
}

async function host(store: Store, execute: (ctx: ExecutionContext) => Promise<string | void>) {
  const h = await startTestHost(store, {
    hostId: 'steps-host',
    agent: defineAgent({
      card: { name: 'steps', description: 'steps', version: '1' },
      resumable: true,
      execute,
    }),
  });
  hosts.push(h);
  return h;
}

const terminal = (t: { state: string }) =>
  ['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED'].includes(t.state);

async function finished(store: Store, taskId: string): Promise<Wire> {
  await waitForTask(store, taskId, terminal);
  return (await store.getAgentTask(taskId))!.task;
}

const stepEntries = (task: Wire): Wire[] => stepHistory(task);

describe('ctx.step', () => {
  it('runs once, returns the recorded JSON and lists the step in the history', async () => {
    const store = new MemoryStore();
    let calls = 0;
    const keys: string[] = [];
    const h = await host(store, async (ctx) => {
      const first = await ctx.step('charge', ({ key }) => {
        calls++;
        keys.push(key);
        return { id: 'ch_1', at: new Date(0) };
      });
      // The same name again in the same run: the recorded result, fn not called.
      const again = await ctx.step('charge', () => {
        calls++;
        return { id: 'ch_2' };
      });
      expect(again).toEqual(first);
      expect(first).toEqual({ id: 'ch_1', at: '1970-01-01T00:00:00.000Z' }); // JSON, as a replay gives
      expect(ctx.stepKey('charge')).toBe(keys[0]);
      return `charged ${first.id}`;
    });
    const taskId = await send(h, { go: 1 });
    const task = await finished(store, taskId);
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(calls).toBe(1);
    const [entry, ...rest] = stepEntries(task);
    expect(rest).toEqual([]);
    expect(entry).toMatchObject({ name: 'charge', outcome: 'succeeded', attempts: 1 });
    expect(Date.parse(entry.endedAt)).toBeGreaterThanOrEqual(Date.parse(entry.startedAt));
    expect(keys[0]).toMatch(/^step_[A-Za-z0-9_-]{43}$/);
  });

  it('keys are stable within a task and differ across tasks and names', async () => {
    const store = new MemoryStore();
    const seen: Record<string, string[]> = {};
    const h = await host(store, async (ctx) => {
      seen[ctx.taskId] = [ctx.stepKey('a'), ctx.stepKey('b'), ctx.stepKey('a')];
    });
    const one = await send(h, { n: 1 });
    const two = await send(h, { n: 2 });
    await finished(store, one);
    await finished(store, two);
    const [a1, b1, a1again] = seen[one]!;
    const [a2] = seen[two]!;
    expect(a1again).toBe(a1);
    expect(new Set([a1, b1, a2]).size).toBe(3);
  });

  it('a resumed execute returns the recorded result; a step cut off by shutdown runs again with the same key', async () => {
    const store = new MemoryStore();
    const calls: Record<string, Array<{ key: string; attempt: number }>> = { first: [], second: [] };
    let blockSecond = true;
    let secondCalled!: () => void;
    const secondStarted = new Promise<void>((r) => (secondCalled = r));
    const execute = async (ctx: ExecutionContext) => {
      await ctx.step('first', ({ key, attempt }) => {
        calls.first!.push({ key, attempt });
        return 'one';
      });
      const second = await ctx.step('second', async ({ key, attempt, signal }) => {
        calls.second!.push({ key, attempt });
        secondCalled();
        if (blockSecond)
          await new Promise((_, reject) =>
            signal.addEventListener('abort', () => reject(signal.reason as Error)),
          );
        return 'two';
      });
      return second;
    };
    const h = await host(store, execute);
    const taskId = await send(h, {});
    await waitForTask(store, taskId, (t) =>
      JSON.stringify(t.task).includes('Step second: attempt 1 started'),
    );
    // The attempt is journaled as started before fn runs: cut it off only once fn is in flight.
    await secondStarted;
    await h.close();
    hosts.splice(hosts.indexOf(h), 1);
    blockSecond = false;
    await host(store, execute);
    const task = await finished(store, taskId);
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(calls.first).toHaveLength(1);
    expect(calls.second).toHaveLength(2);
    expect(calls.second![1]!.key).toBe(calls.second![0]!.key);
    expect(calls.second!.map((c) => c.attempt)).toEqual([1, 2]);
    expect(stepEntries(task).map((e: Wire) => [e.name, e.outcome, e.attempts])).toEqual([
      ['first', 'succeeded', 1],
      ['second', 'succeeded', 2],
    ]);
  });

  it('retries with backoff on the host clock, then journals the failure; a caught failure lets the task complete', async () => {
    const store = new MemoryStore();
    const clock = new VirtualClock(1_000_000);
    let attempts = 0;
    let caught: unknown;
    const h = await startTestHost(store, {
      clock,
      hostId: 'steps-retry',
      agent: defineAgent({
        card: { name: 'steps', description: 'steps', version: '1' },
        resumable: true,
        async execute(ctx) {
          try {
            await ctx.step(
              'flaky',
              () => {
                attempts++;
                throw new Error(`declined ${attempts}`);
              },
              { retries: 2, backoffMs: 100 },
            );
          } catch (err) {
            caught = err;
          }
          return 'handled';
        },
      }),
    });
    hosts.push(h);
    const taskId = await send(h, {});
    // Each retry waits on the manual clock: advance until the task is done.
    while (!terminal((await store.getAgentTask(taskId))!)) {
      await new Promise((r) => setImmediate(r));
      await clock.advance(100);
    }
    const task = (await store.getAgentTask(taskId))!.task as Wire;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(attempts).toBe(3);
    expect(caught).toBeInstanceOf(StepFailedError);
    expect((caught as StepFailedError).message).toBe('step flaky failed after 3 attempts: declined 3');
    expect(stepEntries(task)).toEqual([
      expect.objectContaining({ name: 'flaky', outcome: 'failed', attempts: 3 }),
    ]);
    // The client sees the outcome, never the error text.
    expect(JSON.stringify(task)).not.toContain('declined');
  });

  it('a failed step fails the task when execute lets it throw, and a resume replays the failure without calling fn', async () => {
    const store = new MemoryStore();
    let calls = 0;
    const outcomes: string[] = [];
    let hold = true;
    const execute = async (ctx: ExecutionContext) => {
      try {
        await ctx.step('once', () => {
          calls++;
          throw new Error('no');
        });
      } catch (err) {
        outcomes.push((err as Error).name);
        if (hold) await ctx.sleep(3_600_000); // stay unfinished until the shutdown
        throw err;
      }
    };
    const h = await host(store, execute);
    const taskId = await send(h, {});
    await waitForTask(store, taskId, (t) => JSON.stringify(t.task).includes('Step once failed'));
    await h.close();
    hosts.splice(hosts.indexOf(h), 1);
    hold = false;
    await host(store, execute);
    const task = await finished(store, taskId);
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(calls).toBe(1);
    expect(outcomes).toEqual(['StepFailedError', 'StepFailedError']);
  });

  it('refuses a bad name or options with an error naming the field', async () => {
    const store = new MemoryStore();
    const errors: string[] = [];
    const h = await host(store, async (ctx) => {
      for (const bad of [
        () => ctx.step('', () => 1),
        () => ctx.step('x', () => 1, { retries: -1 }),
        () => ctx.step('x', () => 1, { backoffMs: 0 }),
        () => ctx.step('big', () => 'x'.repeat(70_000)),
      ]) {
        try {
          await bad();
        } catch (err) {
          errors.push((err as Error).message);
        }
      }
    });
    await finished(store, await send(h, {}));
    expect(errors).toEqual([
      expect.stringContaining('step name:'),
      expect.stringContaining('retries must be'),
      expect.stringContaining('backoffMs must be'),
      expect.stringContaining('over the 65536 a step may record'),
    ]);
  });

  it('an MCP tool has the same steps: journaled, keyed, replayed', async () => {
    const store = new MemoryStore();
    const keys: string[] = [];
    const h = await startTestHost(store, {
      agent: defineAgent({
        card: { name: 'steps', description: 'steps', version: '1' },
        tools: [
          defineTool({
            name: 'pay',
            description: 'charges once',
            inputSchema: { type: 'object' },
            task: 'required',
            resumable: true,
            async run(ctx) {
              const charge = await ctx.step('charge', ({ key }) => {
                keys.push(key);
                return { id: 'ch_9' };
              });
              const again = await ctx.step('charge', () => ({ id: 'never' }));
              expect(ctx.stepKey('charge')).toBe(keys[0]);
              return `charged ${charge.id} ${again.id}`;
            },
          }),
        ],
      }),
    });
    hosts.push(h);
    const created = await mcp(h.mcpUrl, 'tools/call', { name: 'pay', arguments: {} });
    const done = await pollTask(
      h.mcpUrl,
      created.body.result.taskId as string,
      (t: Wire) => t.status !== 'working',
    );
    expect(done).toMatchObject({ status: 'completed' });
    expect(done.result.content[0].text).toBe('charged ch_9 ch_9');
    expect(keys).toHaveLength(1);
  });
});

describe('runStep', () => {
  it('a step stopped while its start is being journaled never calls fn and throws the stop reason', async () => {
    const controller = new AbortController();
    const stop = new TaskClosedError('shutdown');
    const journaled: string[] = [];
    let called = false;
    const run = runStep(
      'pay',
      'key-1',
      () => {
        called = true;
        return 'paid';
      },
      undefined,
      undefined,
      {
        clock: new VirtualClock(),
        random: new CryptoRandom(),
        signal: controller.signal,
        stopped: () => controller.signal.aborted,
        // The shutdown lands while the "attempt 1 started" write is in flight; the write itself succeeds.
        write: async (mutate) => {
          const draft = {
            executor: {},
            task: { id: 't', contextId: 'c', history: [], status: { state: 'TASK_STATE_WORKING' } },
          } as unknown as TaskDraft;
          mutate(draft);
          journaled.push(JSON.stringify(draft.executor));
          controller.abort(stop);
        },
      },
    );
    await expect(run).rejects.toBe(stop);
    expect(called).toBe(false);
    // The start stays journaled: a resumed execute runs the attempt again under the same key.
    expect(journaled).toHaveLength(1);
    expect(journaled[0]).toContain('"running"');
  });
});
