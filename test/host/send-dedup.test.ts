import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  CancelTaskRequest,
  GetTaskRequest,
  SendMessageRequest,
  SubscribeToTaskRequest,
  taskStateToJSON,
  type Task,
} from '@a2a-js/sdk';
import { defineAgent } from '../../src/host/agent-api.ts';
import type { RunningHost } from '../../src/host/start-host.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { PostgresStore } from '../../src/store/postgres/pg-store.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../src/store/store.ts';
import { disposeSchema, freshSchemaName, urlForSchema } from '../support/pg.ts';
import { PushReceiver, sdkClient, type Binding } from './helpers.ts';
import { startTestHost, type Wire } from './in-process.ts';

/**
 * SendMessage deduplication is on (caller, messageId, content): a retry of the same message gets the
 * task it created, a different message that reuses a messageId is a new message, processed with its own
 * push config (docs/host.md, "Idempotent sends"; TCK PUSH-DELIVER-001..003 reuse messageIds). A resend
 * is a retry only while the sender cannot have learned the task's id: once it addressed the task by id,
 * the same message again is a new message (the TCK sends one message for many tests).
 */
const hosts: RunningHost[] = [];
const receiver = new PushReceiver();
let receiverUrl: string;
beforeAll(async () => {
  receiverUrl = await receiver.start();
});
afterAll(() => receiver.close());
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
});

let executions = 0;
const counting = defineAgent({
  card: { name: 'echo', description: 'echoes', version: '1' },
  async execute(ctx) {
    executions++;
    if (ctx.text === 'ask') {
      const answer = await ctx.askInput('which?');
      return `answered ${answer.text}`;
    }
    return `echo ${ctx.text}`;
  },
});

async function host(): Promise<RunningHost> {
  const h = await startTestHost(new MemoryStore(), { agent: counting, pushBaseMs: 50 });
  hosts.push(h);
  return h;
}

const request = (messageId: string, text: string, extra: Record<string, unknown> = {}) =>
  SendMessageRequest.fromJSON({
    message: { messageId, role: 'ROLE_USER', parts: [{ text }] },
    ...extra,
  });
const lastText = (t: Task) => {
  const part = t.status?.message?.parts[0]?.content;
  return part?.$case === 'text' ? part.value : undefined;
};

describe.each<Binding>(['JSONRPC', 'HTTP+JSON'])('SendMessage deduplication over %s', (binding) => {
  it('the same message sent again is the same task, and its work runs once', async () => {
    const h = await host();
    const client = await sdkClient(h.url, binding);
    const before = executions;
    const a = (await client.sendMessage(request(`dup-${binding}`, 'once'))) as Task;
    // A retry may change the request around the message (here: returnImmediately) and is still a retry.
    const b = (await client.sendMessage(
      request(`dup-${binding}`, 'once', { configuration: { returnImmediately: true } }),
    )) as Task;
    expect(b.id).toBe(a.id);
    expect(executions - before).toBe(1);
  });

  it('a different message reusing a messageId is a new task: its work done, its push config kept', async () => {
    const h = await host();
    const client = await sdkClient(h.url, binding);
    const id = `reused-${binding}`;
    const first = (await client.sendMessage(request(id, 'first'))) as Task;
    const second = (await client.sendMessage(
      request(id, 'second', {
        configuration: { taskPushNotificationConfig: { url: receiverUrl, token: `tok-${binding}` } },
      }),
    )) as Task;
    expect(second.id).not.toBe(first.id);
    expect(taskStateToJSON(second.status!.state)).toBe('TASK_STATE_COMPLETED');
    expect(lastText(second)).toBe('echo second');
    expect(lastText(first)).toBe('echo first');
    await receiver.waitFor(() =>
      receiver.received.some(
        (p) =>
          (p.body as Wire).statusUpdate?.taskId === second.id &&
          (p.body as Wire).statusUpdate.status.state === 'TASK_STATE_COMPLETED',
      ),
    );
    const pushed = receiver.received.filter((p) => JSON.stringify(p.body).includes(second.id));
    expect(pushed.every((p) => p.headers['x-a2a-notification-token'] === `tok-${binding}`)).toBe(true);
    // And the second message, sent again, is a retry of itself.
    const again = (await client.sendMessage(request(id, 'second'))) as Task;
    expect(again.id).toBe(second.id);
  });

  it('an answer that reuses the messageId of the message that started the task is taken', async () => {
    const h = await host();
    const client = await sdkClient(h.url, binding);
    const id = `turns-${binding}`;
    const asked = (await client.sendMessage(request(id, 'ask'))) as Task;
    expect(taskStateToJSON(asked.status!.state)).toBe('TASK_STATE_INPUT_REQUIRED');
    const answer = {
      messageId: id,
      role: 'ROLE_USER',
      parts: [{ text: 'blue' }],
      taskId: asked.id,
      contextId: asked.contextId,
    };
    const done = (await client.sendMessage(SendMessageRequest.fromJSON({ message: answer }))) as Task;
    expect(done.id).toBe(asked.id);
    expect(taskStateToJSON(done.status!.state)).toBe('TASK_STATE_COMPLETED');
    expect(lastText(done)).toBe('answered blue');
  });
});

describe('what counts as the same message', () => {
  const rpc = async (h: RunningHost, params: unknown) => {
    const res = await fetch(h.jsonRpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'A2A-Version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params }),
    });
    return ((await res.json()) as Wire).result.task.id as string;
  };

  it('the same message in another spelling (snake_case, key order, other binding) is the same task', async () => {
    const h = await host();
    const a = await rpc(h, {
      message: { messageId: 'spell-1', role: 'ROLE_USER', parts: [{ text: 'x', metadata: { a: 1, b: 2 } }] },
    });
    const b = await rpc(h, {
      message: { parts: [{ metadata: { b: 2, a: 1 }, text: 'x' }], role: 'ROLE_USER', message_id: 'spell-1' },
    });
    expect(b).toBe(a);
    const rest = await fetch(`${h.restUrl}/message:send`, {
      method: 'POST',
      headers: { 'content-type': 'application/a2a+json', 'A2A-Version': '1.0' },
      body: JSON.stringify({
        message: {
          messageId: 'spell-1',
          role: 'ROLE_USER',
          parts: [{ text: 'x', metadata: { a: 1, b: 2 } }],
        },
      }),
    });
    expect(((await rest.json()) as Wire).task.id).toBe(a);
  });

  it('a change in parts, metadata or contextId makes it a different message', async () => {
    const h = await host();
    const base = { messageId: 'diff-1', role: 'ROLE_USER', parts: [{ text: 'x' }] };
    const ids = [
      await rpc(h, { message: base }),
      await rpc(h, { message: { ...base, parts: [{ text: 'y' }] } }),
      await rpc(h, { message: { ...base, metadata: { trace: 1 } } }),
      await rpc(h, { message: { ...base, contextId: 'ctx-other' } }),
    ];
    expect(new Set(ids).size).toBe(4);
  });
});

/**
 * A backend the host runs on, opened again on the same data to restart (undefined: not durable).
 */
interface Backend {
  open(): Promise<Store>;
  reopen?: () => Promise<Store>;
  dispose(): Promise<void>;
}

const backends: Record<string, () => Backend> = {
  memory: () => ({ open: async () => new MemoryStore(), dispose: async () => {} }),
  sqlite: () => {
    const dir = mkdtempSync(join(tmpdir(), 'taskplane-dedup-'));
    const open = async () => new SqliteStore({ path: join(dir, 'host.db') });
    return { open, reopen: open, dispose: async () => rmSync(dir, { recursive: true, force: true }) };
  },
  postgres: () => {
    const schema = freshSchemaName('tp_dedup');
    const open = () => PostgresStore.open({ url: urlForSchema(schema), poolMax: 4 });
    return { open, reopen: open, dispose: () => disposeSchema(schema, false) };
  },
};

describe.each(Object.keys(backends))('a resend after the task was addressed by id, on %s', (name) => {
  let backend: Backend;
  const stores: Store[] = [];
  afterEach(async () => {
    await Promise.all(hosts.splice(0).map((h) => h.close()));
    await Promise.all(stores.splice(0).map((s) => s.close()));
    await backend.dispose();
  });

  async function started(open: () => Promise<Store>) {
    const store = await open();
    stores.push(store);
    const h = await startTestHost(store, { agent: counting });
    hosts.push(h);
    return { h, store, client: await sdkClient(h.url, 'JSONRPC') };
  }
  const fresh = () => {
    backend = backends[name]!();
    return started(() => backend.open());
  };
  const send = async (client: Awaited<ReturnType<typeof sdkClient>>, id: string, text: string) =>
    (await client.sendMessage(request(id, text))) as Task;
  const state = (t: Task) => taskStateToJSON(t.status!.state);

  it('before that, a resend is a retry: the same task, its work run once, also after a restart', async () => {
    const { h, store, client } = await fresh();
    const before = executions;
    const first = await send(client, 'retry-1', 'once');
    expect(state(first)).toBe('TASK_STATE_COMPLETED');
    expect((await send(client, 'retry-1', 'once')).id).toBe(first.id);
    if (backend.reopen) {
      await h.close();
      hosts.splice(hosts.indexOf(h), 1);
      await store.close();
      stores.splice(stores.indexOf(store), 1);
      const again = await started(backend.reopen);
      expect((await send(again.client, 'retry-1', 'once')).id).toBe(first.id);
    }
    expect(executions - before).toBe(1);
  });

  it('after a follow-up with its taskId, the same send is a new task; a retry of that is the new one', async () => {
    const { client } = await fresh();
    const asked = await send(client, 'again-1', 'ask');
    expect(state(asked)).toBe('TASK_STATE_INPUT_REQUIRED');
    const answer = { messageId: 'answer-1', role: 'ROLE_USER', parts: [{ text: 'red' }], taskId: asked.id };
    const done = (await client.sendMessage(SendMessageRequest.fromJSON({ message: answer }))) as Task;
    expect(state(done)).toBe('TASK_STATE_COMPLETED');
    // The answer, retried, is still a retry of the answer (the acknowledgement does not undo it).
    const answeredAgain = (await client.sendMessage(
      SendMessageRequest.fromJSON({ message: answer }),
    )) as Task;
    expect(answeredAgain.id).toBe(asked.id);
    expect(answeredAgain.history!.filter((m) => m.messageId === 'answer-1')).toHaveLength(1);
    const second = await send(client, 'again-1', 'ask');
    expect(second.id).not.toBe(asked.id);
    expect(state(second)).toBe('TASK_STATE_INPUT_REQUIRED');
    expect((await send(client, 'again-1', 'ask')).id).toBe(second.id);
  });

  it('after CancelTask, SubscribeToTask or GetTask by id, the same send is a new task', async () => {
    const { client } = await fresh();
    const canceled = await send(client, 'cancel-1', 'ask');
    await client.cancelTask(CancelTaskRequest.fromJSON({ id: canceled.id }));
    const afterCancel = await send(client, 'cancel-1', 'ask');
    expect(afterCancel.id).not.toBe(canceled.id);
    expect(state(afterCancel)).toBe('TASK_STATE_INPUT_REQUIRED');

    const watched = await send(client, 'sub-1', 'ask');
    for await (const event of client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: watched.id }))) {
      expect(event).toBeDefined();
      break;
    }
    const afterSubscribe = await send(client, 'sub-1', 'ask');
    expect(afterSubscribe.id).not.toBe(watched.id);

    const read = await send(client, 'get-1', 'once');
    await client.getTask(GetTaskRequest.fromJSON({ id: read.id }));
    const before = executions;
    const afterGet = await send(client, 'get-1', 'once');
    expect(afterGet.id).not.toBe(read.id);
    expect(lastText(afterGet)).toBe('echo once');
    expect(executions - before).toBe(1);
  });

  it("another owner's or tenant's acknowledgement does not count", async () => {
    const { client, store } = await fresh();
    const first = await send(client, 'foreign-1', 'once');
    const { owner, tenant } = (await store.getAgentTask(first.id))!;
    await store.acknowledgeAgentTask(first.id, { owner: `${owner}-other`, tenant });
    await store.acknowledgeAgentTask(first.id, { owner, tenant: `${tenant}-other` });
    expect((await send(client, 'foreign-1', 'once')).id).toBe(first.id);
    await store.acknowledgeAgentTask(first.id, { owner, tenant });
    expect((await send(client, 'foreign-1', 'once')).id).not.toBe(first.id);
  });
});
