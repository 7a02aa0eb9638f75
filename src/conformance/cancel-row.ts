import type { Envelope } from '../core/envelope.ts';
import { isTerminal } from '../core/states.ts';
import type { RemoteSnapshot } from '../connectors/connector.ts';
import { expectRefused, waitFor, work } from './row-helpers.ts';
import { TENANT, type Job, type RowKit } from './row-kit.ts';

/** The status the test contract's side effect announces itself with (docs/conformance.md). */
export const EFFECT_STARTED = 'side effect started';

/** Whether a record (the agent's task, or the engine's job) holds the side effect's receipt. */
function hasReceipt(record: Pick<RemoteSnapshot, 'artifacts' | 'result'> | Envelope): boolean {
  const artifacts = (record.artifacts ?? []) as Array<{ artifactId: string }>;
  if (artifacts.some((a) => a.artifactId === 'receipt')) return true;
  // MCP: the tool's structured result carries it.
  const result = record.result as { structuredContent?: { receipt?: unknown } } | null | undefined;
  return result?.structuredContent?.receipt !== undefined;
}

/**
 * Row 8: cancel right after create (before the start is answered), while the task works, while it
 * performs a side effect it cannot stop once begun (the contract's `sideEffectMs`), and after it
 * completed. Each cancel's recorded outcome must be the state the agent reached; for the side effect,
 * what the agent recorded of it (its receipt, which may come after the cancel) must be what the engine
 * recorded; the cancel after completion changes nothing.
 */
export async function cancelRow(kit: RowKit): Promise<void> {
  await kit.startPlane();
  // A cancel the engine refuses because the job had already ended (a fast agent, or --input) is no
  // fault: the checks then ask that nothing changed.
  const cancel = async (job: Job, when: string) => {
    const refused = await expectRefused(kit.plane.cancel(TENANT, job.envelopeId));
    kit.note('plane', `${job.label}: cancel requested ${when}${refused ? ` — refused (${refused})` : ''}`);
    return refused;
  };
  const early = await kit.job('before-start', work(kit, 4));
  const earlyRefused = await cancel(early, 'right after create');
  const during = await kit.job('during-work', work(kit, 4));
  await kit.running(during);
  const asked = Date.now();
  const duringRefused = await cancel(during, 'while working');
  const cancelled: Array<[Job, string | null]> = [
    [early, earlyRefused],
    [during, duringRefused],
  ];
  // The side effect needs the contract; with --input there is no way to ask for one.
  let effect: Job | null = null;
  if (kit.session.input === undefined) {
    effect = await kit.job('during-effect', {
      durationMs: Math.round(kit.session.jobMs / 2),
      steps: 1,
      sideEffectMs: kit.session.jobMs * 2,
      artifactChunks: 1,
    });
    // The agent's own word, read directly: an engine that polls slowly may never see the announcement.
    let seen = await kit.envelope(effect);
    await waitFor(kit, `job during-effect never reported "${EFFECT_STARTED}"`, async () => {
      seen = await kit.envelope(effect!);
      if (seen.statusMessage === EFFECT_STARTED || isTerminal(seen.state)) return true;
      if (!seen.remoteId) return false;
      const agent = await kit.truthSnapshot(seen.remoteId).catch(() => null);
      return agent?.statusMessage === EFFECT_STARTED;
    });
    if (isTerminal(seen.state))
      kit.check(
        'during-effect: the agent announced its side effect',
        false,
        `the job ended ${seen.state} without the status "${EFFECT_STARTED}" (test contract sideEffectMs)`,
      );
    else cancelled.push([effect, await cancel(effect, 'during the side effect')]);
  } else kit.note('note', 'no side-effect job: --input replaces the test contract that asks for one');
  const late = await kit.job('after-done', work(kit, 0.2));
  const lateEnv = await kit.terminal(late);
  const refused = await expectRefused(kit.plane.cancel(TENANT, late.envelopeId));
  for (const [job, wasRefused] of cancelled) {
    const env = await kit.terminal(job);
    if (job === during && env.state === 'cancelled') kit.sample('cancelLatencyMs', Date.now() - asked);
    if (wasRefused)
      kit.check(
        `${job.label}: cancel after the end changed nothing`,
        env.cancel === null,
        `the job had ended (${env.state}) before the cancel`,
      );
    else
      kit.check(
        `${job.label}: cancel outcome recorded`,
        env.cancel !== null && env.cancel.outcome === env.state,
        `outcome ${env.cancel?.outcome ?? 'none'}, state ${env.state}`,
      );
  }
  if (effect && cancelled.some(([j]) => j === effect)) await effectRecorded(kit, effect);
  const lateAfter = await kit.envelope(late);
  kit.check(
    'after-done: nothing changed',
    lateAfter.state === lateEnv.state,
    `${lateEnv.state} before, ${lateAfter.state} after the cancel (${refused ? `refused: ${refused}` : 'accepted'})`,
  );
  for (const job of [early, during, ...(effect ? [effect] : []), late]) await kit.standardChecks(job);
}

/**
 * The side effect outlives the cancel: once the agent's task is final, its record of the effect (a
 * receipt, or none) and the engine's must agree. An engine that stops listening at the cancel misses a
 * receipt that arrives after it.
 */
async function effectRecorded(kit: RowKit, job: Job): Promise<void> {
  // The effect takes twice a job's time; its receipt may come after the task was cancelled.
  await new Promise((r) => setTimeout(r, kit.session.jobMs * 2 + 500));
  const env = await kit.envelope(job);
  const agent = env.remoteId ? await kit.truthSnapshot(env.remoteId).catch(() => null) : null;
  if (!agent) {
    kit.check(
      'during-effect: the side effect on record',
      false,
      `the agent could not be read for task ${env.remoteId}`,
    );
    return;
  }
  const agentHas = hasReceipt(agent);
  const engineHas = hasReceipt(env);
  kit.check(
    'during-effect: the side effect on record',
    agentHas === engineHas,
    agentHas
      ? `the agent ended ${agent.nativeState} with the side effect's receipt; the engine ${engineHas ? 'recorded it too' : 'did not record it'}`
      : `the agent ended ${agent.nativeState} with no receipt on its record (the effect begun before the cancel is not reported by the agent); the engine ${engineHas ? 'holds one the agent does not' : 'holds none either'}`,
  );
}
