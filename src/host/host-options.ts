import type { Logger } from '../core/logger.ts';
import type { Clock } from '../core/clock.ts';
import { DEFAULT_MAX_JSON_DEPTH } from '../core/bounded-json.ts';
import { TaskplaneError } from '../core/errors.ts';
import type { Random } from '../core/random.ts';
import { DEFAULT_MAX_BODY_BYTES } from '../protocols/a2a/http-common.ts';
import { DEFAULT_KEEPALIVE_MS } from '../protocols/a2a/sse.ts';
import { signingKey } from '../protocols/standard-webhooks.ts';
import type { AgentTaskStore } from '../store/store.ts';
import { isAgentDefinition, type AgentDefinition } from './agent-api.ts';
import { parseCardSigningKey, type ParsedCardKey } from './card-signing.ts';
import type { PushSender } from './push-sender.ts';
import type { Resolver } from '../core/public-address.ts';

/** Options of `startHost`; every default is the CLI's. */
export interface HostOptions {
  /** TCP port; 0 picks a free one (the returned url has the real one). @default 4100 */
  port?: number;
  /** Interface to bind. @default '127.0.0.1' */
  bind?: string;
  /** `sqlite:PATH`, `postgres://…`, `memory:`, or an AgentTaskStore you own (not closed by close()). @default 'sqlite:./data/host.db' */
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
  /**
   * Private key the agent card is signed with (A2A 1.0, agent card signing): PEM text or a private
   * JWK as JSON (EC, Ed25519 or RSA; card-signing.ts). The public key is served at
   * `/.well-known/agent-card-jwks.json`, named by each signature's `jku`. @default the card is unsigned
   */
  cardSigningKey?: string;
  /** INPUT_REQUIRED longer than this fails the task. @default 900000 */
  inputTimeoutMs?: number;
  /** Public base URL for the card when it differs from http://bind:port. */
  publicUrl?: string;
  /**
   * Also serve the A2A gRPC binding on this port (0 = any free port) and declare it in the card.
   * @default off
   */
  grpcPort?: number;
  /** The gRPC target (`host:port`) the card declares when it differs from bind:grpcPort. */
  grpcPublicUrl?: string;
  /** SSE keep-alive interval. @default 15000 */
  keepAliveMs?: number;
  /** Request body limit in bytes, counted while the body streams in. @default 1048576 */
  maxBodyBytes?: number;
  /** Nesting levels a JSON request body may have. @default 64 */
  maxJsonDepth?: number;
  clock?: Clock;
  random?: Random;
  /** Where the host logs (a pino logger fits; the CLI passes one). @default silent */
  logger?: Logger;
  /** DNS for the webhook SSRF check. @default node:dns lookup */
  resolver?: Resolver;
  /** Replace the HTTP push sender (tests). */
  pushSender?: PushSender;
  /**
   * Names this host process for task ownership (host-liveness.ts). Keep it stable across restarts so a
   * restarted host takes its tasks back at once. @default `<hostname>:<port>`, or a random id with port 0
   */
  hostId?: string;
  /**
   * Bearer token /metrics requires. Without one /metrics is open on a loopback bind and refused
   * (401) beyond it. @default none
   */
  metricsToken?: string;
  /**
   * Host lease time-to-live: a crashed host's tasks are taken over this long after its last renewal, or,
   * on PostgreSQL, within seconds of its database session ending (host-liveness.ts). @default 30000
   */
  hostLeaseMs?: number;
  /**
   * On shutdown, how long to wait for executes to return after their abort signal fired; one that ignores
   * it is left behind (it can no longer write) and its task resumes on the next start. @default 10000
   */
  shutdownGraceMs?: number;
  /**
   * Lifetime of an MCP task from its creation (`ttlMs` on the wire): after it, tasks/get answers
   * -32602 "expired". @default 86400000 (one day)
   */
  mcpTaskTtlMs?: number;
  /** The `pollIntervalMs` MCP tasks suggest to clients. @default 1000 */
  mcpPollIntervalMs?: number;
  /**
   * How long a finished task (completed, failed, canceled, rejected) is kept after its last write; then
   * it is purged with its events, push configs, outbox rows and messageId records (task-retention.ts).
   * null keeps finished tasks for ever. @default 2592000000 (30 days)
   */
  taskRetentionMs?: number | null;
  /** Wait between purge rounds. @default 60000 */
  purgeIntervalMs?: number;
  /** Tasks deleted per transaction. @default 100 */
  purgeBatchSize?: number;
}

/** The host's options after defaults and validation: what `startHost` runs with. */
export interface HostConfig {
  port: number;
  bind: string;
  db: string | AgentTaskStore;
  agent: AgentDefinition | string | undefined;
  auth: 'none' | 'keys';
  /** Present exactly when `auth` is 'keys'. */
  keys: Map<string, string> | undefined;
  allowPrivateWebhooks: boolean;
  pushBaseMs: number;
  pushAttempts: number;
  pushTimeoutMs: number;
  pushSigningSecret: string | undefined;
  cardSigningKey: ParsedCardKey | undefined;
  inputTimeoutMs: number;
  /** Without a trailing slash; undefined means the URL the host listens on. */
  publicUrl: string | undefined;
  /** undefined: no gRPC listener. */
  grpcPort: number | undefined;
  grpcPublicUrl: string | undefined;
  keepAliveMs: number;
  maxBodyBytes: number;
  maxJsonDepth: number;
  /** undefined: derived from the hostname and port once the port is known. */
  hostId: string | undefined;
  hostLeaseMs: number;
  shutdownGraceMs: number;
  metricsToken: string | undefined;
  mcpTaskTtlMs: number;
  mcpPollIntervalMs: number;
  taskRetentionMs: number | null;
  purgeIntervalMs: number;
  purgeBatchSize: number;
}

function bad(field: string, message: string): TaskplaneError {
  return new TaskplaneError('config', `${field}: ${message}`, { field });
}

function positive(field: string, value: unknown, dflt: number): number {
  const v = value ?? dflt;
  if (typeof v !== 'number' || !(Number.isFinite(v) && v > 0)) throw bad(field, 'must be a number > 0');
  return v;
}

function integer(field: string, value: unknown, dflt: number, min: number, max?: number): number {
  const v = value ?? dflt;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || (max !== undefined && v > max))
    throw bad(
      field,
      max === undefined ? `must be an integer >= ${min}` : `must be an integer in ${min}..${max}`,
    );
  return v;
}

function text(field: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.trim() === '') throw bad(field, 'must be a non-empty string');
  return value;
}

function oneOf<T extends string>(field: string, value: unknown, allowed: readonly T[], dflt: T): T {
  const v = value ?? dflt;
  if (!allowed.includes(v as T)) throw bad(field, `must be one of ${allowed.join(', ')}`);
  return v as T;
}

/**
 * Host options → defaults → validated config, in one place: a bad value is a `config` error whose
 * message starts with the field it names (`pushAttempts: must be an integer >= 1`), thrown
 * before anything is opened or bound.
 */
export function hostConfig(options: HostOptions = {}): HostConfig {
  const auth = oneOf('auth', options.auth, ['none', 'keys'] as const, 'none');
  let keys: Map<string, string> | undefined;
  if (auth === 'keys') {
    if (!(options.keys instanceof Map) || options.keys.size === 0)
      throw bad('keys', "must hold at least one key when auth is 'keys'");
    keys = options.keys;
  }
  const db = options.db ?? 'sqlite:./data/host.db';
  if (typeof db === 'string' ? db.trim() === '' : typeof db !== 'object' || db === null)
    throw bad('db', 'must be sqlite:PATH, postgres://…, memory: or a Store');
  const agent = options.agent;
  if (agent !== undefined && (typeof agent === 'string' ? agent.trim() === '' : !isAgentDefinition(agent)))
    throw bad('agent', 'must be a module path or defineAgent({card, execute and/or tools})');
  const publicUrl = text('publicUrl', options.publicUrl);
  if (publicUrl !== undefined && !/^https?:\/\/[^/]+/.test(publicUrl))
    throw bad('publicUrl', 'must be an http(s) URL');
  const grpcPublicUrl = text('grpcPublicUrl', options.grpcPublicUrl);
  // A gRPC target is host:port (or a grpc-js scheme such as dns:///host:port), never an http(s) URL.
  if (grpcPublicUrl !== undefined && (/^https?:/i.test(grpcPublicUrl) || !/:\d+$/.test(grpcPublicUrl)))
    throw bad('grpcPublicUrl', 'must be host:port');
  const pushSigningSecret = text('pushSigningSecret', options.pushSigningSecret);
  if (pushSigningSecret !== undefined) signingKey(pushSigningSecret, 'pushSigningSecret');
  const cardKeyText = text('cardSigningKey', options.cardSigningKey);
  const cardSigningKey = cardKeyText !== undefined ? parseCardSigningKey(cardKeyText) : undefined;
  const allowPrivateWebhooks = options.allowPrivateWebhooks ?? false;
  if (typeof allowPrivateWebhooks !== 'boolean') throw bad('allowPrivateWebhooks', 'must be true or false');
  return {
    port: integer('port', options.port, 4100, 0, 65535),
    bind: text('bind', options.bind) ?? '127.0.0.1',
    db,
    agent,
    auth,
    keys,
    allowPrivateWebhooks,
    pushBaseMs: positive('pushBaseMs', options.pushBaseMs, 5000),
    pushAttempts: integer('pushAttempts', options.pushAttempts, 8, 1),
    pushTimeoutMs: positive('pushTimeoutMs', options.pushTimeoutMs, 15_000),
    pushSigningSecret,
    cardSigningKey,
    inputTimeoutMs: positive('inputTimeoutMs', options.inputTimeoutMs, 900_000),
    publicUrl: publicUrl?.replace(/\/+$/, ''),
    grpcPort: options.grpcPort === undefined ? undefined : integer('grpcPort', options.grpcPort, 0, 0, 65535),
    grpcPublicUrl,
    keepAliveMs: positive('keepAliveMs', options.keepAliveMs, DEFAULT_KEEPALIVE_MS),
    maxBodyBytes: integer('maxBodyBytes', options.maxBodyBytes, DEFAULT_MAX_BODY_BYTES, 1),
    maxJsonDepth: integer('maxJsonDepth', options.maxJsonDepth, DEFAULT_MAX_JSON_DEPTH, 1),
    hostId: text('hostId', options.hostId),
    hostLeaseMs: positive('hostLeaseMs', options.hostLeaseMs, 30_000),
    shutdownGraceMs: positive('shutdownGraceMs', options.shutdownGraceMs, 10_000),
    metricsToken: text('metricsToken', options.metricsToken),
    // Positive integers on the wire (the extension's schema and conformance require it).
    mcpTaskTtlMs: integer('mcpTaskTtlMs', options.mcpTaskTtlMs, 86_400_000, 1),
    mcpPollIntervalMs: integer('mcpPollIntervalMs', options.mcpPollIntervalMs, 1000, 1),
    taskRetentionMs:
      options.taskRetentionMs === null
        ? null
        : integer('taskRetentionMs', options.taskRetentionMs, 30 * 86_400_000, 0),
    purgeIntervalMs: positive('purgeIntervalMs', options.purgeIntervalMs, 60_000),
    purgeBatchSize: integer('purgeBatchSize', options.purgeBatchSize, 100, 1, 10_000),
  };
}
