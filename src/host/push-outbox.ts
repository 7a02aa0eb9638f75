import type { Logger } from '../core/logger.ts';
import type { Clock } from '../core/clock.ts';
import type { AgentTaskStore, OutboxRow } from '../store/store.ts';
import type { PushSender } from './push-sender.ts';
import { isV03Version } from '../protocols/a2a/v03/card.ts';
import { streamResponseToV03 } from '../protocols/a2a/v03/wire.ts';
import type { StreamResponse } from '../protocols/a2a/types.ts';

export interface PushOutboxOptions {
  store: AgentTaskStore;
  clock: Clock;
  send: PushSender;
  logger: Logger;
  /** Lease owner name for this process. */
  owner: string;
  /** First retry delay; doubles per attempt (a 5 s base: docs/a2a-notes.md, "Delivery mix"). @default 5000 */
  baseMs: number;
  /** Attempts before a row is dead-lettered (8 attempts ≈ 10.6 min of retries at 5 s). @default 8 */
  attempts: number;
  /** Per-call timeout; the lease outlives it so a slow call is not sent twice. @default 15000 */
  timeoutMs: number;
  /** Idle poll interval; writes that queue rows wake the loop sooner. @default 1000 */
  pollMs?: number;
  /** Rows claimed per round. @default 16 */
  batch?: number;
}

/**
 * The push outbox worker: at least once, in order per (task, config) because the store hands out only
 * the oldest undelivered row of each pair, exponential backoff base·2^(attempt-1), dead-letter after
 * `attempts`. A crash while a row is leased leaves it for the lease-expiry sweep in claimOutbox, so
 * every row committed with a task change is eventually delivered or visibly dead.
 */
export class PushOutbox {
  private running = false;
  private loop: Promise<void> | undefined;
  private wakeUp: AbortController | undefined;
  private dirty = false;

  constructor(private readonly o: PushOutboxOptions) {}

  /** The retry delay after failed attempt number `attempt` (1-based). */
  static delayAfter(baseMs: number, attempt: number): number {
    return baseMs * 2 ** (attempt - 1);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wake();
    await this.loop;
  }

  wake(): void {
    this.dirty = true;
    this.wakeUp?.abort();
  }

  /** One claim-and-send round; returns how many rows were attempted. */
  async runOnce(): Promise<number> {
    const { store, clock } = this.o;
    const rows = await store.claimOutbox(
      this.o.owner,
      clock.now(),
      this.o.timeoutMs + 30_000,
      this.o.batch ?? 16,
    );
    await Promise.all(rows.map((row) => this.deliver(row)));
    return rows.length;
  }

  private async run(): Promise<void> {
    while (this.running) {
      let n = 0;
      this.dirty = false;
      try {
        n = await this.runOnce();
      } catch (err) {
        this.o.logger.error({ err }, 'push outbox round failed');
      }
      if (n > 0 || this.dirty || !this.running) continue;
      this.wakeUp = new AbortController();
      await this.o.clock.sleep(this.o.pollMs ?? 1000, this.wakeUp.signal).catch(() => undefined);
    }
  }

  /**
   * Every claimed row ends this call recorded as delivered, retried or dead: an exception (a sender
   * bug, a header Node refuses, a store error reading the config) is a failed attempt like an HTTP 503.
   * A row left leased would only be retried at each lease expiry, never reach the dead letter, and
   * block every later event of its (task, config).
   */
  private async deliver(row: OutboxRow): Promise<void> {
    let error: string;
    try {
      error = await this.attempt(row);
      if (error === '') return;
    } catch (err) {
      error = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    }
    const { store, clock, logger } = this.o;
    const dead = row.attempts >= this.o.attempts;
    const next = dead ? null : clock.now() + PushOutbox.delayAfter(this.o.baseMs, row.attempts);
    // Never log the URL (it may carry credentials) or the token: the task and config ids identify it.
    logger.warn(
      { taskId: row.taskId, configId: row.configId, attempt: row.attempts, dead, error },
      'push delivery failed',
    );
    try {
      await store.failOutbox(row.id, this.o.owner, error.slice(0, 500), next);
    } catch (err) {
      // The lease expires and the row is claimed again (as one more attempt).
      logger.error({ err, taskId: row.taskId, configId: row.configId }, 'push outcome not recorded');
    }
  }

  /** One attempt: '' when delivered (and recorded), else the error to record. */
  private async attempt(row: OutboxRow): Promise<string> {
    const { store, clock } = this.o;
    // Claimed again after its lease ran out with its attempts spent: the workers that held it died
    // or hung mid-call. Sending once more would make it the row that never reaches the dead letter.
    if (row.attempts > this.o.attempts) return 'lease expired with no outcome recorded';
    const config = await store.getPushConfig(row.taskId, row.configId);
    if (!config) {
      await store.failOutbox(row.id, this.o.owner, 'push config deleted', null);
      return '';
    }
    const auth = config.authentication;
    // A config registered over A2A 0.3 gets the 0.3 body: the bare event with `kind` (v03/wire.ts).
    const v03 = config.protocolVersion !== undefined && isV03Version(config.protocolVersion);
    const result = await this.o.send({
      url: config.url,
      body: JSON.stringify(v03 ? streamResponseToV03(row.payload as unknown as StreamResponse) : row.payload),
      ...(v03 ? { contentType: 'application/json' } : {}),
      deliveryId: row.deliveryId,
      ...(auth
        ? {
            authorization:
              auth.credentials !== undefined ? `${auth.scheme} ${auth.credentials}` : auth.scheme,
          }
        : {}),
      ...(config.token ? { token: config.token } : {}),
    });
    if (!result.ok) return result.error;
    await store.completeOutbox(row.id, this.o.owner, clock.now());
    return '';
  }
}
