import pg from 'pg';
import type { ChangeHub } from '../change-hub.ts';
import type { ChangeNotice } from '../store.ts';
import type { Logger } from '../../core/logger.ts';

/** What travels in a NOTIFY payload: the notice plus the sending store instance, so it can skip its own. */
export interface WirePayload {
  i: string;
  k: ChangeNotice['kind'];
  id: string;
  s: number;
}

const RECONNECT_MIN_MS = 250;
const RECONNECT_MAX_MS = 10_000;
/**
 * After a reconnect, how long this session must have been back before its store names other processes
 * dead (settled): when PostgreSQL restarts every session drops, and the others' listeners come back
 * within RECONNECT_MAX_MS of it, so one that came back first does not take them for dead meanwhile.
 */
export const RECONNECT_SETTLE_MS = RECONNECT_MAX_MS + 2_000;
/** Most ids one catch-up read wakes per kind; past it readers still find everything in the logs. */
const CATCH_UP_MAX_IDS = 10_000;
/** How the listener's connection shows in pg_stat_activity (application_name), for operators and tests. */
export function listenerApplicationName(channel: string): string {
  return `listen ${channel}`;
}

/**
 * One dedicated connection per store that LISTENs on the schema's channel and feeds the ChangeHub.
 * NOTIFY only wakes readers early: a notice lost while this connection is down costs latency,
 * not data, because readers list events after their last seq. So on error it reconnects with capped
 * exponential backoff, forever, until closed, and then reads what it missed: one notice per envelope
 * and agent task whose events passed the last seq it heard of (a catch-up read), so a watcher parked
 * on a notice that fell in the gap is still woken.
 *
 * It is a session connection on purpose (LISTEN and session advisory locks need one; behind a
 * transaction-mode pooler it must bypass the pooler), and it also holds the liveness locks of the lease
 * owners bound to this store (PostgresStore.bindLeaseOwner), taking them again after a reconnect.
 */
export class PgListener {
  private client: pg.Client | undefined;
  private closed = false;
  private failures = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** Session advisory locks to hold: [namespace text, key]. */
  private readonly locks: Array<[string, number]> = [];
  private connectedOnce = false;
  /** When the connection came back after a loss (undefined: never lost); wall time, like the backoff. */
  private reconnectedAt: number | undefined;
  /** Highest event seq heard of per kind; undefined until the first connection read it. */
  private lastSeq: Record<ChangeNotice['kind'], number> | undefined;

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly channel: string,
    private readonly instanceId: string,
    private readonly hub: ChangeHub,
    private readonly logger: Logger,
    private readonly settleMs = RECONNECT_SETTLE_MS,
  ) {}

  /**
   * Connected, and not just back from a loss (RECONNECT_SETTLE_MS): this store's own locks are held, and
   * others that lost theirs in the same outage have had time to take them again.
   */
  get settled(): boolean {
    return (
      this.client !== undefined &&
      (this.reconnectedAt === undefined || Date.now() - this.reconnectedAt >= this.settleMs)
    );
  }

  /** Resolves once LISTEN is in place; rejects if the first connection fails. */
  async start(): Promise<void> {
    await this.connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  /** Holds a session advisory lock on this connection from now on (again after every reconnect). */
  async holdLock(space: string, key: number): Promise<void> {
    this.locks.push([space, key]);
    await this.client?.query('SELECT pg_advisory_lock(hashtext($1), $2)', [space, key]);
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ ...this.config, application_name: listenerApplicationName(this.channel) });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, undefined));
    client.on('notification', (msg) => this.deliver(msg.payload));
    try {
      await client.connect();
      for (const [space, key] of this.locks)
        await client.query('SELECT pg_advisory_lock(hashtext($1), $2)', [space, key]);
      await client.query(`LISTEN "${this.channel}"`);
      // After LISTEN: whatever commits from here on is heard, so this read leaves no gap.
      await this.catchUp(client);
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    if (this.connectedOnce) this.reconnectedAt = Date.now();
    this.connectedOnce = true;
    this.client = client;
    this.failures = 0;
  }

  private lost(client: pg.Client, err: Error | undefined): void {
    if (this.closed || this.client !== client) return;
    this.client = undefined;
    client.removeAllListeners('notification');
    void client.end().catch(() => undefined);
    this.logger.warn(
      `postgres change listener lost its connection${err ? ` (${err.message})` : ''}; reconnecting`,
    );
    this.schedule();
  }

  private schedule(): void {
    const delay = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** this.failures);
    this.failures += 1;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.closed) return;
      this.connect().then(
        () => this.logger.info('postgres change listener reconnected'),
        (err: unknown) => {
          this.logger.warn(`postgres change listener reconnect failed (${(err as Error).message})`);
          this.schedule();
        },
      );
    }, delay);
    this.timer.unref?.();
  }

  /** First connection: note where the logs end. A reconnect: wake every id that changed meanwhile. */
  private async catchUp(client: pg.Client): Promise<void> {
    if (!this.lastSeq) {
      const { rows } = await client.query<{ e: number; a: number }>(
        `SELECT (SELECT COALESCE(MAX(seq), 0) FROM envelope_events)::float8 AS e,
                (SELECT COALESCE(MAX(seq), 0) FROM agent_task_events)::float8 AS a`,
      );
      this.lastSeq = { envelope: rows[0]!.e, agentTask: rows[0]!.a };
      return;
    }
    const missed: ChangeNotice[] = [];
    for (const [kind, table, column] of [
      ['envelope', 'envelope_events', 'envelope_id'],
      ['agentTask', 'agent_task_events', 'task_id'],
    ] as const) {
      const { rows } = await client.query<{ id: string; seq: number }>(
        `SELECT ${column} AS id, MAX(seq)::float8 AS seq FROM ${table} WHERE seq > $1
         GROUP BY ${column} ORDER BY 2 DESC LIMIT ${CATCH_UP_MAX_IDS}`,
        [this.lastSeq[kind]],
      );
      for (const r of rows) {
        missed.push({ kind, id: r.id, seq: r.seq });
        this.lastSeq[kind] = Math.max(this.lastSeq[kind], r.seq);
      }
    }
    this.hub.emit(missed);
  }

  private deliver(payload: string | undefined): void {
    if (!payload) return;
    let wire: WirePayload;
    try {
      wire = JSON.parse(payload) as WirePayload;
    } catch {
      return;
    }
    if (this.lastSeq) this.lastSeq[wire.k] = Math.max(this.lastSeq[wire.k] ?? 0, wire.s);
    // Our own commits were emitted locally right after COMMIT; skip their echo.
    if (wire.i === this.instanceId) return;
    this.hub.emit([{ kind: wire.k, id: wire.id, seq: wire.s }]);
  }
}
