import { afterAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/pg-store.ts';
import { disposeSchema, freshSchemaName, urlForSchema } from '../support/pg.ts';
import { spawnHost, spawnTaskplane, type TestProcess } from '../support/process.ts';
import { call, waitForTask, type Wire } from './in-process.ts';

/**
 * Two `taskplane host` processes on one PostgreSQL schema with a long host lease (60 s). Host A runs a
 * long task and is SIGKILLed: PostgreSQL ends its session, which frees the liveness lock of its host id,
 * so host B's next probe finds it dead and B resumes the task long before A's lease would have expired
 * (the wait below is bounded at half the lease: a takeover by expiry cannot pass). One execution at a
 * time: the task's steps run in order, each once, but for the one step A may have announced without
 * checkpointing it; the task completes once. A third process started with B's host id while B lives is
 * refused, and once B is killed its host id starts again at once.
 */
const LEASE_MS = 60_000;
const schema = freshSchemaName('tp_hostkill');
const url = urlForSchema(schema);
const procs: TestProcess[] = [];
let store: PostgresStore | undefined;
let failed = false;
afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill('SIGKILL')));
  await store?.close();
  await disposeSchema(schema, failed);
});

function host(id: string) {
  return spawnHost(['--port', '0', '--db', url, '--host-id', id, '--host-lease-ms', String(LEASE_MS)], {
    readyTimeoutMs: 60_000,
  });
}

/** The step numbers of the task's `step i/n` statuses, in log order, split at the takeover. */
function stepsOf(events: Array<{ payload: unknown }>): { before: number[]; after: number[] } {
  const before: number[] = [];
  const after: number[] = [];
  let resumed = false;
  for (const e of events) {
    const text = JSON.stringify(e.payload);
    if (text.includes('Resumed after an agent host restart')) resumed = true;
    const m = /"text":"step (\d+)\/\d+"/.exec(text);
    if (m) (resumed ? after : before).push(Number(m[1]));
  }
  return { before, after };
}

describe('a SIGKILLed host on PostgreSQL', () => {
  it('has its task resumed by the other host well within the lease, once', async () => {
    try {
      const a = await host('host-a');
      procs.push(a.proc);
      const b = await host('host-b');
      procs.push(b.proc);
      store = await PostgresStore.open({ url, poolMax: 2 });

      const { body } = await call(a.url, 'SendMessage', {
        message: {
          messageId: 'kill-1',
          role: 'ROLE_USER',
          parts: [{ data: { durationMs: 10_000, steps: 10, artifactChunks: 1 } }],
        },
        configuration: { returnImmediately: true },
      });
      const id = (body.result as Wire).task.id as string;
      await waitForTask(store, id, (t) => JSON.stringify(t.task).includes('step 2/10'));

      const killedAt = Date.now();
      expect((await a.proc.kill('SIGKILL')).signal).toBe('SIGKILL');
      // A failure bound, not a timing assertion: by lease expiry B could take over only after 60 s.
      await waitForTask(
        store,
        id,
        (t) => (t as unknown as { executorState: { host?: string } }).executorState.host === 'host-b',
        LEASE_MS / 2,
      );
      const takeoverMs = Date.now() - killedAt;
      await waitForTask(store, id, (t) => t.state === 'TASK_STATE_COMPLETED', LEASE_MS / 2);

      const rec = (await store.getAgentTask(id))!;
      expect(rec.executorState).toMatchObject({ host: 'host-b', runs: 2 });
      const events = await store.listAgentTaskEvents(id, 0, 10_000);
      const text = events.map((e) => JSON.stringify(e.payload));
      expect(text.filter((t) => t.includes('Resumed after an agent host restart'))).toHaveLength(1);
      expect(text.filter((t) => t.includes('"state":"TASK_STATE_COMPLETED"'))).toHaveLength(1);
      const { before, after } = stepsOf(events);
      const last = before[before.length - 1]!;
      expect(before).toEqual(Array.from({ length: last }, (_, i) => i + 1));
      // B goes on from A's last checkpoint: A's last step again at most (announced, then killed before
      // its checkpoint), never an earlier one, never two runs interleaved.
      expect([last, last + 1]).toContain(after[0]);
      expect(after).toEqual(Array.from({ length: 11 - after[0]! }, (_, i) => i + after[0]!));

      // A second live process with B's host id is refused at start.
      const twin = await spawnTaskplane(['host', '--port', '0', '--db', url, '--host-id', 'host-b']);
      procs.push(twin);
      const exit = await twin.exited;
      expect(exit.code).not.toBe(0);
      expect(twin.stderr + twin.stdout).toContain('another live host process uses the host id host-b');
      // …and B is unharmed: it still serves.
      expect((await call(b.url, 'GetTask', { id })).body.result.status.state).toBe('TASK_STATE_COMPLETED');
      // Once B is killed, its host id is free at once (a restart needs no lease expiry).
      await b.proc.kill('SIGKILL');
      const again = await host('host-b');
      procs.push(again.proc);
      expect((await call(again.url, 'GetTask', { id })).body.result.status.state).toBe(
        'TASK_STATE_COMPLETED',
      );

      console.log(`host takeover after SIGKILL: ${takeoverMs} ms (lease ${LEASE_MS} ms)`);
    } catch (err) {
      failed = true;
      throw err;
    }
  });
});
