import http from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import {
  A2A_WIRE,
  type RequestFacts,
  type StateFact,
  type UsageFact,
  type WireDialect,
} from './wire-facts.ts';

/**
 * The loopback proxy between the engine and the agent under test. It forwards every HTTP request to
 * the agent, counts it, reads what it names and what the agent answered (wire-facts.ts), and injects
 * the faults a row arms:
 *
 * - `drop-before`: the connection is cut before the request reaches the agent (nothing was done);
 * - `lose-response`: the request reaches the agent, which answers (and so acted on it), and the
 *   connection is cut before any of the answer reaches the engine;
 * - `cut-stream`: an event stream is cut after `afterFrames` frames were passed on;
 * - `cut-before-terminal`: an event stream is cut just before the frame carrying a terminal state;
 * - `duplicate-frame`: a stream frame matching `frameState` is passed on twice.
 *
 * The agent card is rewritten so its interface URLs name the proxy (interfaces on the card's own
 * origin; others are reported and not proxied). While `blackhole` is on, every request is cut before
 * it reaches the agent (a client that lost its network).
 */
export type WireFaultKind =
  'drop-before' | 'lose-response' | 'cut-stream' | 'cut-before-terminal' | 'duplicate-frame';

export interface WireFault {
  kind: WireFaultKind;
  /** Which request it applies to. */
  match: (call: RequestFacts) => boolean;
  /** For `cut-stream`: frames passed on before the cut. @default 1 */
  afterFrames?: number;
  /** For `duplicate-frame`: the A2A state of the frame to repeat. */
  frameState?: string;
  /** How many requests it applies to. @default 1 */
  times?: number;
  /** Called when it fires, with the request it hit. */
  onFired?: (call: WireCall) => void;
}

/** One request seen by the proxy, with what the agent answered. */
export interface WireCall extends RequestFacts {
  seq: number;
  at: number;
  httpMethod: string;
  path: string;
  /** The fault injected on it, if any. */
  fault: WireFaultKind | null;
  /** HTTP status the agent answered (null when the request never reached it or it did not answer). */
  status: number | null;
  /** Task states the agent reported in the answer (all frames of a stream). */
  states: StateFact[];
  /** Usage the agent reported in the answer (all frames of a stream). */
  usage: UsageFact[];
  /** Stream frames passed on to the engine. */
  frames: number;
}

const MAX_BODY_BYTES = 4 * 1024 * 1024;

interface ArmedFault extends WireFault {
  left: number;
}

export class WireProxy {
  readonly calls: WireCall[] = [];
  /** Card interfaces left unproxied because they are on another origin. */
  readonly unproxied: string[] = [];
  blackhole = false;
  private readonly faults: ArmedFault[] = [];
  private readonly listeners = new Set<(call: WireCall) => void>();
  private readonly sockets = new Set<import('node:net').Socket>();

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
    readonly upstream: URL,
    private readonly wire: WireDialect,
    private readonly now: () => number,
  ) {}

  static async start(
    target: string,
    wire: WireDialect = A2A_WIRE,
    now: () => number = Date.now,
  ): Promise<WireProxy> {
    const holder: { proxy?: WireProxy } = {};
    const { server, url } = await listenLoopback((req, res) => holder.proxy?.handle(req, res));
    holder.proxy = new WireProxy(server, url, new URL(target), wire, now);
    server.on('connection', (s) => {
      holder.proxy!.sockets.add(s);
      s.on('close', () => holder.proxy!.sockets.delete(s));
    });
    return holder.proxy;
  }

  arm(fault: WireFault): void {
    this.faults.push({ ...fault, left: fault.times ?? 1 });
  }

  disarmAll(): void {
    this.faults.length = 0;
  }

  /** Every call so far and each new one as it completes. */
  onCall(listener: (call: WireCall) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Cuts every open connection (streams included). */
  dropAll(): void {
    for (const s of this.sockets) s.destroy();
  }

  async close(): Promise<void> {
    this.dropAll();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  private take(facts: RequestFacts): ArmedFault | null {
    const i = this.faults.findIndex((f) => f.match(facts));
    if (i < 0) return null;
    const f = this.faults[i]!;
    // A cut before a final state waits for the answer that carries one; it is used up when it fires.
    if (f.kind !== 'cut-before-terminal' && --f.left <= 0) this.faults.splice(i, 1);
    return f;
  }

  private fired(fault: ArmedFault, call: WireCall): void {
    if (fault.kind === 'cut-before-terminal') {
      const i = this.faults.indexOf(fault);
      if (i >= 0 && --fault.left <= 0) this.faults.splice(i, 1);
    }
    call.fault = fault.kind;
    fault.onFired?.(call);
  }

  private finish(call: WireCall): void {
    for (const l of this.listeners) l(call);
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const body = await readBounded(req, MAX_BODY_BYTES).catch(() => null);
    if (!body) return void req.socket.destroy();
    const path = req.url ?? '/';
    const httpMethod = req.method ?? 'GET';
    const facts = this.wire.requestFacts(httpMethod, path, body.toString('utf8'));
    const call: WireCall = {
      ...facts,
      seq: this.calls.length + 1,
      at: this.now(),
      httpMethod,
      path,
      fault: null,
      status: null,
      states: [],
      usage: [],
      frames: 0,
    };
    this.calls.push(call);
    if (this.blackhole) {
      call.fault = 'drop-before';
      req.socket.destroy();
      return this.finish(call);
    }
    const fault = this.take(facts);
    if (fault?.kind === 'drop-before') {
      req.socket.destroy();
      this.fired(fault, call);
      return this.finish(call);
    }
    const upstream = await this.forward(req, res, body, path).catch(() => null);
    if (!upstream) {
      res.destroy();
      return this.finish(call);
    }
    call.status = upstream.statusCode ?? null;
    const type = String(upstream.headers['content-type'] ?? '');
    if (type.startsWith('text/event-stream')) return this.relayStream(call, fault, upstream, res);
    const answer = await readBounded(upstream, MAX_BODY_BYTES).catch(() => null);
    if (answer === null) {
      res.destroy();
      return this.finish(call);
    }
    call.states = this.wire.states(answer.toString('utf8'));
    call.usage = this.wire.usage(answer.toString('utf8'));
    if (
      fault &&
      (fault.kind === 'lose-response' ||
        (fault.kind === 'cut-before-terminal' && call.states.some((st) => this.wire.isTerminal(st.state))))
    ) {
      res.socket?.destroy();
      this.fired(fault, call);
      return this.finish(call);
    }
    const out = facts.method === 'card' ? this.rewriteCard(answer) : answer;
    const headers = { ...upstream.headers };
    delete headers['content-length'];
    delete headers['transfer-encoding'];
    res.writeHead(upstream.statusCode ?? 502, { ...headers, 'content-length': String(out.length) });
    res.end(out);
    this.finish(call);
  }

  private forward(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    body: Buffer,
    path: string,
  ): Promise<http.IncomingMessage> {
    const headers = { ...req.headers, host: this.upstream.host };
    delete headers['content-length'];
    return new Promise((resolve, reject) => {
      const up = http.request(
        {
          host: this.upstream.hostname,
          port: this.upstream.port || 80,
          method: req.method,
          path,
          headers: { ...headers, 'content-length': String(body.length) },
        },
        resolve,
      );
      up.on('error', reject);
      // The engine hung up (it gave up, or a fault cut it): the agent's side goes too. (Once the answer is
      // complete this destroys a finished request: harmless.)
      res.once('close', () => up.destroy());
      up.end(body);
    });
  }

  /** Passes an event stream on frame by frame (frames end at a blank line), applying the stream faults. */
  private relayStream(
    call: WireCall,
    fault: ArmedFault | null,
    upstream: http.IncomingMessage,
    res: http.ServerResponse,
  ): Promise<void> {
    const cut = () => {
      upstream.destroy();
      // A response's writes wait in the socket until the next tick: destroying it now would drop the
      // frames passed on in this tick (for a cut after the first frame, the whole answer). Close it once
      // they are out.
      const socket = res.socket;
      if (socket && res.headersSent) socket.end(() => socket.destroy());
      else socket?.destroy();
      if (fault) this.fired(fault, call);
    };
    if (fault?.kind !== 'lose-response') res.writeHead(upstream.statusCode ?? 200, upstream.headers);
    let pending = '';
    let done = false;
    return new Promise<void>((resolve) => {
      const end = () => {
        if (done) return;
        done = true;
        this.finish(call);
        resolve();
      };
      upstream.setEncoding('utf8');
      upstream.on('data', (chunk: string) => {
        if (done) return;
        pending += chunk.replace(/\r\n/g, '\n');
        let at: number;
        while (!done && (at = pending.indexOf('\n\n')) >= 0) {
          const frame = pending.slice(0, at + 2);
          pending = pending.slice(at + 2);
          const data = frame
            .split('\n')
            .filter((l) => l.startsWith('data:'))
            .map((l) => l.slice(5).trimStart())
            .join('\n');
          const states = data ? this.wire.states(data) : [];
          call.states.push(...states);
          if (data) call.usage.push(...this.wire.usage(data));
          if (fault?.kind === 'lose-response') {
            cut();
            return end();
          }
          if (fault?.kind === 'cut-before-terminal' && states.some((s) => this.wire.isTerminal(s.state))) {
            cut();
            return end();
          }
          res.write(frame);
          call.frames++;
          if (fault?.kind === 'duplicate-frame' && states.some((s) => s.state === fault.frameState)) {
            res.write(frame);
            this.fired(fault, call);
          }
          if (fault?.kind === 'cut-stream' && call.frames >= (fault.afterFrames ?? 1)) {
            cut();
            return end();
          }
        }
      });
      upstream.on('end', () => {
        if (!done) res.end();
        end();
      });
      upstream.on('error', () => {
        res.destroy();
        end();
      });
      res.on('close', () => {
        upstream.destroy();
        end();
      });
    });
  }

  private rewriteCard(body: Buffer): Buffer {
    let card: Record<string, unknown>;
    try {
      card = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
    } catch {
      return body;
    }
    const rewrite = (u: unknown): unknown => {
      if (typeof u !== 'string') return u;
      try {
        const parsed = new URL(u);
        if (parsed.origin !== this.upstream.origin) {
          if (!this.unproxied.includes(u)) this.unproxied.push(u);
          return u;
        }
        return this.url + parsed.pathname + parsed.search;
      } catch {
        return u;
      }
    };
    for (const key of ['supportedInterfaces', 'supported_interfaces', 'additionalInterfaces']) {
      const list = card[key];
      if (Array.isArray(list))
        for (const i of list)
          if (i && typeof i === 'object')
            (i as { url?: unknown }).url = rewrite((i as { url?: unknown }).url);
    }
    if ('url' in card) card.url = rewrite(card.url);
    return Buffer.from(JSON.stringify(card));
  }
}

/**
 * An HTTP server on an ephemeral loopback port; `handle` undefined (its owner not built yet) or failing
 * cuts the connection.
 */
export async function listenLoopback(
  handle: (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void> | undefined,
): Promise<{ server: http.Server; url: string }> {
  const server = http.createServer((req, res) => {
    const handled = handle(req, res);
    if (!handled) return void res.destroy();
    handled.catch(() => res.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** A whole request or answer body, refused past `maxBytes` (the proxy and the relay hold bodies whole). */
export async function readBounded(stream: http.IncomingMessage, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of stream as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > maxBytes) throw new Error(`body over ${maxBytes} bytes`);
    chunks.push(c);
  }
  return Buffer.concat(chunks);
}
