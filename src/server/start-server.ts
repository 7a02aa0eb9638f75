import { setMaxListeners } from 'node:events';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import { serve, type ServerType } from '@hono/node-server';
import { SystemClock, type Clock } from '../core/clock.ts';
import { TaskplaneError } from '../core/errors.ts';
import { silentLogger, type Logger } from '../core/logger.ts';
import { BufferedRandom } from '../core/buffered-random.ts';
import { CryptoRandom, type Random } from '../core/random.ts';
import { newId } from '../core/ids.ts';
import { openStore } from '../store/open-store.ts';
import type { EnvelopeStore } from '../store/store.ts';
import type { Connector } from '../connectors/connector.ts';
import { A2AConnector, type A2AConnectorOptions } from '../connectors/a2a/a2a-connector.ts';
import { Plane } from '../plane/plane.ts';
import { WorkerSchemaCompiler } from './worker-schema-compiler.ts';
import { exportBeforePurge } from './event-export.ts';
import { createVerifierTransport } from './verifier-transport.ts';
import { planeConfig, type PlaneOptions } from '../plane/options.ts';
import { KeyRing, seedApiKeys } from './api-keys.ts';
import { StreamTickets } from './stream-tickets.ts';
import { labRoute } from './lab-route.ts';
import { connectTarget, type ConnectorDeps, type TargetConfig } from './targets.ts';
import { createServerApp, type MetricsAccess, type ServerAppOptions } from './server-app.ts';
import type { TenantLimitsOptions } from './tenant-limits.ts';

/** Options of `startServer`; every default is the CLI's. */
export interface ServerOptions {
  /** TCP port; 0 picks a free one. @default 8080 */
  port?: number;
  /** @default '127.0.0.1' */
  bind?: string;
  /** `sqlite:PATH`, `postgres://…`, `memory:`, or a Store you own (not closed by close()). @default 'sqlite:./data/taskplane.db' */
  db?: string | EnvelopeStore;
  /**
   * Base URL agents reach this plane at, for push webhooks. `'self'` uses the listening URL (loopback:
   * only for agents on this machine). Without it the plane uses streams, polling and reconciliation.
   */
  publicUrl?: string | 'self' | null;
  /**
   * Targets by name: an A2A agent's base URL (card at /.well-known/agent-card.json), a target config of
   * any kind (`{kind, …settings}`, see targets.ts and docs/plane.md), or A2A connector options.
   */
  targets?: Record<string, string | TargetConfig | Omit<A2AConnectorOptions, 'target'>>;
  /** Values for target settings written as `{ "env": "VAR" }` (the CLI passes its environment). @default {} */
  env?: Readonly<Record<string, string | undefined>>;
  /** Ready-made connectors by target name (tests, other protocols). */
  connectors?: Record<string, Connector>;
  /** `tenant:key,…` (TASKPLANE_API_KEYS). */
  apiKeys?: string;
  /** File with one `tenant:key` per line. */
  apiKeysFile?: string;
  keys?: {
    /**
     * How long a key looked up in the store is trusted, and how often the store is swept for keys
     * revoked by any process (their open streams then close). @default 500
     */
    cacheMs?: number;
    /** Lifetime of a stream ticket (POST /v1/stream-tickets). @default 60000 */
    ticketTtlMs?: number;
  };
  /**
   * Bearer token /metrics requires. Without one, /metrics is open when the plane listens on loopback
   * only, and refused (401) when it listens beyond it. @default none
   */
  metricsToken?: string;
  /**
   * Call acceptance verifiers on private, loopback and link-local addresses (a verifier beside the
   * plane). Without it such a URL is refused at create with 400. @default false
   */
  allowPrivateVerifiers?: boolean;
  plane?: PlaneOptions;
  /**
   * A directory the events of each finished job are appended to (as JSON Lines, `purged-<UTC date>.jsonl`,
   * fsynced) before the retention purge deletes it (server/event-export.ts). @default none: purged without export
   */
  exportBeforePurge?: string;
  /** Serve the dashboard at `/`. @default true */
  dashboard?: boolean;
  /** Serve the failure lab page at `/lab` (bundled on first request). @default true */
  lab?: boolean;
  /** Where the plane logs (a pino logger fits; the CLI passes one). @default silent */
  logger?: Logger;
  clock?: Clock;
  random?: Random;
  /** prom-client process metrics (off in tests that start many servers). @default true */
  defaultMetrics?: boolean;
  /**
   * Request body limits, the JSON nesting limit and the per-tenant limits (server-app.ts,
   * tenant-limits.ts; docs/security.md gives the defaults).
   */
  limits?: Pick<ServerAppOptions, 'maxBodyBytes' | 'maxWebhookBytes' | 'maxJsonDepth'> & TenantLimitsOptions;
  /**
   * Names this plane process as the owner of its leases; unique per process sharing a database.
   * @default `plane@<hostname>:<port>`, or a random id with port 0
   */
  instanceId?: string;
}

export interface RunningServer {
  url: string;
  /** The dashboard URL, with the generated key in the fragment when one was just created. */
  dashboardUrl: string;
  /** The API key created on this first start (print it once), else null. */
  generatedApiKey: string | null;
  plane: Plane;
  store: EnvelopeStore;
  /** Adds (or replaces) a target after start (the demo registers its host this way). */
  addTarget(name: string, connector: Connector): void;
  close(): Promise<void>;
}

export const DASHBOARD_DIR = fileURLToPath(new URL('../../web/dashboard/', import.meta.url));
/** The repository root, where web/lab lives. */
const ROOT_DIR = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Who may read /metrics: holders of the token when one is set; else everyone on a loopback-only plane
 * (only this machine can reach it), and nobody on a plane listening beyond loopback, whose metrics name
 * targets and task counts.
 */
export function metricsAccessFor(bind: string, token: string | undefined): MetricsAccess {
  if (token) return { kind: 'token', token };
  const loopback = /^127\./.test(bind) || bind === '::1' || bind === 'localhost';
  return loopback ? { kind: 'open' } : { kind: 'closed' };
}

/** A listen failure a person can act on (port taken, address not ours) as a configuration error. */
function listenError(err: NodeJS.ErrnoException, bind: string, port: number): Error {
  if (err.code === 'EADDRINUSE')
    return new TaskplaneError('config', `port ${port} on ${bind} is already in use`, { field: 'port' });
  if (err.code === 'EADDRNOTAVAIL' || err.code === 'EACCES')
    return new TaskplaneError('config', `cannot listen on ${bind}:${port} (${err.code})`, { field: 'bind' });
  return err;
}

/**
 * Starts the control plane in this process: store, API keys, connectors, the engine (with restart
 * recovery) and the HTTP server. `close()` stops the engine's loops, ends SSE streams, closes the
 * server and the store if it opened it.
 */
export async function startServer(options: ServerOptions = {}): Promise<RunningServer> {
  const logger = options.logger ?? silentLogger;
  const clock = options.clock ?? new SystemClock();
  // Ids, message ids and webhook tokens draw a few bytes each: 4 KiB at a time, as the host does.
  const random = options.random ?? new BufferedRandom(new CryptoRandom());
  // Before anything is opened: a directory that cannot be made stops the start with nothing to undo.
  const beforePurge = options.exportBeforePurge
    ? exportBeforePurge(options.exportBeforePurge, clock)
    : undefined;
  const ownsStore = typeof options.db !== 'object';
  const store =
    typeof options.db === 'object' ? options.db : await openStore(options.db ?? 'sqlite:./data/taskplane.db');
  const tickets = await StreamTickets.open({
    store,
    clock,
    random,
    ...(options.keys?.ticketTtlMs !== undefined ? { ttlMs: options.keys.ticketTtlMs } : {}),
  });
  if (options.metricsToken !== undefined && options.metricsToken.length < 16)
    throw new TaskplaneError('config', 'metricsToken: at least 16 characters', { field: 'metricsToken' });

  const connectors = new Map<string, Connector>(Object.entries(options.connectors ?? {}));
  const deps: ConnectorDeps = { clock, random, logger, env: options.env ?? {} };
  // A target's `verifier` ({url, timeoutMs?, maxAttempts?}) is the plane's, whatever the kind: every task
  // of the target is verified there (plane/verifier.ts); the connector never sees it.
  const verifiers: Record<string, { url: string; timeoutMs?: number; maxAttempts?: number }> = {};
  for (const [name, raw] of Object.entries(options.targets ?? {})) {
    let t = raw;
    if (typeof t === 'object' && t !== null && 'verifier' in t) {
      const { verifier, ...rest } = t as TargetConfig;
      verifiers[name] = verifier as { url: string };
      t = rest as typeof t;
    }
    connectors.set(
      name,
      typeof t === 'string'
        ? connectTarget(name, { kind: 'a2a', baseUrl: t }, deps)
        : 'kind' in t && typeof t.kind === 'string'
          ? connectTarget(name, t as TargetConfig, deps)
          : new A2AConnector({ target: name, clock, ...(t as Omit<A2AConnectorOptions, 'target'>) }),
    );
  }

  const planeOptions: PlaneOptions = {
    ...options.plane,
    acceptance: {
      ...options.plane?.acceptance,
      verifiers: { ...verifiers, ...options.plane?.acceptance?.verifiers },
    },
  };
  // Checked before listening: a bad engine option stops the start with no port bound and no key stored.
  planeConfig(planeOptions);

  // Listen first: the plane's public URL may be the listening address, known only now.
  let handler: ((req: Request, env: unknown) => Response | Promise<Response>) | null = null;
  const port = options.port ?? 8080;
  const bind = options.bind ?? '127.0.0.1';
  const server = await new Promise<ServerType>((resolve, reject) => {
    const s = serve(
      {
        // The node objects go through as hono's `c.env`: SSE streams write to the response directly.
        fetch: (req, env) => (handler ? handler(req, env) : new Response('starting', { status: 503 })),
        port,
        hostname: bind,
      },
      () => resolve(s),
    );
    s.once('error', (err: NodeJS.ErrnoException) => reject(listenError(err, bind, port)));
  }).catch(async (err: unknown) => {
    if (ownsStore) await store.close();
    throw err;
  });
  // The first-start key is made only now that the port is ours: a start that cannot listen must not
  // store a key nobody was shown.
  const { generatedKey, revokedSeeds } = await seedApiKeys({
    ...(options.apiKeys !== undefined ? { env: options.apiKeys } : {}),
    ...(options.apiKeysFile ? { file: options.apiKeysFile } : {}),
    store,
    clock,
    random,
  }).catch(async (err: unknown) => {
    await new Promise<void>((r) => server.close(() => r()));
    if (ownsStore) await store.close();
    throw err;
  });
  if (revokedSeeds.length > 0)
    logger.warn({ keyIds: revokedSeeds }, 'seed API keys are revoked in the store and stay refused');
  const address = server.address() as AddressInfo;
  const host = bind === '0.0.0.0' || bind === '::' ? '127.0.0.1' : bind.includes(':') ? `[${bind}]` : bind;
  const url = `http://${host}:${address.port}`;
  const publicUrl = options.publicUrl === 'self' ? url : (options.publicUrl ?? null);

  // Stable across restarts on a fixed port, so a restarted plane takes its watch leases (and its
  // reconciliation leases) back at once instead of waiting out its dead predecessor's.
  const instanceId =
    options.instanceId ?? (port !== 0 ? `plane@${hostname()}:${port}` : newId(clock, random, 'pln_'));
  // Acceptance schemas compile in a worker thread with a deadline, never on the event loop.
  const schemaCompiler = new WorkerSchemaCompiler({ clock });
  const plane = new Plane({
    clock,
    random,
    store,
    schemaCompiler,
    verifier: createVerifierTransport({ allowPrivate: options.allowPrivateVerifiers ?? false }),
    // New jobs' starts run on a later turn than their create, whose answer is then written first.
    nextTurn: (fn) => void setImmediate(fn),
    connectors: (target) => connectors.get(target),
    logger: logger.child({ part: 'plane' }),
    options: { ...planeOptions, publicUrl: options.plane?.publicUrl ?? publicUrl },
    instanceId,
    ...(beforePurge ? { beforePurge } : {}),
  });
  // Every process sharing the store notices a revocation; one of them (whoever records it first) applies
  // the plane's onActorRevoked policy to the key's open jobs.
  const revocations = new Set<Promise<unknown>>();
  const keys = new KeyRing({
    store,
    clock,
    ...(options.keys?.cacheMs !== undefined ? { cacheMs: options.keys.cacheMs } : {}),
    onRevoked: (key) => {
      const work = (async () => {
        // Claimed by one process; marked done after, so only a process that died half way (and comes
        // back under the same instance id) runs it again.
        const done = `server.keyRevoked.${key.id}.done`;
        if ((await store.getSetting(done)) !== undefined) return;
        const claim = `server.keyRevoked.${key.id}`;
        if ((await store.putSettingIfAbsent(claim, instanceId)) !== instanceId) return;
        await plane.onActorRevoked(key.id, key.tenant);
        await store.putSettingIfAbsent(done, String(clock.now()));
      })().catch((err: unknown) =>
        logger.error(
          { keyId: key.id, err: err instanceof Error ? err.message : 'error' },
          'revoked key not handled',
        ),
      );
      revocations.add(work);
      void work.finally(() => revocations.delete(work));
    },
  });
  const metricsAccess = metricsAccessFor(bind, options.metricsToken);
  if (metricsAccess.kind === 'closed')
    logger.warn({ bind }, '/metrics refused: listening beyond loopback without a metrics token');
  // The engine links its calls to plane.signal without listeners (plane/context.ts childSignal); the
  // shutdown signal, though, gets one listener per open SSE stream, by design.
  const shutdown = new AbortController();
  setMaxListeners(0, shutdown.signal);
  const app = createServerApp({
    plane,
    store,
    keys,
    tickets,
    metricsAccess,
    logger,
    signal: shutdown.signal,
    targets: () => connectors.entries(),
    schemaCompiler,
    ...(options.dashboard === false ? {} : { dashboardDir: DASHBOARD_DIR }),
    ...(options.lab === false ? {} : { lab: labRoute(ROOT_DIR, logger.child({ part: 'lab-page' })) }),
    ...(options.defaultMetrics !== undefined ? { defaultMetrics: options.defaultMetrics } : {}),
    ...options.limits,
    clock,
  });
  handler = (req, env) => app.fetch(req, env);
  await plane.start();
  await keys.start((err) =>
    logger.warn({ err: err instanceof Error ? err.message : 'error' }, 'API key sweep failed'),
  );
  logger.info({ url, targets: [...connectors.keys()], publicUrl }, 'control plane ready');

  let closing: Promise<void> | undefined;
  return {
    url,
    dashboardUrl: generatedKey ? `${url}/#key=${generatedKey}` : `${url}/`,
    generatedApiKey: generatedKey,
    plane,
    store,
    addTarget: (name, connector) => void connectors.set(name, connector),
    close: () =>
      (closing ??= (async () => {
        keys.stop();
        shutdown.abort();
        const closed = new Promise<void>((r) => server.close(() => r()));
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
        await Promise.allSettled([...revocations]);
        await plane.stop();
        await schemaCompiler.close();
        await closed;
        if (ownsStore) await store.close();
      })()),
  };
}
