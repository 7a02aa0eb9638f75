import type { Envelope } from '../core/envelope.ts';
import { isTerminal } from '../core/states.ts';
import { cancelTask } from './answer-and-cancel.ts';
import { describeError, jobFields, type PlaneContext } from './context.ts';

/**
 * The caller's `timeoutMs`, acting on its own timer: at createdAt + timeoutMs the job gets a remote
 * cancel (`cancel.requestedBy = "timeout"`), and its true outcome is still recorded by the usual paths.
 * A timer of its own, because if only reconciliation looked, a 5-minute timeout would fire up to one
 * interval (10 min by default) late. Reconciliation still checks, as the backstop for a timer lost with a crash.
 *
 * Armed by the plane that watches the job (created it, recovered it, adopted it), so with watch leases
 * one plane fires it. Timers live in memory and are re-armed on recovery from the envelope.
 */
export class TimeoutTimers {
  private readonly timers = new Map<string, () => void>();

  constructor(private readonly ctx: PlaneContext) {}

  arm(env: Pick<Envelope, 'id' | 'createdAt' | 'timeoutMs' | 'state'>): void {
    const ctx = this.ctx;
    if (env.timeoutMs === null || isTerminal(env.state) || env.state === 'cancel_requested') return;
    if (this.timers.has(env.id) || ctx.signal.aborted) return;
    const dueInMs = Math.max(0, env.createdAt + env.timeoutMs - ctx.clock.now());
    const cancel = ctx.clock.setTimer(dueInMs, () => {
      this.timers.delete(env.id);
      ctx.spawn(this.fire(env.id));
    });
    this.timers.set(env.id, cancel);
  }

  disarm(envelopeId: string): void {
    this.timers.get(envelopeId)?.();
    this.timers.delete(envelopeId);
  }

  clear(): void {
    for (const cancel of this.timers.values()) cancel();
    this.timers.clear();
  }

  private async fire(envelopeId: string): Promise<void> {
    const ctx = this.ctx;
    if (ctx.signal.aborted) return;
    const env = await ctx.store.getEnvelope(envelopeId);
    if (!env || isTerminal(env.state) || env.state === 'cancel_requested') return;
    try {
      ctx.logger.info(
        { ...jobFields(env), timeoutMs: env.timeoutMs, decision: 'cancel' },
        'job timed out; cancelling',
      );
      await cancelTask(ctx, envelopeId, 'timeout');
    } catch (err) {
      // Finished in the meantime (conflict) or the remote is unreachable: the intent, if recorded,
      // stays, and the job is still watched and reconciled.
      ctx.logger.debug({ ...jobFields(env), err: describeError(err) }, 'timeout cancel did not complete');
    }
  }
}
