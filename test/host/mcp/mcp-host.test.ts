import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../src/core/clock.ts';
import type { RunningHost } from '../../../src/host/start-host.ts';
import { MemoryStore } from '../../../src/store/memory/memory-store.ts';
import { TASKS_EXTENSION } from '../../../src/protocols/mcp/types.ts';
import { tempDb } from '../helpers.ts';
import { call, startTestHost, type Wire } from '../in-process.ts';
import agent from './conformance-agent.ts';
import { mcp, pollTask } from './mcp-client.ts';

const hosts: RunningHost[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
});
const { dir, db } = tempDb('mcp-host');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function host(options: Parameters<typeof startTestHost>[1] = {}, store = new MemoryStore()) {
  const h = await startTestHost(store, { agent, ...options });
  hosts.push(h);
  return h;
}

const terminal = (t: Wire) => ['completed', 'failed', 'cancelled'].includes(t.status);

/** Every key and string value in a JSON-shaped value, however deep. */
function leaves(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([k, v]) => [...(Array.isArray(value) ? [] : [k]), ...leaves(v)]);
}

describe('MCP 2026-07-28 at /mcp', () => {
  it('server/discover advertises exactly {} for the tasks extension and no legacy tasks capability', async () => {
    const h = await host();
    const r = await mcp(h.mcpUrl, 'server/discover');
    expect(r.status).toBe(200);
    expect(r.body.result.resultType).toBe('complete');
    expect(r.body.result.capabilities.extensions).toEqual({ [TASKS_EXTENSION]: {} });
    expect(r.body.result.capabilities.tasks).toBeUndefined();
    expect(r.body.result._meta['io.modelcontextprotocol/serverInfo'].name).toBe('taskplane-mcp-conformance');
  });

  it('runs a task-capable tool as a task only when the request declares the extension', async () => {
    const h = await host();
    const sync = await mcp(
      h.mcpUrl,
      'tools/call',
      { name: 'slow_compute', arguments: { seconds: 0.05, label: 's' } },
      { tasks: false },
    );
    expect(sync.body.result).toMatchObject({ resultType: 'complete', content: [{ type: 'text' }] });
    expect(sync.body.result.taskId).toBeUndefined();

    const created = await mcp(h.mcpUrl, 'tools/call', {
      name: 'slow_compute',
      arguments: { seconds: 0.05, label: 't' },
    });
    const t = created.body.result;
    expect(t).toMatchObject({
      resultType: 'task',
      status: 'working',
      ttlMs: 86_400_000,
      pollIntervalMs: 1000,
    });
    for (const k of ['result', 'error', 'inputRequests', 'requestState', 'ttl', 'pollInterval', 'task'])
      expect(t).not.toHaveProperty(k);
    // Strong consistency: the id resolves at once, and it is long and random.
    expect((await mcp(h.mcpUrl, 'tasks/get', { taskId: t.taskId })).body.result.taskId).toBe(t.taskId);
    expect(t.taskId).toMatch(/^task_[0-9a-z]{36}$/);
    const done = await pollTask(h.mcpUrl, t.taskId, terminal);
    expect(done).toMatchObject({
      status: 'completed',
      resultType: 'complete',
      result: { resultType: 'complete' },
    });
    expect(done.result.content[0].text).toContain('Computed t');

    // A synchronous-only tool stays synchronous with the extension declared (and ignores a legacy `task`).
    const greet = await mcp(h.mcpUrl, 'tools/call', {
      name: 'greet',
      arguments: { name: 'Ann' },
      task: { ttl: 5 },
    });
    expect(greet.body.result).toEqual({
      resultType: 'complete',
      content: [{ type: 'text', text: 'Hello, Ann!' }],
    });
  });

  it('a tool error is completed with isError, a protocol error is failed with error and no result', async () => {
    const h = await host();
    const refused = await mcp(h.mcpUrl, 'tools/call', { name: 'failing_job' }, { tasks: false });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({
      code: -32021,
      data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    });

    const failing = (await mcp(h.mcpUrl, 'tools/call', { name: 'failing_job' })).body.result;
    const protocol = (await mcp(h.mcpUrl, 'tools/call', { name: 'protocol_error_job' })).body.result;
    const a = await pollTask(h.mcpUrl, failing.taskId, terminal);
    expect(a.status).toBe('completed');
    expect(a.result.isError).toBe(true);
    const b = await pollTask(h.mcpUrl, protocol.taskId, terminal);
    expect(b.status).toBe('failed');
    expect(b.error).toEqual({ code: -32603, message: 'simulated protocol error' });
    expect(b).not.toHaveProperty('result');
  });

  it('answers removed and unknown methods with -32601 and HTTP 404, tasks/* without the extension with -32021', async () => {
    const h = await host();
    for (const method of ['tasks/result', 'tasks/list', 'initialize', 'no/such']) {
      const r = await mcp(h.mcpUrl, method, { taskId: 'x' }, { headers: { 'Mcp-Name': 'x' } });
      expect([method, r.status, r.body.error?.code]).toEqual([method, 404, -32601]);
    }
    const t = (await mcp(h.mcpUrl, 'tools/call', { name: 'slow_compute', arguments: { seconds: 5 } })).body
      .result;
    for (const method of ['tasks/get', 'tasks/cancel'])
      expect((await mcp(h.mcpUrl, method, { taskId: t.taskId }, { tasks: false })).body.error?.code).toBe(
        -32021,
      );
    const update = await mcp(
      h.mcpUrl,
      'tasks/update',
      { taskId: t.taskId, inputResponses: {} },
      { tasks: false },
    );
    expect([update.status, update.body.error?.code]).toEqual([400, -32021]);
  });

  it('checks MCP-Protocol-Version, Mcp-Method and Mcp-Name (-32020) and refuses unknown versions (-32022)', async () => {
    const h = await host();
    const t = (await mcp(h.mcpUrl, 'tools/call', { name: 'slow_compute', arguments: { seconds: 5 } })).body
      .result;
    const wrongName = await mcp(
      h.mcpUrl,
      'tasks/get',
      { taskId: t.taskId },
      { headers: { 'Mcp-Name': 'other' } },
    );
    expect([wrongName.status, wrongName.body.error?.code]).toEqual([400, -32020]);
    const noMethod = await mcp(h.mcpUrl, 'tasks/get', { taskId: t.taskId }, { omit: ['Mcp-Method'] });
    expect([noMethod.status, noMethod.body.error?.code]).toEqual([400, -32020]);
    const wrongMethod = await mcp(
      h.mcpUrl,
      'tasks/get',
      { taskId: t.taskId },
      { headers: { 'Mcp-Method': 'tasks/cancel' } },
    );
    expect(wrongMethod.body.error?.code).toBe(-32020);
    const version = await mcp(
      h.mcpUrl,
      'server/discover',
      {},
      { headers: { 'MCP-Protocol-Version': '2099-01-01' } },
    );
    expect([version.status, version.body.error?.code]).toEqual([400, -32022]);
    const noMeta = await fetch(h.mcpUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'MCP-Protocol-Version': '2026-07-28',
        'Mcp-Method': 'server/discover',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'server/discover', params: {} }),
    });
    expect(noMeta.status).toBe(400);
    expect(((await noMeta.json()) as Wire).error).toMatchObject({
      code: -32602,
      data: { field: 'params._meta' },
    });
  });

  it('answers an unknown, a foreign owner’s and another tenant’s task id the same way (-32602)', async () => {
    const digest = (key: string) => createHash('sha256').update(key).digest('hex');
    const keys = new Map([
      [digest('alice-key-0123456789'), 'alice'],
      [digest('bob-key-01234567890'), 'bob'],
    ]);
    const h = await host({ auth: 'keys', keys });
    const alice = { authorization: 'Bearer alice-key-0123456789' };
    const bob = { authorization: 'Bearer bob-key-01234567890' };
    const anonymous = await fetch(h.mcpUrl, { method: 'POST', body: '{}' });
    expect(anonymous.status).toBe(401);
    const t = (
      await mcp(
        `${h.mcpUrl}/x`,
        'tools/call',
        { name: 'slow_compute', arguments: { seconds: 5 } },
        { headers: alice },
      )
    ).body.result;
    expect(
      (await mcp(`${h.mcpUrl}/x`, 'tasks/get', { taskId: t.taskId }, { headers: alice })).body.result.status,
    ).toBe('working');
    const answers = [];
    for (const [url, who, id] of [
      [`${h.mcpUrl}/x`, bob, t.taskId],
      [h.mcpUrl, alice, t.taskId],
      [`${h.mcpUrl}/x`, alice, `task_${'0'.repeat(36)}`],
    ] as const) {
      for (const method of ['tasks/get', 'tasks/cancel']) {
        const r = await mcp(url, method, { taskId: id }, { headers: who });
        answers.push([r.status, r.body.error]);
      }
    }
    expect(new Set(answers.map((a) => JSON.stringify(a))).size).toBe(1);
    expect(answers[0]).toEqual([200, { code: -32602, message: 'Failed to retrieve task: Task not found' }]);
    // Bob's cancel did not touch alice's task.
    expect(
      (await mcp(`${h.mcpUrl}/x`, 'tasks/get', { taskId: t.taskId }, { headers: alice })).body.result.status,
    ).toBe('working');
  });

  it('input: every outstanding key is listed, a partial tasks/update is read back at once, the last answer resumes the tool', async () => {
    const h = await host();
    const t = (await mcp(h.mcpUrl, 'tools/call', { name: 'multi_input' })).body.result;
    const waiting = await pollTask(h.mcpUrl, t.taskId, (x) => x.status === 'input_required');
    expect(Object.keys(waiting.inputRequests).sort()).toEqual(['first', 'second']);
    const accept = { action: 'accept', content: { value: 'v' } };
    const ack = await mcp(h.mcpUrl, 'tasks/update', {
      taskId: t.taskId,
      inputResponses: { first: accept, bogus: { any: 1 } },
    });
    expect(ack.body.result).toEqual({ resultType: 'complete' });
    const after = (await mcp(h.mcpUrl, 'tasks/get', { taskId: t.taskId })).body.result;
    expect(after.status).toBe('input_required');
    expect(Object.keys(after.inputRequests)).toEqual(['second']);
    // A malformed answer to an outstanding key is refused, naming the key.
    const bad = await mcp(h.mcpUrl, 'tasks/update', {
      taskId: t.taskId,
      inputResponses: { second: { nope: true } },
    });
    expect(bad.body.error?.code).toBe(-32602);
    await mcp(h.mcpUrl, 'tasks/update', { taskId: t.taskId, inputResponses: { second: accept } });
    const done = await pollTask(h.mcpUrl, t.taskId, terminal);
    expect(done.result.content[0].text).toBe('Received first and second');
  });

  it('an MCP task waiting for input takes no A2A message as its answer', async () => {
    const h = await host();
    const t = (await mcp(h.mcpUrl, 'tools/call', { name: 'confirm_delete', arguments: { filename: 'f' } }))
      .body.result;
    await pollTask(h.mcpUrl, t.taskId, (x) => x.status === 'input_required');
    const followUp = await call(h.url, 'SendMessage', {
      message: {
        messageId: 'm-1',
        role: 'ROLE_USER',
        taskId: t.taskId,
        parts: [{ data: { 'elicit-1': { action: 'accept' } } }],
      },
    });
    expect(followUp.body.error?.code).toBe(-32001);
    expect((await mcp(h.mcpUrl, 'tasks/get', { taskId: t.taskId })).body.result.status).toBe(
      'input_required',
    );
  });

  it('MRTR rounds come before the task, and requestState never reaches the task', async () => {
    const store = new MemoryStore();
    const h = await host({}, store);
    const round1 = (await mcp(h.mcpUrl, 'tools/call', { name: 'test_tool_with_task' })).body.result;
    expect(round1.resultType).toBe('input_required');
    expect(round1).not.toHaveProperty('taskId');
    expect(Object.keys(round1.inputRequests)).toEqual(['user_name']);
    const round2 = (
      await mcp(h.mcpUrl, 'tools/call', {
        name: 'test_tool_with_task',
        inputResponses: { user_name: { action: 'accept', content: { name: 'Alice' } } },
        requestState: round1.requestState,
      })
    ).body.result;
    expect(round2.resultType).toBe('task');
    expect(round2).not.toHaveProperty('requestState');
    expect(round2).not.toHaveProperty('inputRequests');
    const done = await pollTask(h.mcpUrl, round2.taskId, terminal);
    expect(done.result.content[0].text).toContain('Alice');
    // No field holds it (a substring check would also match a random id: the state can be three characters).
    expect(leaves(done)).not.toContain(round1.requestState);
    expect(leaves(done)).not.toContain('requestState');
    const stored = await store.getAgentTask(round2.taskId);
    expect(leaves(stored)).not.toContain(round1.requestState);
    expect(leaves(stored)).not.toContain('requestState');
    // A state that does not decode to the answers of earlier rounds is refused, naming the field; one
    // that does is the client's own answers (it could send them as inputResponses), read as such.
    for (const bad of [
      '%%%',
      Buffer.from('[1]').toString('base64url'),
      Buffer.from('{x').toString('base64url'),
    ]) {
      const refused = await mcp(h.mcpUrl, 'tools/call', { name: 'test_tool_with_task', requestState: bad });
      expect(refused.body.error).toMatchObject({ code: -32602, data: { field: 'params.requestState' } });
      expect(refused.body.error?.message).toContain('requestState');
    }
    const own = Buffer.from(
      JSON.stringify({ user_name: { action: 'accept', content: { name: 'Bob' } } }),
    ).toString('base64url');
    const made = (await mcp(h.mcpUrl, 'tools/call', { name: 'test_tool_with_task', requestState: own })).body
      .result;
    expect(made.resultType).toBe('task');
    expect((await pollTask(h.mcpUrl, made.taskId, terminal)).result.content[0].text).toContain('Bob');
  });

  it('cancel is an empty acknowledgement, ends a running task cancelled, and is acknowledged again once terminal', async () => {
    const h = await host();
    const t = (await mcp(h.mcpUrl, 'tools/call', { name: 'slow_compute', arguments: { seconds: 60 } })).body
      .result;
    expect((await mcp(h.mcpUrl, 'tasks/cancel', { taskId: t.taskId })).body.result).toEqual({
      resultType: 'complete',
    });
    expect((await mcp(h.mcpUrl, 'tasks/get', { taskId: t.taskId })).body.result.status).toBe('cancelled');
    expect((await mcp(h.mcpUrl, 'tasks/cancel', { taskId: t.taskId })).body.result).toEqual({
      resultType: 'complete',
    });
    expect(h.stats().executions).toBe(0);
  });

  it('a task stays readable for ttlMs and is answered as expired (-32602) after it', async () => {
    const clock = new VirtualClock(Date.parse('2026-12-01T00:00:00Z'));
    const h = await host({ clock, mcpTaskTtlMs: 60_000 });
    const t = (await mcp(h.mcpUrl, 'tools/call', { name: 'confirm_delete', arguments: { filename: 'a' } }))
      .body.result;
    expect(t.ttlMs).toBe(60_000);
    await clock.advance(59_999);
    expect((await mcp(h.mcpUrl, 'tasks/get', { taskId: t.taskId })).body.result.taskId).toBe(t.taskId);
    await clock.advance(1);
    const gone = await mcp(h.mcpUrl, 'tasks/get', { taskId: t.taskId });
    expect(gone.body.error).toEqual({ code: -32602, message: 'Failed to retrieve task: Task has expired' });
  });

  it('input survives a host restart on the same database', async () => {
    // The host opens (and closes) the SQLite file itself, as `taskplane host --db` does.
    const first = await startTestHost(new MemoryStore(), { agent, hostId: 'mcp-restart', db });
    const t = (
      await mcp(first.mcpUrl, 'tools/call', { name: 'confirm_delete', arguments: { filename: 'x.txt' } })
    ).body.result;
    const waiting = await pollTask(first.mcpUrl, t.taskId, (x) => x.status === 'input_required');
    const [key] = Object.keys(waiting.inputRequests);
    await first.close();
    const second = await host({ hostId: 'mcp-restart', db });
    expect(second.recovered.waiting).toBe(1);
    const again = (await mcp(second.mcpUrl, 'tasks/get', { taskId: t.taskId })).body.result;
    expect(again.inputRequests).toEqual(waiting.inputRequests);
    await mcp(second.mcpUrl, 'tasks/update', {
      taskId: t.taskId,
      inputResponses: { [key!]: { action: 'accept', content: { confirm: true } } },
    });
    const done = await pollTask(second.mcpUrl, t.taskId, terminal);
    expect(done.result.content[0].text).toBe('Deleted x.txt');
  });

  it('subscriptions/listen acknowledges the caller’s task ids, then sends notifications/tasks up to the result', async () => {
    const h = await host();
    const t = (await mcp(h.mcpUrl, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0.2 } })).body
      .result;
    const body = {
      jsonrpc: '2.0',
      id: 99,
      method: 'subscriptions/listen',
      params: {
        notifications: { taskIds: [t.taskId, 'task_unknown'] },
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': { extensions: { [TASKS_EXTENSION]: {} } },
        },
      },
    };
    const res = await fetch(h.mcpUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'MCP-Protocol-Version': '2026-07-28',
        'Mcp-Method': 'subscriptions/listen',
      },
      body: JSON.stringify(body),
    });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = res.body!.getReader();
    const frames: Wire[] = [];
    let buffer = '';
    while (!frames.some((f) => f.params?.status === 'completed')) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += new TextDecoder().decode(value);
      const events = buffer.split('\n\n');
      buffer = events.pop()!;
      for (const e of events) {
        const data = e.split('\n').find((l) => l.startsWith('data: '));
        if (data) frames.push(JSON.parse(data.slice(6)));
      }
    }
    await reader.cancel();
    expect(frames[0]).toMatchObject({
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: { taskIds: [t.taskId] } },
    });
    const sub = frames[0].params._meta['io.modelcontextprotocol/subscriptionId'];
    const last = frames.at(-1);
    expect(last.method).toBe('notifications/tasks');
    expect(last.params).toMatchObject({
      taskId: t.taskId,
      status: 'completed',
      result: { resultType: 'complete' },
    });
    expect(frames.every((f) => f.params._meta['io.modelcontextprotocol/subscriptionId'] === sub)).toBe(true);
  });
});
