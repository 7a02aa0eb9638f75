import {
  Agent,
  createServer,
  request,
  type ClientRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type RequestOptions,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { A2AError } from '../../../src/protocols/a2a/errors.ts';
import type { CallContext, HeaderReader, StreamItem } from '../../../src/protocols/a2a/handler.ts';
import type { Task } from '../../../src/protocols/a2a/types.ts';

/** What the adapter tests of both bindings (jsonrpc-node, rest-node) share: stubs and raw requests. */

export const TASK = { id: 't1', contextId: 'c1', status: { state: 'TASK_STATE_WORKING' } } as unknown as Task;
export const item = (id: string, payload: object = { task: TASK }) => ({ id, payload }) as StreamItem;

/**
 * Yields `first`, then nothing until the client goes away (a subscription to an idle task): like the
 * host's streams it ends on the call's signal, since a wrapping generator's `return()` waits for a yield.
 */
export function idleStream(
  first: StreamItem[],
  signal: AbortSignal,
  onEnd: () => void,
): AsyncIterable<StreamItem[]> {
  return (async function* () {
    yield first;
    await new Promise<void>((r) => signal.addEventListener('abort', () => r()));
    onEnd();
  })();
}

/** Three frames in two batches, then an error mid-stream (sent as a final error event). */
export function streamEndingInError(): AsyncIterable<StreamItem[]> {
  return (async function* () {
    yield [item('1')];
    yield [item('2', { statusUpdate: { taskId: 't1' } }), item('3', { statusUpdate: { taskId: 't1' } })];
    throw new A2AError('TaskNotFoundError', 'gone mid-stream');
  })();
}

/** Never resolves; rejects with the signal's reason when the client goes away. */
export function untilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
}

/** The calls that reached a stub handler, and the streams it released. */
export class CallLog {
  contexts: CallContext[] = [];
  released = 0;
  private waiters: Array<() => boolean> = [];

  /** Resolves once a call has reached the handler `n` times in all. */
  called(n: number): Promise<void> {
    if (this.contexts.length >= n) return Promise.resolve();
    return new Promise((r) =>
      this.waiters.push(() => {
        if (this.contexts.length < n) return false;
        r();
        return true;
      }),
    );
  }

  /** A stub's stream was released (its client went away). */
  release(): void {
    this.released++;
    this.waiters = this.waiters.filter((w) => !w());
  }

  /** Resolves once a stream has been released. */
  releasedOne(): Promise<void> {
    if (this.released > 0) return Promise.resolve();
    return new Promise((r) =>
      this.waiters.push(() => {
        if (this.released === 0) return false;
        r();
        return true;
      }),
    );
  }

  protected seen(ctx: CallContext): void {
    this.contexts.push(ctx);
    this.waiters = this.waiters.filter((w) => !w());
  }
}

export function authenticate(headers: HeaderReader): string {
  const a = headers.get('Authorization'); // mixed case on purpose: Headers.get is case-insensitive
  if (a === 'Bearer nope') throw new A2AError('UnauthenticatedError');
  return a ? 'alice' : 'anonymous';
}

export interface Raw {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  reusedSocket: boolean;
}

/** A URL, or a port on 127.0.0.1 and a request target sent as it is (the client does not normalize it). */
export type Target = string | { port: number; path: string };

function open(
  target: Target,
  options: RequestOptions,
  onResponse: (res: IncomingMessage) => void,
): ClientRequest {
  return typeof target === 'string'
    ? request(target, options, onResponse)
    : request({ host: '127.0.0.1', ...target, ...options }, onResponse);
}

/** One request over a real socket; `chunks` are written one by one (chunked when no length is set). */
export function sendRaw(
  target: Target,
  method: string,
  headers: Record<string, string>,
  chunks: string[],
  agent?: Agent,
): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = open(target, { method, headers, ...(agent ? { agent } : {}) }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () =>
        resolve({ status: res.statusCode!, headers: res.headers, body, reusedSocket: req.reusedSocket }),
      );
    });
    req.on('error', reject);
    for (const c of chunks) req.write(c);
    req.end();
  });
}

/** The response of a request whose body is `body`, as soon as its head arrives (an SSE stream). */
export function openStream(
  target: Target,
  method: string,
  headers: Record<string, string>,
  body?: string,
): Promise<IncomingMessage> {
  return new Promise<IncomingMessage>((resolve, reject) => {
    const req = open(target, { method, headers }, resolve);
    req.on('error', reject);
    req.end(body);
  });
}

/** `nextChunk(n)` resolves with the n-th chunk of a response body, as the socket delivered it. */
export function chunksOf(res: IncomingMessage): (n: number) => Promise<string> {
  const chunks: string[] = [];
  let onChunk: (() => void) | undefined;
  res.setEncoding('utf8');
  res.on('data', (c: string) => {
    chunks.push(c);
    onChunk?.();
  });
  return (n) =>
    new Promise<string>((r) => {
      if (chunks.length >= n) return r(chunks[n - 1]!);
      onChunk = () => chunks.length >= n && r(chunks[n - 1]!);
    });
}

/** `text` in pieces of `size` characters, to send as a chunked body. */
export function chunked(text: string, size = 10_000): string[] {
  return text.match(new RegExp(`[\\s\\S]{1,${size}}`, 'g')) ?? [];
}

/** Servers and keep-alive agents a test file opens, closed together after each test. */
export class Sockets {
  private readonly servers: Server[] = [];
  private readonly agents: Agent[] = [];

  /** Listens on a free loopback port; returns it. */
  async listen(listener: (req: IncomingMessage, res: ServerResponse) => void): Promise<number> {
    const server = createServer(listener);
    this.servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    return (server.address() as AddressInfo).port;
  }

  /** One socket, kept alive: the next request shows whether the server left the connection usable. */
  keepAliveAgent(): Agent {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    this.agents.push(agent);
    return agent;
  }

  async closeAll(): Promise<void> {
    for (const a of this.agents.splice(0)) a.destroy();
    for (const s of this.servers.splice(0)) {
      s.closeAllConnections();
      await new Promise<void>((r) => s.close(() => r()));
    }
  }
}
