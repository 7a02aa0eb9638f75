/**
 * When each open job was last heard of, per target, in this process: the time of the latest
 * observation that carried the remote's word about it. Reconciliation reads it to ask only about jobs
 * the fast path has gone quiet on (reconciler.ts), and keeps a second one of its own checks so a bound
 * on a round takes the longest-unchecked jobs first.
 *
 * In memory by design: after a restart nothing has been heard yet, so the first round asks about every
 * job, which is what a restart needs. The log stays bounded: an observation that ends a job forgets it,
 * and each round keeps just the ids it looked at (`retain`), which also drops jobs that ended by a local
 * decision (a timeout, the lost policy). A round of a target that lists looks only at the jobs due its
 * attention, so it also keeps what was heard recently (the fast path's jobs; a push's stream grace
 * reads it): the log then grows with the jobs heard within an interval, not with the open ones.
 */
export class HeardLog {
  private readonly byTarget = new Map<string, Map<string, number>>();

  note(target: string, envelopeId: string, at: number): void {
    let jobs = this.byTarget.get(target);
    if (!jobs) this.byTarget.set(target, (jobs = new Map()));
    if ((jobs.get(envelopeId) ?? -Infinity) < at) jobs.set(envelopeId, at);
  }

  /** A job that ended needs no more checks. */
  forget(target: string, envelopeId: string): void {
    this.byTarget.get(target)?.delete(envelopeId);
  }

  /** When the job was last heard of, or undefined. */
  at(target: string, envelopeId: string): number | undefined {
    return this.byTarget.get(target)?.get(envelopeId);
  }

  /** Forgets every job of the target that is not among `keep`, except, with `since`, those heard at or after it. */
  retain(target: string, keep: ReadonlySet<string>, since = Infinity): void {
    const jobs = this.byTarget.get(target);
    if (!jobs) return;
    for (const [id, at] of jobs) if (!keep.has(id) && at < since) jobs.delete(id);
    if (jobs.size === 0) this.byTarget.delete(target);
  }
}
