import pg from 'pg';
import type { Envelope, EnvelopeEvent, NewEnvelopeEvent } from '../../core/envelope.ts';
import { TaskplaneError, VersionConflictError, notFound } from '../../core/errors.ts';
import { isTerminal, type NormalizedState } from '../../core/states.ts';
import { summarize, workflowTaskLimitError } from '../usage-summary.ts';
import { ChangeHub } from '../change-hub.ts';
import { snapshot } from '../snapshot.ts';
import * as rows from '../sql-rows.ts';
import { where } from '../sql-where.ts';
import type {
  CreateGuard,
  TargetUsage,
  UsageQuery,
  WorkflowBudgetRecord,
  ApiKeyRecord,
  ChangeNotice,
  EnvelopeQuery,
  EnvelopeVersion,
  EventQuery,
  ExpiredEnvelope,
  InboundDelivery,
  OpenJobsOfTarget,
  Page,
  ReconcileDueQuery,
  Store,
  StoreCapabilities,
  UnwatchedQuery,
} from '../store.ts';
import { silentLogger, type Logger } from '../../core/logger.ts';
import {
  decodeCursor,
  envelopeLimit,
  eventLimit,
  isOpenStateSet,
  OPEN_ENVELOPES_SQL,
  checkRemoteLookup,
  openJobsSummary,
  keysetPage,
  START_KEYSET,
  unwatchedLimit,
} from '../store-query.ts';
import { clientConfig, parsePgUrl, translatePgError, type PgTarget } from './pg-connect.ts';
import { PgAgentHost } from './pg-agent-host.ts';
import { EnvelopeBatcher, type EnvelopeOp } from './pg-envelope-batcher.ts';
import { PgListener, type WirePayload } from './pg-listener.ts';
import { migratePostgres } from './pg-migrate.ts';
import { PG_MIGRATIONS } from './pg-schema.ts';
import { reconcileSql } from '../reconcile-sql.ts';
import { unwatchedSql } from '../unwatched-sql.ts';
import * as purge from './pg-purge.ts';

export interface PostgresStoreOptions {
  /** `postgres://user:pass@host:port/db?schema=name`; the schema is created when missing. */
  url: string;
  /** Pooled connections per store. @default the URL's `?poolMax=`, else 10 */
  poolMax?: number;
  /** Give up connecting after this long (then `unavailable`). @default 5000 */
  connectTimeoutMs?: number;
  /** Share one transaction between envelope writes that queue up behind a running one. @default true */
  groupCommit?: boolean;
  /** Keep a LISTEN connection so other processes' commits reach onChange. @default true */
  listen?: boolean;
  /**
   * After the LISTEN connection reconnects, how long deadLeaseOwners names nobody (other processes cut
   * off by the same outage take their locks again meanwhile). @default RECONNECT_SETTLE_MS (12 s)
   */
  reconnectSettleMs?: number;
  logger?: Logger;
  /** "now" for the migrations table only. @default Date.now */
  nowMs?: () => number;
}

type Client = pg.PoolClient;

/**
 * The shared Store: several taskplane processes on one PostgreSQL database (or one schema of it). Dedup
 * rests on unique constraints with ON CONFLICT, CAS on a version column in the UPDATE, claims on
 * FOR UPDATE SKIP LOCKED, and fan-out on LISTEN/NOTIFY sent inside the writing transaction.
 */
const RECONCILE_SQL = reconcileSql('pg');
const UNWATCHED_SQL = { expiry: unwatchedSql('pg'), dead: unwatchedSql('pg', true) };

/** First key of the per-workflow transaction locks (pg_advisory_xact_lock(int, int)): apart from other locks. */
const WORKFLOW_LOCK_SPACE = 0x7770;

export class PostgresStore extends PgAgentHost implements Store {
  readonly capabilities: StoreCapabilities;
  private readonly hub = new ChangeHub();
  private readonly instanceId = globalThis.crypto.randomUUID();
  private readonly channel: string;
  private readonly eventLockKey: string;
  /** First half of every lease owner's liveness lock (the second is its lease_owners.lock_key). */
  private readonly ownerLockSpace: string;
  private listener: PgListener | undefined;
  private readonly envelopes: EnvelopeBatcher;
  private closed = false;

  /** `host:port/database`, safe to log (no credentials). */
  get label(): string {
    return this.target.label;
  }

  private constructor(
    protected readonly pool: pg.Pool,
    private readonly target: PgTarget,
    groupCommit: boolean,
    listen: boolean,
  ) {
    super();
    // Liveness rides on the LISTEN connection (a session); a store without one cannot vouch for owners.
    this.capabilities = {
      durable: true,
      multiProcess: true,
      crossProcessNotify: listen,
      ownerLiveness: listen,
    };
    const schema = target.schema ?? 'default';
    // Channel names are identifiers (63 bytes max): 10 + a schema name of at most 48.
    this.channel = `taskplane_${schema}`;
    this.eventLockKey = `taskplane_events:${schema}`;
    this.ownerLockSpace = `taskplane_owners:${schema}`;
    this.envelopes = new EnvelopeBatcher({
      pool,
      groupCommit,
      maxBatch: 128,
      lockEvents: (c) => this.lockEvents(c),
      notify: (c, notices) => this.notify(c, notices),
      onCommit: (notices) => this.hub.emit(notices),
      translate: (err) => translatePgError(err, target.label),
    });
  }

  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const target = parsePgUrl(options.url);
    const logger = options.logger ?? silentLogger;
    const config = clientConfig(target, options.connectTimeoutMs ?? 5000);
    const pool = new pg.Pool({ ...config, max: options.poolMax ?? target.poolMax ?? 10 });
    // An idle pooled connection dying (server restart) must not crash the process; the next query reconnects.
    pool.on('error', (err) =>
      logger.warn(`postgres pool connection error at ${target.label} (${err.message})`),
    );
    const listen = options.listen ?? true;
    const store = new PostgresStore(pool, target, options.groupCommit ?? true, listen);
    try {
      const client = await pool.connect();
      try {
        await migratePostgres(client, target.schema, PG_MIGRATIONS, (options.nowMs ?? Date.now)());
      } finally {
        client.release();
      }
      if (listen) {
        const session = { ...config, connectionString: target.sessionConnectionString };
        store.listener = new PgListener(
          session,
          store.channel,
          store.instanceId,
          store.hub,
          logger,
          options.reconnectSettleMs,
        );
        await store.listener.start();
      }
    } catch (err) {
      await store.close();
      throw translatePgError(err, target.label);
    }
    return store;
  }

  // --- envelopes -----------------------------------------------------------------------------

  createEnvelope(
    envelope: Envelope,
    events: NewEnvelopeEvent[],
    guard: CreateGuard = {},
  ): Promise<{ created: boolean; envelope: Envelope }> {
    ({ envelope, events } = snapshot({ envelope, events }));
    const limit = guard.workflowTaskLimit;
    return this.envelopeWrite(async ({ client: c, appendEvents }) => {
      const stored = { ...envelope, version: 1 };
      const workflowId = stored.workflowId;
      if (limit !== undefined && workflowId !== null) {
        // READ COMMITTED lets two transactions count the same rows: a transaction lock per workflow
        // serializes the guarded creates of one workflow (held to COMMIT), across every process.
        await c.query('SELECT pg_advisory_xact_lock($1::int, hashtext($2))', [
          WORKFLOW_LOCK_SPACE,
          JSON.stringify([stored.tenant, workflowId]),
        ]);
        if (stored.idempotencyKey !== null) {
          const existing = await c.query<rows.EnvelopeRow>(
            'SELECT doc, version FROM envelopes WHERE tenant = $1 AND idempotency_key = $2',
            [stored.tenant, stored.idempotencyKey],
          );
          if (existing.rows[0]) return { created: false, envelope: rows.toEnvelope(existing.rows[0]) };
        }
        const counted = await c.query<{ n: string }>(
          'SELECT COUNT(*) AS n FROM envelopes WHERE tenant = $1 AND workflow_id = $2',
          [stored.tenant, workflowId],
        );
        if (Number(counted.rows[0]!.n) >= limit) throw workflowTaskLimitError(workflowId, limit);
      }
      // ON CONFLICT on the idempotency index: a concurrent create with the same key waits for ours, then
      // finds it, instead of failing on the unique index.
      const inserted = await c.query(
        `INSERT INTO envelopes (tenant, idempotency_key, connector, target, remote_id, state, updated_at, version,
           retention_until, doc, id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
         ON CONFLICT (tenant, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING`,
        [...rows.envelopeColumns(stored), stored.id],
      );
      if (inserted.rowCount === 0) {
        const existing = await c.query<rows.EnvelopeRow>(
          'SELECT doc, version FROM envelopes WHERE tenant = $1 AND idempotency_key = $2',
          [envelope.tenant, envelope.idempotencyKey],
        );
        return { created: false, envelope: rows.toEnvelope(existing.rows[0]!) };
      }
      appendEvents(stored.id, events);
      return { created: true, envelope: snapshot(stored) };
    });
  }

  async getEnvelope(id: string): Promise<Envelope | undefined> {
    const found = await this.query<rows.EnvelopeRow>('SELECT doc, version FROM envelopes WHERE id = $1', [
      id,
    ]);
    return found[0] && rows.toEnvelope(found[0]);
  }

  async findEnvelopeByIdempotencyKey(tenant: string, key: string): Promise<Envelope | undefined> {
    const sql = 'SELECT doc, version FROM envelopes WHERE tenant = $1 AND idempotency_key = $2';
    const found = await this.query<rows.EnvelopeRow>(sql, [tenant, key]);
    return found[0] && rows.toEnvelope(found[0]);
  }

  async findEnvelopeByRemoteId(target: string, remoteId: string): Promise<Envelope | undefined> {
    const sql = 'SELECT doc, version FROM envelopes WHERE target = $1 AND remote_id = $2 LIMIT 1';
    const found = await this.query<rows.EnvelopeRow>(sql, [target, remoteId]);
    return found[0] && rows.toEnvelope(found[0]);
  }

  updateEnvelope(
    next: Envelope,
    expectedVersion: number,
    events: NewEnvelopeEvent[],
  ): Promise<{ envelope: Envelope; events: EnvelopeEvent[] }> {
    ({ next, events } = snapshot({ next, events }));
    return this.envelopeWrite(async ({ client: c, appendEvents }) => {
      const stored = { ...next, version: expectedVersion + 1 };
      const updated = await c.query(
        `UPDATE envelopes SET tenant = $1, idempotency_key = $2, connector = $3, target = $4, remote_id = $5,
           state = $6, updated_at = $7, version = $8, retention_until = $9, doc = $10 WHERE id = $11 AND version = $12`,
        [...rows.envelopeColumns(stored), next.id, expectedVersion],
      );
      if (updated.rowCount === 0) {
        const exists = await c.query('SELECT 1 FROM envelopes WHERE id = $1', [next.id]);
        throw exists.rowCount
          ? new VersionConflictError(`envelope ${next.id}`)
          : notFound(`envelope ${next.id}`);
      }
      return { envelope: snapshot(stored), events: appendEvents(stored.id, events) };
    });
  }

  async listEnvelopes(query: EnvelopeQuery): Promise<Page<Envelope>> {
    const limit = envelopeLimit(query.limit);
    const desc = (query.order ?? 'desc') === 'desc';
    const keyset = decodeCursor(query.cursor);
    const w = where('pg');
    if (query.tenant !== undefined) w.add('tenant = $?', query.tenant);
    if (query.workflowId !== undefined) w.add('workflow_id = $?', query.workflowId);
    if (query.verificationDue === true) w.add('verify_due_at IS NOT NULL');
    if (query.states !== undefined && isOpenStateSet(query.states)) w.add(OPEN_ENVELOPES_SQL);
    else if (query.states !== undefined) w.add('state = ANY($?::text[])', query.states);
    if (query.target !== undefined) w.add('target = $?', query.target);
    if (query.connector !== undefined) w.add('connector = $?', query.connector);
    if (query.updatedAfter !== undefined) w.add('updated_at > $?', query.updatedAfter);
    if (keyset) w.add(`(updated_at, id) ${desc ? '<' : '>'} ($?, $?)`, keyset.at, keyset.id);
    const dir = desc ? 'DESC' : 'ASC';
    const sql = `SELECT doc, version FROM envelopes ${w.sql()} ORDER BY updated_at ${dir}, id ${dir} LIMIT ${limit + 1}`;
    const found = (await this.query<rows.EnvelopeRow>(sql, w.params)).map(rows.toEnvelope);
    return keysetPage(found, limit);
  }

  async countEnvelopesByState(tenant?: string): Promise<Partial<Record<NormalizedState, number>>> {
    // envelope_counts (migration 13): a row per tenant, state and slot, kept by a trigger, not a scan.
    const found = await this.query<{ state: NormalizedState; n: string | number }>(
      tenant === undefined
        ? 'SELECT state, SUM(n) AS n FROM envelope_counts GROUP BY state HAVING SUM(n) > 0'
        : 'SELECT state, SUM(n) AS n FROM envelope_counts WHERE tenant = $1 GROUP BY state HAVING SUM(n) > 0',
      tenant === undefined ? [] : [tenant],
    );
    return Object.fromEntries(found.map((r) => [r.state, Number(r.n)]));
  }

  async envelopeVersions(ids: readonly string[]): Promise<EnvelopeVersion[]> {
    if (ids.length === 0) return [];
    return this.query<EnvelopeVersion>(
      'SELECT id, state, version, remote_id AS "remoteId" FROM envelopes WHERE id = ANY($1::text[])',
      [ids],
    );
  }

  async openTargets(): Promise<string[]> {
    const found = await this.query<{ target: string }>(RECONCILE_SQL.openTargets, []);
    return found.map((r) => r.target);
  }

  async openJobsOfTarget(target: string): Promise<OpenJobsOfTarget> {
    return openJobsSummary(
      await this.query<{ tenant: string; oldest: number | null }>(RECONCILE_SQL.openJobsOfTarget, [target]),
    );
  }

  async findOpenEnvelopesByRemote(
    target: string,
    remoteIds: readonly string[],
    contextIds: readonly string[],
  ): Promise<Envelope[]> {
    checkRemoteLookup(remoteIds, contextIds);
    const read = async (sql: string, ids: readonly string[]) =>
      ids.length === 0 ? [] : await this.query<rows.EnvelopeRow>(sql, [target, ids]);
    const found = [
      ...(await read(RECONCILE_SQL.byRemote, remoteIds)),
      ...(await read(RECONCILE_SQL.byContext, contextIds)),
    ];
    return found.map(rows.toEnvelope);
  }

  async listReconcileDue(target: string, query: ReconcileDueQuery): Promise<Envelope[]> {
    const found = await this.query<rows.EnvelopeRow>(RECONCILE_SQL.due, [
      target,
      query.now,
      query.defaultOrphanCreatedBefore,
    ]);
    return found.map(rows.toEnvelope);
  }

  async listUnwatchedEnvelopes(query: UnwatchedQuery): Promise<Page<Envelope>> {
    const limit = unwatchedLimit(query.limit);
    const after = decodeCursor(query.cursor) ?? START_KEYSET;
    // Owners count as dead only as deadLeaseOwners names them: not while our own session is down or just
    // back (our own locks are free then, and other processes may not have taken theirs again yet).
    const dead = this.listener?.settled === true;
    const found = await this.query<rows.EnvelopeRow>(dead ? UNWATCHED_SQL.dead : UNWATCHED_SQL.expiry, [
      after.at,
      after.id,
      query.now,
      limit + 1,
      ...(dead ? [this.ownerLockSpace] : []),
    ]);
    return keysetPage(found.map(rows.toEnvelope), limit);
  }

  async summarizeUsage(query: UsageQuery): Promise<TargetUsage[]> {
    const w = where('pg');
    if (query.tenant !== undefined) w.add('tenant = $?', query.tenant);
    if (query.workflowId !== undefined) w.add('workflow_id = $?', query.workflowId);
    const found = await this.query<{
      target: string;
      state: NormalizedState;
      acceptance: string | null;
      usage: Record<string, unknown> | null;
      created_at: string;
    }>(
      `SELECT target, state, doc->'acceptance'->>'status' AS acceptance, doc->'usage' AS usage,
         (doc->>'createdAt')::bigint AS created_at FROM envelopes ${w.sql()}`,
      w.params,
    );
    return summarize(
      found.map((r) => ({
        target: r.target,
        state: r.state,
        terminal: isTerminal(r.state),
        acceptance: r.acceptance,
        usage: r.usage,
        createdAt: Number(r.created_at),
      })),
    );
  }

  async getWorkflowBudget(tenant: string, workflowId: string): Promise<WorkflowBudgetRecord | undefined> {
    const found = await this.query<{ doc: WorkflowBudgetRecord; version: number }>(
      'SELECT doc, version FROM workflow_budgets WHERE tenant = $1 AND workflow_id = $2',
      [tenant, workflowId],
    );
    return found[0] && { ...found[0].doc, version: found[0].version };
  }

  async putWorkflowBudget(
    record: WorkflowBudgetRecord,
    expectedVersion: number | null,
  ): Promise<WorkflowBudgetRecord> {
    const stored = { ...snapshot(record), version: (expectedVersion ?? 0) + 1 };
    const done =
      expectedVersion === null
        ? await this.run(
            `INSERT INTO workflow_budgets (tenant, workflow_id, version, updated_at, doc) VALUES ($1, $2, 1, $3, $4)
             ON CONFLICT DO NOTHING`,
            [stored.tenant, stored.workflowId, stored.updatedAt, stored],
          )
        : await this.run(
            `UPDATE workflow_budgets SET version = $1, updated_at = $2, doc = $3
             WHERE tenant = $4 AND workflow_id = $5 AND version = $6`,
            [stored.version, stored.updatedAt, stored, stored.tenant, stored.workflowId, expectedVersion],
          );
    if (done.rowCount === 0) throw new VersionConflictError(`workflow budget ${record.workflowId}`);
    return stored;
  }

  async listEvents(query: EventQuery): Promise<EnvelopeEvent[]> {
    const w = where('pg');
    w.add('seq > $?', query.afterSeq);
    if (query.tenant !== undefined) w.add('tenant = $?', query.tenant);
    if (query.envelopeId !== undefined) w.add('envelope_id = $?', query.envelopeId);
    const sql = `SELECT * FROM envelope_events ${w.sql()} ORDER BY seq LIMIT ${eventLimit(query.limit)}`;
    return (await this.query<rows.EventRow>(sql, w.params)).map(rows.toEvent);
  }

  // --- retention (postgres/pg-purge.ts) ------------------------------------------------------------

  listExpiredEnvelopes(now: number, limit: number): Promise<ExpiredEnvelope[]> {
    return purge.listExpiredEnvelopes((sql, params) => this.query(sql, params), now, limit);
  }

  purgeEnvelopes(ids: readonly string[], now: number): Promise<string[]> {
    return purge.purgeEnvelopes((sql, params) => this.query(sql, params), ids, now);
  }

  // --- deliveries, leases, settings -------------------------------------------------------------

  async recordDelivery(d: InboundDelivery): Promise<boolean> {
    const result = await this.run(
      `INSERT INTO deliveries (source, delivery_id, envelope_id, received_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT DO NOTHING`,
      [d.source, d.deliveryId, d.envelopeId, d.receivedAt],
    );
    return result.rowCount === 1;
  }

  acquireLease(name: string, owner: string, now: number, ttlMs: number): Promise<boolean> {
    return this.acquireLeases([name], owner, now, ttlMs).then((held) => held.length === 1);
  }

  /**
   * One statement for every name. A lease changes hands when it is free, expired, already `owner`'s, or
   * held by a bound owner whose process is gone: its liveness lock (bindLeaseOwner) can be taken. The
   * try-lock is transaction-scoped, so it is released again when this statement ends.
   */
  async acquireLeases(
    names: readonly string[],
    owner: string,
    now: number,
    ttlMs: number,
  ): Promise<string[]> {
    if (names.length === 0) return [];
    const found = await this.query<{ name: string }>(
      `INSERT INTO leases (name, owner, expires_at) SELECT n, $2, $3 FROM unnest($1::text[]) AS n
       ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
       WHERE leases.owner = excluded.owner OR leases.expires_at <= $4
         OR EXISTS (SELECT 1 FROM lease_owners o WHERE o.owner = leases.owner
                    AND pg_try_advisory_xact_lock(hashtext($5), o.lock_key))
       RETURNING name`,
      // Sorted: two planes renewing overlapping sets lock the rows in one order (no deadlock).
      [[...new Set(names)].sort(), owner, now + ttlMs, now, this.ownerLockSpace],
    );
    return found.map((r) => r.name);
  }

  /**
   * Records `owner` with a fresh lock key and holds its liveness lock on the LISTEN connection (which
   * takes it again after a reconnect). Also forgets owners that are gone and hold no lease any more.
   */
  async bindLeaseOwner(owner: string, now: number): Promise<void> {
    if (!this.listener) return;
    const [row] = await this.query<{ lock_key: number }>(
      `INSERT INTO lease_owners (owner, bound_at) VALUES ($1, $2)
       ON CONFLICT (owner) DO UPDATE SET bound_at = excluded.bound_at RETURNING lock_key`,
      [owner, now],
    );
    await this.listener.holdLock(this.ownerLockSpace, row!.lock_key);
    await this.run(
      `DELETE FROM lease_owners o WHERE o.owner <> $1 AND o.bound_at < $3
         AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.owner = o.owner)
         AND pg_try_advisory_xact_lock(hashtext($2), o.lock_key)`,
      // Not the owners bound this last minute: one may sit between its insert and its lock.
      [owner, this.ownerLockSpace, now - 60_000],
    );
  }

  /**
   * Owners whose liveness lock is free (the try-lock is transaction-scoped: released when this statement
   * ends) and that still hold a lease (leases_owner index). Our own owners' locks are held by our LISTEN
   * session, so a pooled connection cannot take them: they never show here.
   */
  async deadLeaseOwners(): Promise<string[]> {
    // Not while our own session is down or just back: our own locks are free then, and after a server
    // restart the other processes may not have taken theirs again yet (PgListener.settled).
    if (!this.listener?.settled) return [];
    const found = await this.query<{ owner: string }>(
      `SELECT o.owner FROM lease_owners o
       WHERE EXISTS (SELECT 1 FROM leases l WHERE l.owner = o.owner)
         AND pg_try_advisory_xact_lock(hashtext($1), o.lock_key)`,
      [this.ownerLockSpace],
    );
    return found.map((r) => r.owner);
  }

  async releaseLease(name: string, owner: string): Promise<void> {
    await this.run('DELETE FROM leases WHERE name = $1 AND owner = $2', [name, owner]);
  }

  async getSetting(key: string): Promise<string | undefined> {
    return (await this.query<{ value: string }>('SELECT value FROM settings WHERE key = $1', [key]))[0]
      ?.value;
  }

  async putSettingIfAbsent(key: string, value: string): Promise<string> {
    // Two statements, not one CTE: under READ COMMITTED the fallback read must take a snapshot after a
    // racing insert committed, or it sees neither row.
    const inserted = await this.query<{ value: string }>(
      'INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING value',
      [key, value],
    );
    if (inserted[0]) return inserted[0].value;
    return (await this.query<{ value: string }>('SELECT value FROM settings WHERE key = $1', [key]))[0]!
      .value;
  }

  // --- API keys ----------------------------------------------------------------------------------

  async putApiKeyIfAbsent(k: ApiKeyRecord): Promise<ApiKeyRecord> {
    // As putSettingIfAbsent: the fallback read is its own statement, so it sees a racing insert.
    const inserted = await this.query<rows.ApiKeyRow>(
      `INSERT INTO api_keys (id, tenant, hash, read_only, name, created_at, revoked_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING RETURNING *`,
      [k.id, k.tenant, k.hash, k.readOnly, k.name, k.createdAt, k.revokedAt],
    );
    const row =
      inserted[0] ??
      (
        await this.query<rows.ApiKeyRow>(
          'SELECT * FROM api_keys WHERE hash = $1 OR id = $2 ORDER BY hash = $1 DESC LIMIT 1',
          [k.hash, k.id],
        )
      )[0]!;
    return rows.toApiKey(row);
  }

  async getApiKeyByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    const row = (await this.query<rows.ApiKeyRow>('SELECT * FROM api_keys WHERE hash = $1', [hash]))[0];
    return row ? rows.toApiKey(row) : undefined;
  }

  async listApiKeys(): Promise<ApiKeyRecord[]> {
    return (await this.query<rows.ApiKeyRow>('SELECT * FROM api_keys ORDER BY created_at, id', [])).map(
      rows.toApiKey,
    );
  }

  async revokeApiKey(id: string, now: number): Promise<ApiKeyRecord | undefined> {
    await this.run('UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [now, id]);
    const row = (await this.query<rows.ApiKeyRow>('SELECT * FROM api_keys WHERE id = $1', [id]))[0];
    return row ? rows.toApiKey(row) : undefined;
  }

  // --- change feed, lifecycle --------------------------------------------------------------------

  onChange(listener: (change: ChangeNotice) => void): () => void {
    return this.hub.subscribe(listener);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.envelopes.idle();
    this.hub.clear();
    await this.listener?.close();
    await this.pool.end().catch(() => undefined);
  }

  // --- internals -------------------------------------------------------------------------------

  protected async query<R extends pg.QueryResultRow>(sql: string, params: unknown[]): Promise<R[]> {
    return (await this.run<R>(sql, params)).rows;
  }

  protected async run<R extends pg.QueryResultRow>(
    sql: string,
    params: unknown[],
  ): Promise<pg.QueryResult<R>> {
    this.assertOpen();
    try {
      return await this.pool.query<R>(sql, params);
    } catch (err) {
      throw translatePgError(err, this.target.label);
    }
  }

  /** One transaction; NOTIFY rides in it, so listeners hear only of committed changes. */
  protected async tx<T>(fn: (client: Client, notices: ChangeNotice[]) => Promise<T>): Promise<T> {
    this.assertOpen();
    let client: Client;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw translatePgError(err, this.target.label);
    }
    const notices: ChangeNotice[] = [];
    try {
      await client.query('BEGIN');
      const value = await fn(client, notices);
      await this.notify(client, notices);
      await client.query('COMMIT');
      client.release();
      this.hub.emit(notices);
      return value;
    } catch (err) {
      const broken = await client.query('ROLLBACK').then(
        () => undefined,
        (rollbackErr: unknown) => rollbackErr as Error,
      );
      client.release(broken);
      throw translatePgError(err, this.target.label);
    }
  }

  /** Envelope writes go through the group-commit batcher (see EnvelopeBatcher for why). */
  private envelopeWrite<T>(op: EnvelopeOp<T>): Promise<T> {
    this.assertOpen();
    return this.envelopes.run(op);
  }

  /**
   * Envelope events need a global order that readers can trust: a reader that lists "seq > N" must never
   * later see a smaller seq commit (identity values are taken at insert, commits land in any order). So
   * every event-inserting transaction takes one transaction-level advisory lock per schema just before
   * its insert and holds it through COMMIT: seq order equals commit order, and listEvents needs no care.
   * The price is that those commits (and their fsyncs) are serialized, which EnvelopeBatcher buys back
   * by putting many writes in each transaction. The alternative, readers stopping below the oldest
   * in-flight transaction, moves the cost onto every reader and stalls them behind any long transaction.
   */
  private async lockEvents(c: Client): Promise<void> {
    await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [this.eventLockKey]);
  }

  /** NOTIFY inside the writing transaction: listeners hear only of committed changes. */
  private async notify(c: Client, notices: ChangeNotice[]): Promise<void> {
    if (notices.length === 0) return;
    const payloads = notices.map((n) => {
      const wire: WirePayload = { i: this.instanceId, k: n.kind, id: n.id, s: n.seq };
      return JSON.stringify(wire);
    });
    await c.query('SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p', [this.channel, payloads]);
  }

  private assertOpen(): void {
    if (this.closed) throw new TaskplaneError('unavailable', 'store is closed', { retryable: false });
  }
}
