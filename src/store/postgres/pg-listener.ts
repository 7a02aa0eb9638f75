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
 * One dedicated connection per store that LISTENs on the schema's channel and feeds the ChangeHub.
 * NOTIFY only wakes readers early: a notice lost while this connection is down costs latency,
 * not data, because readers list events after their last seq. So on error it just reconnects with
 * capped exponential backoff, forever, until closed.
 */
export class PgListener {
  private client: pg.Client | undefined;
  private closed = false;
  private failures = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly channel: string,
    private readonly instanceId: string,
    private readonly hub: ChangeHub,
    private readonly logger: Logger,
  ) {}

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

  private async connect(): Promise<void> {
    const client = new pg.Client(this.config);
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, undefined));
    client.on('notification', (msg) => this.deliver(msg.payload));
    try {
      await client.connect();
      await client.query(`LISTEN "${this.channel}"`);
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
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

  private deliver(payload: string | undefined): void {
    if (!payload) return;
    let wire: WirePayload;
    try {
      wire = JSON.parse(payload) as WirePayload;
    } catch {
      return;
    }
    // Our own commits were emitted locally right after COMMIT; skip their echo.
    if (wire.i === this.instanceId) return;
    this.hub.emit([{ kind: wire.k, id: wire.id, seq: wire.s }]);
  }
}
