import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { listenLoopback, WireProxy } from '../../src/conformance/wire-proxy.ts';

// The proxy's stream faults are what the conformance rows' verdicts rest on: a cut "after one frame" must hand
// that frame to the engine, or the row tests a different failure (a stream that never answered) than it names.

const frame = (state: string) =>
  `data: ${JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    result: { statusUpdate: { taskId: 't1', contextId: 'c1', status: { state: state } } },
  })}\n\n`;

/** An agent answering every request with these frames, written at once (one chunk on loopback). */
async function agentWriting(frames: string[]) {
  return listenLoopback(async (req, res) => {
    for await (const _ of req);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(frames.join(''));
  });
}

/** What the engine's side of the proxy receives before the connection ends, and how it ended. */
function streamThrough(url: string): Promise<{ body: string; complete: boolean }> {
  return new Promise((resolve) => {
    let body = '';
    const req = http.request(
      url + '/',
      { method: 'POST', headers: { 'content-type': 'application/json' } },
      (res) => {
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('error', () => {});
        res.on('close', () => resolve({ body, complete: res.complete }));
      },
    );
    req.on('error', () => resolve({ body, complete: false }));
    req.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendStreamingMessage', params: {} }));
  });
}

const open: { close(): unknown }[] = [];
afterEach(async () => {
  for (const o of open.splice(0)) await o.close();
});

describe('WireProxy stream faults', () => {
  it('cut-stream after one frame passes that frame on, then cuts the stream', async () => {
    const agent = await agentWriting([frame('TASK_STATE_SUBMITTED'), frame('TASK_STATE_WORKING')]);
    open.push(agent.server);
    const proxy = await WireProxy.start(agent.url);
    open.push(proxy);
    proxy.arm({ kind: 'cut-stream', afterFrames: 1, match: () => true });
    const got = await streamThrough(proxy.url);
    expect(got.body).toBe(frame('TASK_STATE_SUBMITTED'));
    expect(got.complete).toBe(false);
    expect(proxy.calls[0]).toMatchObject({ fault: 'cut-stream', frames: 1 });
  });

  it('cut-before-terminal passes on the frames before the final one', async () => {
    const agent = await agentWriting([frame('TASK_STATE_WORKING'), frame('TASK_STATE_COMPLETED')]);
    open.push(agent.server);
    const proxy = await WireProxy.start(agent.url);
    open.push(proxy);
    proxy.arm({ kind: 'cut-before-terminal', match: () => true });
    const got = await streamThrough(proxy.url);
    expect(got.body).toBe(frame('TASK_STATE_WORKING'));
    expect(got.complete).toBe(false);
    expect(proxy.calls[0]).toMatchObject({ fault: 'cut-before-terminal', frames: 1 });
  });

  it('lose-response passes on nothing of an answered stream', async () => {
    const agent = await agentWriting([frame('TASK_STATE_WORKING')]);
    open.push(agent.server);
    const proxy = await WireProxy.start(agent.url);
    open.push(proxy);
    proxy.arm({ kind: 'lose-response', match: () => true });
    const got = await streamThrough(proxy.url);
    expect(got).toEqual({ body: '', complete: false });
    expect(proxy.calls[0]).toMatchObject({ fault: 'lose-response', frames: 0 });
  });
});
