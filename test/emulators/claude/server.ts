import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SystemClock, type Clock } from '../../../src/core/clock.ts';
import { SeededRandom, type Random } from '../../../src/core/random.ts';
import {
  ApiError,
  badRequest,
  notFound,
  order,
  page,
  readJson,
  requireString,
  sendError,
  sendJson,
} from './http.ts';
import {
  publicSession,
  pump,
  receive,
  wake,
  type Engine,
  type Json,
  type Session,
  type SessionEvent,
} from './sessions.ts';
import { Resources } from './resources.ts';
import { WebhookSender, type Delivery, type WebhookOptions } from './webhooks.ts';

/**
 * A local emulator of Claude Managed Agents (beta `managed-agents-2026-04-01`) as the official
 * `@anthropic-ai/sdk` sees it: agents, environments, sessions, events, the event stream and thin
 * Standard Webhooks deliveries. The facts it follows, and where each comes from, are in
 * ../../../../shared/spec/providers.md part 2; README.md next to this file lists the scripted turns.
 */

export const BETA = 'managed-agents-2026-04-01';

export interface ClaudeEmulatorOptions {
  clock?: Clock;
  random?: Random;
  /** Accepted as `x-api-key` or `Authorization: Bearer`. Default `sk-ant-emulator`. */
  apiKey?: string;
  /** Between `ping` frames on each open stream. Default 15000. */
  pingIntervalMs?: number;
  /** List cost of each model request, in US cents. Default 100. */
  costPerRequestCents?: number;
  webhook?: WebhookOptions;
  /**
   * Pause between the steps of a turn, on the clock. Default 0: one I/O turn, so tests need no clock;
   * the demo (`npm start`) sets one so people see sessions run.
   */
  stepDelayMs?: number;
  /** Default 0 (a free port). */
  port?: number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
}

export interface ClaudeEmulatorControl {
  session(id: string): Session | undefined;
  /** Lets a `hold` turn finish. */
  release(sessionId: string): void;
  /** Cuts every open stream of the session without a final frame, as a network failure would. */
  dropStreams(sessionId: string): void;
  openStreams(sessionId: string): number;
  setCostPerRequestCents(cents: number): void;
  /** While held, queued turns wait (sessions created with initial events stay `running` without steps). */
  holdTurns(held: boolean): void;
  /** The next `times` API requests take effect, but their answers are lost with the connection. */
  loseNextResponses(times?: number): void;
  /** The next `times` API requests take effect, but answer 200 with `body` instead (a broken proxy). */
  garbleNextResponses(body: unknown, times?: number): void;
  /** The next `times` API requests answer `status` with the error envelope. */
  failNext(status: number, times?: number, headers?: Record<string, string>): void;
  readonly requests: RecordedRequest[];
  readonly deliveries: Delivery[];
  setWebhookDuplicates(n: number): void;
  /** Resolves when every webhook delivery started so far has ended. */
  webhooksSettled(): Promise<void>;
}

export interface ClaudeEmulator {
  url: string;
  close(): Promise<void>;
  control: ClaudeEmulatorControl;
}

interface Subscriber {
  res: ServerResponse;
  deltas: Set<string>;
  cancelPing: () => void;
}

export async function startClaudeEmulator(options: ClaudeEmulatorOptions = {}): Promise<ClaudeEmulator> {
  const clock = options.clock ?? new SystemClock();
  const random = options.random ?? new SeededRandom(1);
  const apiKey = options.apiKey ?? 'sk-ant-emulator';
  const pingIntervalMs = options.pingIntervalMs ?? 15_000;
  let costCents = options.costPerRequestCents ?? 100;
  const sessions = new Map<string, Session>();
  const streams = new Map<string, Set<Subscriber>>();
  const requests: RecordedRequest[] = [];
  let losing = 0;
  let garbling: { body: unknown; times: number } | null = null;
  let turnsHeld = false;
  let failures: { status: number; times: number; headers: Record<string, string> } | null = null;

  const newId = (prefix: string) =>
    prefix + Buffer.from(random.bytes(12)).toString('base64url').replace(/[-_]/g, 'x');
  const iso = () => new Date(clock.now()).toISOString();
  const resources = new Resources(newId, iso);
  const webhooks = options.webhook ? new WebhookSender(clock, { ...options.webhook }, newId) : null;

  const frame = (res: ServerResponse, type: string, data: unknown) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);

  const engine: Engine = {
    clock,
    newId,
    emit(s, event) {
      const stored: SessionEvent = {
        ...event,
        id: typeof event['id'] === 'string' && event['id'] !== '' ? event['id'] : newId('sevt_'),
        type: event['type'] as string,
        processed_at:
          event['processed_at'] === null ? null : ((event['processed_at'] as string | undefined) ?? iso()),
      };
      const at = s.events.findIndex((e) => e.id === stored.id);
      if (at >= 0) s.events[at] = stored;
      else s.events.push(stored);
      for (const sub of streams.get(s.id) ?? []) {
        if (stored.type === 'agent.message' && sub.deltas.has('agent.message')) {
          frame(sub.res, 'event_start', { type: 'event_start', event: { type: stored.type, id: stored.id } });
          for (const block of (stored['content'] as { text?: string }[]) ?? [])
            for (const piece of (block.text ?? '').match(/.{1,4}/g) ?? [])
              frame(sub.res, 'event_delta', {
                type: 'event_delta',
                event_id: stored.id,
                delta: { type: 'content_delta', index: 0, content: { type: 'text', text: piece } },
              });
        }
        frame(sub.res, stored.type, stored);
      }
      return stored;
    },
    webhook(type, s) {
      webhooks?.send(type, s.id);
    },
    dropStreams(s) {
      for (const sub of streams.get(s.id) ?? []) {
        sub.cancelPing();
        // Ends the socket once what was written is flushed, with the chunked body left unfinished.
        sub.res.socket?.destroySoon();
      }
      streams.delete(s.id);
    },
    costPerRequestCents: () => costCents,
    turnsHeld: () => turnsHeld,
    stepDelayMs: options.stepDelayMs ?? 0,
  };

  function findSession(id: string): Session {
    const s = sessions.get(id);
    if (!s || s.deleted) throw notFound('session', id);
    return s;
  }

  function parseBudget(value: unknown, field: string): Session['budget'] {
    if (value === null || value === undefined) return null;
    const b = value as Json;
    const cost = b['max_list_cost'] as Json | undefined;
    if (b['type'] !== 'limit' || typeof cost !== 'object' || cost === null)
      throw badRequest(`${field}: must be {type:"limit", max_list_cost:{amount, currency}}`);
    const amount = cost['amount'];
    if (typeof amount !== 'string' || !/^(0|[1-9]\d*)$/.test(amount))
      throw badRequest(
        `${field}.max_list_cost.amount: must be whole US cents as a string without leading zeros`,
      );
    if (cost['currency'] !== 'USD') throw badRequest(`${field}.max_list_cost.currency: must be USD`);
    return { type: 'limit', max_list_cost: { amount, currency: 'USD' } };
  }

  function createSession(body: Json): Json {
    const agentRef = body['agent'];
    const agentId =
      typeof agentRef === 'string' ? agentRef : ((agentRef as Json | undefined)?.['id'] as unknown);
    if (typeof agentId !== 'string')
      throw badRequest('agent: must be an agent id or {type:"agent", id, version}');
    const agent = resources.agents.get(agentId);
    if (!agent) throw notFound('agent', agentId);
    const environmentId = requireString(body, 'environment_id');
    if (!resources.environments.has(environmentId)) throw notFound('environment', environmentId);
    const initial = body['initial_events'] ?? [];
    if (!Array.isArray(initial) || initial.length > 50)
      throw badRequest('initial_events: must be an array of at most 50 events');
    initial.forEach((e: unknown, i) => {
      if ((e as Json | null)?.['type'] !== 'user.message')
        throw badRequest(`initial_events[${i}].type: only user.message is accepted here`);
    });
    const metadata = (body['metadata'] ?? {}) as Record<string, string>;
    if (typeof metadata !== 'object' || Array.isArray(metadata))
      throw badRequest('metadata: must be an object');
    const now = iso();
    const s: Session = {
      id: newId('sesn_'),
      status: 'idle',
      title: typeof body['title'] === 'string' ? body['title'] : null,
      agent: {
        type: 'agent',
        id: agent['id'],
        version: agent['version'],
        name: agent['name'],
        model: agent['model'],
        tools: agent['tools'] ?? [],
      },
      environment_id: environmentId,
      metadata,
      budget: parseBudget(body['budget'], 'budget'),
      created_at: now,
      updated_at: now,
      archived_at: null,
      events: [],
      usage: { input_tokens: 0, output_tokens: 0, costCents: 0 },
      queue: [],
      pending: new Map(),
      pausedAtBudget: false,
      interrupted: false,
      turnActive: false,
      wake: null,
      released: false,
      deleted: false,
    };
    sessions.set(s.id, s);
    if (initial.length > 0) {
      // Created straight into running; the first step of the turn happens after this answer.
      s.status = 'running';
      for (const e of initial as Json[]) s.queue.push(engine.emit(s, { ...e, processed_at: null }));
      pump(engine, s);
    }
    return publicSession(s);
  }

  function updateSession(s: Session, body: Json): Json {
    if (s.archived_at !== null)
      throw new ApiError(409, 'invalid_request_error', `session ${s.id} is archived`, {
        'x-should-retry': 'false',
      });
    if (typeof body['title'] === 'string') s.title = body['title'];
    if (body['metadata'] !== undefined)
      s.metadata = { ...s.metadata, ...(body['metadata'] as Record<string, string>) };
    if ('budget' in body) {
      if (s.budget === null && body['budget'] !== null)
        throw badRequest('budget: budget_create_only, a budget can only be set at create');
      const budget = parseBudget(body['budget'], 'budget');
      if (budget && Number(budget.max_list_cost.amount) <= s.usage.costCents)
        throw badRequest(
          'budget.max_list_cost.amount: budget_not_raised, must exceed the cost already consumed',
        );
      s.budget = budget;
      if (s.pausedAtBudget) {
        s.pausedAtBudget = false;
        wake(s);
      }
    }
    s.updated_at = iso();
    engine.emit(s, { type: 'session.updated' });
    return publicSession(s);
  }

  function listSessions(query: URLSearchParams): Json {
    let list = [...sessions.values()].filter((s) => !s.deleted);
    const agentId = query.get('agent_id');
    if (agentId) list = list.filter((s) => s.agent['id'] === agentId);
    if (query.get('include_archived') !== 'true') list = list.filter((s) => s.archived_at === null);
    const statuses = query.getAll('statuses[]');
    if (statuses.length > 0) list = list.filter((s) => statuses.includes(s.status));
    for (const [op, keep] of [
      ['gt', (a: number, b: number) => a > b],
      ['gte', (a: number, b: number) => a >= b],
      ['lt', (a: number, b: number) => a < b],
      ['lte', (a: number, b: number) => a <= b],
    ] as const) {
      const bound = query.get(`created_at[${op}]`);
      if (bound === null) continue;
      const ms = Date.parse(bound);
      if (Number.isNaN(ms)) throw badRequest(`created_at[${op}]: must be an RFC 3339 timestamp`);
      list = list.filter((s) => keep(Date.parse(s.created_at), ms));
    }
    if (order(query) === 'desc') list.reverse();
    const p = page(list.map(publicSession), query, 20);
    return p;
  }

  function listEvents(s: Session, query: URLSearchParams): Json {
    let list = [...s.events];
    const types = query.getAll('types[]');
    if (types.length > 0) list = list.filter((e) => types.includes(e.type));
    if (order(query) === 'desc') list.reverse();
    const { data, next_page } = page(list, query, 1000);
    return { data, next_page };
  }

  function openStream(s: Session, query: URLSearchParams, res: ServerResponse): void {
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    res.flushHeaders();
    const sub: Subscriber = {
      res,
      deltas: new Set(query.getAll('event_deltas[]')),
      cancelPing: () => undefined,
    };
    const schedule = () => {
      sub.cancelPing = clock.setTimer(pingIntervalMs, () => {
        frame(res, 'ping', { type: 'ping' });
        schedule();
      });
    };
    schedule();
    let set = streams.get(s.id);
    if (!set) streams.set(s.id, (set = new Set()));
    set.add(sub);
    res.on('close', () => {
      sub.cancelPing();
      streams.get(s.id)?.delete(sub);
    });
  }

  async function route(req: IncomingMessage, res: ServerResponse, url: URL): Promise<Json | undefined> {
    const method = req.method ?? 'GET';
    const parts = url.pathname.split('/').filter(Boolean);
    if (parts[0] !== 'v1') throw notFound('path', url.pathname);
    const [, kind, id, sub, sub2] = parts;
    const body = method === 'POST' ? await readJson(req) : {};
    const resource = resources.route(kind, id, sub, method, body, url.searchParams);
    if (resource !== undefined) return resource;
    if (kind === 'sessions') {
      if (!id && method === 'POST') return createSession(body);
      if (!id && method === 'GET') return listSessions(url.searchParams);
      const s = findSession(id!);
      if (!sub && method === 'GET') return publicSession(s);
      if (!sub && method === 'POST') return updateSession(s, body);
      if ((!sub && method === 'DELETE') || (sub === 'archive' && method === 'POST')) {
        if (s.status === 'running' || s.status === 'rescheduling')
          throw badRequest(
            `session ${s.id} is running; cannot ${sub === 'archive' ? 'archive' : 'delete'} while running`,
          );
        if (sub === 'archive') {
          if (s.archived_at !== null) return publicSession(s);
          s.archived_at = iso();
          s.status = 'terminated';
          s.updated_at = s.archived_at;
          engine.emit(s, { type: 'session.status_terminated' });
          engine.webhook('session.archived', s);
          return publicSession(s);
        }
        s.deleted = true;
        wake(s);
        for (const sub of streams.get(s.id) ?? []) {
          frame(sub.res, 'session.deleted', {
            type: 'session.deleted',
            id: newId('sevt_'),
            processed_at: iso(),
          });
          sub.cancelPing();
          sub.res.end();
        }
        streams.delete(s.id);
        engine.webhook('session.deleted', s);
        return { id: s.id, type: 'session_deleted' };
      }
      if (sub === 'events' && !sub2 && method === 'POST') return { data: receive(engine, s, body['events']) };
      if (sub === 'events' && !sub2 && method === 'GET') return listEvents(s, url.searchParams);
      if (sub === 'events' && sub2 === 'stream' && method === 'GET') {
        openStream(s, url.searchParams, res);
        return undefined;
      }
    }
    throw notFound('path', `${method} ${url.pathname}`);
  }

  function authorised(req: IncomingMessage): boolean {
    const key = req.headers['x-api-key'];
    const auth = req.headers['authorization'];
    return key === apiKey || auth === `Bearer ${apiKey}`;
  }

  const server = createServer((req, res) => {
    const requestId = newId('req_');
    const url = new URL(req.url ?? '/', 'http://emulator');
    requests.push({
      method: req.method ?? 'GET',
      path: url.pathname + url.search,
      headers: { ...req.headers },
    });
    const answer = async () => {
      if (failures && failures.times > 0) {
        failures.times--;
        const type =
          failures.status === 429
            ? 'rate_limit_error'
            : failures.status === 529
              ? 'overloaded_error'
              : 'api_error';
        throw new ApiError(failures.status, type, 'injected failure', failures.headers);
      }
      if (!authorised(req))
        throw new ApiError(401, 'authentication_error', 'invalid x-api-key or Authorization bearer token');
      const beta = String(req.headers['anthropic-beta'] ?? '')
        .split(',')
        .map((b) => b.trim());
      if (!beta.includes(BETA)) throw badRequest(`anthropic-beta: must include ${BETA}`);
      const body = await route(req, res, url);
      if (body !== undefined && losing > 0) {
        losing--;
        res.socket?.destroy();
        return;
      }
      if (body !== undefined && garbling && garbling.times > 0) {
        garbling.times--;
        sendJson(res, 200, garbling.body, requestId);
        return;
      }
      if (body !== undefined) sendJson(res, 200, body, requestId);
    };
    answer().catch((err: unknown) => {
      const apiErr = err instanceof ApiError ? err : new ApiError(500, 'api_error', 'internal error');
      if (!res.headersSent) sendError(res, apiErr, requestId);
      else res.destroy();
    });
  });

  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const control: ClaudeEmulatorControl = {
    session: (id) => sessions.get(id),
    release(sessionId) {
      const s = findSession(sessionId);
      s.released = true;
      wake(s);
    },
    dropStreams(sessionId) {
      engine.dropStreams(findSession(sessionId));
    },
    openStreams: (sessionId) => streams.get(sessionId)?.size ?? 0,
    setCostPerRequestCents(cents) {
      costCents = cents;
    },
    holdTurns(held) {
      turnsHeld = held;
      if (!held) for (const s of sessions.values()) pump(engine, s);
    },
    loseNextResponses(times = 1) {
      losing = times;
    },
    garbleNextResponses(body, times = 1) {
      garbling = { body, times };
    },
    failNext(status, times = 1, headers = {}) {
      failures = { status, times, headers };
    },
    requests,
    get deliveries() {
      return webhooks?.deliveries ?? [];
    },
    setWebhookDuplicates(n) {
      if (webhooks) webhooks.duplicates = n;
    },
    webhooksSettled: () => webhooks?.settled() ?? Promise.resolve(),
  };

  return {
    url: `http://127.0.0.1:${port}`,
    control,
    close: async () => {
      for (const set of streams.values())
        for (const sub of set) {
          sub.cancelPing();
          sub.res.destroy();
        }
      for (const s of sessions.values()) {
        s.deleted = true;
        wake(s);
      }
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
