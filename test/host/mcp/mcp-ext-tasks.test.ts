import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
  createApplicationInputHandler,
  createTaskSessionFromClient,
  resultFromTaskOutcome,
  type RawClientDispatch,
  type SerializedTaskReference,
  type TaskEnabledSession,
} from '@modelcontextprotocol/ext-tasks/client';
import { requestHeaders } from '../../../src/protocols/mcp/headers.ts';
import { spawnHost, type TestProcess } from '../../support/process.ts';
import { tempDb } from '../helpers.ts';
import type { Wire } from '../in-process.ts';

/**
 * The official requester of the 2026-07-28 tasks extension (`@modelcontextprotocol/ext-tasks` on the v2
 * `@modelcontextprotocol/client`) drives `taskplane host` end to end: a tool as a task, input answered,
 * cancel, and a task resumed with `resumeTask` after the host was SIGKILLed and restarted.
 */
const { dir, db } = tempDb('mcp-ext-tasks');
const procs: TestProcess[] = [];
afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill('SIGKILL')));
  rmSync(dir, { recursive: true, force: true });
});

const HOST_ARGS = ['--host-id', 'ext-tasks-host', '--db', db, '--mcp-poll-interval-ms', '100'];
const AGENT = ['--agent', 'test/host/mcp/conformance-agent.ts'];
const ENDPOINT = 'taskplane-test-host';
const MODERN = '2026-07-28';

/**
 * ext-tasks sends tools/call and tasks/* through the host application's own JSON-RPC path (the v2 SDK
 * client refuses task results). Headers it passes are merged case-insensitively with the routing
 * headers, never sent twice (a doubled Mcp-Name would read "id, id" and be refused, -32020).
 */
function rawDispatch(mcpUrl: string): RawClientDispatch {
  let n = 0;
  return async (request, options) => {
    const body = { ...(request as Record<string, unknown>) } as {
      method: string;
      params?: Record<string, unknown>;
      id?: unknown;
    };
    // It hands over method and params (and maybe an id); the envelope is the dispatcher's to frame.
    body.id ??= `raw-${++n}`;
    (body as Record<string, unknown>).jsonrpc = '2.0';
    const headers = new Headers({
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    });
    for (const [k, v] of Object.entries(requestHeaders(body, MODERN))) headers.set(k, v);
    for (const [k, v] of Object.entries(options?.context?.headers ?? {})) headers.set(k, v);
    const res = await fetch(mcpUrl, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      signal: options?.signal ?? null,
    });
    const reply = (await res.json()) as Wire;
    return reply.error ? { kind: 'error', error: reply.error } : { kind: 'result', result: reply.result };
  };
}

async function connect(mcpUrl: string): Promise<{ client: Client; session: TaskEnabledSession }> {
  const client = new Client(
    { name: 'ext-tasks-test', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: MODERN } } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl)));
  const session = createTaskSessionFromClient(client, {
    endpointId: ENDPOINT,
    rawDispatch: rawDispatch(mcpUrl),
    v2RequestFraming: {
      protocolVersion: MODERN,
      clientInfo: { name: 'ext-tasks-test', version: '1.0.0' },
      clientCapabilities: {},
    },
    onInputRequest: createApplicationInputHandler({
      elicitation: async () => ({ action: 'accept', content: { confirm: true } }),
      sampling: async () => {
        throw new Error('no sampling in this test');
      },
      roots: async () => {
        throw new Error('no roots in this test');
      },
    }),
  });
  return { client, session };
}

const textOf = (result: unknown) => (result as { content: { text: string }[] }).content[0]!.text;

describe('ext-tasks (official 2026-07-28 requester) against taskplane host', () => {
  it('runs a tool as a task, answers its input, cancels one, and resumes one after the host was SIGKILLed', async () => {
    const first = await spawnHost(['--port', '0', ...HOST_ARGS, ...AGENT]);
    procs.push(first.proc);
    const a = await connect(`${first.url}/mcp`);
    expect(a.session.capabilities.execution).toBe(true);

    // A tool as a task, settled through polling.
    const slow = await a.session.callTool(
      'slow_compute',
      { seconds: 0.3, label: 'ext' },
      { task: { preference: 'require' } },
    );
    expect(slow.kind).toBe('task');
    const settled = await slow.settle();
    expect(textOf(resultFromTaskOutcome(settled.outcome))).toBe('Computed ext after 0.3s');

    // Input: the task goes input_required, the handler answers through tasks/update.
    const confirm = await a.session.callTool('confirm_delete', { filename: 'notes.txt' });
    expect(confirm.kind).toBe('task');
    expect(textOf(resultFromTaskOutcome((await confirm.settle()).outcome))).toBe('Deleted notes.txt');

    // A tool error is a completed task with isError; a protocol error a failed one.
    const failing = await a.session.callTool('failing_job', {});
    expect(resultFromTaskOutcome((await failing.settle()).outcome)).toMatchObject({ isError: true });
    const protocol = await a.session.callTool('protocol_error_job', {});
    const failed = (await protocol.settle()).outcome;
    expect(failed.status).toBe('failed');

    // Cancel.
    const long = await a.session.callTool('slow_compute', { seconds: 60 });
    expect(long.kind).toBe('task');
    await long.cancel();
    expect((await long.settle()).outcome.status).toBe('cancelled');

    // Hand a running task off, kill the host hard, restart it on the same database, resume.
    const survivor = await a.session.callTool('slow_compute', { seconds: 2, label: 'survivor' });
    if (survivor.kind !== 'task') throw new Error('expected a task');
    let reference: SerializedTaskReference | undefined;
    await survivor.handoff((ref) => {
      reference = ref;
    });
    await a.session.close();
    await first.proc.kill('SIGKILL');

    const second = await spawnHost(['--port', '0', ...HOST_ARGS, ...AGENT]);
    procs.push(second.proc);
    // The restarted host took the task back and ran the (resumable) tool again.
    expect((await second.proc.waitForLine(/recovered:.*/))[0]).toMatch(/recovered:\s+1 resumed/);
    const b = await connect(`${second.url}/mcp`);
    const resumed = await b.session.resumeTask(reference!);
    const outcome = (await resumed.settle()).outcome;
    expect(textOf(resultFromTaskOutcome(outcome))).toBe('Computed survivor after 2s');
    await b.session.close();
  });
});
