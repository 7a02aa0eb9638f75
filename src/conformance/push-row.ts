import type { Envelope } from '../core/envelope.ts';
import type { PushDelivery } from './push-relay.ts';
import { waitFor, work } from './row-helpers.ts';
import type { Job, RowKit } from './row-kit.ts';
import { isTerminalWireState, stateRank } from './wire-facts.ts';

const latest = (d: PushDelivery): number | null =>
  d.states.reduce<number | null>(
    (m, s) => (s.timestampMs !== null && (m === null || s.timestampMs > m) ? s.timestampMs : m),
    null,
  );

/**
 * Row 3: push only (no stream, no polling), every delivery handed to the engine twice. Job `running`
 * has its first push held back while it still works, until the engine has fetched a newer state (from
 * the next push), then handed over: the engine must keep the newer state. Job `late` has every non-final
 * push held until after its final one.
 */
export async function pushRow(kit: RowKit): Promise<void> {
  const relay = kit.session.relay;
  const firstDelivery = relay.deliveries.length;
  const contexts = { running: '', late: '' };
  let held: PushDelivery | null = null;
  relay.duplicate = true;
  relay.hold = (d) => {
    const ctx = d.states[0]?.contextId ?? null;
    if (ctx === contexts.late) return 'final';
    // A working-state push (not the submitted one): the newer state the engine fetches meanwhile is then
    // the same normalized state, so only the agent's own ordering tells the two apart.
    if (ctx === contexts.running && held === null && d.states.some((s) => stateRank(s.state) === 1)) {
      held = d;
      return 'manual';
    }
    return null;
  };
  try {
    await kit.startPlane({ stream: false, push: true, poll: false });
    const running = await kit.job(
      'running',
      { ...work(kit, 3), steps: 6 },
      (ctx) => (contexts.running = ctx),
    );
    const late = await kit.job('late', work(kit), (ctx) => (contexts.late = ctx));
    await heldWhileRunning(kit, running, () => held);
    const envs = [await kit.terminal(running), await kit.terminal(late)];
    // The engine may learn the final state from the fetch a late non-final push caused, before the final
    // push itself arrives: give that push a few seconds.
    const finalPushOf = (remoteId: string | null) =>
      relay.deliveries
        .slice(firstDelivery)
        .some((d) => d.states.some((s) => s.taskId === remoteId && isTerminalWireState(s.state)));
    const settle = Date.now() + 5000;
    while (!envs.every((e) => finalPushOf(e.remoteId)) && Date.now() < Math.min(settle, kit.deadline))
      await new Promise((r) => setTimeout(r, 50));
    await relay.releaseAll();
    const remoteIds = new Set(envs.map((e) => e.remoteId));
    const mine = relay.deliveries
      .slice(firstDelivery)
      .filter((d) => d.states.some((s) => remoteIds.has(s.taskId)));
    for (const env of envs) {
      const label = env.id === running.envelopeId ? 'running' : 'late';
      const own = mine.filter((d) => d.states.some((s) => s.taskId === env.remoteId));
      const finalPush = own.some((d) => d.states.some((s) => isTerminalWireState(s.state)));
      kit.check(
        `${label}: the agent pushed the final state`,
        finalPush,
        finalPush
          ? `${own.length} deliveries`
          : `no final-state push arrived (${own.length} deliveries); is the agent allowed to push to loopback?`,
      );
    }
    for (const d of mine)
      kit.note(
        'push',
        `${d.states.map((s) => s.state).join(',')}${d.held ? ` (held back: ${d.held === 'final' ? 'until after the final state' : 'while a newer state was fetched'})` : ''}: ${d.results.join(' then ')}`,
        d.at,
      );
    const repeats = mine.flatMap((d) => d.results.slice(1));
    const absorbed = repeats.filter((r) => r === 'duplicate').length;
    kit.sample('duplicatesAbsorbed', absorbed);
    kit.check(
      'push: duplicates absorbed',
      absorbed === repeats.length && repeats.length > 0,
      `${absorbed} of ${repeats.length} repeated deliveries answered as duplicates`,
    );
    kit.signedPushes = mine.length > 0 && mine.every((d) => d.signed);
    for (const job of [running, late]) await kit.standardChecks(job);
  } finally {
    relay.duplicate = false;
    relay.hold = null;
    await relay.releaseAll();
  }
}

/**
 * Waits for the held push and for the engine to have a newer state from the agent while the task still
 * works, hands the held push over, and checks that the engine's state, status timestamp and message
 * did not go back.
 */
async function heldWhileRunning(kit: RowKit, job: Job, held: () => PushDelivery | null): Promise<void> {
  await waitFor(kit, 'no push of job running arrived', () => held() !== null);
  const delivery = held()!;
  const heldAt = latest(delivery);
  let before: Envelope | null = null;
  await waitFor(kit, 'the engine never fetched a state newer than the held push', async () => {
    const env = await kit.envelope(job);
    before = env;
    if (env.stateTimestamp === null || env.remoteId === null) return false;
    // Without a timestamp on the held push, any later delivery that reached the engine is newer.
    return heldAt !== null
      ? env.stateTimestamp > heldAt
      : kit.session.relay.deliveries.some((d) => d !== delivery && d.handedAt !== null && d.at > delivery.at);
  });
  const newer = before! as Envelope;
  const truth = await kit.truth(newer.remoteId!);
  const stillWorking = truth !== null && !isTerminalWireState(truth.native) && newer.state !== 'succeeded';
  kit.check(
    'running: a push held while the task still worked',
    stillWorking,
    stillWorking
      ? `held ${delivery.states.map((s) => s.state).join(',')} (${heldAt === null ? 'no timestamp' : new Date(heldAt).toISOString()}) until the engine had ${newer.nativeState} at ${new Date(newer.stateTimestamp!).toISOString()}${newer.statusMessage ? ` ("${newer.statusMessage}")` : ''}; the agent still ${truth.native}`
      : `the task had ended (${truth?.native ?? 'unknown to the agent'}) before a newer state was fetched: give a longer --job-ms`,
  );
  kit.note('push', `held push of job running handed over while the task works`);
  await kit.session.relay.releaseManual(delivery.states[0]!.taskId);
  const after = await kit.envelope(job);
  const back =
    after.state === 'accepted' ||
    (after.stateTimestamp ?? 0) < newer.stateTimestamp! ||
    (after.remoteVersion ?? 0) < (newer.remoteVersion ?? 0);
  kit.check(
    'running: the held push moved nothing back',
    !back && delivery.results.length > 0,
    delivery.results.length === 0
      ? 'the held push was never handed over'
      : `handed over (${delivery.results.join(' then ')}); engine ${newer.state} → ${after.state}, status time ${new Date(newer.stateTimestamp!).toISOString()} → ${after.stateTimestamp === null ? 'none' : new Date(after.stateTimestamp).toISOString()}${after.statusMessage ? ` ("${after.statusMessage}")` : ''}`,
  );
}
