import { setMaxListeners } from 'node:events';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import { serve, type ServerType } from '@hono/node-server';
import pino, { type Logger } from 'pino';
import { SystemClock, type Clock } from '../core/clock.ts';
import { TaskplaneError } from '../core/errors.ts';
import { CryptoRandom, type Random } from '../core/random.ts';
import { newId } from '../core/ids.ts';
import { openStore } from '../store/open-store.ts';
import type { Store } from '../store/store.ts';
import type { Connector } from '../connectors/connector.ts';
import { A2AConnector, type A2AConnectorOptions } from '../connectors/a2a/a2a-connector.ts';
import { Plane } from '../plane/plane.ts';
import type { PlaneOptions } from '../plane/options.ts';
import { loadApiKeys } from './api-keys.ts';
import { labRoute } from './lab-route.ts';
import { createServerApp, type ServerAppOptions } from './server-app.ts';

/** Options of `startServer`; every default is the CLI's. */
export interface ServerOptions {
  /** TCP port; 0 picks a free one. @default 8080 */
  port?: number;
  /** @default '127.0.0.1' */
  bind?: string;
  /** `sqlite:PATH`, `postgres://…`, `memory:`, or a Store you own (not closed by close()). @default 'sqlite:./data/taskplane.db' */
  db?: string | Store;
  /**
   * Base URL agents reach this plane at, for push webhooks. `'self'` uses the listening URL (loopback:
   * only for agents on this machine). Without it the plane uses streams, polling and reconciliation.
   */
  publicUrl?: string | 'self' | null;
  /** A2A targets: name → base URL (card at /.well-known/agent-card.json) or connector options. */
  targets?: Record<string, string | Omit<A2AConnectorOptions, 'target'>>;
  /** Ready-made connectors by target name (tests, other protocols). */
  connectors?: Record<string, Connector>;
  /** `tenant:key,…` (TASKPLANE_API_KEYS). */
  apiKeys?: string;
  /** File with one `tenant:key` per line. */
  apiKeysFile?: string;
  plane?: PlaneOptions;
  /** Serve the dashboard at `/`. @default true */
  dashboard?: boolean;
  /** Serve the failure lab page at `/lab` (bundled on first request). @default true */
  lab?: boolean;
  logger?: Logger;
  clock?: Clock;
  random?: Random;
  /** prom-client process metrics (off in tests that start many servers). @default true */
  defaultMetrics?: boolean;
  /** Request body limits and JSON nesting limit (server-app.ts and docs/security.md give the defaults). */
  limits?: Pick<ServerAppOptions, 'maxBodyBytes' | 'maxWebhookBytes' | 'maxJsonDepth'>;
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
  store: Store;
  /** Adds (or replaces) a target after start (the demo registers its host this way). */
  addTarget(name: string, connector: Connector): void;
  close(): Promise<void>;
}

export const DASHBOARD_DIR = fileURLToPath(new URL('../../web/dashboard/', import.meta.url));
/** The repository root, where web/lab lives. */
const ROOT_DIR = fileURLToPath(new URL('../../', import.meta.url));

/** Parses `name=url,name=url` (TASKPLANE_TARGETS, --target). */
export function parseTargets(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of (text ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const i = entry.indexOf('=');
    const name = entry.slice(0, i).trim();
    const url = entry.slice(i + 1).trim();
    if (i <= 0 || !/^https?:\/\//.test(url))
      throw new TaskplaneError('config', `target '${entry}': expected name=http(s)://url`, {
        field: 'target',
      });
    out[name] = url;
  }
  return out;
}

/**
 * Starts the control plane in this process: store, API keys, connectors, the engine (with restart
 * recovery) and the HTTP server. `close()` stops the engine's loops, ends SSE streams, closes the
 * server and the store if it opened it.
 */
export async function startServer(options: ServerOptions = {}): Promise<RunningServer> {
  const logger = options.logger ?? pino({ level: process.env.LOG_LEVEL ?? 'info' });
  const clock = options.clock ?? new SystemClock();
  const random = options.random ?? new CryptoRandom();
  const ownsStore = typeof options.db !== 'object';
  const store =
    typeof options.db === 'object' ? options.db : await openStore(options.db ?? 'sqlite:./data/taskplane.db');
  const { keys, generatedKey } = await loadApiKeys({
    ...(options.apiKeys !== undefined ? { env: options.apiKeys } : {}),
    ...(options.apiKeysFile ? { file: options.apiKeysFile } : {}),
    store,
    random,
  });

  const connectors = new Map<string, Connector>(Object.entries(options.connectors ?? {}));
  for (const [name, t] of Object.entries(options.targets ?? {})) {
    connectors.set(name, new A2AConnector({ target: name, ...(typeof t === 'string' ? { baseUrl: t } : t) }));
  }

  // Listen first: the plane's public URL may be the listening address, known only now.
  let handler: ((req: Request) => Response | Promise<Response>) | null = null;
  const port = options.port ?? 8080;
  const bind = options.bind ?? '127.0.0.1';
  const server = await new Promise<ServerType>((resolve, reject) => {
    const s = serve(
      {
        fetch: (req) => (handler ? handler(req) : new Response('starting', { status: 503 })),
        port,
        hostname: bind,
      },
      () => resolve(s),
    );
    s.once('error', reject);
  });
  const address = server.address() as AddressInfo;
  const host = bind === '0.0.0.0' || bind === '::' ? '127.0.0.1' : bind.includes(':') ? `[${bind}]` : bind;
  const url = `http://${host}:${address.port}`;
  const publicUrl = options.publicUrl === 'self' ? url : (options.publicUrl ?? null);

  const plane = new Plane({
    clock,
    random,
    store,
    connectors: (target) => connectors.get(target),
    logger: logger.child({ part: 'plane' }),
    options: { ...options.plane, publicUrl: options.plane?.publicUrl ?? publicUrl },
    // Stable across restarts on a fixed port, so a restarted plane takes its watch leases (and its
    // reconciliation leases) back at once instead of waiting out its dead predecessor's.
    instanceId:
      options.instanceId ?? (port !== 0 ? `plane@${hostname()}:${port}` : newId(clock, random, 'pln_')),
  });
  // The engine links its calls to plane.signal without listeners (plane/context.ts childSignal); the
  // shutdown signal, though, gets one listener per open SSE stream, by design.
  const shutdown = new AbortController();
  setMaxListeners(0, shutdown.signal);
  const app = createServerApp({
    plane,
    store,
    keys,
    logger,
    signal: shutdown.signal,
    ...(options.dashboard === false ? {} : { dashboardDir: DASHBOARD_DIR }),
    ...(options.lab === false ? {} : { lab: labRoute(ROOT_DIR, logger.child({ part: 'lab-page' })) }),
    ...(options.defaultMetrics !== undefined ? { defaultMetrics: options.defaultMetrics } : {}),
    ...options.limits,
  });
  handler = (req) => app.fetch(req);
  await plane.start();
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
        shutdown.abort();
        const closed = new Promise<void>((r) => server.close(() => r()));
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
        await plane.stop();
        await closed;
        if (ownsStore) await store.close();
      })()),
  };
}
