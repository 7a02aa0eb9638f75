import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { resolve as resolvePath } from 'node:path';
import pino, { type Logger } from 'pino';
import { SystemClock, type Clock } from '../core/clock.ts';
import { TaskplaneError } from '../core/errors.ts';
import { newId } from '../core/ids.ts';
import { CryptoRandom, type Random } from '../core/random.ts';
import type { AgentTaskStore } from '../store/store.ts';
import type { Authenticate } from '../protocols/a2a/handler.ts';
import { signingKey } from '../protocols/standard-webhooks.ts';
import { hostname } from 'node:os';
import { A2AService } from './a2a-service.ts';
import { BufferedRandom } from './buffered-random.ts';
import type { AgentDefinition } from './agent-api.ts';
import { JSONRPC_PATH, REST_PATH, buildAgentCard } from './agent-card.ts';
import { ANONYMOUS_OWNER, bearerKeyAuth, noAuth } from './auth.ts';
import { demoAgent } from './demo-agent.ts';
import { Executions } from './executions.ts';
import { HostLiveness } from './host-liveness.ts';
import { Recovery, type RecoveryCounts } from './recovery.ts';
import { createHostListener } from './host-app.ts';
import { openHostStore } from './host-store.ts';
import { PushOutbox } from './push-outbox.ts';
import { createPushSender, type PushSender } from './push-sender.ts';
import { systemResolver, type Resolver } from './ssrf.ts';
import { TaskFeed } from './task-feed.ts';
import { TaskStreams } from './task-streams.ts';
import { TaskWriter } from './task-writer.ts';

/** Options of `startHost`; every default is the CLI's. */
export interface HostOptions {
  /** TCP port; 0 picks a free one (the returned url has the real one). @default 4100 */
  port?: number;
  /** Interface to bind. @default '127.0.0.1' */
  bind?: string;
  /** `sqlite:PATH`, `postgres://…`, `memory:`, or a Store you own (not closed by close()). @default 'sqlite:./data/host.db' */
  db?: string | AgentTaskStore;
  /** An agent definition, or a path to a module whose default export is one. @default the demo agent */
  agent?: AgentDefinition | string;
  /** `keys` requires bearer keys (owner → key). @default 'none' */
  auth?: 'none' | 'keys';
  /** SHA-256 digest (hex) of each key → its owner, required with auth 'keys' (auth.ts parseKeys/loadKeys). */
  keys?: Map<string, string>;
  /** Let push go to private/loopback addresses (tests, sidecars). @default false */
  allowPrivateWebhooks?: boolean;
  /** First push retry delay, doubling. @default 5000 */
  pushBaseMs?: number;
  /** Push attempts before dead-lettering. @default 8 */
  pushAttempts?: number;
  /** Per push call timeout. @default 15000 */
  pushTimeoutMs?: number;
  /**
   * Standard Webhooks secret (`whsec_<base64>`, at least 16 bytes) to sign every push with
   * (`webhook-id`, `webhook-timestamp`, `webhook-signature`); receivers are given it out of band.
   * @default unsigned
   */
  pushSigningSecret?: string;
  /** INPUT_REQUIRED longer than this fails the task. @default 900000 */
  inputTimeoutMs?: number;
  /** Public base URL for the card when it differs from http://bind:port. */
  publicUrl?: string;
  /** SSE keep-alive interval. @default 15000 */
  keepAliveMs?: number;
  /** Request body limit in bytes, counted while the body streams in. @default 1048576 */
  maxBodyBytes?: number;
  /** Nesting levels a JSON request body may have. @default 64 */
  maxJsonDepth?: number;
  clock?: Clock;
  random?: Random;
  logger?: Logger;
  /** Level of the JSON logger on stdout made when no `logger` is given. @default 'info' */
  logLevel?: pino.LevelWithSilent;
  /** DNS for the webhook SSRF check. @default node:dns lookup */
  resolver?: Resolver;
  /** Replace the HTTP push sender (tests). */
  pushSender?: PushSender;
  /**
   * Names this host process for task ownership (host-liveness.ts). Keep it stable across restarts so a
   * restarted host takes its tasks back at once. @default `<hostname>:<port>`, or a random id with port 0
   */
  hostId?: string;
  /** Host lease time-to-live: a crashed host's tasks are taken over this long after its last renewal. @default 30000 */
  hostLeaseMs?: number;
}

export interface RunningHost {
  /** Base URL, e.g. http://127.0.0.1:4100 */
  url: string;
  cardUrl: string;
  jsonRpcUrl: string;
  restUrl: string;
  store: AgentTaskStore;
  /** What restart recovery did on start. */
  recovered: RecoveryCounts;
  /** Live numbers for dashboards and tests. */
  stats(): { executions: number; subscribers: number };
  close(): Promise<void>;
}

function positive(name: string, value: number | undefined, dflt: number, min = 1): number {
  const v = value ?? dflt;
  if (!Number.isFinite(v) || v < min)
    throw new TaskplaneError('config', `${name} must be a number >= ${min}`, { field: name });
  return v;
}

/** Node's answers for a TypeScript file it cannot run itself. */
const TYPESCRIPT_REFUSED = new Set(['ERR_UNKNOWN_FILE_EXTENSION', 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX']);

/**
 * Imports an agent module. Node 22.18+ and 24 run a `.ts`/`.mts` file themselves when its TypeScript is
 * erasable (no enums, namespaces or parameter properties). Where Node refuses it (Node 20, earlier 22,
 * or such syntax), tsx is registered, if the user has it installed, and the import tried once more; the
 * query makes it a new module rather than the cached failure.
 */
async function importAgentModule<T>(href: string): Promise<T> {
  try {
    return (await import(href)) as T;
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (!/\.[cm]?ts$/.test(href) || !code || !TYPESCRIPT_REFUSED.has(code)) throw err;
    let tsx: { register: () => unknown };
    try {
      tsx = (await import('tsx/esm/api')) as typeof tsx;
    } catch {
      const why =
        code === 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX'
          ? `Node's type stripping cannot run its TypeScript (enum, namespace, parameter properties): make it erasable`
          : `this Node (${process.version}) cannot run TypeScript: use Node 22.18+ or 24`;
      throw new Error(
        `${why}, compile the agent to .mjs, or install tsx beside taskplane (npm install tsx)`,
        {
          cause: err,
        },
      );
    }
    tsx.register();
    return (await import(`${href}?tsx`)) as T;
  }
}

async function loadAgent(agent: HostOptions['agent']): Promise<AgentDefinition> {
  if (agent === undefined) return demoAgent;
  if (typeof agent !== 'string') return agent;
  let mod: { default?: AgentDefinition; agent?: AgentDefinition };
  try {
    mod = await importAgentModule(pathToFileURL(resolvePath(agent)).href);
  } catch (err) {
    // A bad --agent is the operator's to fix: one line naming the file, not a loader stack trace.
    const code = (err as { code?: string }).code;
    const hint =
      code === 'ERR_REQUIRE_CYCLE_MODULE' || code === 'ERR_REQUIRE_ESM'
        ? ' (a .ts/.js agent outside an ESM package loads as CommonJS: name it .mts/.mjs or add "type": "module" to its package.json)'
        : '';
    throw new TaskplaneError(
      'config',
      `cannot load agent ${agent}: ${(err as Error).message.split('\n')[0]}${hint}`,
      {
        field: 'agent',
        cause: err,
      },
    );
  }
  const def = mod.default ?? mod.agent;
  if (!def || typeof def.execute !== 'function' || !def.card) {
    throw new TaskplaneError('config', `${agent}: the default export must be defineAgent({card, execute})`, {
      field: 'agent',
    });
  }
  return def;
}

/**
 * Starts the durable A2A agent host in this process: opens the store, recovers unfinished tasks,
 * starts the push outbox and serves HTTP. `close()` stops accepting, stops executions (they resume on
 * the next start) and the outbox, and closes the store if it opened it.
 */
export async function startHost(options: HostOptions = {}): Promise<RunningHost> {
  const clock = options.clock ?? new SystemClock();
  const random = options.random ?? new BufferedRandom(new CryptoRandom());
  const logger = options.logger ?? pino({ level: options.logLevel ?? 'info' });
  const port = positive('port', options.port, 4100, 0);
  const bind = options.bind ?? '127.0.0.1';
  const authMode = options.auth ?? 'none';
  let authenticate: Authenticate = noAuth;
  if (authMode === 'keys') {
    if (!options.keys || options.keys.size === 0)
      throw new TaskplaneError('config', 'auth keys needs keys', { field: 'keys' });
    authenticate = bearerKeyAuth(options.keys);
  }
  const inputTimeoutMs = positive('inputTimeoutMs', options.inputTimeoutMs, 900_000);
  const pushBaseMs = positive('pushBaseMs', options.pushBaseMs, 5000);
  const pushAttempts = positive('pushAttempts', options.pushAttempts, 8);
  const pushTimeoutMs = positive('pushTimeoutMs', options.pushTimeoutMs, 15_000);
  if (options.pushSigningSecret !== undefined) signingKey(options.pushSigningSecret, 'pushSigningSecret');
  const agent = await loadAgent(options.agent);

  const ownsStore = typeof options.db !== 'object';
  const store =
    typeof options.db === 'object'
      ? options.db
      : await openHostStore(options.db ?? 'sqlite:./data/host.db', logger);
  const hostId = options.hostId ?? (port !== 0 ? `${hostname()}:${port}` : newId(clock, random, 'host_'));
  const liveness = new HostLiveness(
    hostId,
    store,
    clock,
    logger,
    positive('hostLeaseMs', options.hostLeaseMs, 30_000),
  );
  if (!(await liveness.start())) {
    if (ownsStore) await store.close();
    throw new TaskplaneError('config', `another live host process uses the host id ${hostId}`, {
      field: 'hostId',
    });
  }
  const outboxRef: { outbox?: PushOutbox } = {};
  const writer = new TaskWriter(store, clock, random, () => outboxRef.outbox?.wake());
  const feed = new TaskFeed(store, logger);
  feed.start();
  const executions = new Executions({
    store,
    writer,
    clock,
    random,
    agent,
    logger,
    inputTimeoutMs,
    hostId,
    feed,
  });
  const recovery = new Recovery({ store, writer, clock, executions, liveness, agent, logger });
  let baseUrl = options.publicUrl?.replace(/\/+$/, '') ?? '';
  const service = new A2AService({
    store,
    clock,
    random,
    writer,
    feed,
    streams: new TaskStreams(store, feed),
    executions,
    liveness,
    card: () => card,
    logger,
  });
  let card = buildAgentCard(agent.card, baseUrl, authMode);
  const listener = createHostListener({
    handler: service,
    authenticate,
    clock,
    logger,
    ...(options.maxBodyBytes !== undefined ? { maxBodyBytes: options.maxBodyBytes } : {}),
    ...(options.maxJsonDepth !== undefined ? { maxJsonDepth: options.maxJsonDepth } : {}),
    ...(options.keepAliveMs !== undefined ? { keepAliveMs: options.keepAliveMs } : {}),
  });

  const server = await new Promise<Server>((resolveServer, reject) => {
    const s = createServer(listener);
    s.once('error', reject);
    s.listen(port, bind, () => resolveServer(s));
  });
  const address = server.address() as AddressInfo;
  const host = bind === '0.0.0.0' || bind === '::' ? '127.0.0.1' : bind.includes(':') ? `[${bind}]` : bind;
  const url = `http://${host}:${address.port}`;
  if (!baseUrl) baseUrl = url;
  card = buildAgentCard(agent.card, baseUrl, authMode);

  const recovered = await recovery.recover();
  recovery.startSweeps();
  const outbox = new PushOutbox({
    store,
    clock,
    logger,
    owner: newId(clock, random, 'host_'),
    baseMs: pushBaseMs,
    attempts: pushAttempts,
    timeoutMs: pushTimeoutMs,
    send:
      options.pushSender ??
      createPushSender({
        clock,
        resolve: options.resolver ?? systemResolver,
        allowPrivate: options.allowPrivateWebhooks ?? false,
        timeoutMs: pushTimeoutMs,
        ...(options.pushSigningSecret !== undefined ? { signingSecret: options.pushSigningSecret } : {}),
      }),
  });
  outboxRef.outbox = outbox;
  outbox.start();
  logger.info(
    { url, hostId, auth: authMode, owner: authMode === 'none' ? ANONYMOUS_OWNER : undefined, recovered },
    'agent host ready',
  );

  let closing: Promise<void> | undefined;
  return {
    url,
    cardUrl: `${baseUrl}/.well-known/agent-card.json`,
    jsonRpcUrl: baseUrl + JSONRPC_PATH,
    restUrl: baseUrl + REST_PATH,
    store,
    recovered,
    stats: () => ({ executions: executions.activeCount, subscribers: feed.subscriberCount }),
    close: () =>
      (closing ??= (async () => {
        const closed = new Promise<void>((r) => server.close(() => r()));
        server.closeAllConnections();
        await recovery.stop();
        await executions.close();
        await outbox.stop();
        await liveness.stop();
        feed.stop();
        await closed;
        if (ownsStore) await store.close();
      })()),
  };
}
