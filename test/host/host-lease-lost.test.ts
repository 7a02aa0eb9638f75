import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/core/clock.ts';
import { defineAgent } from '../../src/host/agent-api.ts';
import { HostLiveness } from '../../src/host/host-liveness.ts';
import { sharedSchemaStores } from '../support/pg.ts';
import { call, silent, startTestHost, waitForTask, type Wire } from './in-process.ts';

/**
 * A running host whose lease passed to another process with its host id (that process started while this
 * one's database session was cut, so this one looked dead) stops running tasks: the other process runs
 * them now, and two executions of one task must never run side by side.
 */
describe('a host that lost its lease', () => {
  it('stops its executes (their signal fires) and writes nothing more to their tasks', async () => {
    const [store, twinStore] = await sharedSchemaStores(2, 'tp_leaselost');
    const ttl = 60_000;
    const clock = new VirtualClock(Date.parse('2026-12-01T00:00:00Z'));
    let running!: () => void;
    const started = new Promise<void>((r) => (running = r));
    let stoppedWith: unknown;
    const host = await startTestHost(store!, {
      clock,
      hostId: 'lease-lost',
      hostLeaseMs: ttl,
      agent: defineAgent({
        card: { name: 'long', description: 'runs until stopped', version: '1' },
        resumable: true,
        async execute(ctx) {
          await ctx.status('working');
          running();
          await new Promise<void>((_, reject) => {
            if (ctx.signal.aborted) reject(ctx.signal.reason as Error);
            ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error));
          }).catch((err: unknown) => {
            stoppedWith = err;
          });
          // Whatever the execute tries after the stop is refused.
          await ctx.status('still here?').catch(() => undefined);
        },
      }),
    });
    try {
      const { body } = await call(host.url, 'SendMessage', {
        message: { messageId: 'lease-lost-1', role: 'ROLE_USER', parts: [{ text: 'go' }] },
        configuration: { returnImmediately: true },
      });
      const taskId = (body.result as Wire).task.id as string;
      await started;
      await waitForTask(store!, taskId, (t) => JSON.stringify(t.task).includes('working'));

      // A process with the same host id whose clock is past this one's lease takes the lease.
      const twin = new HostLiveness('lease-lost', twinStore!, new VirtualClock(clock.now() + ttl), silent, {
        ttlMs: ttl,
        instance: 'twin',
      });
      expect(await twin.start()).toBe(true);
      const before = JSON.stringify((await store!.getAgentTask(taskId))!.task);

      // This host's next renewal (every ttl/3) finds the lease taken and stops its executions.
      await clock.advance(ttl / 3);
      for (let i = 0; i < 400 && stoppedWith === undefined; i++) await new Promise((r) => setTimeout(r, 5));
      expect(stoppedWith).toBeInstanceOf(Error);
      expect(host.stats().executions).toBe(0);
      const after = (await store!.getAgentTask(taskId))!;
      expect(JSON.stringify(after.task)).toBe(before);
      expect(after.state).toBe('TASK_STATE_WORKING');
      await twin.stop();
    } finally {
      await host.close();
    }
  });
});
