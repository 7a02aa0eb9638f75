import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/core/clock.ts';
import { defineAgent, type ExecutionContext } from '../../src/host/agent-api.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { call, startTestHost, waitForTask, type Wire } from './in-process.ts';
import { recordingLogger } from '../support/recording-logger.ts';

/**
 * Host shutdown with an execute that ignores its abort signal: close() waits the grace period, not
 * forever; the execute left behind can no longer write; its task stays stored and resumes on the next
 * start.
 */
describe('host shutdown grace', () => {
  it('close() gives up on an execute that ignores its signal after the grace period; it writes nothing after', async () => {
    const store = new MemoryStore();
    const clock = new VirtualClock(Date.parse('2026-12-01T00:00:00Z'));
    const logger = recordingLogger();
    let release!: () => void;
    const stuck = new Promise<void>((r) => (release = r));
    let lateWrite: unknown;
    let resumedRuns = 0;
    const agent = (stubborn: boolean) =>
      defineAgent({
        card: { name: 'stubborn', description: 'ignores its signal', version: '1' },
        resumable: true,
        async execute(ctx: ExecutionContext) {
          if (!stubborn) {
            resumedRuns++;
            return 'done on the next start';
          }
          await ctx.status('working on it');
          await stuck; // never looks at ctx.signal
          try {
            await ctx.status('too late');
          } catch (err) {
            lateWrite = err;
          }
          return 'never recorded';
        },
      });
    const h = await startTestHost(store, {
      clock,
      hostId: 'grace-host',
      shutdownGraceMs: 10_000,
      logger,
      agent: agent(true),
    });
    const { body } = await call(h.url, 'SendMessage', {
      message: { messageId: 'grace-1', role: 'ROLE_USER', parts: [{ text: 'go' }] },
      configuration: { returnImmediately: true },
    });
    const taskId = (body.result as Wire).task.id as string;
    await waitForTask(store, taskId, (t) => JSON.stringify(t.task).includes('working on it'));

    const start = clock.now();
    let closedAt: number | undefined;
    const closing = h.close().then(() => (closedAt = clock.now()));
    // Let the real I/O of the shutdown run, and move the host's clock on in steps.
    while (closedAt === undefined && clock.now() - start < 60_000) {
      await new Promise((r) => setImmediate(r));
      await clock.advance(500);
    }
    await closing;
    expect(closedAt! - start).toBeGreaterThanOrEqual(10_000);
    expect(closedAt! - start).toBeLessThan(60_000);
    const warning = logger.lines.find((l) => l.level === 'warn' && l.msg?.includes('grace period'));
    expect(warning?.obj).toMatchObject({ taskIds: [taskId], graceMs: 10_000 });

    // The execute wakes after the host stopped: its write is refused, nothing stored changes.
    const before = JSON.stringify((await store.getAgentTask(taskId))!.task);
    release();
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect(lateWrite).toBeInstanceOf(Error);
    const after = (await store.getAgentTask(taskId))!;
    expect(JSON.stringify(after.task)).toBe(before);
    expect(after.state).toBe('TASK_STATE_WORKING');

    // The next start resumes it.
    const next = await startTestHost(store, { hostId: 'grace-host', agent: agent(false) });
    try {
      await waitForTask(store, taskId, (t) => t.state === 'TASK_STATE_COMPLETED');
      expect(resumedRuns).toBe(1);
    } finally {
      await next.close();
    }
  });
});
