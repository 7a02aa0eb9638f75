import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AgentCard,
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  SendMessageRequest,
  SubscribeToTaskRequest,
  TaskPushNotificationConfig,
  taskStateToJSON,
  type StreamResponse,
  type Task,
} from '@a2a-js/sdk';
import { Client } from '@a2a-js/sdk/client';
import { LegacyJsonRpcTransport, LegacyRestTransport } from '@a2a-js/sdk/compat/v0_3/client';
import { legacyPushNotificationToV1StreamResponse } from '@a2a-js/sdk/compat/v0_3';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import type { RunningHost } from '../../src/host/start-host.ts';
import { startTestHost, type Wire } from './in-process.ts';
import { PushReceiver } from './helpers.ts';

/**
 * A2A 0.3 clients against the host: the official `@a2a-js/sdk` 0.3 client transports (its compat
 * layer's LegacyJsonRpcTransport, which speaks the 0.3 JSON-RPC wire: slash method names, `kind`,
 * kebab-case states, bare results; and LegacyRestTransport, the 0.3 HTTP+JSON routes under `/v1` with
 * the 0.3 ProtoJSON bodies) for every operation 0.3 has, and a raw client that sends no A2A-Version at
 * all, as 0.3 clients did (A2A 1.0, versioning: a missing header means 0.3).
 */
let host: RunningHost;
let card: AgentCard;
const receiver = new PushReceiver();
let receiverUrl = '';
let seq = 0;
const mid = () => `v03-${process.pid}-${++seq}`;

beforeAll(async () => {
  receiverUrl = await receiver.start();
  host = await startTestHost(new MemoryStore());
  card = AgentCard.fromJSON(await (await fetch(host.cardUrl, { headers: { 'A2A-Version': '1.0' } })).json());
});

afterAll(async () => {
  await host?.close();
  await receiver.close();
});

const send = (content: string | Record<string, unknown>, configuration?: Record<string, unknown>) =>
  SendMessageRequest.fromJSON({
    message: {
      messageId: mid(),
      role: 'ROLE_USER',
      parts: [typeof content === 'string' ? { text: content } : { data: content }],
    },
    ...(configuration ? { configuration } : {}),
  });
const state = (t: Task) => taskStateToJSON(t.status!.state);

async function collect(stream: AsyncGenerator<StreamResponse>): Promise<StreamResponse[]> {
  const out: StreamResponse[] = [];
  for await (const ev of stream) out.push(ev);
  return out;
}

async function rawRpc(method: string, params: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(host.jsonRpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }),
  });
  return { status: res.status, type: res.headers.get('content-type'), body: (await res.json()) as Wire };
}

describe.each(['JSONRPC', 'HTTP+JSON'] as const)('the SDK 0.3 client over %s', (binding) => {
  let client: Client;
  beforeAll(() => {
    const transport =
      binding === 'JSONRPC'
        ? new LegacyJsonRpcTransport({ endpoint: host.jsonRpcUrl })
        : new LegacyRestTransport({ endpoint: host.restUrl });
    client = new Client(transport, card);
  });

  it('message/send blocks until completed and returns the Task with its artifact', async () => {
    const task = (await client.sendMessage(send('hello 0.3'))) as Task;
    expect(state(task)).toBe('TASK_STATE_COMPLETED');
    expect(task.artifacts[0]?.parts[0]?.content).toEqual({ $case: 'text', value: 'hello 0.3' });
  });

  it('message/send with blocking false, then tasks/get and tasks/cancel', async () => {
    const started = (await client.sendMessage(
      send({ durationMs: 60_000, steps: 2 }, { returnImmediately: true }),
    )) as Task;
    expect(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING']).toContain(state(started));
    const got = await client.getTask(GetTaskRequest.fromJSON({ id: started.id, historyLength: 1 }));
    expect(got.id).toBe(started.id);
    expect(got.history.length).toBe(1);
    const cancelled = await client.cancelTask(CancelTaskRequest.fromJSON({ id: started.id }));
    expect(state(cancelled)).toBe('TASK_STATE_CANCELED');
  });

  it('message/stream: Task first, chunked artifact, ends at completed', async () => {
    const events = await collect(
      client.sendMessageStream(send({ durationMs: 100, steps: 2, artifactChunks: 2 })),
    );
    expect(events[0]?.payload?.$case).toBe('task');
    const last = events.at(-1)!.payload!;
    expect(last.$case === 'statusUpdate' && taskStateToJSON(last.value.status!.state)).toBe(
      'TASK_STATE_COMPLETED',
    );
    const chunks = events.flatMap((e) => (e.payload?.$case === 'artifactUpdate' ? [e.payload.value] : []));
    expect(chunks.map((c) => c.lastChunk)).toEqual([false, true]);
  });

  it('tasks/resubscribe: starts with the current Task and follows it to the end', async () => {
    const started = (await client.sendMessage(
      send({ durationMs: 300, steps: 2 }, { returnImmediately: true }),
    )) as Task;
    const events = await collect(client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: started.id })));
    expect(events[0]?.payload?.$case).toBe('task');
    const last = events.at(-1)!.payload!;
    expect(last.$case === 'statusUpdate' && taskStateToJSON(last.value.status!.state)).toBe(
      'TASK_STATE_COMPLETED',
    );
  });

  it('push config set, get, list, delete in the 0.3 shapes', async () => {
    const started = (await client.sendMessage(
      send({ durationMs: 60_000, steps: 1 }, { returnImmediately: true }),
    )) as Task;
    const created = await client.createTaskPushNotificationConfig(
      TaskPushNotificationConfig.fromJSON({
        taskId: started.id,
        url: 'http://127.0.0.1:9/hook',
        token: 'tok-1',
        authentication: { scheme: 'Bearer', credentials: 'secret-1' },
      }),
    );
    expect(created.taskId).toBe(started.id);
    expect(created.url).toBe('http://127.0.0.1:9/hook');
    expect(created.id).not.toBe('');
    const got = await client.getTaskPushNotificationConfig(
      GetTaskPushNotificationConfigRequest.fromJSON({ taskId: started.id, id: created.id }),
    );
    expect(got.url).toBe('http://127.0.0.1:9/hook');
    expect(got.authentication?.scheme).toBe('Bearer');
    const list = await client.listTaskPushNotificationConfig(
      ListTaskPushNotificationConfigsRequest.fromJSON({ taskId: started.id }),
    );
    expect(list.configs.map((c) => c.id)).toEqual([created.id]);
    await client.deleteTaskPushNotificationConfig(
      DeleteTaskPushNotificationConfigRequest.fromJSON({ taskId: started.id, id: created.id }),
    );
    const after = await client.listTaskPushNotificationConfig(
      ListTaskPushNotificationConfigsRequest.fromJSON({ taskId: started.id }),
    );
    expect(after.configs).toEqual([]);
    await client.cancelTask(CancelTaskRequest.fromJSON({ id: started.id }));
  });

  it('a webhook registered over 0.3 gets 0.3 bodies, which the SDK 0.3 receiver reads', async () => {
    const started = (await client.sendMessage(
      send(
        { durationMs: 50, steps: 1 },
        {
          returnImmediately: true,
          taskPushNotificationConfig: {
            url: `${receiverUrl}/v03`,
            token: 'nt-03',
            authentication: { scheme: 'Bearer', credentials: 'push-secret-03' },
          },
        },
      ),
    )) as Task;
    const mine = () => receiver.received.filter((r) => r.raw.includes(started.id));
    await receiver.waitFor(() => mine().some((r) => r.raw.includes('"completed"')));
    for (const push of mine()) {
      expect(push.headers['content-type']).toBe('application/json');
      expect(push.headers.authorization).toBe('Bearer push-secret-03');
      expect(['task', 'status-update', 'artifact-update']).toContain(push.body.kind);
      const v1 = legacyPushNotificationToV1StreamResponse(push.body);
      expect(['task', 'statusUpdate', 'artifactUpdate']).toContain(v1.payload?.$case);
    }
    const last = legacyPushNotificationToV1StreamResponse(mine().at(-1)!.body).payload!;
    expect(last.$case === 'statusUpdate' && taskStateToJSON(last.value.status!.state)).toBe(
      'TASK_STATE_COMPLETED',
    );
  });

  it('an unknown task is the 0.3 TaskNotFoundError (-32001)', async () => {
    await expect(client.getTask(GetTaskRequest.fromJSON({ id: 'no-such-task' }))).rejects.toThrow(
      /not found/i,
    );
  });
});

describe('a client that sends no A2A-Version', () => {
  it('gets 0.3 answers to 0.3 methods: bare Task with kind and kebab-case state', async () => {
    const r = await rawRpc('message/send', {
      message: { kind: 'message', messageId: mid(), role: 'user', parts: [{ kind: 'text', text: 'hi' }] },
    });
    expect(r.status).toBe(200);
    expect(r.body.result.kind).toBe('task');
    expect(r.body.result.status.state).toBe('completed');
    expect(r.body.result.artifacts[0].parts[0]).toEqual({ kind: 'text', text: 'hi' });
    const got = await rawRpc('tasks/get', { id: r.body.result.id });
    expect(got.body.result.history[0]).toMatchObject({ kind: 'message', role: 'user' });
  });

  it('non-object data round-trips with the data_part_compat flag', async () => {
    const r = await rawRpc('message/send', {
      message: {
        kind: 'message',
        messageId: mid(),
        role: 'user',
        parts: [{ kind: 'data', data: { value: [1, 2] }, metadata: { data_part_compat: true } }],
      },
      configuration: { blocking: false },
    });
    const got = await rawRpc('tasks/get', { id: r.body.result.id });
    expect(got.body.result.history[0].parts[0]).toEqual({
      kind: 'data',
      data: { value: [1, 2] },
      metadata: { data_part_compat: true },
    });
    await rawRpc('tasks/cancel', { id: r.body.result.id });
  });

  it('a bad 0.3 part is InvalidParams naming the field', async () => {
    const r = await rawRpc('message/send', {
      message: { kind: 'message', messageId: mid(), role: 'user', parts: [{ kind: 'video' }] },
    });
    expect(r.body.error.code).toBe(-32602);
    expect(r.body.error.message).toContain('params.message.parts[0].kind');
  });

  it('a 1.0 method without a version is still refused (-32009), a 0.3 method under 1.0 is not found', async () => {
    const v10 = await rawRpc('GetTask', { id: 'x' });
    expect(v10.body.error.code).toBe(-32009);
    const mixed = await rawRpc('tasks/get', { id: 'x' }, { 'A2A-Version': '1.0' });
    expect(mixed.body.error.code).toBe(-32601);
  });

  it('0.3 has no tasks/list over JSON-RPC', async () => {
    const r = await rawRpc('tasks/list', {});
    expect(r.body.error.code).toBe(-32601);
  });

  it('reads a card with the 0.3 fields; a 1.0 client reads the 1.0 card', async () => {
    const legacy = (await (await fetch(host.cardUrl)).json()) as Wire;
    expect(legacy.protocolVersion).toBe('0.3.0');
    expect(legacy.url).toBe(host.jsonRpcUrl);
    expect(legacy.preferredTransport).toBe('JSONRPC');
    expect(legacy.supportedInterfaces.length).toBe(4);
    expect(legacy.additionalInterfaces).toEqual([
      { url: host.jsonRpcUrl, transport: 'JSONRPC' },
      { url: host.restUrl, transport: 'HTTP+JSON' },
    ]);
    const modern = (await (await fetch(host.cardUrl, { headers: { 'A2A-Version': '1.0' } })).json()) as Wire;
    expect(modern.url).toBeUndefined();
    expect(modern.supportedInterfaces).toContainEqual({
      url: host.jsonRpcUrl,
      protocolBinding: 'JSONRPC',
      protocolVersion: '0.3',
    });
  });
});
