import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentExecutor } from '@a2a-js/sdk/server';
import { A2AConnector } from '../../src/connectors/a2a/a2a-connector.ts';
import type { RemoteSnapshot } from '../../src/connectors/connector.ts';
import { startHost, type RunningHost } from '../../src/host/start-host.ts';
import {
  publishStatus,
  publishSubmitted,
  startSdkA2APeer,
  type SdkA2APeer,
} from '../support/sdk-a2a-peer.ts';

/**
 * The A2A connector promises `abortEndsStreams`: a read of its streams that is waiting for the agent's
 * next frame settles when the signal aborts, and a stream opened with a signal already aborted never
 * waits at all. The plane then reads its streams without racing each read against the signal, so a
 * broken promise here would hold the plane's stop() for as long as the agent stays silent. Proven on all
 * three bindings against our own host and the official @a2a-js/sdk server, each with a task that stays
 * silent once it is working. A read that hangs fails the test at its own timeout.
 */
const HANG_MS = 10_000;
let host: RunningHost;
let sdk: SdkA2APeer;
/** Resolves the SDK executor's silent tasks at the end, so the server can shut down. */
const release: Array<() => void> = [];

/** Works, then stays silent until released. */
const silentExecutor: AgentExecutor = {
  async execute(ctx, bus) {
    publishSubmitted(ctx, bus);
    publishStatus(ctx, bus, 'TASK_STATE_WORKING');
    await new Promise<void>((r) => release.push(r));
    bus.finished();
  },
  async cancelTask(_taskId, bus) {
    bus.finished();
  },
};

beforeAll(async () => {
  host = await startHost({ port: 0, grpcPort: 0, db: 'memory:', logger: pino({ level: 'silent' }) });
  sdk = await startSdkA2APeer({ name: 'silent sdk peer', executor: silentExecutor });
});

afterAll(async () => {
  for (const r of release.splice(0)) r();
  await sdk?.close();
  await host?.close();
});

/** Our host's demo agent: working, then its one step an hour later. */
const SILENT_DEMO = { durationMs: 3_600_000, steps: 1 };

const peers = [
  { name: 'taskplane host', base: () => host.url, input: SILENT_DEMO },
  { name: 'official SDK server', base: () => sdk.base, input: 'go' },
];

let n = 0;
const request = (input: unknown) => ({
  envelopeId: `e${++n}`,
  messageId: `abort-${process.pid}-${n}`,
  contextId: null,
  input,
});

/** Reads until the task is working: the agent then sends nothing more. */
async function untilWorking(it: AsyncIterator<RemoteSnapshot>): Promise<RemoteSnapshot> {
  for (;;) {
    const r = await it.next();
    if (r.done) throw new Error('the stream ended before the task was working');
    if (r.value.state === 'running') return r.value;
  }
}

for (const peer of peers)
  for (const binding of ['JSONRPC', 'HTTP+JSON', 'GRPC'] as const)
    describe(`A2A streams end on abort: ${peer.name} over ${binding}`, () => {
      const connect = () =>
        A2AConnector.connect({ target: 'silent', baseUrl: peer.base(), preferBinding: binding });

      it(
        'a streaming start waiting for the next frame ends when its signal aborts',
        async () => {
          const c = await connect();
          expect(c.transport.binding).toBe(binding);
          expect(c.abortEndsStreams).toBe(true);
          const cut = new AbortController();
          const it = c.startStream!(request(peer.input), cut.signal)[Symbol.asyncIterator]();
          const working = await untilWorking(it);
          const waiting = it.next();
          cut.abort(new Error('stopping'));
          await expect(waiting).rejects.toBeTruthy();
          // The task itself goes on at the agent: aborting a read is not a cancel.
          expect((await c.get(working.remoteId, new AbortController().signal)).state).toBe('running');
        },
        HANG_MS,
      );

      it(
        'a subscription waiting for the next frame ends when its signal aborts',
        async () => {
          const c = await connect();
          const started = await c.start(request(peer.input), new AbortController().signal);
          const cut = new AbortController();
          const it = c.observe!(started.remoteId, null, cut.signal)[Symbol.asyncIterator]();
          await untilWorking(it);
          const waiting = it.next();
          cut.abort(new Error('stopping'));
          await expect(waiting).rejects.toBeTruthy();
        },
        HANG_MS,
      );

      it(
        'a stream opened with a signal already aborted never waits for the agent',
        async () => {
          const c = await connect();
          const started = await c.start(request(peer.input), new AbortController().signal);
          const aborted = AbortSignal.abort(new Error('stopped before it opened'));
          await expect(
            c.observe!(started.remoteId, null, aborted)[Symbol.asyncIterator]().next(),
          ).rejects.toBeTruthy();
          await expect(
            c.startStream!(request(peer.input), aborted)[Symbol.asyncIterator]().next(),
          ).rejects.toBeTruthy();
        },
        HANG_MS,
      );
    });
