import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { resolve as resolvePath } from 'node:path';
import { SystemClock } from '../core/clock.ts';
import { silentLogger } from '../core/logger.ts';
import { TaskplaneError } from '../core/errors.ts';
import { newId } from '../core/ids.ts';
import { CryptoRandom } from '../core/random.ts';
import type { AgentTaskStore } from '../store/store.ts';
import type { Authenticate } from '../protocols/a2a/handler.ts';
import { hostname } from 'node:os';
import { A2AService } from './a2a-service.ts';
import { BufferedRandom } from '../core/buffered-random.ts';
import { isAgentDefinition, type AgentDefinition } from './agent-api.ts';
import { JSONRPC_PATH, REST_PATH, buildAgentCard, grpcInterface } from './agent-card.ts';
import type { GrpcListener } from './grpc-server.ts';
import { ANONYMOUS_OWNER, bearerKeyAuth, noAuth } from './auth.ts';
import { demoAgent } from './demo-agent.ts';
import { Executions } from './executions.ts';
import { hostConfig, type HostConfig, type HostOptions } from './host-options.ts';
import { HostLiveness } from './host-liveness.ts';
import { Recovery, type RecoveryCounts } from './recovery.ts';
import { createHostListener, hostMetricsAccess } from './host-app.ts';
import { createHostMetrics } from './host-metrics.ts';
import { cardSigner } from './card-signing.ts';
import { CARD_JWKS_PATH, ServedCards } from './served-cards.ts';
import { MCP_PATH, mcpHttp } from './http/mcp-http.ts';
import { McpService } from './mcp-service.ts';
import { openHostStore } from './host-store.ts';
import { PushOutbox } from './push-outbox.ts';
import { createPushSender } from './push-sender.ts';
import { systemResolver } from './ssrf.ts';
import { loadStepKeySecret } from './steps.ts';
import { TaskFeed } from './task-feed.ts';
import { TaskStreams } from './task-streams.ts';
import { TaskWriter } from './task-writer.ts';
import { TaskRetention } from './task-retention.ts';

export type { HostOptions } from './host-options.ts';

export interface RunningHost {
  /** Base URL, e.g. http://127.0.0.1:4100 */
  url: string;
  cardUrl: string;
  jsonRpcUrl: string;
  restUrl: string;
  /** The MCP endpoint (Streamable HTTP, 2026-07-28 and 2025-11-25). */
  mcpUrl: string;
  /** The A2A gRPC target (`host:port`) when `grpcPort` is set. */
  grpcUrl?: string;
  store: AgentTaskStore;
  /** What restart recovery did on start. */
  recovered: RecoveryCounts;
  /** Live numbers for dashboards and tests (`purged`: finished tasks purged since start). */
  stats(): { executions: number; subscribers: number; purged: number };
  /** One retention purge round now (the loop runs every `purgeIntervalMs`); tasks deleted. */
  purgeExpired(): Promise<number>;
  close(): Promise<void>;
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

async function loadAgent(agent: HostConfig['agent']): Promise<AgentDefinition> {
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
  if (!isAgentDefinition(def)) {
    throw new TaskplaneError(
      'config',
      `${agent}: the default export must be defineAgent({card, execute and/or tools})`,
      {
        field: 'agent',
      },
    );
  }
  return def;
}

/**
 * Starts the durable A2A agent host in this process: opens the store, recovers unfinished tasks,
 * starts the push outbox and serves HTTP. `close()` stops accepting, stops executions (they resume on
 * the next start) and the outbox, and closes the store if it opened it.
 */
export async function startHost(options: HostOptions = {}): Promise<RunningHost> {
  const config = hostConfig(options);
  const clock = options.clock ?? new SystemClock();
  const random = options.random ?? new BufferedRandom(new CryptoRandom());
  const logger = options.logger ?? silentLogger;
  const { port, bind, inputTimeoutMs, pushBaseMs, pushAttempts, pushTimeoutMs } = config;
  const authMode = config.auth;
  const authenticate: Authenticate = config.keys ? bearerKeyAuth(config.keys) : noAuth;
  const agent = await loadAgent(config.agent);
  // Before anything is opened: a key that cannot sign stops the start with nothing to clean up.
  const signer = config.cardSigningKey
    ? await cardSigner(
        config.cardSigningKey,
        config.publicUrl ? config.publicUrl + CARD_JWKS_PATH : undefined,
      )
    : null;

  const ownsStore = typeof config.db !== 'object';
  const store = typeof config.db === 'object' ? config.db : await openHostStore(config.db, logger);
  const hostId = config.hostId ?? (port !== 0 ? `${hostname()}:${port}` : newId(clock, random, 'host_'));
  // Set once the executions exist: a host whose lease passed to another process with its id (one that
  // started while this one's database session was cut) stops running tasks; that process runs them.
  let leaseLost = (): void => undefined;
  const liveness = new HostLiveness(hostId, store, clock, logger, {
    ttlMs: config.hostLeaseMs,
    instance: newId(clock, random),
    onLost: () => leaseLost(),
  });
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
    stepKeySecret: await loadStepKeySecret(store, random),
    shutdownGraceMs: config.shutdownGraceMs,
  });
  const recovery = new Recovery({ store, writer, clock, executions, liveness, agent, logger });
  leaseLost = () => {
    void recovery.stop().then(() => executions.close());
  };
  let baseUrl = config.publicUrl ?? '';
  const service = new A2AService({
    store,
    clock,
    random,
    writer,
    feed,
    streams: new TaskStreams(store, feed),
    executions,
    liveness,
    card: () => cards.v10,
    agent,
    logger,
  });
  const cards = new ServedCards(signer);
  await cards.set(buildAgentCard(agent.card, baseUrl, authMode, agent.extendedCard !== undefined));
  const mcp = new McpService({
    store,
    clock,
    random,
    writer,
    feed,
    executions,
    liveness,
    agent,
    logger,
    ttlMs: config.mcpTaskTtlMs,
    pollIntervalMs: config.mcpPollIntervalMs,
  });
  const metrics = createHostMetrics({
    executions: () => executions.activeCount,
    subscribers: () => feed.subscriberCount,
  });
  const listener = createHostListener({
    metrics: { registry: metrics.registry, access: hostMetricsAccess(bind, config.metricsToken) },
    mcp: mcpHttp({
      service: mcp,
      authenticate,
      logger,
      maxBodyBytes: config.maxBodyBytes,
      maxJsonDepth: config.maxJsonDepth,
      keepAliveMs: config.keepAliveMs,
    }),
    handler: service,
    v03Card: () => cards.v03,
    cardJwks: () => cards.jwks,
    authenticate,
    clock,
    logger,
    maxBodyBytes: config.maxBodyBytes,
    maxJsonDepth: config.maxJsonDepth,
    keepAliveMs: config.keepAliveMs,
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
  let grpc: GrpcListener | undefined;
  let grpcUrl: string | undefined;
  if (config.grpcPort !== undefined) {
    try {
      // gRPC (its library and the A2A proto) loads only for a host that serves it.
      const { startGrpcListener } = await import('./grpc-server.ts');
      grpc = await startGrpcListener({
        handler: service,
        authenticate,
        logger,
        port: config.grpcPort,
        bind,
        maxMessageBytes: config.maxBodyBytes,
        keepAliveMs: config.keepAliveMs,
      });
    } catch (err) {
      // Nothing has run yet: let go of what is open so the caller can start again on the same ports.
      await new Promise<void>((r) => server.close(() => r()));
      await executions.close();
      await liveness.stop();
      feed.stop();
      if (ownsStore) await store.close();
      throw err;
    }
    grpcUrl = config.grpcPublicUrl ?? `${host}:${grpc.port}`;
  }
  if (signer && !config.publicUrl) signer.jku = baseUrl + CARD_JWKS_PATH;
  await cards.set(
    buildAgentCard(
      agent.card,
      baseUrl,
      authMode,
      agent.extendedCard !== undefined,
      grpcUrl ? [grpcInterface(grpcUrl)] : [],
    ),
  );

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
        allowPrivate: config.allowPrivateWebhooks,
        timeoutMs: pushTimeoutMs,
        ...(config.pushSigningSecret !== undefined ? { signingSecret: config.pushSigningSecret } : {}),
      }),
  });
  outboxRef.outbox = outbox;
  outbox.start();
  const retention =
    config.taskRetentionMs === null
      ? null
      : new TaskRetention({
          store,
          clock,
          logger,
          retentionMs: config.taskRetentionMs,
          intervalMs: config.purgeIntervalMs,
          batchSize: config.purgeBatchSize,
          maxPerRound: 100 * config.purgeBatchSize,
        });
  retention?.start();
  logger.info(
    {
      url,
      grpcUrl,
      hostId,
      auth: authMode,
      owner: authMode === 'none' ? ANONYMOUS_OWNER : undefined,
      recovered,
    },
    'agent host ready',
  );

  let closing: Promise<void> | undefined;
  return {
    url,
    cardUrl: `${baseUrl}/.well-known/agent-card.json`,
    jsonRpcUrl: baseUrl + JSONRPC_PATH,
    restUrl: baseUrl + REST_PATH,
    mcpUrl: baseUrl + MCP_PATH,
    ...(grpcUrl ? { grpcUrl } : {}),
    store,
    recovered,
    stats: () => ({
      executions: executions.activeCount,
      subscribers: feed.subscriberCount,
      purged: retention?.stats.tasks ?? 0,
    }),
    purgeExpired: () => retention?.sweep() ?? Promise.resolve(0),
    close: () =>
      (closing ??= (async () => {
        const closed = new Promise<void>((r) => server.close(() => r()));
        server.closeAllConnections();
        await grpc?.close();
        await recovery.stop();
        await executions.close();
        await outbox.stop();
        await retention?.stop();
        await liveness.stop();
        feed.stop();
        metrics.close();
        await closed;
        if (ownsStore) await store.close();
      })()),
  };
}
