import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/core/clock.ts';
import type { RunningHost } from '../../src/host/start-host.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { call, startTestHost, waitForTask } from './in-process.ts';

const hosts: RunningHost[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
});
async function host(...args: Parameters<typeof startTestHost>) {
  const h = await startTestHost(...args);
  hosts.push(h);
  return h;
}
const V = { 'A2A-Version': '1.0' };

interface Frame {
  id?: string;
  event?: string;
  data?: string;
  comment?: string;
}

/** Reads SSE frames from a response as they arrive; `until` decides when to stop reading. */
async function readFrames(res: Response, until: (frames: Frame[]) => boolean): Promise<Frame[]> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const frames: Frame[] = [];
  let buffer = '';
  try {
    while (!until(frames)) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let i: number;
      while ((i = buffer.indexOf('\n\n')) >= 0) {
        const raw = buffer.slice(0, i);
        buffer = buffer.slice(i + 2);
        const f: Frame = {};
        for (const line of raw.split('\n')) {
          if (line.startsWith(':')) f.comment = line.slice(1).trim();
          else if (line.startsWith('id: ')) f.id = line.slice(4);
          else if (line.startsWith('event: ')) f.event = line.slice(7);
          else if (line.startsWith('data: ')) f.data = (f.data ?? '') + line.slice(6);
        }
        frames.push(f);
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return frames;
}

const stateIn = (f: Frame) => /"state":"(TASK_STATE_\w+)"/.exec(f.data ?? '')?.[1];

describe('SSE streams', () => {
  it('Last-Event-ID replays the persisted events after it, without gaps or duplicates', async () => {
    const store = new MemoryStore();
    const h = await host(store);
    const { body } = await call(h.url, 'SendMessage', {
      message: {
        messageId: 'lei-1',
        role: 'ROLE_USER',
        parts: [{ data: { durationMs: 400, steps: 4, artifactChunks: 2 } }],
      },
      configuration: { returnImmediately: true },
    });
    const id = body.result.task.id as string;
    const controller = new AbortController();
    const first = await fetch(`${h.url}/a2a/rest/tasks/${id}:subscribe`, {
      headers: V,
      signal: controller.signal,
    });
    const before = await readFrames(first, (f) => f.length >= 3);
    controller.abort();
    const lastId = before[before.length - 1]!.id!;
    await waitForTask(store, id, (t) => t.state === 'TASK_STATE_COMPLETED');
    const again = await fetch(`${h.url}/a2a/rest/tasks/${id}:subscribe`, {
      method: 'POST',
      headers: { ...V, 'Last-Event-ID': lastId },
    });
    expect(again.status).toBe(200);
    const after = await readFrames(again, () => false);
    const stored = await store.listAgentTaskEvents(id, Number(lastId));
    expect(after.map((f) => Number(f.id))).toEqual(stored.map((e) => e.seq));
    expect(stateIn(after[after.length - 1]!)).toBe('TASK_STATE_COMPLETED');
    expect(after.every((f) => !f.data!.includes('"_v"'))).toBe(true);
  });

  it('an idle stream gets a keep-alive comment every 15 s (virtual clock)', async () => {
    const clock = new VirtualClock(Date.parse('2026-01-01T00:00:00Z'));
    const store = new MemoryStore();
    const h = await host(store, { clock });
    const { body } = await call(h.url, 'SendMessage', {
      message: { messageId: 'ka-1', role: 'ROLE_USER', parts: [{ data: { steps: 0, askInput: 'Which?' } }] },
      configuration: { returnImmediately: true },
    });
    const id = body.result.task.id as string;
    await waitForTask(store, id, (t) => t.state === 'TASK_STATE_INPUT_REQUIRED');
    const res = await fetch(`${h.url}/a2a/rest/tasks/${id}:subscribe`, { headers: V });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    const first = decoder.decode((await reader.read()).value);
    expect(first).toMatch(/^id: \d+\ndata: \{"task"/);
    await clock.advance(15_000);
    const next = decoder.decode((await reader.read()).value);
    expect(next).toBe(': keep-alive\n\n');
    await reader.cancel();
  });

  it('a subscription to a task waiting for input stays open and follows it to the end', async () => {
    const store = new MemoryStore();
    const h = await host(store);
    const { body } = await call(h.url, 'SendMessage', {
      message: {
        messageId: 'wait-1',
        role: 'ROLE_USER',
        parts: [{ data: { steps: 0, askInput: 'Which?' } }],
      },
    });
    const id = body.result.task.id as string;
    expect(body.result.task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    const res = await fetch(`${h.url}/a2a/rest/tasks/${id}:subscribe`, { headers: V });
    const reading = readFrames(res, () => false);
    await call(h.url, 'SendMessage', {
      message: { messageId: 'wait-1a', role: 'ROLE_USER', taskId: id, parts: [{ text: 'this one' }] },
    });
    const frames = await reading;
    expect(frames[0]!.data).toMatch(/^\{"task"/);
    expect(stateIn(frames[0]!)).toBe('TASK_STATE_INPUT_REQUIRED');
    expect(stateIn(frames[frames.length - 1]!)).toBe('TASK_STATE_COMPLETED');
    const ids = frames.map((f) => Number(f.id));
    expect(ids.slice(1).every((v, i) => v > ids[i]!)).toBe(true);
  });

  it('JSON-RPC streams carry the request id in every frame and close at completion', async () => {
    const h = await host(new MemoryStore());
    const res = await fetch(`${h.url}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { ...V, 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'req-9',
        method: 'SendStreamingMessage',
        params: { message: { messageId: 'js-1', role: 'ROLE_USER', parts: [{ text: 'hi' }] } },
      }),
    });
    const frames = await readFrames(res, () => false);
    expect(frames.length).toBeGreaterThanOrEqual(3);
    for (const f of frames) expect(JSON.parse(f.data!)).toMatchObject({ jsonrpc: '2.0', id: 'req-9' });
    expect(stateIn(frames[frames.length - 1]!)).toBe('TASK_STATE_COMPLETED');
  });
});

describe('stream lifecycle', () => {
  it('a client that goes away releases its subscription', async () => {
    const store = new MemoryStore();
    const h = await host(store);
    const { body } = await call(h.url, 'SendMessage', {
      message: {
        messageId: 'gone-1',
        role: 'ROLE_USER',
        parts: [{ data: { steps: 0, askInput: 'Which?' } }],
      },
    });
    const id = body.result.task.id as string;
    const controllers = Array.from({ length: 5 }, () => new AbortController());
    const responses = await Promise.all(
      controllers.map((c) =>
        fetch(`${h.url}/a2a/rest/tasks/${id}:subscribe`, { headers: V, signal: c.signal }),
      ),
    );
    await Promise.all(responses.map((r) => r.body!.getReader().read())); // the snapshot frame
    expect(h.stats().subscribers).toBe(5);
    for (const c of controllers) c.abort();
    await waitUntil(() => h.stats().subscribers === 0);
  });
});

describe('blocking SendMessage', () => {
  it('a client that goes away while it waits releases its wait (JSON-RPC node path)', async () => {
    const clock = new VirtualClock(Date.parse('2026-01-01T00:00:00Z'));
    const h = await host(new MemoryStore(), { clock });
    const controller = new AbortController();
    const waiting = fetch(`${h.url}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { ...V, 'content-type': 'application/json' },
      signal: controller.signal,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: {
          message: {
            messageId: 'gone-2',
            role: 'ROLE_USER',
            parts: [{ data: { durationMs: 60_000, steps: 1 } }],
          },
        },
      }),
    }).catch(() => 'aborted');
    await waitUntil(() => h.stats().subscribers === 1);
    controller.abort();
    expect(await waiting).toBe('aborted');
    await waitUntil(() => h.stats().subscribers === 0);
  });
});

/** Polls a cheap in-process condition on the event loop (bounded); used only where no event exists. */
async function waitUntil(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met');
    await new Promise((r) => setImmediate(r));
  }
}

describe('tenants', () => {
  it('a /{tenant} prefix or tenant field is its own space', async () => {
    const h = await host(new MemoryStore());
    const created = await fetch(`${h.url}/a2a/rest/acme/message:send`, {
      method: 'POST',
      headers: { ...V, 'content-type': 'application/json' },
      body: JSON.stringify({ message: { messageId: 'ten-1', role: 'ROLE_USER', parts: [{ text: 'hi' }] } }),
    });
    const id = ((await created.json()) as { task: { id: string } }).task.id;
    expect((await fetch(`${h.url}/a2a/rest/tasks/${id}`, { headers: V })).status).toBe(404);
    expect((await fetch(`${h.url}/a2a/rest/acme/tasks/${id}`, { headers: V })).status).toBe(200);
    expect((await call(h.url, 'GetTask', { id, tenant: 'acme' })).body.result.id).toBe(id);
    expect((await call(h.url, 'GetTask', { id, tenant: 'other' })).body.error!.code).toBe(-32001);
  });
});
