import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/core/logger.ts';
import { DEMO_MCP_TARGET, DEMO_TASKS, demoTargets } from '../../src/server/demo.ts';
import { startHost, type RunningHost } from '../../src/host/start-host.ts';
import { mcpPlane, type McpPlane } from '../peers/mcp-plane.ts';

/**
 * The demo's MCP target (`serve --demo` registers it as `demo-mcp`): the plane calls the demo host's
 * `demo_task` tool with each job's input as its arguments, and the tool behaves as the A2A demo agent
 * does: it works in steps, asks for input, fails on request, and answers with output.
 */
let host: RunningHost | undefined;
let plane: McpPlane | undefined;
afterEach(async () => {
  await plane?.close();
  await host?.close();
  plane = undefined;
  host = undefined;
});

async function demoMcp(): Promise<McpPlane> {
  host = await startHost({ port: 0, db: 'memory:', logger: silentLogger });
  const target = demoTargets(host)[DEMO_MCP_TARGET]!;
  // Streams on, as `serve --demo` runs: the connector follows the tasks by notifications.
  plane = await mcpPlane(target, { delivery: { stream: true, push: false, poll: true } });
  return plane;
}

describe('the demo MCP target', () => {
  it('is an MCP target on the demo host, and some sample tasks go to it', () => {
    const targets = demoTargets({ url: 'http://127.0.0.1:1' } as RunningHost);
    expect(targets[DEMO_MCP_TARGET]).toEqual({
      kind: 'mcp',
      url: 'http://127.0.0.1:1/mcp',
      tool: 'demo_task',
    });
    expect(targets.demo?.kind).toBe('a2a');
    const mcpTasks = DEMO_TASKS.filter((t) => t.target === DEMO_MCP_TARGET);
    expect(mcpTasks.some((t) => (t.input as { askInput?: string }).askInput)).toBe(true);
    expect(mcpTasks.some((t) => (t.input as { fail?: boolean }).fail)).toBe(true);
  });

  it('runs the steps as a task, asks for input, and succeeds with output naming the answer', async () => {
    const p = await demoMcp();
    const t = await p.create({ durationMs: 200, steps: 2, askInput: 'Which edition?' });
    const waiting = await p.until(t.id, (x) => x.state === 'waiting_for_input', 'waiting');
    expect(waiting.connector).toBe('mcp');
    // A task on the host, not an immediate answer.
    expect(waiting.remoteId).not.toMatch(/^(call|mrtr):/);
    const request = waiting.pendingInput!.requests![0]!;
    expect(request.prompt).toContain('Which edition?');
    expect(request.method).toBe('elicitation/create');
    const answered = await p.answer(t.id, request.requestId, 'second');
    expect(answered.status).toBeLessThan(300);
    const done = await p.until(t.id, (x) => x.state === 'succeeded', 'succeeded');
    expect(JSON.stringify(done.result)).toContain('done after 2 steps (second)');
  });

  it('fails on request with a tool error: the job is failed, never succeeded', async () => {
    const p = await demoMcp();
    const t = await p.create({ durationMs: 50, steps: 1, fail: true });
    const done = await p.until(t.id, (x) => x.state === 'failed' || x.state === 'succeeded', 'terminal');
    expect(done.state).toBe('failed');
    expect(JSON.stringify(done.result)).toContain('asked to fail');
  });
});
