import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CancelTaskRequest,
  GetTaskRequest,
  ListTasksRequest,
  SendMessageRequest,
  SubscribeToTaskRequest,
  TaskPushNotificationConfig,
  TaskState,
  taskStateToJSON,
  type StreamResponse,
  type Task,
} from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { spawnHost, type TestProcess } from '../support/process.ts';
import { PushReceiver, rpc, sdkClient, tempDb, type Binding } from './helpers.ts';

/**
 * Every A2A operation through the official @a2a-js/sdk 1.3.0 client, on both bindings, against the
 * host started as a real process on a temp SQLite file (issue 3, "Proof").
 */
let proc: TestProcess;
let url: string;
let dir: string;
const receiver = new PushReceiver();
let receiverUrl: string;

beforeAll(async () => {
  const t = tempDb('interop');
  dir = t.dir;
  receiverUrl = await receiver.start();
  ({ proc, url } = await spawnHost([
    '--port',
    '0',
    '--db',
    t.db,
    '--allow-private-webhooks',
    '--push-base-ms',
    '100',
    '--grpc-port',
    '0',
  ]));
});

afterAll(async () => {
  await proc?.stop();
  await receiver.close();
  rmSync(dir, { recursive: true, force: true });
});

const state = (t: Task) => taskStateToJSON(t.status!.state);
let seq = 0;
const mid = (label: string) => `${label}-${process.pid}-${++seq}`;
const send = (
  text: string | Record<string, unknown>,
  extra: Record<string, unknown> = {},
  configuration?: Record<string, unknown>,
) =>
  SendMessageRequest.fromJSON({
    message: {
      messageId: mid('m'),
      role: 'ROLE_USER',
      parts: [typeof text === 'string' ? { text } : { data: text }],
      ...extra,
    },
    ...(configuration ? { configuration } : {}),
  });

async function collect(stream: AsyncGenerator<StreamResponse>): Promise<StreamResponse[]> {
  const out: StreamResponse[] = [];
  for await (const ev of stream) out.push(ev);
  return out;
}

function asTask(result: unknown): Task {
  expect(result).toHaveProperty('status');
  return result as Task;
}

describe.each<Binding>(['JSONRPC', 'HTTP+JSON', 'GRPC'])('official SDK client over %s', (binding) => {
  let client: Client;
  let polling: Client;

  beforeAll(async () => {
    client = await sdkClient(url, binding);
    polling = await sdkClient(url, binding, true);
  });

  it('SendMessage blocks until the task completes (blocking is the default)', async () => {
    const task = asTask(await client.sendMessage(send('hello')));
    expect(state(task)).toBe('TASK_STATE_COMPLETED');
    expect(task.artifacts[0]?.parts[0]?.content).toEqual({ $case: 'text', value: 'hello' });
    expect(task.history.length).toBeGreaterThanOrEqual(1);
  });

  it('returnImmediately returns the created task at once, then GetTask with historyLength', async () => {
    const task = asTask(await polling.sendMessage(send({ durationMs: 300, steps: 2, artifactChunks: 1 })));
    expect(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING']).toContain(state(task));
    const none = await client.getTask(GetTaskRequest.fromJSON({ id: task.id, historyLength: 0 }));
    expect(none.history).toEqual([]);
    const one = await client.getTask(GetTaskRequest.fromJSON({ id: task.id, historyLength: 1 }));
    expect(one.history.length).toBe(1);
  });

  it('SendStreamingMessage: Task first, ordered updates, chunked artifact, closes at COMPLETED', async () => {
    const events = await collect(
      client.sendMessageStream(send({ durationMs: 200, steps: 2, artifactChunks: 3 })),
    );
    expect(events[0]?.payload?.$case).toBe('task');
    const last = events[events.length - 1]!.payload!;
    expect(last.$case).toBe('statusUpdate');
    expect(last.$case === 'statusUpdate' && taskStateToJSON(last.value.status!.state)).toBe(
      'TASK_STATE_COMPLETED',
    );
    const chunks = events.flatMap((e) => (e.payload?.$case === 'artifactUpdate' ? [e.payload.value] : []));
    expect(chunks.map((c) => [c.append, c.lastChunk])).toEqual([
      [false, false],
      [true, false],
      [true, true],
    ]);
  });

  it('SubscribeToTask starts with the current Task and streams to the end', async () => {
    const task = asTask(await polling.sendMessage(send({ durationMs: 1500, steps: 3, artifactChunks: 1 })));
    const events = await collect(client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: task.id })));
    expect(events[0]?.payload?.$case).toBe('task');
    const last = events[events.length - 1]!.payload!;
    expect(last.$case === 'statusUpdate' && taskStateToJSON(last.value.status!.state)).toBe(
      'TASK_STATE_COMPLETED',
    );
  });

  it('SubscribeToTask and SendMessage on a terminal task → UnsupportedOperationError', async () => {
    const task = asTask(await client.sendMessage(send('done soon')));
    await expect(
      collect(client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: task.id }))),
    ).rejects.toThrow(/Task is TASK_STATE_COMPLETED/);
    await expect(client.sendMessage(send('more', { taskId: task.id }))).rejects.toMatchObject({
      name: 'UnsupportedOperationError',
    });
  });

  it('INPUT_REQUIRED: blocking send returns at the interrupt, the follow-up answer continues the task', async () => {
    const first = asTask(
      await client.sendMessage(
        send({ durationMs: 0, steps: 2, askInput: 'Which edition?', artifactChunks: 1 }),
      ),
    );
    expect(state(first)).toBe('TASK_STATE_INPUT_REQUIRED');
    expect(first.status!.message?.parts[0]?.content).toEqual({ $case: 'text', value: 'Which edition?' });
    const done = asTask(
      await client.sendMessage(send('second edition', { taskId: first.id, contextId: first.contextId })),
    );
    expect(state(done)).toBe('TASK_STATE_COMPLETED');
    expect(JSON.stringify(done.artifacts)).toContain('second edition');
  });

  it('SendMessage is idempotent on messageId: the same task, nothing new started', async () => {
    const req = send('once');
    const a = asTask(await client.sendMessage(req));
    const b = asTask(await client.sendMessage(req));
    expect(b.id).toBe(a.id);
  });

  it('CancelTask: running → CANCELED, repeat is idempotent, completed → TaskNotCancelableError', async () => {
    const task = asTask(await polling.sendMessage(send({ durationMs: 60_000, steps: 2 })));
    const canceled = await client.cancelTask(CancelTaskRequest.fromJSON({ id: task.id }));
    expect(state(canceled)).toBe('TASK_STATE_CANCELED');
    expect(state(await client.cancelTask(CancelTaskRequest.fromJSON({ id: task.id })))).toBe(
      'TASK_STATE_CANCELED',
    );
    const done = asTask(await client.sendMessage(send('quick')));
    await expect(client.cancelTask(CancelTaskRequest.fromJSON({ id: done.id }))).rejects.toMatchObject({
      name: 'TaskNotCancelableError',
    });
  });

  it('GetTask of an unknown task → TaskNotFoundError', async () => {
    await expect(client.getTask(GetTaskRequest.fromJSON({ id: 'task_nope' }))).rejects.toMatchObject({
      name: 'TaskNotFoundError',
    });
  });

  it('ListTasks pages with nextPageToken and totalSize, filters by context and status', async () => {
    const a = asTask(await client.sendMessage(send('l1')));
    await client.sendMessage(send('l2', { contextId: a.contextId }));
    await client.sendMessage(send('l3', { contextId: a.contextId }));
    const page1 = await client.listTasks(ListTasksRequest.fromJSON({ contextId: a.contextId, pageSize: 2 }));
    expect(page1.tasks.length).toBe(2);
    expect(page1.totalSize).toBe(3);
    expect(page1.nextPageToken).not.toBe('');
    const page2 = await client.listTasks(
      ListTasksRequest.fromJSON({ contextId: a.contextId, pageSize: 2, pageToken: page1.nextPageToken }),
    );
    expect(page2.tasks.length).toBe(1);
    expect(page2.nextPageToken).toBe('');
    const completed = await client.listTasks(
      ListTasksRequest.fromJSON({ contextId: a.contextId, status: 'TASK_STATE_COMPLETED' }),
    );
    expect(completed.tasks.every((t) => t.status!.state === TaskState.TASK_STATE_COMPLETED)).toBe(true);
    const working = await client.listTasks(
      ListTasksRequest.fromJSON({ contextId: a.contextId, status: 'TASK_STATE_WORKING' }),
    );
    expect(working.tasks).toEqual([]);
  });

  it('push config CRUD never returns credentials, and pushes arrive with auth, content type and delivery id', async () => {
    const task = asTask(await polling.sendMessage(send({ durationMs: 1500, steps: 2 })));
    const created = await client.createTaskPushNotificationConfig(
      TaskPushNotificationConfig.fromJSON({
        taskId: task.id,
        url: `${receiverUrl}/hook`,
        token: 'tok-1',
        authentication: { scheme: 'Bearer', credentials: 'secret-123' },
      }),
    );
    expect(created.id).not.toBe('');
    expect(created.authentication?.credentials ?? '').toBe('');
    const got = await client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: created.id });
    expect(got.url).toBe(`${receiverUrl}/hook`);
    expect(got.authentication?.scheme).toBe('Bearer');
    expect(got.authentication?.credentials ?? '').toBe('');
    const list = await client.listTaskPushNotificationConfig({
      tenant: '',
      taskId: task.id,
      pageSize: 0,
      pageToken: '',
    });
    expect(list.configs.map((c) => c.id)).toEqual([created.id]);
    await receiver.waitFor(() =>
      receiver.received.some(
        (r) =>
          JSON.stringify(r.body).includes(task.id) && JSON.stringify(r.body).includes('TASK_STATE_COMPLETED'),
      ),
    );
    const mine = receiver.received.filter((r) => JSON.stringify(r.body).includes(task.id));
    expect(mine[0]!.headers.authorization).toBe('Bearer secret-123');
    expect(mine[0]!.headers['content-type']).toBe('application/a2a+json');
    expect(mine[0]!.headers['a2a-delivery-id']).toMatch(/^dlv_/);
    await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: created.id });
    await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: created.id }); // idempotent
    const after = await client.listTaskPushNotificationConfig({
      tenant: '',
      taskId: task.id,
      pageSize: 0,
      pageToken: '',
    });
    expect(after.configs).toEqual([]);
  });

  it('GetAgentCard returns the public card (no extended card declared)', async () => {
    const card = await client.getAgentCard();
    expect(card.capabilities?.streaming).toBe(true);
    expect(card.capabilities?.pushNotifications).toBe(true);
    expect(card.supportedInterfaces.map((i) => `${i.protocolBinding} ${i.protocolVersion}`)).toEqual([
      'JSONRPC 1.0',
      'HTTP+JSON 1.0',
      'GRPC 1.0',
      'JSONRPC 0.3',
      'HTTP+JSON 0.3',
    ]);
  });
});

describe('wire details the SDK hides', () => {
  it('GetExtendedAgentCard → UnsupportedOperationError (-32004), capabilities.extendedAgentCard is false', async () => {
    const res = await rpc(url, 'GetExtendedAgentCard', {});
    expect((res.error as { code: number }).code).toBe(-32004);
    const rest = await fetch(`${url}/a2a/rest/extendedAgentCard`, { headers: { 'A2A-Version': '1.0' } });
    expect(rest.status).toBe(400);
  });

  it('ListTasks omits the artifacts key unless includeArtifacts', async () => {
    const res = await fetch(`${url}/a2a/rest/tasks?pageSize=5`, { headers: { 'A2A-Version': '1.0' } });
    const body = (await res.json()) as {
      tasks: Record<string, unknown>[];
      nextPageToken: string;
      pageSize: number;
      totalSize: number;
    };
    expect(body.tasks.length).toBeGreaterThan(0);
    expect(body.tasks.every((t) => !('artifacts' in t))).toBe(true);
    expect(typeof body.nextPageToken).toBe('string');
    expect(body.pageSize).toBe(5);
    const withArtifacts = (await (
      await fetch(`${url}/a2a/rest/tasks?pageSize=5&includeArtifacts=true`, {
        headers: { 'A2A-Version': '1.0' },
      })
    ).json()) as { tasks: Record<string, unknown>[] };
    expect(withArtifacts.tasks.every((t) => Array.isArray(t.artifacts))).toBe(true);
  });

  it(':subscribe answers GET as well as POST, with an SSE id on every event', async () => {
    const res = await rpc(url, 'SendMessage', {
      message: { messageId: mid('sub'), role: 'ROLE_USER', parts: [{ data: { durationMs: 300, steps: 2 } }] },
      configuration: { returnImmediately: true },
    });
    const id = ((res.result as { task: Task }).task as { id: string }).id;
    const sse = await fetch(`${url}/a2a/rest/tasks/${id}:subscribe`, { headers: { 'A2A-Version': '1.0' } });
    expect(sse.headers.get('content-type')).toContain('text/event-stream');
    const text = await sse.text();
    const frames = text.split('\n\n').filter((f) => f.includes('data:'));
    expect(frames.length).toBeGreaterThan(1);
    expect(frames.every((f) => /^id: \d+$/m.test(f))).toBe(true);
  });

  it('A2A-Version: missing → -32009, 1.0.7 accepted (patch ignored), ?A2A-Version=1.0 accepted', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'ListTasks', params: {} });
    const json = { 'content-type': 'application/json' };
    const missing = (await (
      await fetch(`${url}/a2a/jsonrpc`, { method: 'POST', body, headers: json })
    ).json()) as {
      error: { code: number };
    };
    expect(missing.error.code).toBe(-32009);
    const patch = (await (
      await fetch(`${url}/a2a/jsonrpc`, {
        method: 'POST',
        body,
        headers: { ...json, 'A2A-Version': '1.0.7' },
      })
    ).json()) as Record<string, unknown>;
    expect(patch.result).toBeDefined();
    const query = (await (
      await fetch(`${url}/a2a/jsonrpc?A2A-Version=1.0`, { method: 'POST', body, headers: json })
    ).json()) as Record<string, unknown>;
    expect(query.result).toBeDefined();
  });
});

describe('official SDK client with --auth keys', () => {
  it.each<Binding>(['JSONRPC', 'HTTP+JSON', 'GRPC'])(
    '%s: bearer keys scope tasks to their owner',
    async (binding) => {
      const t = tempDb('keys');
      const keyed = await spawnHost(['--port', '0', '--db', t.db, '--auth', 'keys', '--grpc-port', '0'], {
        env: { TASKPLANE_HOST_KEYS: 'alice:alice-secret-key-0001,bob:bob-secret-key-00002' },
      });
      try {
        const alice = await sdkClient(keyed.url, binding, false, 'alice-secret-key-0001');
        const bob = await sdkClient(keyed.url, binding, false, 'bob-secret-key-00002');
        const card = await alice.getAgentCard();
        expect(Object.keys(card.securitySchemes)).toEqual(['bearer']);
        const task = asTask(await alice.sendMessage(send('mine')));
        expect((await alice.getTask(GetTaskRequest.fromJSON({ id: task.id }))).id).toBe(task.id);
        await expect(bob.getTask(GetTaskRequest.fromJSON({ id: task.id }))).rejects.toMatchObject({
          name: 'TaskNotFoundError',
        });
        expect((await bob.listTasks(ListTasksRequest.fromJSON({}))).tasks).toEqual([]);
        const nobody = await sdkClient(keyed.url, binding);
        await expect(nobody.listTasks(ListTasksRequest.fromJSON({}))).rejects.toThrow();
      } finally {
        await keyed.proc.stop();
        rmSync(t.dir, { recursive: true, force: true });
      }
    },
  );
});
