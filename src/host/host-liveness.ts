import type { Logger } from '../core/logger.ts';
import type { Clock } from '../core/clock.ts';
import type { AgentTaskStore } from '../store/store.ts';

/**
 * Which host process is alive, over the Store's leases: every host renews `agent-host:<hostId>` every
 * ttl/3. A task records the host running it (executorState.host); another host takes the task over
 * only when that host is dead, so a second host starting on a shared PostgreSQL never runs a task that a
 * live host is running (no duplicate execution), and a crashed host's tasks are picked up by the next
 * sweep of any host.
 *
 * Dead means: its lease expired, or, where the store can tell (`ownerLiveness`, PostgreSQL), its
 * process is gone. There the lease's owner is this process (`<hostId>@<instance>`, new at every start),
 * bound to its database session (Store.bindLeaseOwner): PostgreSQL frees the owner's liveness lock when
 * the process dies, and the lease passes at once instead of at expiry. That owner name also tells a
 * restart from a second live process with the same host id: a dead process's lease is taken at once, a
 * live one's refuses. Elsewhere (SQLite, memory: one machine) the owner is the host id itself, so a
 * restart takes its lease back at once, as it always did.
 */
export class HostLiveness {
  /** The lease owner: this process. */
  readonly owner: string;
  private cancel: (() => void) | undefined;
  private stopped = false;

  /** @default 30000 */
  readonly ttlMs: number;
  private readonly onLost: () => void;

  constructor(
    readonly hostId: string,
    private readonly store: AgentTaskStore,
    private readonly clock: Clock,
    private readonly logger: Logger,
    options: {
      ttlMs?: number | undefined;
      /** Names this process among the starts of `hostId` (an id of its own; ownerLiveness only). */
      instance: string;
      /** Called once if this process's lease passes to another process with the same host id. */
      onLost?: () => void;
    },
  ) {
    this.ttlMs = options.ttlMs ?? 30_000;
    this.onLost = options.onLost ?? (() => undefined);
    this.owner = this.sessionTied ? `${hostId}@${options.instance}` : hostId;
  }

  private static lease(hostId: string): string {
    return `agent-host:${hostId}`;
  }

  /** Whether other hosts see this one die when its session ends, not only when its lease expires. */
  get sessionTied(): boolean {
    return this.store.capabilities.ownerLiveness;
  }

  /**
   * Takes this host's lease and, where the store can tell, ties it to this process's database session;
   * false when a live process holds the same host id (then this host must not start).
   */
  async start(): Promise<boolean> {
    const ok = await this.store.acquireLease(
      HostLiveness.lease(this.hostId),
      this.owner,
      this.clock.now(),
      this.ttlMs,
    );
    if (!ok) return false;
    // After the lease, so a refused start binds nothing. Until the bind the owner has no row, and its
    // lease keeps the expiry rule: nobody can take it early in between.
    await this.store.bindLeaseOwner(this.owner, this.clock.now());
    this.schedule();
    return true;
  }

  private schedule(): void {
    this.cancel = this.clock.setTimer(Math.max(1, Math.floor(this.ttlMs / 3)), () => {
      if (this.stopped) return;
      this.store
        .acquireLease(HostLiveness.lease(this.hostId), this.owner, this.clock.now(), this.ttlMs)
        .then((ok) => {
          if (ok || this.stopped) return;
          // Only a process with our host id can hold it unexpired: one that started while our session
          // was cut (we looked dead). It runs this host id's tasks now; we must not run them too.
          this.logger.error(
            { hostId: this.hostId },
            'host lease taken by another process with the same host id; stopping task execution here',
          );
          this.stopped = true;
          this.onLost();
        })
        .catch((err: unknown) => this.logger.warn({ err }, 'host lease renewal failed'))
        .finally(() => {
          if (!this.stopped) this.schedule();
        });
    });
  }

  /**
   * Is `hostId` alive? Us: yes. Another: only while its lease is unexpired and, where its owner is
   * bound, that owner's session lives. The probe "acquires" the lease with a zero ttl, which changes
   * nothing for a live holder and leaves a dead one's lease expired (an owner that was only cut off
   * takes it back at its next renewal).
   */
  async isAlive(hostId: string | undefined): Promise<boolean> {
    if (hostId === this.hostId) return true;
    if (!hostId) return false;
    return !(await this.store.acquireLease(HostLiveness.lease(hostId), this.owner, this.clock.now(), 0));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.cancel?.();
    await this.store.releaseLease(HostLiveness.lease(this.hostId), this.owner).catch(() => undefined);
  }
}
