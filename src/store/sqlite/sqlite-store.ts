import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { Envelope, EnvelopeEvent, NewEnvelopeEvent } from '../../core/envelope.ts';
import { TaskplaneError, VersionConflictError, notFound } from '../../core/errors.ts';
import type { NormalizedState } from '../../core/states.ts';
import { ChangeHub, envelopeNotices } from '../change-hub.ts';
import type {
  ChangeNotice,
  EnvelopeQuery,
  EventQuery,
  InboundDelivery,
  Page,
  Store,
  StoreCapabilities,
} from '../store.ts';
import { decodeCursor, encodeCursor, envelopeLimit, eventLimit } from '../store-query.ts';
import { migrateSqlite } from './sqlite-migrate.ts';
import { snapshot } from '../snapshot.ts';
import * as rows from '../sql-rows.ts';
import { where } from '../sql-where.ts';
import { SQLITE_MIGRATIONS } from './sqlite-schema.ts';
import { SqliteAgentHost } from './sqlite-agent-host.ts';
import { WalFileSyncer } from './wal-syncer.ts';
import { WriteBatcher, type WriteOp } from './write-batcher.ts';

export interface SqliteStoreOptions {
  /** A file path, or `:memory:` for a private in-process database. */
  path: string;
  /**
   * SQLite's `synchronous` pragma (the database runs in WAL mode). Both settings are durable by default:
   * a write resolves only after its commit is on disk.
   * - `NORMAL`: COMMIT writes the WAL without fsync; the store then fsyncs the WAL on the libuv thread
   *   pool and resolves the batch's writes after it (see `walFsync` and write-batcher.ts). The event
   *   loop never waits on the disk, where a commit's fsync took p50 2.8 ms, p90 11 ms on the shared
   *   build machine while other jobs ran (docs/host.md, "Performance").
   * - `FULL`: SQLite fsyncs the WAL inside every COMMIT, on the event loop.
   * @default 'NORMAL'
   */
  synchronous?: 'FULL' | 'NORMAL';
  /**
   * With `synchronous: 'NORMAL'`, fsync the WAL after each group commit before its writes resolve and
   * before reads return what it wrote. `false` gives plain NORMAL: a power loss (not a process crash) may
   * take back the last acknowledged commits. Ignored with `FULL` and for `:memory:`. @default true
   */
  walFsync?: boolean;
  /** How long a write waits for another process's write lock before failing `unavailable`. @default 5000 */
  busyTimeoutMs?: number;
  /** Share one transaction (one fsync) between writes issued in the same turn. @default true */
  groupCommit?: boolean;
  /** "now" for the migrations table only. @default Date.now */
  nowMs?: () => number;
}

/**
 * The embedded default Store on better-sqlite3 12. Writes go through a WriteBatcher (BEGIN IMMEDIATE,
 * group commit); reads run directly, seeing only committed data since batches are synchronous, and
 * return it once it is durable (WriteBatcher.visible).
 */
export class SqliteStore extends SqliteAgentHost implements Store {
  readonly capabilities: StoreCapabilities;
  private readonly db: Database.Database;
  private readonly writes: WriteBatcher;
  private readonly hub = new ChangeHub();
  private readonly statements = new Map<string, Database.Statement>();
  private readonly syncer: WalFileSyncer | undefined;
  private closed = false;

  constructor(options: SqliteStoreOptions) {
    super();
    const inMemory = options.path === ':memory:';
    if (!inMemory) mkdirSync(dirname(options.path), { recursive: true });
    this.db = new Database(options.path);
    const synchronous = options.synchronous ?? 'NORMAL';
    try {
      // busy_timeout first: switching to WAL needs a lock another starting process may hold.
      this.db.pragma(`busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000))}`);
      if (!inMemory) {
        // 8 KiB pages for a new file (an existing one keeps its size; a VACUUM would change it). A host
        // send writes a task row of 1–2 KiB twice and its events: with 8 KiB each commit writes fewer WAL
        // frames (two pwrite calls each). `npx tsx test/bench/store-agent-bench.ts` (create + complete,
        // 32 in flight), alternating trees that differ only here: 4 KiB pages 117–130 µs CPU per task,
        // 8 KiB 92–121 (lower in each of 7 pairs); 16 KiB did worse than 4 KiB (more bytes per frame).
        this.db.pragma('page_size = 8192');
        this.db.pragma('journal_mode = WAL');
      }
      this.db.pragma(`synchronous = ${synchronous}`);
      migrateSqlite(this.db, SQLITE_MIGRATIONS, (options.nowMs ?? Date.now)());
      // After migrating: the migration's BEGIN IMMEDIATE has created the -wal file.
      if (!inMemory && synchronous === 'NORMAL' && options.walFsync !== false) {
        this.syncer = new WalFileSyncer(options.path);
      }
    } catch (err) {
      this.db.close();
      throw translate(err);
    }
    this.capabilities = { durable: !inMemory, multiProcess: !inMemory, crossProcessNotify: false };
    this.writes = new WriteBatcher(this.db, {
      groupCommit: options.groupCommit ?? true,
      maxBatch: 256,
      onCommit: (notices) => this.hub.emit(notices),
      translate,
      ...(this.syncer
        ? {
            syncer: this.syncer,
            // One fsync at a time and, under load, at most one started per millisecond: each fsync and
            // each WAL page then covers more writes. `test/bench/host-ab.sh` over trees with 2 in flight,
            // 1 without a gap and 1 with it, 7 rounds: CPU per durable send medians 184, 175 and 159 µs,
            // p99 alike.
            maxSyncsInFlight: 1,
            minSyncGapMs: 1,
            syncFailed: (err: Error) =>
              new TaskplaneError('unavailable', 'sqlite WAL fsync failed; restart the process', {
                cause: err,
                retryable: false,
              }),
          }
        : {}),
    });
  }

  // --- envelopes -----------------------------------------------------------------------------

  createEnvelope(
    envelope: Envelope,
    events: NewEnvelopeEvent[],
  ): Promise<{ created: boolean; envelope: Envelope }> {
    ({ envelope, events } = snapshot({ envelope, events }));
    return this.write((notices) => {
      if (envelope.idempotencyKey !== null) {
        const existing = this.findByKey(envelope.tenant, envelope.idempotencyKey);
        if (existing) return { created: false, envelope: existing };
      }
      const stored = { ...envelope, version: 1 };
      this.q(
        `INSERT INTO envelopes (tenant, idempotency_key, connector, target, remote_id, state, updated_at, version, doc, id)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(...rows.envelopeColumns(stored), stored.id);
      notices.push(...envelopeNotices(stored.id, this.appendEvents(events)));
      return { created: true, envelope: structuredClone(stored) };
    });
  }

  async getEnvelope(id: string): Promise<Envelope | undefined> {
    const row = this.q('SELECT doc, version FROM envelopes WHERE id = ?').get(id) as
      rows.EnvelopeRow | undefined;
    return this.visible(row && rows.toEnvelope(row));
  }

  async findEnvelopeByIdempotencyKey(tenant: string, key: string): Promise<Envelope | undefined> {
    return this.visible(this.findByKey(tenant, key));
  }

  async findEnvelopeByRemoteId(target: string, remoteId: string): Promise<Envelope | undefined> {
    const row = this.q('SELECT doc, version FROM envelopes WHERE target = ? AND remote_id = ? LIMIT 1').get(
      target,
      remoteId,
    ) as rows.EnvelopeRow | undefined;
    return this.visible(row && rows.toEnvelope(row));
  }

  updateEnvelope(
    next: Envelope,
    expectedVersion: number,
    events: NewEnvelopeEvent[],
  ): Promise<{ envelope: Envelope; events: EnvelopeEvent[] }> {
    ({ next, events } = snapshot({ next, events }));
    return this.write((notices) => {
      const stored = { ...next, version: expectedVersion + 1 };
      const result = this.q(
        `UPDATE envelopes SET tenant = ?, idempotency_key = ?, connector = ?, target = ?, remote_id = ?, state = ?,
           updated_at = ?, version = ?, doc = ? WHERE id = ? AND version = ?`,
      ).run(...rows.envelopeColumns(stored), next.id, expectedVersion);
      if (result.changes === 0) {
        const exists = this.q('SELECT 1 FROM envelopes WHERE id = ?').get(next.id) !== undefined;
        throw exists ? new VersionConflictError(`envelope ${next.id}`) : notFound(`envelope ${next.id}`);
      }
      const appended = this.appendEvents(events);
      notices.push(...envelopeNotices(stored.id, appended));
      return { envelope: structuredClone(stored), events: appended };
    });
  }

  async listEnvelopes(query: EnvelopeQuery): Promise<Page<Envelope>> {
    const limit = envelopeLimit(query.limit);
    const desc = (query.order ?? 'desc') === 'desc';
    const keyset = decodeCursor(query.cursor);
    const w = where('sqlite');
    if (query.tenant !== undefined) w.add('tenant = $?', query.tenant);
    if (query.states !== undefined) {
      w.add(`state IN (${query.states.map(() => '$?').join(', ') || 'NULL'})`, ...query.states);
    }
    if (query.target !== undefined) w.add('target = $?', query.target);
    if (query.connector !== undefined) w.add('connector = $?', query.connector);
    if (query.updatedAfter !== undefined) w.add('updated_at > $?', query.updatedAfter);
    if (keyset) w.add(`(updated_at, id) ${desc ? '<' : '>'} ($?, $?)`, keyset.at, keyset.id);
    const dir = desc ? 'DESC' : 'ASC';
    const sql = `SELECT doc, version FROM envelopes ${w.sql()}
      ORDER BY updated_at ${dir}, id ${dir} LIMIT ?`;
    const found = (this.q(sql).all(...w.params, limit + 1) as rows.EnvelopeRow[]).map(rows.toEnvelope);
    const items = found.slice(0, limit);
    const last = items[items.length - 1];
    return this.visible(
      found.length > limit && last ? { items, nextCursor: encodeCursor(last.updatedAt, last.id) } : { items },
    );
  }

  async countEnvelopesByState(tenant?: string): Promise<Partial<Record<NormalizedState, number>>> {
    const found = (
      tenant === undefined
        ? this.q('SELECT state, COUNT(*) AS n FROM envelopes GROUP BY state').all()
        : this.q('SELECT state, COUNT(*) AS n FROM envelopes WHERE tenant = ? GROUP BY state').all(tenant)
    ) as { state: NormalizedState; n: number }[];
    return this.visible(Object.fromEntries(found.map((r) => [r.state, r.n])));
  }

  async listEvents(query: EventQuery): Promise<EnvelopeEvent[]> {
    const limit = eventLimit(query.limit);
    const w = where('sqlite');
    w.add('seq > $?', query.afterSeq);
    if (query.tenant !== undefined) w.add('tenant = $?', query.tenant);
    if (query.envelopeId !== undefined) w.add('envelope_id = $?', query.envelopeId);
    const sql = `SELECT * FROM envelope_events ${w.sql()} ORDER BY seq LIMIT ?`;
    return this.visible((this.q(sql).all(...w.params, limit) as rows.EventRow[]).map(rows.toEvent));
  }

  // --- deliveries, leases, settings -------------------------------------------------------------

  recordDelivery(d: InboundDelivery): Promise<boolean> {
    d = snapshot(d);
    return this.write(
      () =>
        this.q(
          `INSERT INTO deliveries (source, delivery_id, envelope_id, received_at) VALUES (?, ?, ?, ?)
           ON CONFLICT DO NOTHING`,
        ).run(d.source, d.deliveryId, d.envelopeId, d.receivedAt).changes === 1,
    );
  }

  acquireLease(name: string, owner: string, now: number, ttlMs: number): Promise<boolean> {
    return this.write(
      () =>
        this.q(
          `INSERT INTO leases (name, owner, expires_at) VALUES (?, ?, ?)
           ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
           WHERE leases.owner = excluded.owner OR leases.expires_at <= ?`,
        ).run(name, owner, now + ttlMs, now).changes === 1,
    );
  }

  releaseLease(name: string, owner: string): Promise<void> {
    return this.write(() => void this.q('DELETE FROM leases WHERE name = ? AND owner = ?').run(name, owner));
  }

  async getSetting(key: string): Promise<string | undefined> {
    return this.visible(
      (this.q('SELECT value FROM settings WHERE key = ?').get(key) as { value: string } | undefined)?.value,
    );
  }

  putSettingIfAbsent(key: string, value: string): Promise<string> {
    return this.write(() => {
      this.q('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT DO NOTHING').run(key, value);
      return (this.q('SELECT value FROM settings WHERE key = ?').get(key) as { value: string }).value;
    });
  }

  // --- change feed, lifecycle --------------------------------------------------------------------

  onChange(listener: (change: ChangeNotice) => void): () => void {
    return this.hub.subscribe(listener);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.writes.drain(true);
    this.closed = true;
    await this.writes.whenSynced();
    this.hub.clear();
    this.db.close();
    this.syncer?.close();
  }

  // --- internals -------------------------------------------------------------------------------

  protected visible<T>(value: T): Promise<T> {
    return this.writes.visible(value);
  }

  protected write<T>(op: WriteOp<T>): Promise<T> {
    if (this.closed)
      return Promise.reject(new TaskplaneError('unavailable', 'store is closed', { retryable: false }));
    return this.writes.run(op);
  }

  /** Prepared statements are cached by text: the hot paths prepare once per store. */
  protected q(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (!statement) this.statements.set(sql, (statement = this.db.prepare(sql)));
    return statement;
  }

  private findByKey(tenant: string, key: string): Envelope | undefined {
    const row = this.q('SELECT doc, version FROM envelopes WHERE tenant = ? AND idempotency_key = ?').get(
      tenant,
      key,
    );
    return row === undefined ? undefined : rows.toEnvelope(row as rows.EnvelopeRow);
  }

  private appendEvents(events: NewEnvelopeEvent[]): EnvelopeEvent[] {
    const insert = this.q(
      'INSERT INTO envelope_events (envelope_id, tenant, type, at, data) VALUES (?, ?, ?, ?, ?)',
    );
    return events.map((e) => {
      const seq = Number(
        insert.run(e.envelopeId, e.tenant, e.type, e.at, JSON.stringify(e.data)).lastInsertRowid,
      );
      return { ...structuredClone(e), seq };
    });
  }
}

/** Driver errors to the port's codes; a TaskplaneError passes through. */
function translate(err: unknown): unknown {
  if (err instanceof TaskplaneError) return err;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') {
      return new TaskplaneError('unavailable', 'sqlite database is locked by another writer', { cause: err });
    }
    if (code.startsWith('SQLITE_CONSTRAINT')) {
      return new TaskplaneError('conflict', 'a record with this key already exists', { cause: err });
    }
    if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT') {
      return new TaskplaneError('unavailable', 'file is not a readable sqlite database', {
        cause: err,
        retryable: false,
      });
    }
    if (code === 'SQLITE_CANTOPEN') {
      return new TaskplaneError('unavailable', 'sqlite database file cannot be opened', {
        cause: err,
        retryable: false,
      });
    }
  }
  return new TaskplaneError('internal', 'sqlite store error', { cause: err });
}
