import { isTerminal } from '../core/states.ts';
import { RowNotRun, TENANT, type RowKit } from './row-kit.ts';

/** Margin past `createdAt + ttlMs` for the server to drop the task and the engine to read that. */
const MARGIN_MS = 2000;

/**
 * Row 5 (MCP): a job that works longer than its task's lifetime. Once `createdAt + ttlMs` has passed
 * the server may drop the task; the engine must then record the job expired, never an outcome the
 * server did not give. Runs only when the server's ttlMs fits the row bound (a server that keeps tasks
 * for a day cannot be waited out), and is not run otherwise.
 */
export async function retentionRow(kit: RowKit): Promise<void> {
  await kit.startPlane();
  const rowMs = kit.session.rowTimeoutMs;
  const job = await kit.job('expiry', { durationMs: rowMs, steps: 4 });
  const env = await kit.running(job);
  const facts = kit.calls().flatMap((c) => c.states.filter((s) => s.taskId === env.remoteId));
  const ttlMs = facts.find((s) => s.ttlMs !== undefined)?.ttlMs ?? null;
  const createdAt = facts.find((s) => s.createdAtMs != null)?.createdAtMs ?? Date.now();
  const expiresAt = ttlMs === null ? null : createdAt + ttlMs;
  if (expiresAt === null || expiresAt + MARGIN_MS > kit.deadline - 5000) {
    await kit.plane.cancel(TENANT, job.envelopeId).catch(() => {});
    throw new RowNotRun(
      ttlMs === null
        ? 'the server keeps its tasks without a lifetime (ttlMs null): nothing expires'
        : `the server keeps its tasks for ttlMs=${ttlMs}, longer than the row bound (--row-timeout-ms ${rowMs})`,
    );
  }
  kit.note(
    'note',
    `task ${env.remoteId}: ttlMs ${ttlMs}, may be dropped from ${new Date(expiresAt).toISOString()}`,
  );
  const done = await kit.terminal(job);
  const agent = await kit.truth(done.remoteId!).catch((err: unknown) => ({ error: String(err) }));
  kit.check(
    'expiry: recorded expired, nothing invented',
    done.state === 'expired',
    `the engine recorded ${done.state} ${Math.round((Date.now() - expiresAt) / 100) / 10} s after the lifetime passed; the server answers ${agent === null ? 'that the task does not exist' : 'error' in agent ? agent.error : agent.native}`,
  );
  const changes = (await kit.events(job)).filter((e) => e.type === 'state_changed');
  const outcomes = changes.filter((e) => isTerminal(e.data.to as never));
  kit.check(
    'expiry: one outcome recorded',
    outcomes.length === 1,
    `${outcomes.length} final outcome(s): ${outcomes.map((e) => String(e.data.to)).join(', ')}`,
  );
  const ids = kit.remoteTaskIds(job);
  kit.check('expiry: one remote task', ids.length === 1, `${ids.length} task(s): ${ids.join(', ')}`);
}
