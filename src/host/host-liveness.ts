import type { Logger } from '../core/logger.ts';
import type { Clock } from '../core/clock.ts';
import type { AgentTaskStore } from '../store/store.ts';

/**
 * Which host process is alive, over the Store's leases: every host renews `agent-host:<hostId>` every
 * ttl/3. A task records the host running it (executorState.host); another host takes the task over
 * only when that lease has expired, so a second host starting on a shared PostgreSQL never runs a task
 * that a live host is running (no duplicate execution), and a crashed host's tasks are picked up by the
 * next sweep of any host.
 */
export class HostLiveness {
  private cancel: (() => void) | undefined;
  private stopped = false;

  constructor(
    readonly hostId: string,
    private readonly store: AgentTaskStore,
    private readonly clock: Clock,
    private readonly logger: Logger,
    /** @default 30000 */
    readonly ttlMs = 30_000,
  ) {}

  private static lease(hostId: string): string {
    return `agent-host:${hostId}`;
  }

  /** Takes this host's lease (refusing to start if a live process holds the same host id). */
  async start(): Promise<boolean> {
    const ok = await this.store.acquireLease(
      HostLiveness.lease(this.hostId),
      this.hostId,
      this.clock.now(),
      this.ttlMs,
    );
    if (ok) this.schedule();
    return ok;
  }

  private schedule(): void {
    this.cancel = this.clock.setTimer(Math.max(1, Math.floor(this.ttlMs / 3)), () => {
      if (this.stopped) return;
      this.store
        .acquireLease(HostLiveness.lease(this.hostId), this.hostId, this.clock.now(), this.ttlMs)
        .then((ok) => {
          if (!ok)
            this.logger.error(
              { hostId: this.hostId },
              'host lease lost to another process with the same host id',
            );
        })
        .catch((err: unknown) => this.logger.warn({ err }, 'host lease renewal failed'))
        .finally(() => {
          if (!this.stopped) this.schedule();
        });
    });
  }

  /**
   * Is `hostId` alive? Us: yes. Another: only while its lease is unexpired. The probe "acquires" the
   * lease with a zero ttl, which changes nothing for a live holder and leaves an expired lease expired.
   */
  async isAlive(hostId: string | undefined): Promise<boolean> {
    if (hostId === this.hostId) return true;
    if (!hostId) return false;
    return !(await this.store.acquireLease(HostLiveness.lease(hostId), this.hostId, this.clock.now(), 0));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.cancel?.();
    await this.store.releaseLease(HostLiveness.lease(this.hostId), this.hostId).catch(() => undefined);
  }
}
