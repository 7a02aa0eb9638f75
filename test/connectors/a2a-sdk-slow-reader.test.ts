import { existsSync, readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskArtifactUpdateEvent } from '@a2a-js/sdk';
import { AgentEvent, type AgentExecutor } from '@a2a-js/sdk/server';
import { A2AConnector } from '../../src/connectors/a2a/a2a-connector.ts';
import { READ_AHEAD, READ_AHEAD_BYTES } from '../../src/connectors/sse-reader.ts';
import {
  publishStatus,
  publishSubmitted,
  startSdkA2APeer,
  type SdkA2APeer,
} from '../support/sdk-a2a-peer.ts';

/**
 * A reader slower than its agent, against the official @a2a-js/sdk server: the plane's streams read a
 * node:http body from its events and pause it once READ_AHEAD frames wait (src/connectors/sse-reader.ts),
 * so what the agent sends beyond that waits in the sockets, not in the plane's memory. The agent here
 * writes its whole stream (about 4 MB) at once; the reader stalls after the first chunk. While it stalls,
 * Linux's socket table (/proc/net/tcp) says how much of what the server wrote still sits in the two
 * kernels' queues: the rest is what the plane took off its socket, and it must stay within the read-ahead.
 * Then the reader goes on and must get every frame, in order.
 */
const STALL_MS = 300;
/**
 * The stream's shape (about 4 MB either way): many frames, where the read-ahead's count of frames binds,
 * or a few large ones, where its bytes do.
 */
const SHAPES = [
  { chunks: 250, text: 'x'.repeat(16_000) },
  { chunks: 60, text: 'x'.repeat(64_000) },
];
let shape = SHAPES[0]!;

let peer: SdkA2APeer;
/** The event-stream request in flight: its connection, and the bytes its response has written. */
let stream: { socket: Socket; written: number } | null = null;

const executor: AgentExecutor = {
  async execute(ctx, bus) {
    publishSubmitted(ctx, bus);
    publishStatus(ctx, bus, 'TASK_STATE_WORKING');
    const { chunks, text } = shape;
    for (let i = 0; i < chunks; i++)
      bus.publish(
        AgentEvent.artifactUpdate(
          TaskArtifactUpdateEvent.fromJSON({
            taskId: ctx.taskId,
            contextId: ctx.contextId,
            artifact: { artifactId: 'out', parts: [{ text: `${i}:${text}` }] },
            append: i > 0,
            lastChunk: i === chunks - 1,
          }),
        ),
      );
    publishStatus(ctx, bus, 'TASK_STATE_COMPLETED');
    bus.finished();
  },
  async cancelTask(_taskId, bus) {
    bus.finished();
  },
};

beforeAll(async () => {
  peer = await startSdkA2APeer({
    name: 'sdk peer, fast writer',
    executor,
    before: (req, res, next) => {
      if (req.headers.accept?.includes('text/event-stream')) {
        const s = (stream = { socket: req.socket, written: 0 });
        const write = res.write.bind(res) as (chunk: unknown, ...rest: unknown[]) => boolean;
        res.write = ((chunk: unknown, ...rest: unknown[]) => {
          s.written += typeof chunk === 'string' ? Buffer.byteLength(chunk) : (chunk as Buffer).byteLength;
          return write(chunk, ...rest);
        }) as typeof res.write;
      }
      next();
    },
  });
});

afterAll(async () => {
  await peer?.close();
});

/** Bytes waiting in the kernel's send (tx) and receive (rx) queues of the TCP socket from `local` to `remote`. */
function kernelQueues(local: number, remote: number): { tx: number; rx: number } {
  const hex = (port: number) => `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f[1] === hex(local) && f[2] === hex(remote)) {
      const [tx, rx] = f[4]!.split(':').map((q) => parseInt(q, 16));
      return { tx: tx!, rx: rx! };
    }
  }
  throw new Error(`no socket 127.0.0.1:${local} -> 127.0.0.1:${remote} in /proc/net/tcp`);
}

for (const binding of ['JSONRPC', 'HTTP+JSON'] as const)
  describe(`a slow reader of the official SDK server over ${binding}`, () => {
    it.runIf(existsSync('/proc/net/tcp')).each(SHAPES)(
      'takes off its socket no more than its read-ahead while it stalls, then gets every frame in order ($chunks frames)',
      async (s) => {
        shape = s;
        const c = await A2AConnector.connect({ target: 'peer', baseUrl: peer.base, preferBinding: binding });
        stream = null;
        const received: number[] = [];
        let last: string | undefined;
        let taken: number | undefined;
        for await (const snap of c.startStream!(
          { envelopeId: 'e1', messageId: `slow-${binding}-${Date.now()}`, contextId: null, input: 'go' },
          new AbortController().signal,
        )) {
          const part = snap.artifacts?.at(-1)?.parts?.at(-1);
          const n = part && 'text' in part ? Number(part.text.split(':')[0]) : NaN;
          if (Number.isInteger(n) && n !== received.at(-1)) received.push(n);
          last = snap.state;
          if (received.length === 1 && taken === undefined) {
            await new Promise((r) => setTimeout(r, STALL_MS));
            const { socket, written } = stream!;
            const server = kernelQueues(socket.localPort!, socket.remotePort!);
            const client = kernelQueues(socket.remotePort!, socket.localPort!);
            // Everything the server wrote, less what is still queued on either side: what the plane read.
            taken = written - socket.writableLength - server.tx - client.rx;
          }
          await new Promise((r) => setImmediate(r));
          if (snap.state === 'succeeded') break;
        }
        expect(last).toBe('succeeded');
        expect(received).toEqual(Array.from({ length: s.chunks }, (_, i) => i));
        // The frames parsed ahead (64, or 1 MiB of them) and the one read, plus what a paused socket still
        // reads before it stops (the chunk that filled the read-ahead and one more, 64 KiB each at most).
        // Without the pause the plane takes the whole stream (about 4 MB) off its socket.
        const frameBytes = stream!.written / s.chunks;
        const readAhead = Math.min(READ_AHEAD * frameBytes, READ_AHEAD_BYTES);
        expect(taken).toBeGreaterThan(0);
        expect(taken).toBeLessThan(readAhead + 2 * frameBytes + 256 * 1024);
      },
    );
  });
