import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SendMessageRequest, taskStateToJSON, type Task } from '@a2a-js/sdk';
import { defineAgent } from '../../src/host/agent-api.ts';
import type { RunningHost } from '../../src/host/start-host.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { PushReceiver, sdkClient, type Binding } from './helpers.ts';
import { startTestHost, type Wire } from './in-process.ts';

/**
 * SendMessage deduplication is on (caller, messageId, content): a retry of the same message gets the
 * task it created, a different message that reuses a messageId is a new message, processed with its own
 * push config (docs/host.md, "Idempotent sends"; TCK PUSH-DELIVER-001..003 reuse messageIds).
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
