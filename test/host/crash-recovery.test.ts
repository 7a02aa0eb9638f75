import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  SendMessageRequest,
  SubscribeToTaskRequest,
  TaskPushNotificationConfig,
  taskStateToJSON,
  type StreamResponse,
  type Task,
} from '@a2a-js/sdk';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { spawnHost, type TestProcess } from '../support/process.ts';
import { PushReceiver, sdkClient, tempDb } from './helpers.ts';

/**
 * issue 3 "Proof": SIGKILL the host while tasks stream, pushes are pending (the receiver is down) and a
 * task waits for input; restart it on the same database and show that no task stays WORKING without
 * progress, every pending push is delivered, subscribe streams to completion and the waiting task
 * continues after its answer.
 */
const { dir, db } = tempDb('crash');
const procs: TestProcess[] = [];
const receiver = new PushReceiver();
afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill('SIGKILL')));
  await receiver.close();
  rmSync(dir, { recursive: true, force: true });
});

const HOST_ARGS = [
  '--host-id',
  'crash-host',
  '--db',
  db,
  '--allow-private-webhooks',
  '--push-base-ms',
  '100',
  '--push-attempts',
  '30',
];
const stateOf = (ev: StreamResponse): string | undefined =>
  ev.payload?.$case === 'statusUpdate'
    ? taskStateToJSON(ev.payload.value.status!.state)
    : ev.payload?.$case === 'task'
      ? taskStateToJSON(ev.payload.value.status!.state)
      : undefined;

describe('crash and restart on the same database', () => {
  it('recovers streams, pushes and the waiting task', async () => {
    // A free port for the receiver, which stays DOWN (connection refused) until after the crash.
    await receiver.start();
    const hookPort = receiver.port;
    await receiver.close();
    const hook = `http://127.0.0.1:${hookPort}/hook`;

    const first = await spawnHost(['--port', '0', ...HOST_ARGS]);
    procs.push(first.proc);
    const client = await sdkClient(first.url, 'HTTP+JSON');
    const pushConfig = { url: hook, authentication: { scheme: 'Bearer', credentials: 'crash-token' } };

    // Three long streaming tasks with push configs; read until each has made progress.
    const streams = await Promise.all(
      [1, 2, 3].map(async (i) => {
        const stream = client.sendMessageStream(
          SendMessageRequest.fromJSON({
            message: {
              messageId: `crash-stream-${i}`,
              role: 'ROLE_USER',
              parts: [{ data: { durationMs: 8000, steps: 8, artifactChunks: 2 } }],
            },
            configuration: { taskPushNotificationConfig: pushConfig },
          }),
        );
        const seen: StreamResponse[] = [];
        for await (const ev of stream) {
          seen.push(ev);
          if (seen.some((e) => e.payload?.$case === 'statusUpdate' && JSON.stringify(e).includes('step 1/8')))
            break;
        }
        return { id: (seen[0]!.payload!.value as Task).id, stream, seen };
      }),
    );
    // A task waiting for input (blocking send returns at INPUT_REQUIRED), also pushing.
    const waiting = (await client.sendMessage(
      SendMessageRequest.fromJSON({
        message: {
          messageId: 'crash-wait',
          role: 'ROLE_USER',
          parts: [{ data: { durationMs: 0, steps: 2, askInput: 'Which edition?' } }],
        },
      }),
    )) as Task;
    expect(taskStateToJSON(waiting.status!.state)).toBe('TASK_STATE_INPUT_REQUIRED');
    await client.createTaskPushNotificationConfig(
      TaskPushNotificationConfig.fromJSON({ taskId: waiting.id, ...pushConfig }),
    );
    // Keep one stream open across the crash: it must end (with an error), not hang.
    const open = (async () => {
      try {
        for await (const _ of streams[0]!.stream) {
          /* drain */
        }
        return 'closed';
      } catch {
        return 'errored';
      }
    })();

    const killed = await first.proc.kill('SIGKILL');
    expect(killed.signal).toBe('SIGKILL');
    expect(await open).toMatch(/closed|errored/);

    // The receiver comes up, then the host restarts on the same file and port.
    await receiver.start(hookPort);
    const second = await spawnHost(['--port', String(first.port), ...HOST_ARGS]);
    procs.push(second.proc);
    const [, counts] = await second.proc.waitForLine(/recovered: +(.*)$/);
    expect(counts).toBe('3 resumed, 0 failed, 1 waiting for input');
    const client2 = await sdkClient(second.url, 'HTTP+JSON');

    // Subscribe streams to completion: current Task first, then live events to COMPLETED.
    const subscribed = await Promise.all(
      streams.map(async (s) => {
        const events: StreamResponse[] = [];
        for await (const ev of client2.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: s.id })))
          events.push(ev);
        return events;
      }),
    );
    for (const events of subscribed) {
      expect(events[0]!.payload!.$case).toBe('task');
      expect(stateOf(events[0]!)).toBe('TASK_STATE_WORKING');
      expect(stateOf(events[events.length - 1]!)).toBe('TASK_STATE_COMPLETED');
      expect(JSON.stringify(events)).toContain('step 8/8');
    }

    // The waiting task continues after its answer.
    const answered = (await client2.sendMessage(
      SendMessageRequest.fromJSON({
        message: {
          messageId: 'crash-answer',
          role: 'ROLE_USER',
          taskId: waiting.id,
          parts: [{ text: 'first edition' }],
        },
      }),
    )) as Task;
    expect(taskStateToJSON(answered.status!.state)).toBe('TASK_STATE_COMPLETED');
    expect(JSON.stringify(answered.artifacts)).toContain('first edition');

    // Every push, including those queued before the crash, arrives; completed last per task.
    const ids = [...streams.map((s) => s.id), waiting.id];
    await receiver.waitFor(() =>
      ids.every((id) =>
        receiver.received.some(
          (r) =>
            JSON.stringify(r.body).includes(id) && JSON.stringify(r.body).includes('TASK_STATE_COMPLETED'),
        ),
      ),
    );
    for (const s of streams) {
      const mine = receiver.received.filter((r) => JSON.stringify(r.body).includes(s.id));
      expect(Object.keys(mine[0]!.body)).toEqual(['task']); // the creation snapshot queued before the crash
      expect(mine.every((r) => r.headers.authorization === 'Bearer crash-token')).toBe(true);
    }
    const stop = await second.proc.stop();
    expect(stop.code).toBe(0);

    // Nothing left behind: no task WORKING, no push pending or dead, every delivery id delivered once or more.
    const store = new SqliteStore({ path: join(dir, 'host.db') });
    try {
      expect(await store.listActiveAgentTasks()).toEqual([]);
      expect(await store.listOutbox({ status: 'pending' })).toEqual([]);
      expect(await store.listOutbox({ status: 'leased' })).toEqual([]);
      expect(await store.listOutbox({ status: 'dead' })).toEqual([]);
      const delivered = await store.listOutbox({ status: 'delivered', limit: 1000 });
      const receivedIds = new Set(receiver.received.map((r) => r.headers['a2a-delivery-id']));
      expect(delivered.every((row) => receivedIds.has(row.deliveryId))).toBe(true);
    } finally {
      await store.close();
    }
  });
});
