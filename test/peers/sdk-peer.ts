import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { AgentCard, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent } from '@a2a-js/sdk';
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryTaskStore,
  type AgentExecutor,
  type ExecutionEventBus,
} from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';

/**
 * Fault-injecting A2A agents built on the official @a2a-js/sdk server (not on our host), for tests that
 * check the plane against an independent implementation. One peer is one express app whose A2A routes
 * are the SDK's own handlers; what the tests change is around them:
 *
 * - the card: `streaming` and `pushNotifications` as asked, served by the SDK's card handler with its
 *   Cache-Control/ETag, replaced by `redeploy()`;
 * - `redeploy()`: the agent moves to another binding or path (same task store, so its tasks survive, as
 *   with a real redeploy behind a persistent store); the old routes answer what a proxy or web server
 *   answers for a path it does not serve: an HTML 404 page or a gateway's JSON 404;
 * - `startDelayMs`: SendMessage / SendStreamingMessage answer only after this long (the executor
 *   publishes the task late), so a cancel or a timeout can land while the start is in flight;
 * - `garbleFirstStart`: the first start request is handled by the SDK as any other (its task is
 *   created), but what comes back to the client is not what the SDK said (see Garble);
 * - every task works until `finish()` (or `autoFinishMs`) and records each CancelTask it receives.
 */
export type Binding = 'JSONRPC' | 'HTTP+JSON';
export type OldRoute = 'html404' | 'gateway404' | 'redirect308' | 'redirect302';

/**
 * What the client gets instead of the SDK's answer to the first start, as a broken proxy or a buggy
 * agent would send it; or a refusal in the protocol's own words, which never reaches the SDK.
 * - `frame-not-json`: an event stream whose first event is an HTML page, then its end;
 * - `frame-not-jsonrpc`: an event stream whose first event is JSON but no JSON-RPC response;
 * - `no-stream`: 200 `application/json` with the stream's first answer, where an event stream was asked;
 * - `result-not-task`: a unary start's 200 answer with a result that is not a task;
 * - `nameless-task`: the answer (or the stream's first event) is the SDK's task with its id emptied;
 * - `refused`: a JSON-RPC error (-32602 invalid params; REST: 400 with a google.rpc.Status).
 */
export type Garble =
  'frame-not-json' | 'frame-not-jsonrpc' | 'no-stream' | 'result-not-task' | 'nameless-task' | 'refused';

export interface PeerOptions {
  streaming?: boolean;
  binding?: Binding;
  /** Delay before the executor publishes the task, i.e. before SendMessage answers. @default 0 */
  startDelayMs?: number;
  /** Tasks complete on their own after this long; unset, they wait for finish(). */
  autoFinishMs?: number;
  /** Card max-age in seconds (SDK card handler). @default 3600 */
  cardMaxAgeS?: number;
  /**
   * A task's end is stamped this much earlier than its clock says (the agent's replica that ends it runs
   * behind the one that started it). @default 0
   */
  endsClockBehindMs?: number;
  /** The first start request's answer, as the client gets it (see Garble). */
  garbleFirstStart?: Garble;
}

export interface SdkPeer {
  readonly base: string;
  /** CancelTask calls the executor received, by task id. */
  readonly cancels: string[];
  /** Task ids whose start request reached the executor. */
  readonly received: string[];
  /** Task ids the executor published (the start answered). */
  readonly started: string[];
  /** Completes every open task (or one). */
  finish(taskId?: string): void;
  /** An open task says what it is doing now: a WORKING status update with a message, the state unchanged. */
  say(taskId: string, text: string): void;
  /**
   * An open task's executor publishes updates about another task on its own bus (a sub-task, say),
   * which the SDK server passes on in the open task's streams: a COMPLETED status and an artifact.
   */
  stray(taskId: string, otherTaskId: string): void;
  /**
   * Moves the agent: new binding and/or path; the old path answers `oldRoute` from now on (`redirect…`:
   * a 308 or a 302 to the same request under the new path, as a web server moving a route would send).
   */
  redeploy(to: { binding?: Binding; path: string; oldRoute: OldRoute; streaming?: boolean }): void;
  /** The A2A route the card currently lists. */
  readonly url: string;
  close(): Promise<void>;
}

export async function startSdkPeer(options: PeerOptions = {}): Promise<SdkPeer> {
  const app = express();
  const server = http.createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const store = new InMemoryTaskStore();
  const cancels: string[] = [];
  const started: string[] = [];
  const received: string[] = [];
  const open = new Map<string, () => void>();
  const buses = new Map<string, { bus: ExecutionEventBus; contextId: string }>();
  const startDelayMs = options.startDelayMs ?? 0;

  const executor: AgentExecutor = {
    async execute(ctx, bus: ExecutionEventBus) {
      const ids = { taskId: ctx.taskId, contextId: ctx.contextId };
      const at = () => new Date().toISOString();
      received.push(ctx.taskId);
      if (startDelayMs > 0) await new Promise((r) => setTimeout(r, startDelayMs));
      started.push(ctx.taskId);
      buses.set(ctx.taskId, { bus, contextId: ctx.contextId });
      bus.publish(
        AgentEvent.task(
          Task.fromJSON({
            ...{ id: ctx.taskId, contextId: ctx.contextId },
            status: { state: 'TASK_STATE_WORKING', timestamp: at() },
          }),
        ),
      );
      await new Promise<void>((resolve) => {
        open.set(ctx.taskId, resolve);
        if (options.autoFinishMs !== undefined) setTimeout(resolve, options.autoFinishMs);
      });
      buses.delete(ctx.taskId);
      if (!open.has(ctx.taskId)) return; // cancelled meanwhile: cancelTask published the outcome
      open.delete(ctx.taskId);
      bus.publish(
        AgentEvent.statusUpdate(
          TaskStatusUpdateEvent.fromJSON({
            ...ids,
            status: {
              state: 'TASK_STATE_COMPLETED',
              timestamp: new Date(Date.now() - (options.endsClockBehindMs ?? 0)).toISOString(),
            },
          }),
        ),
      );
      bus.finished();
    },
    async cancelTask(taskId, bus) {
      cancels.push(taskId);
      const release = open.get(taskId);
      open.delete(taskId);
      bus.publish(
        AgentEvent.statusUpdate(
          TaskStatusUpdateEvent.fromJSON({
            taskId,
            contextId: '',
            status: { state: 'TASK_STATE_CANCELED', timestamp: new Date().toISOString() },
          }),
        ),
      );
      bus.finished();
      release?.();
    },
  };

  let streaming = options.streaming ?? true;
  let binding: Binding = options.binding ?? 'JSONRPC';
  let path = '/a2a';
  const retired = new Map<string, { kind: OldRoute; to: string }>();
  const cardFor = () =>
    AgentCard.fromJSON({
      name: 'sdk peer',
      description: 'fault-injecting peer on the official SDK server',
      version: '1.0.0',
      capabilities: { streaming, pushNotifications: false },
      supportedInterfaces: [{ url: `${base}${path}`, protocolBinding: binding, protocolVersion: '1.0' }],
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['application/json'],
      skills: [{ id: 's', name: 's', description: 's', tags: ['t'] }],
    });
  let card = cardFor();
  let router = express.Router();
  const mount = () => {
    const handler = new DefaultRequestHandler(card, store, executor);
    const r = express.Router();
    r.use(
      path,
      binding === 'JSONRPC'
        ? jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication })
        : restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }),
    );
    router = r;
  };
  mount();

  app.use(
    '/.well-known/agent-card.json',
    agentCardHandler({
      agentCardProvider: () => Promise.resolve(card),
      cache: { maxAge: options.cardMaxAgeS ?? 3600 },
    }),
  );
  let garble = options.garbleFirstStart;
  app.use((req, res, next) => {
    if (!garble || req.headers[PASS] || req.method !== 'POST' || !req.path.startsWith(path)) return next();
    const kind = garble;
    garble = undefined;
    garbled(kind, req, res, base, binding).then((done) => {
      if (!done) garble = kind;
    }, next);
  });
  app.use((req, res, next) => {
    for (const [old, { kind, to }] of retired) {
      if (req.path === old || req.path.startsWith(old + '/')) {
        if (kind === 'redirect308' || kind === 'redirect302')
          res.redirect(kind === 'redirect308' ? 308 : 302, to + req.originalUrl.slice(old.length));
        else if (kind === 'html404')
          res.status(404).type('text/html').send('<html><body><h1>404 Not Found</h1>nginx</body></html>');
        else res.status(404).json({ message: 'no Route matched with those values', request_id: 'gw-1' });
        return;
      }
    }
    router(req, res, next);
  });

  return {
    base,
    cancels,
    started,
    received,
    get url() {
      return `${base}${path}`;
    },
    finish(taskId) {
      for (const [id, release] of open) if (!taskId || id === taskId) release();
    },
    say(taskId, text) {
      const running = buses.get(taskId);
      if (!running) throw new Error(`task ${taskId} is not running`);
      running.bus.publish(
        AgentEvent.statusUpdate(
          TaskStatusUpdateEvent.fromJSON({
            taskId,
            contextId: running.contextId,
            status: {
              state: 'TASK_STATE_WORKING',
              timestamp: new Date().toISOString(),
              message: { messageId: `say-${Date.now()}`, role: 'ROLE_AGENT', parts: [{ text }] },
            },
          }),
        ),
      );
    },
    stray(taskId, otherTaskId) {
      const running = buses.get(taskId);
      if (!running) throw new Error(`task ${taskId} is not running`);
      const about = { taskId: otherTaskId, contextId: running.contextId };
      running.bus.publish(
        AgentEvent.artifactUpdate(
          TaskArtifactUpdateEvent.fromJSON({
            ...about,
            artifact: { artifactId: 'sub-result', parts: [{ text: 'the sub-task answer' }] },
          }),
        ),
      );
      running.bus.publish(
        AgentEvent.statusUpdate(
          TaskStatusUpdateEvent.fromJSON({
            ...about,
            status: { state: 'TASK_STATE_COMPLETED', timestamp: new Date().toISOString() },
          }),
        ),
      );
    },
    redeploy(to) {
      retired.set(path, { kind: to.oldRoute, to: to.path });
      path = to.path;
      binding = to.binding ?? binding;
      if (to.streaming !== undefined) streaming = to.streaming;
      card = cardFor();
      mount();
    },
    async close() {
      for (const release of open.values()) release();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** Marks the peer's own forward of a garbled request, which the SDK answers as any other. */
const PASS = 'x-peer-pass';

async function readBody(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Answers the first start request of a `garbleFirstStart` peer: the request goes on to the SDK (a
 * forward to the peer itself, marked PASS), so its task is created as usual; the client gets `kind`
 * instead of the SDK's answer. Any other request is passed through unchanged. Returns false when the
 * request was not a start (the garble is still to come).
 */
async function garbled(
  kind: Garble,
  req: express.Request,
  res: express.Response,
  base: string,
  binding: Binding,
): Promise<boolean> {
  const body = await readBody(req);
  const rpc = binding === 'JSONRPC' ? (JSON.parse(body) as { id?: unknown; method?: string }) : null;
  const streaming = rpc ? rpc.method === 'SendStreamingMessage' : req.path.endsWith('/message:stream');
  const start = rpc ? streaming || rpc.method === 'SendMessage' : /\/message:(send|stream)$/.test(req.path);
  const headers: Record<string, string> = { [PASS]: '1' };
  for (const [k, v] of Object.entries(req.headers))
    if (typeof v === 'string' && k !== 'host' && k !== 'content-length') headers[k] = v;
  if (start && kind === 'refused') {
    if (rpc)
      res.json({
        jsonrpc: '2.0',
        id: rpc.id ?? null,
        error: { code: -32602, message: 'message.parts: empty' },
      });
    else
      res
        .status(400)
        .json({ error: { code: 400, status: 'INVALID_ARGUMENT', message: 'message.parts: empty' } });
    return true;
  }
  const upstream = await fetch(base + req.originalUrl, { method: 'POST', headers, body });
  if (!start) {
    res.status(upstream.status);
    upstream.headers.forEach((v, k) => {
      if (k !== 'content-length' && k !== 'transfer-encoding' && k !== 'connection') res.setHeader(k, v);
    });
    for await (const chunk of (upstream.body ?? []) as unknown as AsyncIterable<Uint8Array>) res.write(chunk);
    res.end();
    return false;
  }
  const reader = upstream.body!.getReader();
  let text = '';
  // The SDK's whole answer (unary) or its first event (a stream), as it sent them.
  while (streaming ? !text.includes('\n\n') : true) {
    const { done, value } = await reader.read();
    if (done) break;
    text += Buffer.from(value).toString('utf8');
  }
  // The stream goes on being read, as a client that stays would, so the SDK runs its task as usual.
  if (streaming)
    void (async () => {
      while (!(await reader.read().catch(() => ({ done: true }))).done);
    })();
  const first = streaming
    ? text
        .split('\n')
        .find((l) => l.startsWith('data:'))!
        .slice(5)
        .trim()
    : text;
  switch (kind) {
    case 'frame-not-json':
      res.type('text/event-stream').send('data: <html><body>502 Bad Gateway</body></html>\n\n');
      break;
    case 'frame-not-jsonrpc':
      res.type('text/event-stream').send('data: {"status":"ok"}\n\n');
      break;
    case 'no-stream':
      res.type('application/json').send(first);
      break;
    case 'result-not-task':
      res.json(rpc ? { jsonrpc: '2.0', id: rpc.id ?? null, result: { accepted: true } } : { accepted: true });
      break;
    case 'nameless-task': {
      // The SDK's own answer with the task's id emptied: `{task}` on its own, or as a JSON-RPC result.
      const answer = JSON.parse(first) as { result?: { task: { id: string } }; task?: { id: string } };
      (answer.result ?? answer).task!.id = '';
      if (streaming) res.type('text/event-stream').send(`data: ${JSON.stringify(answer)}\n\n`);
      else res.json(answer);
      break;
    }
  }
  return true;
}
