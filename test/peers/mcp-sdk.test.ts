import { afterEach, describe, expect, it } from 'vitest';
import { mcpPlane, TERMINAL, type McpPlane } from './mcp-plane.ts';
import { startMcpSdkPeer, type McpSdkPeer } from './mcp-sdk-peer.ts';

/**
 * The plane's MCP connector against a server built on the official @modelcontextprotocol/sdk 1.x with
 * its experimental tasks (2025-11-25), end to end through `startServer` and the HTTP API: the
 * connector finds that server/discover is not served, initializes, and tracks the SDK's tasks.
 */
const open: Array<{ close(): Promise<unknown> }> = [];
afterEach(async () => {
  for (const o of open.reverse()) await o.close().catch(() => {});
  open.length = 0;
});

async function setup(
  opts: Parameters<typeof startMcpSdkPeer>[0] = {},
  target: Record<string, unknown> = {},
): Promise<{ peer: McpSdkPeer; p: McpPlane }> {
  const peer = await startMcpSdkPeer(opts);
  open.push(peer);
  const p = await mcpPlane({ kind: 'mcp', url: peer.url, ...target });
  open.push(p);
  return { peer, p };
}

describe('MCP 2025-11-25 against an @modelcontextprotocol/sdk 1.x server with experimental tasks', () => {
  it('a plain tool is answered at once: succeeded, result kept', async () => {
    const { p } = await setup();
    const t = await p.create({ name: 'greet', arguments: { name: 'Ada' } });
    const end = await p.until(t.id, (x) => TERMINAL.has(x.state), 'terminal');
    expect(end.state).toBe('succeeded');
    expect(JSON.stringify(end.result)).toContain('Hello, Ada!');
  });

  it('a task is tracked to completion, its result read with tasks/result', async () => {
    const { peer, p } = await setup({}, { tool: 'work' });
    const t = await p.create({ label: 'report' });
    const running = await p.until(t.id, (x) => x.state === 'running', 'running');
    expect(peer.created).toEqual([running.remoteId]);
    peer.finish();
    const end = await p.until(t.id, (x) => TERMINAL.has(x.state), 'terminal');
    expect(end.state).toBe('succeeded');
    expect(JSON.stringify(end.result)).toContain('report: finished');
  });

  it('a tool result with isError is failed, tool_error', async () => {
    const { p } = await setup();
    const t = await p.create({ name: 'fail_tool', arguments: {} });
    const end = await p.until(t.id, (x) => TERMINAL.has(x.state), 'terminal');
    expect(end.state).toBe('failed');
    expect(end.error?.code).toBe('tool_error');
  });

  it('input: the elicitation the SDK queues for the task is shown, answered, and the task completes', async () => {
    const { p } = await setup();
    const t = await p.create({ name: 'ask', arguments: { question: 'Which edition?' } });
    const w = await p.until(
      t.id,
      (x) => x.state === 'waiting_for_input' && (x.pendingInput?.requests?.length ?? 0) > 0,
      'waiting with the request',
    );
    expect(w.pendingInput?.prompt).toBe('Which edition?');
    expect(w.pendingInput?.requests?.[0]?.method).toBe('elicitation/create');
    const stale = await p.answer(t.id, 'no-such-key', { reply: 'x' });
    expect(stale.status).toBe(409);
    const a = await p.answer(t.id, w.pendingInput!.requestId, { reply: 'second' });
    expect(a.status).toBe(200);
    const end = await p.until(t.id, (x) => TERMINAL.has(x.state), 'terminal');
    expect(end.state).toBe('succeeded');
    expect(JSON.stringify(end.result)).toContain('second');
  });

  it('cancel: tasks/cancel, the SDK confirms cancelled, the outcome recorded', async () => {
    const { p } = await setup({}, { tool: 'work' });
    const t = await p.create({ label: 'long' });
    await p.until(t.id, (x) => x.state === 'running', 'running');
    await p.cancel(t.id);
    const end = await p.until(t.id, (x) => TERMINAL.has(x.state), 'terminal');
    expect(end.state).toBe('cancelled');
    expect(end.cancel?.outcome).toBe('cancelled');
    expect(end.cancel?.acknowledgedAt).not.toBeNull();
  });

  it('a cancel that loses the race with completion records the completion', async () => {
    const { peer, p } = await setup({}, { tool: 'work' });
    const t = await p.create({ label: 'race' });
    const r = await p.until(t.id, (x) => x.state === 'running', 'running');
    peer.finish(r.remoteId!);
    await p.cancel(t.id);
    const end = await p.until(t.id, (x) => TERMINAL.has(x.state), 'terminal');
    expect(end.state).toBe('succeeded');
    expect(end.cancel?.outcome).toBe('succeeded');
  });

  it('slow answers and a dropped tasks/get cost retries, never the outcome', async () => {
    const { peer, p } = await setup({ autoFinishMs: 400 }, { tool: 'work' });
    const t = await p.create({ label: 'slow' });
    await p.until(t.id, (x) => x.state === 'running', 'running');
    peer.delayMs = 60;
    peer.dropNext();
    const end = await p.until(t.id, (x) => TERMINAL.has(x.state), 'terminal');
    expect(end.state).toBe('succeeded');
    expect(peer.dropped).toBeGreaterThan(0);
    expect(peer.created).toHaveLength(1);
  });
});
