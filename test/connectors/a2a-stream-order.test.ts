import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { A2AConnector } from '../../src/connectors/a2a/a2a-connector.ts';
import type { RemoteSnapshot } from '../../src/connectors/connector.ts';
import { decideTransition, type StateRecord } from '../../src/core/states.ts';
import { setStatus, toIso } from '../../src/host/task-model.ts';
import type { Task } from '../../src/protocols/a2a/types.ts';

/**
 * A2A orders a task's states only by millisecond status timestamps. An agent that changes state twice
 * within one millisecond (WORKING, then INPUT_REQUIRED at once) sends two frames with one timestamp;
 * the stream's own order must still decide, or the second state is dropped as stale and the job is left
 * `running` while the agent waits for input.
 */
const servers: http.Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** A bare JSON-RPC A2A agent whose SendStreamingMessage sends WORKING and INPUT_REQUIRED at one instant. */
async function sameInstantAgent(): Promise<string> {
  const at = '2026-12-01T09:00:00.123Z';
  const server = http.createServer((req, res) => {
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    if (req.url === '/.well-known/agent-card.json') {
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          name: 'same instant',
          description: 'two states in one millisecond',
          version: '1',
          capabilities: { streaming: true },
          supportedInterfaces: [{ url: `${base}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
          defaultInputModes: ['text/plain'],
          defaultOutputModes: ['text/plain'],
          skills: [],
        }),
      );
      return;
    }
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const { id } = JSON.parse(body) as { id: number };
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const frame = (result: unknown) =>
        res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id, result })}\n\n`);
      frame({ task: { id: 't1', contextId: 'c1', status: { state: 'TASK_STATE_WORKING', timestamp: at } } });
      frame({
        statusUpdate: {
          taskId: 't1',
          contextId: 'c1',
          status: { state: 'TASK_STATE_INPUT_REQUIRED', timestamp: at },
        },
      });
      res.end();
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('two states within one millisecond', () => {
  it('the stream order decides: the later frame is applied, so the job waits for input', async () => {
    const connector = await A2AConnector.connect({ target: 't', baseUrl: await sameInstantAgent() });
    const snaps: RemoteSnapshot[] = [];
    for await (const s of connector.startStream!(
      { envelopeId: 'e', messageId: 'm', contextId: 'c1', input: 'go' },
      new AbortController().signal,
    ))
      snaps.push(s);
    expect(snaps.map((s) => s.state)).toEqual(['running', 'waiting_for_input']);
    // Through the one forward-only rule, as observe applies them.
    let record: StateRecord = { state: 'accepted', nativeState: null, remoteVersion: null };
    for (const s of snaps) {
      const d = decideTransition(record, s);
      if (d.apply) record = d.next;
    }
    expect(record.state).toBe('waiting_for_input');
    // A later GetTask of the same status carries the plain timestamp: older, so it changes nothing.
    const again = decideTransition(record, { ...snaps[1]!, remoteVersion: snaps[0]!.remoteVersion });
    expect(again.apply).toBe(false);
  });

  it('our host never gives two statuses of one task the same timestamp', () => {
    const task: Task = {
      id: 't1',
      contextId: 'c1',
      status: { state: 'TASK_STATE_SUBMITTED', timestamp: toIso(1_000) },
    };
    setStatus(task, 'TASK_STATE_WORKING', 1_000);
    const first = Date.parse(task.status.timestamp!);
    setStatus(task, 'TASK_STATE_INPUT_REQUIRED', 1_000);
    expect(Date.parse(task.status.timestamp!)).toBeGreaterThan(first);
  });
});
