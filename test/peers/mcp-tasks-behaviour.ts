import { afterEach, describe, expect, it } from 'vitest';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { openApiDocument } from '../../src/server/openapi.ts';
import { mcpPlane, TERMINAL, type McpPlane } from './mcp-plane.ts';
import type { ModernMcpPeer } from './mcp-modern-peer.ts';

/**
 * The plane's MCP connector against a 2026-07-28 server with the tasks extension, end to end through
 * `startServer` and the HTTP API. No official TypeScript server speaks this era, so the server is our
 * small peer on the wire layer (test/peers/mcp-modern-peer.ts); `mcpTasksBehaviour` takes the server
 * as a factory, so the same tests run against `taskplane host`'s /mcp (it exposes the same fixture
 * tools) by passing another factory. Tests that need injected faults are skipped, saying so, for a
 * server that cannot inject them.
 */
export function mcpTasksBehaviour(name: string, startPeer: () => Promise<ModernMcpPeer>): void {
  describe(`MCP 2026-07-28 tasks, plane end to end: ${name}`, () => {
    let peer: ModernMcpPeer;
    let p: McpPlane;
    const open: Array<{ close(): Promise<unknown> }> = [];
    afterEach(async () => {
      for (const o of open.reverse()) await o.close().catch(() => {});
      open.length = 0;
    });
    async function setup(plane: Parameters<typeof mcpPlane>[1] = {}): Promise<void> {
      peer = await startPeer();
      open.push(peer);
      p = await mcpPlane({ kind: 'mcp', url: peer.url }, plane);
      open.push(p);
    }
    const done = (id: string) => p.until(id, (t) => TERMINAL.has(t.state), 'terminal');
    const faulty = (test: string, fn: () => Promise<void>) =>
      it(test, async (ctx) => {
        await setup();
        if (!peer.faults) return ctx.skip();
        await fn();
      });

    it('an immediate tool result: succeeded at once, the result kept as output, kind mcp', async () => {
      await setup();
      const t = await p.create({ name: 'greet', arguments: { name: 'Ada' } });
      expect(t.connector).toBe('mcp');
      const end = await done(t.id);
      expect(end.state).toBe('succeeded');
      expect(end.nativeState).toBe('complete');
      expect(JSON.stringify(end.result)).toContain('Hello, Ada!');
    });

    it('a task is tracked to completion by tasks/get', async () => {
      await setup();
      const t = await p.create({ name: 'slow_compute', arguments: { seconds: 0.3, label: 'pi' } });
      const running = await p.until(t.id, (x) => x.remoteId !== null, 'bound');
      expect(running.remoteId).not.toMatch(/^(mrtr|call):/);
      const end = await done(t.id);
      expect(end.state).toBe('succeeded');
      expect(end.nativeState).toBe('completed');
    });

    it('a tool error (completed, isError) is failed with tool_error, the native status kept', async () => {
      await setup();
      const end = await done((await p.create({ name: 'failing_job', arguments: {} })).id);
      expect(end.state).toBe('failed');
      expect(end.nativeState).toBe('completed');
      expect(end.error?.code).toBe('tool_error');
    });

    it('a protocol error (failed with error) is failed with the remote code', async () => {
      await setup();
      const end = await done((await p.create({ name: 'protocol_error_job', arguments: {} })).id);
      expect(end.state).toBe('failed');
      expect(end.nativeState).toBe('failed');
      expect(end.error?.code).toMatch(/^rpc_-32/);
    });

    it('input_required shows every key with method and schema; a partial answer leaves the rest; a stale key is refused', async () => {
      await setup();
      const t = await p.create({ name: 'multi_input', arguments: {} });
      const waiting = await p.until(
        t.id,
        (x) => x.state === 'waiting_for_input' && (x.pendingInput?.requests?.length ?? 0) === 2,
        'two keys pending',
      );
      const keys = waiting.pendingInput!.requests!.map((r) => r.requestId).sort();
      expect(keys).toHaveLength(2);
      for (const r of waiting.pendingInput!.requests!) {
        expect(r.method).toBe('elicitation/create');
        expect(r.schema).toMatchObject({ type: 'object' });
        expect(r.prompt).toMatch(/\?$/);
      }
      // The API document describes the keyed requests (its schemas are closed: test/server/openapi.test.ts).
      const ajv = new Ajv2020({ strict: false });
      ajv.addSchema(openApiDocument() as object, 'openapi.json');
      const task = ajv.compile({ $ref: 'openapi.json#/components/schemas/Task' });
      expect(task(waiting), ajv.errorsText(task.errors)).toBe(true);
      const [first, second] = waiting.pendingInput!.requests!;
      const firstValue =
        first!.schema!.properties && 'size' in (first!.schema!.properties as object)
          ? { size: 3 }
          : { color: 'red' };
      const secondValue = 'size' in (firstValue as object) ? { color: 'red' } : { size: 3 };
      const a = await p.answer(t.id, first!.requestId, firstValue);
      expect(a.status).toBe(200);
      const partial = await p.until(t.id, (x) => x.pendingInput?.requests?.length === 1, 'one key left');
      expect(partial.state).toBe('waiting_for_input');
      expect(partial.pendingInput!.requests![0]!.requestId).toBe(second!.requestId);
      const stale = await p.answer(t.id, first!.requestId, firstValue);
      expect(stale.status).toBe(409);
      expect(JSON.stringify(stale.body)).toContain(second!.requestId);
      expect((await p.answer(t.id, second!.requestId, secondValue)).status).toBe(200);
      const end = await done(t.id);
      expect(end.state).toBe('succeeded');
    });

    it('an elicitation answered with its content alone is an accept', async () => {
      await setup();
      const t = await p.create({ name: 'confirm_delete', arguments: { filename: 'a.txt' } });
      const w = await p.until(t.id, (x) => x.state === 'waiting_for_input', 'waiting');
      expect(w.pendingInput?.prompt).toContain('a.txt');
      expect((await p.answer(t.id, w.pendingInput!.requestId, { confirm: true })).status).toBe(200);
      expect((await done(t.id)).state).toBe('succeeded');
    });

    it('an answer the schema of MCP cannot carry is refused naming the field', async () => {
      await setup();
      const t = await p.create({ name: 'confirm_delete', arguments: { filename: 'b.txt' } });
      const w = await p.until(t.id, (x) => x.state === 'waiting_for_input', 'waiting');
      const bad = await p.answer(t.id, w.pendingInput!.requestId, { action: 'maybe' });
      expect(bad.status).toBe(400);
      expect(JSON.stringify(bad.body)).toContain('action');
      expect((await p.get(t.id)).state).toBe('waiting_for_input');
    });

    it('MRTR rounds before the task: the caller answers, the retried call creates the task, the job follows it', async () => {
      await setup();
      const t = await p.create({ name: 'test_tool_with_task', arguments: {} });
      const w = await p.until(t.id, (x) => x.state === 'waiting_for_input', 'MRTR round');
      expect(w.remoteId).toMatch(/^mrtr:/);
      expect(w.pendingInput?.requestId).toBe('user_name');
      expect((await p.answer(t.id, 'user_name', { name: 'Alice' })).status).toBe(200);
      const end = await done(t.id);
      expect(end.state).toBe('succeeded');
      expect(end.remoteId).not.toMatch(/^mrtr:/);
      expect(JSON.stringify(end.result)).toContain('Alice');
      const bound = (await p.history(t.id)).filter((e) => e.type === 'bound');
      expect(bound.map((e) => e.data.replaces ?? null)).toEqual([null, w.remoteId]);
    });

    it('cancel: intent, tasks/cancel, then the true outcome', async () => {
      await setup();
      const t = await p.create({ name: 'slow_compute', arguments: { seconds: 60, label: 'long' } });
      await p.until(t.id, (x) => x.remoteId !== null, 'bound');
      const c = await p.cancel(t.id);
      expect(['cancel_requested', 'cancelled']).toContain(c.state);
      const end = await done(t.id);
      expect(end.state).toBe('cancelled');
      expect(end.cancel?.outcome).toBe('cancelled');
      expect(end.cancel?.acknowledgedAt).not.toBeNull();
    });

    faulty('a task that completes after cancel was requested is recorded as completed', async () => {
      peer.faults!.completeOnCancel = true;
      const t = await p.create({ name: 'slow_compute', arguments: { seconds: 60 } });
      await p.until(t.id, (x) => x.remoteId !== null, 'bound');
      await p.cancel(t.id);
      const end = await done(t.id);
      expect(end.state).toBe('succeeded');
      expect(end.cancel?.outcome).toBe('succeeded');
    });

    faulty('-32602 for a task we hold that was alive: expired, never a guess', async () => {
      const t = await p.create({ name: 'slow_compute', arguments: { seconds: 60 } });
      const bound = await p.until(t.id, (x) => x.state === 'running', 'running');
      peer.faults!.forget(bound.remoteId!);
      const end = await done(t.id);
      expect(end.state).toBe('expired');
      const h = await p.history(t.id);
      expect(h.some((e) => e.type === 'state_changed' && e.data.reason === 'not_found_after_alive')).toBe(
        true,
      );
    });

    faulty('createdAt + ttlMs passed: expired', async () => {
      peer.faults!.nextTaskAge(1_000, 5_000);
      const end = await done((await p.create({ name: 'slow_compute', arguments: { seconds: 60 } })).id);
      expect(end.state).toBe('expired');
      expect(end.error?.code).toBe('ttl_expired');
    });

    faulty('a dropped tasks/get and a slow answer cost a retry, not the outcome', async () => {
      peer.faults!.dropNext('tasks/get');
      peer.faults!.delay('tasks/get', 100);
      const end = await done((await p.create({ name: 'slow_compute', arguments: { seconds: 0.3 } })).id);
      expect(end.state).toBe('succeeded');
      expect(peer.faults!.created).toHaveLength(1);
    });

    faulty(
      'a lost CreateTaskResult cannot be found again: unknown, then the lost policy (resubmit)',
      async () => {
        peer.faults!.dropNext('tools/call', 'after');
        const t = await p.create({ name: 'slow_compute', arguments: { seconds: 0.3 } });
        const end = await done(t.id);
        expect(end.state).toBe('succeeded');
        // The first task ran unseen: MCP has no list, so the resubmission is a second task.
        expect(peer.faults!.created).toHaveLength(2);
        const h = await p.history(t.id);
        const lost = h.find((e) => e.type === 'state_changed' && e.data.reason === 'start_response_lost');
        expect(lost?.data).toMatchObject({ to: 'unknown', policy: 'resubmit', attempt: 1 });
        expect(h.some((e) => e.type === 'resubmitted')).toBe(true);
      },
    );
  });
}
