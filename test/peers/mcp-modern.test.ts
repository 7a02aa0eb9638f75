import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { mcpPlane, TERMINAL } from './mcp-plane.ts';
import { startModernMcpPeer } from './mcp-modern-peer.ts';
import { mcpTasksBehaviour } from './mcp-tasks-behaviour.ts';

/**
 * The MCP end-to-end behaviour (test/peers/mcp-tasks-behaviour.ts) against our 2026-07-28 peer, and what
 * only that peer can show: task notifications, a plane restart mid-task and mid-MRTR, a lost
 * CreateTaskResult under lostPolicy escalate.
 */
mcpTasksBehaviour('our 2026 peer', () => startModernMcpPeer());

describe('a lost CreateTaskResult under lostPolicy escalate', () => {
  it('is unknown for a person, with the reason, and nothing is sent again', async () => {
    const peer = await startModernMcpPeer();
    const p = await mcpPlane({ kind: 'mcp', url: peer.url }, { lostPolicy: 'escalate' });
    try {
      peer.faults!.dropNext('tools/call', 'after');
      const t = await p.create({ name: 'slow_compute', arguments: { seconds: 0.3 } });
      // The task exists on the server (it answered only once the task was durable): not `lost`.
      const end = await p.until(t.id, (x) => x.reconciliation?.result === 'escalated', 'escalated');
      expect(end.state).toBe('unknown');
      expect(end.reconciliation?.note).toContain('can neither find the job nor deduplicate a resend');
      expect(peer.faults!.created).toHaveLength(1);
    } finally {
      await p.close();
      await peer.close();
    }
  });
});

describe('notifications/tasks over subscriptions/listen', () => {
  const open: Array<{ close(): Promise<unknown> }> = [];
  afterEach(async () => {
    for (const o of open.reverse()) await o.close().catch(() => {});
    open.length = 0;
  });
  // Polls far apart: an outcome seen quickly came from the notification stream.
  const streaming = {
    delivery: { stream: true, push: false, poll: false },
    poll: { intervalMs: 60_000, maximumIntervalMs: 60_000 },
    stream: { reattach: { initialIntervalMs: 20, maximumIntervalMs: 100 } },
  };

  it('follows a task by its notifications where the server offers them', async () => {
    const peer = await startModernMcpPeer();
    open.push(peer);
    const p = await mcpPlane({ kind: 'mcp', url: peer.url }, streaming);
    open.push(p);
    const t = await p.create({ name: 'slow_compute', arguments: { seconds: 60 } });
    const running = await p.until(t.id, (x) => x.state === 'running', 'running');
    await p.until(t.id, () => peer.faults!.listens > 0, 'listening');
    const getsBefore = peer.faults!.received.filter((r) => r.method === 'tasks/get').length;
    peer.faults!.finish(running.remoteId!, 'by notification');
    const end = await p.until(t.id, (x) => TERMINAL.has(x.state), 'terminal');
    expect(end.state).toBe('succeeded');
    expect(JSON.stringify(end.result)).toContain('by notification');
    expect(peer.faults!.received.filter((r) => r.method === 'tasks/get').length).toBe(getsBefore);
  });

  it('a dropped listen stream is listened to again, with the current state read first', async () => {
    const peer = await startModernMcpPeer();
    open.push(peer);
    const p = await mcpPlane({ kind: 'mcp', url: peer.url }, streaming);
    open.push(p);
    const t = await p.create({ name: 'slow_compute', arguments: { seconds: 60 } });
    const running = await p.until(t.id, (x) => x.state === 'running', 'running');
    await p.until(t.id, () => peer.faults!.listens > 0, 'listening');
    peer.faults!.dropListens();
    peer.faults!.finish(running.remoteId!);
    const end = await p.until(t.id, (x) => TERMINAL.has(x.state), 'terminal');
    expect(end.state).toBe('succeeded');
  });

  it('a server that refuses subscriptions/listen is polled instead', async () => {
    const peer = await startModernMcpPeer({ listen: false });
    open.push(peer);
    const p = await mcpPlane(
      { kind: 'mcp', url: peer.url },
      { ...streaming, poll: { intervalMs: 20, maximumIntervalMs: 100 } },
    );
    open.push(p);
    const t = await p.create({ name: 'slow_compute', arguments: { seconds: 0.3 } });
    const end = await p.until(t.id, (x) => TERMINAL.has(x.state), 'terminal');
    expect(end.state).toBe('succeeded');
    expect(peer.faults!.received.filter((r) => r.method === 'subscriptions/listen')).toHaveLength(1);
  });
});

describe('a plane restarted while an MCP task runs', () => {
  it('follows the task again from its stored task id, without calling the tool again', async () => {
    const db = `sqlite:${join(mkdtempSync(join(tmpdir(), 'mcp-restart-')), 'plane.db')}`;
    const peer = await startModernMcpPeer();
    try {
      const first = await mcpPlane({ kind: 'mcp', url: peer.url }, {}, db);
      const t = await first.create({ name: 'slow_compute', arguments: { seconds: 60 } });
      const running = await first.until(t.id, (x) => x.state === 'running', 'running');
      await first.close();
      peer.faults!.finish(running.remoteId!, 'while the plane was down');
      const second = await mcpPlane({ kind: 'mcp', url: peer.url }, {}, db);
      try {
        const end = await second.until(t.id, (x) => TERMINAL.has(x.state), 'terminal');
        expect(end.state).toBe('succeeded');
        expect(JSON.stringify(end.result)).toContain('while the plane was down');
        expect(peer.faults!.received.filter((r) => r.method === 'tools/call')).toHaveLength(1);
      } finally {
        await second.close();
      }
    } finally {
      await peer.close();
    }
  });
});

describe('a plane restarted during an MRTR round', () => {
  it('answers it from the round kept on the envelope: the call is retried with its requestState', async () => {
    const db = `sqlite:${join(mkdtempSync(join(tmpdir(), 'mcp-mrtr-')), 'plane.db')}`;
    const peer = await startModernMcpPeer();
    try {
      const first = await mcpPlane({ kind: 'mcp', url: peer.url }, {}, db);
      const t = await first.create({ name: 'test_tool_with_task', arguments: {} });
      await first.until(t.id, (x) => x.state === 'waiting_for_input', 'MRTR round');
      await first.close();
      const second = await mcpPlane({ kind: 'mcp', url: peer.url }, {}, db);
      try {
        expect((await second.answer(t.id, 'user_name', { name: 'Alice' })).status).toBe(200);
        const end = await second.until(t.id, (x) => TERMINAL.has(x.state), 'terminal');
        expect(end.state).toBe('succeeded');
        expect(JSON.stringify(end.result)).toContain('Alice');
        const calls = peer.faults!.received.filter((r) => r.method === 'tools/call');
        expect(calls).toHaveLength(2);
        expect(calls[1]!.params.requestState).toBe('round-1-state');
      } finally {
        await second.close();
      }
    } finally {
      await peer.close();
    }
  });
});
