import type { VirtualClock } from '../core/clock.ts';
import { TaskplaneError } from '../core/errors.ts';
import type {
  Connector,
  ConnectorCapabilities,
  InboundWebhook,
  InputAnswer,
  ListChangedPage,
  ListChangedQuery,
  PushRegistration,
  RemoteSnapshot,
  StartRequest,
  WebhookSignal,
} from '../connectors/connector.ts';
import type { Ledger } from './ledger.ts';
import type { SimAgent } from './sim-agent.ts';
import type { AgentSnapshot, SimNetwork, StreamConn, WebhookDelivery } from './sim-network.ts';
import { WORLD } from './world-model.ts';
import { normalizeState } from '../connectors/a2a/task-snapshot.ts';

/** The header the simulated agent echoes the push token in (A2A `X-A2A-Notification-Token`). */
export const TOKEN_HEADER = 'x-a2a-notification-token';

export function toRemote(s: AgentSnapshot): RemoteSnapshot {
  return {
    remoteId: s.id,
    contextId: s.contextId,
    // The real A2A connector's mapping: the simulated agent speaks A2A task states.
    state: normalizeState(s.state),
    nativeState: s.state,
    remoteVersion: s.version,
    stateTimestamp: s.statusMs,
    inputRequest: s.inputRequestId
      ? { requestId: s.inputRequestId, prompt: 'Which edition does this record refer to?' }
      : null,
  };
}

/** The webhook body the simulated agent posts: a StreamResponse-like status update with its delivery id. */
export function webhookBody(d: WebhookDelivery): InboundWebhook {
  return {
    headers: { [TOKEN_HEADER]: d.token },
    rawBody: JSON.stringify({ deliveryId: d.deliveryId, snapshot: d.snapshot }),
  };
}

export interface SimConnectorOptions {
  stream: boolean;
  push: boolean;
  /** Called at the start of every reconciliation round (its first ListTasks page). */
  onListRound?: () => void;
  /** Called with every snapshot of a task the client receives, whatever the path (send, stream, get, list, answer, push). */
  onHeard?: (snapshot: AgentSnapshot) => void;
}

/**
 * The Connector port over the simulated agent and network: what the real A2A connector does on the
 * wire, one request per call (counted in the ledger exactly as docs/lab.md defines a request), one network
 * latency each way, TaskNotFound as `not_found`, UnsupportedOperation and TaskNotCancelable as
 * `failed_precondition`, a stream drop as `unavailable`, a 404 page as `unavailable` with
 * `details.route = 'not_protocol'`, a refused connection as `unavailable` with `details.notSent`. The
 * agent is not idempotent on messageId (`idempotentStart: false`).
 */
export class SimConnector implements Connector {
  readonly kind = 'a2a';
  readonly target = 'lab-agent';
  readonly capabilities: ConnectorCapabilities;
  /** The agent interface this connector talks to (from the card it read last). */
  private route: number;

  constructor(
    private readonly clock: VirtualClock,
    private readonly agent: SimAgent,
    private readonly net: SimNetwork,
    private readonly ledger: Ledger,
    private readonly options: SimConnectorOptions,
  ) {
    this.route = agent.revision;
    this.capabilities = {
      idempotentStart: false,
      list: true,
      stream: options.stream,
      streamResume: false,
      push: options.push,
      input: true,
      cancel: true,
    };
  }

  /** A snapshot on its way to the engine: the client hears from the task. */
  private heard(s: AgentSnapshot): RemoteSnapshot {
    this.options.onHeard?.(s);
    return toRemote(s);
  }

  /**
   * One request: reaches the agent one latency later, the answer comes back one latency after that.
   * What answers is the agent's front door: on a page that is not A2A (a redeploy moved the agent, a
   * gateway lost its route) the card is read again and, when it lists another interface, the call is
   * made once more there, as the A2A connector does (src/connectors/a2a/a2a-connector.ts `onRoute`).
   */
  private async call<T>(
    kind: Parameters<Ledger['request']>[0],
    signal: AbortSignal,
    fn: () => T,
    answerDelayMs = 0,
  ): Promise<T> {
    try {
      return await this.once(kind, signal, fn, answerDelayMs);
    } catch (err) {
      if (!isPage(err)) throw err;
      const before = this.route;
      await this.readCard(signal).catch(() => {});
      if (this.route === before) throw err;
      return this.once(kind, signal, fn, answerDelayMs);
    }
  }

  private async once<T>(
    kind: Parameters<Ledger['request']>[0],
    signal: AbortSignal,
    fn: () => T,
    answerDelayMs: number,
  ): Promise<T> {
    this.ledger.request(kind);
    const door = this.agent.frontDoor(this.route, kind);
    if (door === 'refused') {
      await this.clock.sleep(2 * WORLD.latencyMs, signal);
      throw new TaskplaneError('unavailable', 'connection refused', { details: { notSent: true } });
    }
    await this.clock.sleep(WORLD.latencyMs, signal);
    if (door === 'page') {
      await this.clock.sleep(WORLD.latencyMs, signal);
      throw new TaskplaneError('unavailable', 'HTTP 404 with a page that is not A2A', {
        details: { httpStatus: 404, route: NOT_PROTOCOL },
      });
    }
    let result: T;
    try {
      result = fn();
    } catch (err) {
      await this.clock.sleep(WORLD.latencyMs, signal);
      throw err;
    }
    await this.clock.sleep(WORLD.latencyMs + answerDelayMs, signal);
    return result;
  }

  /** Reads the agent card (one request) and binds the interface it lists. */
  private async readCard(signal: AbortSignal): Promise<void> {
    this.ledger.request('card');
    const door = this.agent.frontDoor('card', 'card');
    await this.clock.sleep(WORLD.latencyMs, signal);
    const route = this.agent.revision;
    await this.clock.sleep(WORLD.latencyMs, signal);
    if (door === 'refused') throw new TaskplaneError('unavailable', 'connection refused');
    if (door === 'page') throw new TaskplaneError('unavailable', 'agent card: HTTP 404');
    this.route = route;
  }

  /** The interface in use (Connector.revision): the engine records `card_changed` when it moves. */
  get revision(): string {
    return `JSONRPC lab-agent/v${this.route}`;
  }

  start(request: StartRequest, signal: AbortSignal): Promise<RemoteSnapshot> {
    const req = this.sendRequest(request);
    return this.call('send', signal, () => this.heard(this.agent.send(req)), this.agent.startDelayMs);
  }

  /**
   * SendStreamingMessage: one request starts the task and streams it (the engine uses this when it
   * streams, and reattaches with observe() after a drop). The stream begins with the Task.
   */
  startStream(request: StartRequest, signal: AbortSignal): AsyncGenerator<RemoteSnapshot> {
    const req = this.sendRequest(request);
    return this.streamCall(
      'send',
      req.job,
      signal,
      (conn) => this.agent.send(req, conn),
      this.agent.startDelayMs,
    );
  }

  private sendRequest(request: StartRequest): {
    messageId: string;
    contextId: string;
    job: number;
    push: PushRegistration | null;
  } {
    const job = (request.input as { job?: unknown } | null)?.job;
    if (typeof job !== 'number') throw new TaskplaneError('invalid_argument', 'input.job: required');
    return {
      messageId: request.messageId,
      contextId: request.contextId ?? `ctx-${job}`,
      job,
      push: request.push ?? null,
    };
  }

  get(remoteId: string, signal: AbortSignal): Promise<RemoteSnapshot> {
    return this.call('get', signal, () => this.heard(this.agent.get(remoteId)));
  }

  listChanged(query: ListChangedQuery, signal: AbortSignal): Promise<ListChangedPage> {
    if (!query.cursor) this.options.onListRound?.();
    this.ledger.reconcileReal++;
    this.ledger.reconcileListCharge++;
    return this.call('list', signal, () => {
      const page = this.agent.list(query.since, query.cursor, query.pageSize ?? 100);
      return {
        items: page.items.map((item) => this.heard(item)),
        ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}),
      };
    });
  }

  /** SubscribeToTask: the current Task first, then every update, until terminal (ends) or a drop (throws). */
  observe(remoteId: string, _cursor: string | null, signal: AbortSignal): AsyncGenerator<RemoteSnapshot> {
    return this.streamCall('subscribe', this.agent.jobOf(remoteId) ?? -1, signal, (conn) =>
      this.agent.subscribe(remoteId, conn),
    );
  }

  /**
   * One streaming request (SendStreamingMessage or SubscribeToTask): opens the stream, makes the call
   * that attaches the agent to it (the agent's first event on it is the Task), then yields every event
   * until the agent closes the stream (ends) or it drops (throws `unavailable`).
   */
  private async *streamCall(
    kind: 'send' | 'subscribe',
    job: number,
    signal: AbortSignal,
    attach: (conn: StreamConn) => unknown,
    answerDelayMs = 0,
  ): AsyncGenerator<RemoteSnapshot> {
    const stream = new OpenStream(this.net, job);
    try {
      await this.call(kind, signal, () => attach(stream.conn), answerDelayMs);
    } catch (err) {
      stream.close();
      throw err;
    }
    const onAbort = () => stream.close();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) {
        const item = await stream.next();
        if (item === 'done') return;
        if (item === 'drop') throw new TaskplaneError('unavailable', 'stream dropped');
        yield this.heard(item);
      }
    } finally {
      stream.close();
      signal.removeEventListener('abort', onAbort);
    }
  }

  /** CancelTask: what the agent says now (CANCELED, or still working when its cancel takes a while). */
  cancel(remoteId: string, signal: AbortSignal): Promise<RemoteSnapshot> {
    return this.call('cancel', signal, () => this.heard(this.agent.cancel(remoteId)));
  }

  answer(remoteId: string, answer: InputAnswer, signal: AbortSignal): Promise<RemoteSnapshot> {
    return this.call('answer', signal, () => this.heard(this.agent.answer(remoteId, answer.requestId)));
  }

  async registerPush(
    remoteId: string,
    push: PushRegistration,
    signal: AbortSignal,
  ): Promise<{ configId: string }> {
    await this.call('register_push', signal, () => this.agent.registerPush(remoteId, push));
    return { configId: `${remoteId}-push` };
  }

  async parseWebhook(request: InboundWebhook): Promise<WebhookSignal> {
    let body: { deliveryId?: string; snapshot?: AgentSnapshot };
    try {
      body = JSON.parse(request.rawBody) as typeof body;
    } catch {
      throw new TaskplaneError('invalid_argument', 'webhook body is not JSON');
    }
    if (!body.snapshot || typeof body.deliveryId !== 'string')
      throw new TaskplaneError('invalid_argument', 'webhook body has no task');
    return {
      remoteId: body.snapshot.id,
      deliveryId: body.deliveryId,
      token: request.headers[TOKEN_HEADER] ?? null,
      snapshot: this.heard(body.snapshot),
    };
  }
}

/** The value A2A connectors put in `details.route` for an answer that is not the protocol's (connector.ts). */
const NOT_PROTOCOL = 'not_protocol';

function isPage(err: unknown): boolean {
  return err instanceof TaskplaneError && err.details?.route === NOT_PROTOCOL;
}

/** One open stream's events, buffered until the engine reads them. */
class OpenStream {
  readonly conn: StreamConn;
  private readonly queue: Array<AgentSnapshot | 'done' | 'drop'> = [];
  private wake: (() => void) | null = null;

  constructor(net: SimNetwork, job: number) {
    this.conn = net.openStream(job, {
      event: (s) => this.put(s),
      end: (reason) => this.put(reason),
    });
  }

  private put(item: AgentSnapshot | 'done' | 'drop'): void {
    this.queue.push(item);
    this.wake?.();
  }

  close(): void {
    if (!this.conn.open) return;
    this.conn.close();
    this.put('done');
  }

  async next(): Promise<AgentSnapshot | 'done' | 'drop'> {
    while (this.queue.length === 0) await new Promise<void>((resolve) => (this.wake = resolve));
    this.wake = null;
    return this.queue.shift()!;
  }
}
