import { afterEach, describe, expect, it } from 'vitest';
import { defineAgent, type AgentDefinition } from '../../src/host/agent-api.ts';
import { PostgresStore } from '../../src/store/postgres/pg-store.ts';
import { disposeSchema, freshSchemaName, urlForSchema } from '../support/pg.ts';
import { stepHistory } from './helpers.ts';
import { call, startTestHost, waitForTask, type Wire } from './in-process.ts';

/**
 * Journaled steps across host processes on one PostgreSQL: a task taken over from a stopped host replays
 * the steps that host finished and runs the one it was cut off in again under the same key, because
 * every host derives keys from the one secret kept in the shared store.
 */
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('steps on a shared PostgreSQL', () => {
  it('a task taken over by another host replays finished steps and reruns the cut one with the same key', async () => {
    const schema = freshSchemaName('tp_steps');
    const url = urlForSchema(schema);
    const storeA = await PostgresStore.open({ url, poolMax: 4 });
    const storeB = await PostgresStore.open({ url, poolMax: 4 });
    cleanups.push(async () => {
      await storeA.close();
      await storeB.close();
      await disposeSchema(schema, false);
    });
    const calls: Array<{ host: string; step: string; key: string }> = [];
    let payCalledOnA!: () => void;
    const payInFlightOnA = new Promise<void>((r) => (payCalledOnA = r));
    const agentOn = (host: string): AgentDefinition =>
      defineAgent({
        card: { name: 'steps', description: 'steps', version: '1' },
        resumable: true,
        async execute(ctx) {
          const reserved = await ctx.step('reserve', ({ key }) => {
            calls.push({ host, step: 'reserve', key });
            return { seat: '12A' };
          });
          const paid = await ctx.step('pay', async ({ key, signal }) => {
            calls.push({ host, step: 'pay', key });
            // On host A the payment never returns: A stops while it is in flight.
            if (host === 'a') {
              payCalledOnA();
              await new Promise((_, reject) =>
                signal.addEventListener('abort', () => reject(signal.reason as Error)),
              );
            }
            return { charge: 'ch_1' };
          });
          return `${reserved.seat} ${paid.charge}`;
        },
      });
    const a = await startTestHost(storeA, { hostId: 'steps-a', hostLeaseMs: 600, agent: agentOn('a') });
    cleanups.push(() => a.close());
    const b = await startTestHost(storeB, { hostId: 'steps-b', hostLeaseMs: 600, agent: agentOn('b') });
    cleanups.push(() => b.close());

    const { body } = await call(a.url, 'SendMessage', {
      message: { messageId: 'steps-pg-1', role: 'ROLE_USER', parts: [{ text: 'book' }] },
      configuration: { returnImmediately: true },
    });
    const id = (body.result as Wire).task.id as string;
    await waitForTask(storeB, id, (t) => JSON.stringify(t.task).includes('Step pay: attempt 1 started'));
    // The attempt is journaled as started before fn runs: stop A only once the payment is in flight.
    await payInFlightOnA;
    await a.close();
    await waitForTask(storeB, id, (t) => t.state === 'TASK_STATE_COMPLETED', 30_000);

    expect(calls.map((c) => `${c.host}:${c.step}`)).toEqual(['a:reserve', 'a:pay', 'b:pay']);
    const [, payOnA, payOnB] = calls;
    expect(payOnB!.key).toBe(payOnA!.key);
    const task = (await storeB.getAgentTask(id))!.task as Wire;
    expect(task.status.message.parts[0].text).toBe('12A ch_1');
    expect(stepHistory(task).map((s) => [s.name, s.outcome, s.attempts])).toEqual([
      ['reserve', 'succeeded', 1],
      ['pay', 'succeeded', 2],
    ]);
  });
});
