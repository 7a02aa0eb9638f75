import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import type { Envelope, EnvelopeEvent, NewEnvelopeEvent } from '../../core/envelope.ts';
import { TaskplaneError } from '../../core/errors.ts';
import { TERMINAL_STATES, isTerminal, type NormalizedState } from '../../core/states.ts';
import { ChangeHub } from '../change-hub.ts';
import type {
  ApiKeyRecord,
  ChangeNotice,
  CreateGuard,
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
  TargetUsage,
  UsageQuery,
  WorkflowBudgetRecord,
} from '../store.ts';
import { summarize } from '../usage-summary.ts';
import {
  checkRemoteLookup,
  decodeCursor,
  envelopeLimit,
  eventLimit,
  isOpenStateSet,
  OPEN_ENVELOPES_SQL,
  openJobsSummary,
  keysetPage,
  START_KEYSET,
  unwatchedLimit,
} from '../store-query.ts';
import { migrateSqlite } from './sqlite-migrate.ts';
import { snapshot } from '../snapshot.ts';
import * as rows from '../sql-rows.ts';
import { where } from '../sql-where.ts';
import { SQLITE_MIGRATIONS } from './sqlite-schema.ts';
import { reconcileSql } from '../reconcile-sql.ts';
import { unwatchedSql } from '../unwatched-sql.ts';
import { SqliteAgentHost } from './sqlite-agent-host.ts';
import { EventLoopWrites } from './event-loop-writes.ts';
import { WorkerWrites } from './worker-writes.ts';
import { findEnvelopeByKey } from './shared-reads.ts';
import { translate } from './sqlite-errors.ts';
import { statementCache, type SqlConn } from './statement-cache.ts';
import type { StoreWrites } from './store-writes.ts';
import type { WriteArgs, WriteName, WriteResult } from './write-ops.ts';
import { serializeEnvelope, serializeEnvelopeEvent } from './write-rows.ts';

const RECONCILE_SQL = reconcileSql('sqlite');
const UNWATCHED_SQL = unwatchedSql('sqlite');

export interface SqliteStoreOptions {
  /** A file path, or `:memory:` for a private in-process database. */
  path: string;
  /**
   * SQLite's `synchronous` pragma for writes on the event loop (`writeThread: 'event-loop'`; the database
   * runs in WAL mode). Both settings are durable by default: a write resolves only after its commit is on
   * disk.
   * - `NORMAL`: COMMIT writes the WAL without fsync; the store then fsyncs the WAL on the libuv thread
   *   pool and resolves the batch's writes after it (see `walFsync` and write-batcher.ts). The event
   *   loop never waits on the disk, where a commit's fsync takes milliseconds when the disk is busy
   *   (docs/performance.md, "SQLite: fsync on the event loop").
   * - `FULL`: SQLite fsyncs the WAL inside every COMMIT, on the event loop.
   * The write worker (the default) always runs FULL, which costs the event loop nothing, unless
   * `walFsync` is false.
   * @default 'NORMAL'
   */
  synchronous?: 'FULL' | 'NORMAL';
  /**
   * `false` gives up the fsync before a write resolves: plain NORMAL, on the event loop (with
   * `synchronous: 'NORMAL'`) or on the write worker. A power loss (not a process crash) may then take
   * back the last acknowledged commits. Ignored for `:memory:`. @default true
   */
  walFsync?: boolean;
  /** How long a write waits for another process's write lock before failing `unavailable`. @default 5000 */
  busyTimeoutMs?: number;
  /** Share one transaction (one fsync) between writes issued in the same turn. @default true */
  groupCommit?: boolean;
  /** "now" for the migrations table only. @default Date.now */
  nowMs?: () => number;
  /**
   * Which thread runs the writes.
   * - `worker`: a worker thread owns the one writing connection, with synchronous=FULL (or NORMAL when
   *   `walFsync: false`), and this thread's connection only reads (worker-writes.ts). The event loop
   *   then spends nothing on SQLite's write path or the fsync.
   * - `event-loop`: writes run on this thread's connection through a WriteBatcher, fsynced per
   *   `synchronous`/`walFsync` as described there. Needed for `:memory:` (a worker cannot share it).
   * Both are durable by default and give the same results; only the thread doing the work differs.
   * @default 'worker' for a file, 'event-loop' for ':memory:'
   */
  writeThread?: 'worker' | 'event-loop';
}

/**
 * The embedded default Store on better-sqlite3 12. Every write is a named op (write-ops.ts) run in a
 * WriteBatcher (BEGIN IMMEDIATE, group commit), by default on the write worker's connection
 * (worker-writes.ts), else on this thread's. Reads run here, directly, and return only durable data:
 * with the worker every commit a reader can see is already durable; on this thread WriteBatcher.visible
 * holds a read back until its commits are.
 */
export class SqliteStore extends SqliteAgentHost implements Store {
  readonly capabilities: StoreCapabilities;
  private readonly db: Database.Database;
  protected readonly conn: SqlConn;
  /** Where the writes run (see `writeThread`). */
  private readonly writes: StoreWrites;
  private readonly hub = new ChangeHub();
  private closed = false;

  constructor(options: SqliteStoreOptions) {
    super();
    const inMemory = options.path === ':memory:';
    const writeThread = options.writeThread ?? (inMemory ? 'event-loop' : 'worker');
    if (inMemory && writeThread === 'worker')
      throw new TaskplaneError('config', 'writeThread: a :memory: database cannot be shared with a worker', {
        field: 'writeThread',
      });
    if (!inMemory) mkdirSync(dirname(options.path), { recursive: true });
    this.db = new Database(options.path);
    const synchronous = options.synchronous ?? 'NORMAL';
    const busyTimeoutMs = Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000));
    try {
      // busy_timeout first: switching to WAL needs a lock another starting process may hold.
      this.db.pragma(`busy_timeout = ${busyTimeoutMs}`);
      if (!inMemory) {
        // 8 KiB pages for a new file (an existing one keeps its size; a VACUUM would change it). A host
        // send writes a task row of 1–2 KiB twice and its events: with 8 KiB each commit writes fewer WAL
        // frames (two pwrite calls each). Measured cheaper per task than 4 KiB; 16 KiB did worse than 4 KiB
        // (more bytes per frame): docs/performance.md, "SQLite: page size".
        this.db.pragma('page_size = 8192');
        this.db.pragma('journal_mode = WAL');
      }
      this.db.pragma(`synchronous = ${synchronous}`);
      migrateSqlite(this.db, SQLITE_MIGRATIONS, (options.nowMs ?? Date.now)());
      this.conn = statementCache(this.db);
      this.writes = this.startWrites(options, writeThread, synchronous, busyTimeoutMs);
    } catch (err) {
      this.db.close();
      throw translate(err);
    }
    this.capabilities = {
      durable: !inMemory,
      multiProcess: !inMemory,
      crossProcessNotify: false,
      ownerLiveness: false,
    };
  }

  /** The writer `writeThread` names, on the connection just migrated. */
  private startWrites(
    options: SqliteStoreOptions,
    writeThread: 'worker' | 'event-loop',
    synchronous: 'FULL' | 'NORMAL',
    busyTimeoutMs: number,
  ): StoreWrites {
    const onCommit = (notices: ChangeNotice[]) => this.hub.emit(notices);
    const walFsync = options.walFsync !== false;
    const groupCommit = options.groupCommit ?? true;
    return writeThread === 'worker'
      ? new WorkerWrites(
          {
            path: resolve(options.path),
            synchronous: synchronous === 'FULL' || walFsync ? 'FULL' : 'NORMAL',
            busyTimeoutMs,
            groupCommit,
          },
          onCommit,
        )
      : new EventLoopWrites(
          this.db,
          this.conn,
          {
            ...(options.path === ':memory:' ? {} : { path: options.path }),
            synchronous,
            walFsync,
            groupCommit,
          },
          onCommit,
        );
  }

  // --- envelopes -----------------------------------------------------------------------------

  createEnvelope(
    envelope: Envelope,
    events: NewEnvelopeEvent[],
    guard?: CreateGuard,
  ): Promise<{ created: boolean; envelope: Envelope }> {
    // The snapshot is the call's own copy: it goes back as the result, and its JSON is what is stored.
    ({ envelope, events } = snapshot({ envelope, events }));
    const stored = { ...envelope, version: 1 };
    return this.write(
      'createEnvelope',
      serializeEnvelope(stored),
      events.map(serializeEnvelopeEvent),
      guard?.workflowTaskLimit === undefined ? undefined : { workflowTaskLimit: guard.workflowTaskLimit },
      stored.workflowId,
    ).then((r) => (r.created ? { created: true, envelope: stored } : r));
  }

  async getEnvelope(id: string): Promise<Envelope | undefined> {
    const row = this.conn.q('SELECT doc, version FROM envelopes WHERE id = ?').get(id) as
      rows.EnvelopeRow | undefined;
    return this.visible(row && rows.toEnvelope(row));
  }

  async findEnvelopeByIdempotencyKey(tenant: string, key: string): Promise<Envelope | undefined> {
    return this.visible(findEnvelopeByKey(this.conn, tenant, key));
  }

  async findEnvelopeByRemoteId(target: string, remoteId: string): Promise<Envelope | undefined> {
    const row = this.conn
      .q('SELECT doc, version FROM envelopes WHERE target = ? AND remote_id = ? LIMIT 1')
      .get(target, remoteId) as rows.EnvelopeRow | undefined;
    return this.visible(row && rows.toEnvelope(row));
  }

  updateEnvelope(
    next: Envelope,
    expectedVersion: number,
    events: NewEnvelopeEvent[],
  ): Promise<{ envelope: Envelope; events: EnvelopeEvent[] }> {
    ({ next, events } = snapshot({ next, events }));
    const stored = { ...next, version: expectedVersion + 1 };
    return this.write(
      'updateEnvelope',
      serializeEnvelope(stored),
      expectedVersion,
      events.map(serializeEnvelopeEvent),
    ).then((seqs) => ({ envelope: stored, events: events.map((e, i) => ({ ...e, seq: seqs[i]! })) }));
  }

  async listEnvelopes(query: EnvelopeQuery): Promise<Page<Envelope>> {
    const limit = envelopeLimit(query.limit);
    const desc = (query.order ?? 'desc') === 'desc';
    const keyset = decodeCursor(query.cursor);
    const w = where('sqlite');
    if (query.tenant !== undefined) w.add('tenant = $?', query.tenant);
    if (query.workflowId !== undefined) w.add('workflow_id = $?', query.workflowId);
    if (query.verificationDue === true) w.add('verify_due_at IS NOT NULL');
    if (query.states !== undefined && isOpenStateSet(query.states)) w.add(OPEN_ENVELOPES_SQL);
    else if (query.states !== undefined) {
      w.add(`state IN (${query.states.map(() => '$?').join(', ') || 'NULL'})`, ...query.states);
    }
    if (query.target !== undefined) w.add('target = $?', query.target);
    if (query.connector !== undefined) w.add('connector = $?', query.connector);
    if (query.updatedAfter !== undefined) w.add('updated_at > $?', query.updatedAfter);
    if (keyset) w.add(`(updated_at, id) ${desc ? '<' : '>'} ($?, $?)`, keyset.at, keyset.id);
    const dir = desc ? 'DESC' : 'ASC';
    const sql = `SELECT doc, version FROM envelopes ${w.sql()}
      ORDER BY updated_at ${dir}, id ${dir} LIMIT ?`;
    const found = (this.conn.q(sql).all(...w.params, limit + 1) as rows.EnvelopeRow[]).map(rows.toEnvelope);
    return this.visible(keysetPage(found, limit));
  }

  async countEnvelopesByState(tenant?: string): Promise<Partial<Record<NormalizedState, number>>> {
    const found = (
      tenant === undefined
        ? this.conn.q(`SELECT state, SUM(n) AS n FROM envelope_counts GROUP BY state HAVING SUM(n) > 0`).all()
        : this.conn
            .q(
              `SELECT state, SUM(n) AS n FROM envelope_counts WHERE tenant = ? GROUP BY state HAVING SUM(n) > 0`,
            )
            .all(tenant)
    ) as { state: NormalizedState; n: number }[];
    return this.visible(Object.fromEntries(found.map((r) => [r.state, r.n])));
  }

  async envelopeVersions(ids: readonly string[]): Promise<EnvelopeVersion[]> {
    const found = this.conn
      .q(
        'SELECT id, state, version, remote_id AS remoteId FROM envelopes WHERE id IN (SELECT value FROM json_each(?))',
      )
      .all(JSON.stringify(ids)) as EnvelopeVersion[];
    return this.visible(found);
  }

  async openTargets(): Promise<string[]> {
    const found = this.conn.q(RECONCILE_SQL.openTargets).all() as Array<{ target: string }>;
    return this.visible(found.map((r) => r.target));
  }

  async openJobsOfTarget(target: string): Promise<OpenJobsOfTarget> {
    const found = this.conn.q(RECONCILE_SQL.openJobsOfTarget).all({ target }) as Array<{
      tenant: string;
      oldest: number | null;
    }>;
    return this.visible(openJobsSummary(found));
  }

  async findOpenEnvelopesByRemote(
    target: string,
    remoteIds: readonly string[],
    contextIds: readonly string[],
  ): Promise<Envelope[]> {
    checkRemoteLookup(remoteIds, contextIds);
    const read = (sql: string, ids: readonly string[]) =>
      ids.length === 0
        ? []
        : (this.conn.q(sql).all({ target, ids: JSON.stringify(ids) }) as rows.EnvelopeRow[]);
    const found = [...read(RECONCILE_SQL.byRemote, remoteIds), ...read(RECONCILE_SQL.byContext, contextIds)];
    return this.visible(found.map(rows.toEnvelope));
  }

  async listReconcileDue(target: string, query: ReconcileDueQuery): Promise<Envelope[]> {
    const found = this.conn
      .q(RECONCILE_SQL.due)
      .all({ target, now: query.now, before: query.defaultOrphanCreatedBefore }) as rows.EnvelopeRow[];
    return this.visible(found.map(rows.toEnvelope));
  }

  async listUnwatchedEnvelopes(query: UnwatchedQuery): Promise<Page<Envelope>> {
    const limit = unwatchedLimit(query.limit);
    const after = decodeCursor(query.cursor) ?? START_KEYSET;
    const found = this.conn
      .q(UNWATCHED_SQL)
      .all(after.at, after.id, query.now, limit + 1) as rows.EnvelopeRow[];
    return this.visible(keysetPage(found.map(rows.toEnvelope), limit));
  }

  async summarizeUsage(query: UsageQuery): Promise<TargetUsage[]> {
    const w = where('sqlite');
    if (query.tenant !== undefined) w.add('tenant = $?', query.tenant);
    if (query.workflowId !== undefined) w.add('workflow_id = $?', query.workflowId);
    // One json_extract with three paths parses each document once (three calls parse it three times).
    const found = this.conn
      .q(
        `SELECT target, state, json_extract(doc, '$.acceptance.status', '$.usage', '$.createdAt') AS picked
         FROM envelopes ${w.sql()}`,
      )
      .all(...w.params) as Array<{ target: string; state: NormalizedState; picked: string }>;
    return this.visible(
      summarize(
        found.map((r) => {
          const [acceptance, usage, createdAt] = JSON.parse(r.picked) as [
            string | null,
            Record<string, unknown> | null,
            number,
          ];
          return {
            target: r.target,
            state: r.state,
            terminal: isTerminal(r.state),
            acceptance,
            usage,
            createdAt,
          };
        }),
      ),
    );
  }

  async getWorkflowBudget(tenant: string, workflowId: string): Promise<WorkflowBudgetRecord | undefined> {
    const row = this.conn
      .q('SELECT doc, version FROM workflow_budgets WHERE tenant = ? AND workflow_id = ?')
      .get(tenant, workflowId) as { doc: string; version: number } | undefined;
    return this.visible(row && { ...(JSON.parse(row.doc) as WorkflowBudgetRecord), version: row.version });
  }

  putWorkflowBudget(
    record: WorkflowBudgetRecord,
    expectedVersion: number | null,
  ): Promise<WorkflowBudgetRecord> {
    return this.write('putWorkflowBudget', snapshot(record), expectedVersion);
  }

  async listEvents(query: EventQuery): Promise<EnvelopeEvent[]> {
    const limit = eventLimit(query.limit);
    const w = where('sqlite');
    w.add('seq > $?', query.afterSeq);
    if (query.tenant !== undefined) w.add('tenant = $?', query.tenant);
    if (query.envelopeId !== undefined) w.add('envelope_id = $?', query.envelopeId);
    const sql = `SELECT * FROM envelope_events ${w.sql()} ORDER BY seq LIMIT ?`;
    return this.visible((this.conn.q(sql).all(...w.params, limit) as rows.EventRow[]).map(rows.toEvent));
  }

  // --- retention -------------------------------------------------------------------------------

  async listExpiredEnvelopes(now: number, limit: number): Promise<ExpiredEnvelope[]> {
    const terminal = [...TERMINAL_STATES];
    const found = this.conn
      .q(
        `SELECT id, tenant, retention_until AS retentionUntil FROM envelopes
         WHERE retention_until <= ? AND state IN (${terminal.map(() => '?').join(', ')})
         ORDER BY retention_until, id LIMIT ?`,
      )
      .all(now, ...terminal, Math.max(0, limit)) as ExpiredEnvelope[];
    return this.visible(found);
  }

  purgeEnvelopes(ids: readonly string[], now: number): Promise<string[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return this.write('purgeEnvelopes', [...new Set(ids)], now);
  }

  // --- deliveries, leases, settings -------------------------------------------------------------

  recordDelivery(d: InboundDelivery): Promise<boolean> {
    return this.write('recordDelivery', snapshot(d));
  }

  acquireLease(name: string, owner: string, now: number, ttlMs: number): Promise<boolean> {
    return this.write('acquireLease', name, owner, now, ttlMs);
  }

  acquireLeases(names: readonly string[], owner: string, now: number, ttlMs: number): Promise<string[]> {
    return this.write('acquireLeases', [...new Set(names)], owner, now, ttlMs);
  }

  async bindLeaseOwner(): Promise<void> {
    // SQLite cannot tell whether another process is alive: leases change hands by expiry only.
  }

  async deadLeaseOwners(): Promise<string[]> {
    return [];
  }

  releaseLease(name: string, owner: string): Promise<void> {
    return this.write('releaseLease', name, owner);
  }

  async getSetting(key: string): Promise<string | undefined> {
    return this.visible(
      (this.conn.q('SELECT value FROM settings WHERE key = ?').get(key) as { value: string } | undefined)
        ?.value,
    );
  }

  putSettingIfAbsent(key: string, value: string): Promise<string> {
    return this.write('putSettingIfAbsent', key, value);
  }

  // --- API keys ----------------------------------------------------------------------------------

  putApiKeyIfAbsent(key: ApiKeyRecord): Promise<ApiKeyRecord> {
    return this.write('putApiKeyIfAbsent', snapshot(key));
  }

  async getApiKeyByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    const row = this.conn.q('SELECT * FROM api_keys WHERE hash = ?').get(hash) as rows.ApiKeyRow | undefined;
    return this.visible(row ? rows.toApiKey(row) : undefined);
  }

  async listApiKeys(): Promise<ApiKeyRecord[]> {
    const all = this.conn.q('SELECT * FROM api_keys ORDER BY created_at, id').all() as rows.ApiKeyRow[];
    return this.visible(all.map(rows.toApiKey));
  }

  revokeApiKey(id: string, now: number): Promise<ApiKeyRecord | undefined> {
    return this.write('revokeApiKey', id, now);
  }

  // --- change feed, lifecycle --------------------------------------------------------------------

  /**
   * Resolves once writes can run: at once on the event loop, or when the write worker has opened its
   * connection (about 0.2 s). Writes issued sooner wait for it; this lets a caller fail fast at start-up.
   */
  ready(): Promise<void> {
    return this.writes.ready;
  }

  onChange(listener: (change: ChangeNotice) => void): () => void {
    return this.hub.subscribe(listener);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Writes already made still commit; later ones are refused (write()).
    await this.writes.close();
    this.hub.clear();
    this.db.close();
  }

  // --- internals -------------------------------------------------------------------------------

  protected visible<T>(value: T): Promise<T> {
    return this.writes.visible(value);
  }

  protected write<K extends WriteName>(name: K, ...args: WriteArgs<K>): Promise<WriteResult<K>> {
    if (this.closed)
      return Promise.reject(new TaskplaneError('unavailable', 'store is closed', { retryable: false }));
    return this.writes.run(name, args);
  }
}
