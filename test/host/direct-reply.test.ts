import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ListTasksRequest, SendMessageRequest, type Message, type StreamResponse } from '@a2a-js/sdk';
import { defineAgent } from '../../src/host/agent-api.ts';
import type { RunningHost } from '../../src/host/start-host.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../src/store/store.ts';
import { sdkClient, type Binding } from './helpers.ts';
import { startTestHost, type Wire } from './in-process.ts';

/**
 * DM-MSG-001 (MUST): an agent answers a message with a Message and no task (agent-api.ts `reply`),
 * durable: a retried send gets the same Message, after a restart too.
 */
const hosts: RunningHost[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

let replies = 0;
const pinger = defineAgent({
  card: { name: 'pinger', description: 'answers pings directly', version: '1' },
  async reply(ctx) {
    if (!ctx.text.startsWith('ping')) return undefined;
    replies++;
    return [{ text: `pong ${ctx.text.slice(4).trim()}` }, { data: { contextId: ctx.contextId } }];
  },
  async execute(ctx) {
    return `task for ${ctx.text}`;
  },
});

async function host(store: Store = new MemoryStore()): Promise<RunningHost> {
  const h = await startTestHost(store, { agent: pinger });
  hosts.push(h);
  return h;
}

let seq = 0;
const request = (
  text: string,
  messageId = `dm-${process.pid}-${++seq}`,
  extra: Record<string, unknown> = {},
) => SendMessageRequest.fromJSON({ message: { messageId, role: 'ROLE_USER', parts: [{ text }], ...extra } });
const isMessage = (r: unknown): r is Message => typeof r === 'object' && r !== null && 'messageId' in r;
const firstText = (m: Message) => {
  const c = m.parts[0]?.content;
  return c?.$case === 'text' ? c.value : undefined;
};

describe.each<Binding>(['JSONRPC', 'HTTP+JSON'])('direct Message replies over %s', (binding) => {
  it('SendMessage answers with a Message and creates no task', async () => {
    const h = await host();
    const client = await sdkClient(h.url, binding);
    const result = await client.sendMessage(request('ping one', undefined, { contextId: 'ctx-mine' }));
    expect(isMessage(result)).toBe(true);
    const m = result as Message;
    expect(firstText(m)).toBe('pong one');
    expect(m.role).toBe(2); // ROLE_AGENT in the SDK's enum
    expect(m.contextId).toBe('ctx-mine');
    expect(m.taskId).toBe('');
    expect((await client.listTasks(ListTasksRequest.fromJSON({}))).tasks).toEqual([]);
    // A message the agent does not reply to directly still becomes a task.
    const task = await client.sendMessage(request('work'));
    expect(isMessage(task)).toBe(false);
    expect((await client.listTasks(ListTasksRequest.fromJSON({}))).tasks).toHaveLength(1);
  });

  it('SendStreamingMessage streams the one Message, then ends', async () => {
    const h = await host();
    const client = await sdkClient(h.url, binding);
    const events: StreamResponse[] = [];
    for await (const e of client.sendMessageStream(request('ping stream'))) events.push(e);
    expect(events).toHaveLength(1);
    const payload = events[0]!.payload!;
    expect(payload.$case).toBe('message');
    expect(payload.$case === 'message' && firstText(payload.value)).toBe('pong stream');
  });

  it('a retry gets the same Message without asking the agent again; another message is answered anew', async () => {
    const h = await host();
    const client = await sdkClient(h.url, binding);
    const before = replies;
    const id = `dm-retry-${binding}`;
    const a = (await client.sendMessage(request('ping a', id))) as Message;
    const b = (await client.sendMessage(request('ping a', id))) as Message;
    expect(b.messageId).toBe(a.messageId);
    expect(replies - before).toBe(1);
    const c = (await client.sendMessage(request('ping c', id))) as Message;
    expect(c.messageId).not.toBe(a.messageId);
    expect(firstText(c)).toBe('pong c');
  });
});

describe('direct replies are durable', () => {
  it('after a restart on the same SQLite file a retried send gets the same Message back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'taskplane-dm-'));
    dirs.push(dir);
    const path = join(dir, 'host.db');
    const body = (text: string) => ({
      jsonrpc: '2.0',
      id: 1,
      method: 'SendMessage',
      params: { message: { messageId: 'dm-durable', role: 'ROLE_USER', parts: [{ text }] } },
    });
    const send = async (h: RunningHost, text: string) => {
      const res = await fetch(h.jsonRpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'A2A-Version': '1.0' },
        body: JSON.stringify(body(text)),
      });
      return ((await res.json()) as Wire).result;
    };
    const first = await host(new SqliteStore({ path }));
    const answered = await send(first, 'ping durable');
    expect(answered.message.parts[0]).toEqual({ text: 'pong durable' });
    await first.close();
    hosts.splice(hosts.indexOf(first), 1);
    const before = replies;
    const second = await host(new SqliteStore({ path }));
    const again = await send(second, 'ping durable');
    expect(again).toEqual(answered);
    expect(replies).toBe(before);
  });

  it('a send that created a task gets that task on a retry, even if the agent would now reply', async () => {
    let replyNow = false;
    const fickle = defineAgent({
      card: { name: 'fickle', description: 'changes its mind', version: '1' },
      async reply() {
        return replyNow ? 'direct' : undefined;
      },
      async execute() {
        return 'done';
      },
    });
    const h = await startTestHost(new MemoryStore(), { agent: fickle });
    hosts.push(h);
    const client = await sdkClient(h.url, 'JSONRPC');
    const first = await client.sendMessage(request('same', 'dm-task-1'));
    expect(isMessage(first)).toBe(false);
    replyNow = true;
    const again = await client.sendMessage(request('same', 'dm-task-1'));
    expect(isMessage(again)).toBe(false);
    expect((again as { id: string }).id).toBe((first as { id: string }).id);
    // A new message is answered directly now.
    expect(isMessage(await client.sendMessage(request('same', 'dm-task-2')))).toBe(true);
  });
});
