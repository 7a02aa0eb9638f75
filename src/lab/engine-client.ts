import type { VirtualClock } from '../core/clock.ts';
import type { Envelope, EnvelopeEvent, NewEnvelopeEvent } from '../core/envelope.ts';
import { isTerminal } from '../core/states.ts';
import { Plane, type PlaneOptions } from '../plane/index.ts';
import { MemoryStore } from '../store/memory/memory-store.ts';
import type { World } from './run.ts';
import { SimConnector, webhookBody } from './sim-connector.ts';
import { MINUTE_MS, WORLD } from './world-model.ts';

/**
 * The REAL plane/ engine as the lab's client (the engine is sans-I/O): the lab's
 * VirtualClock, a SeededRandom stream, the pure-TS MemoryStore and a SimConnector over the simulated
 * agent and network. Everything the figures say about the engine is read from the outside: requests on
 * the wire (the connector), outcomes from the envelopes it writes (the store), deliveries it absorbs
 * (the webhook ingress' answers). The engine is not patched or stubbed anywhere.
 *
 * This file is the only place that knows the engine's API, so it can be switched off by settings
 * (`client: 'naive'`) if the engine changes shape.
 */

const TENANT = 'lab';
const TARGET = 'lab-agent';

/** Engine options for a lab run: the engine's defaults, with only what the settings choose changed. */
export function engineOptions(world: World): PlaneOptions {
  const s = world.settings;
  return {
    delivery: { stream: s.delivery === 'stream', push: s.delivery === 'push', poll: false },
    publicUrl: 'https://plane.lab.invalid',
    reconcile:
      s.reconcileMin > 0 ? { enabled: true, intervalMs: s.reconcileMin * MINUTE_MS } : { enabled: false },
    webhook: { fetchState: s.webhookFetch },
  };
}

/** A MemoryStore that tells the lab what the engine concluded, as it commits it. */
class WatchedStore extends MemoryStore {
  onWrite: (env: Envelope, events: NewEnvelopeEvent[]) => void = () => {};

  override async createEnvelope(
    envelope: Envelope,
    events: NewEnvelopeEvent[],
  ): Promise<{ created: boolean; envelope: Envelope }> {
    const result = await super.createEnvelope(envelope, events);
    if (result.created) this.onWrite(result.envelope, events);
    return result;
  }

  override async updateEnvelope(
    next: Envelope,
    expectedVersion: number,
    events: NewEnvelopeEvent[],
  ): Promise<{ envelope: Envelope; events: EnvelopeEvent[] }> {
    const result = await super.updateEnvelope(next, expectedVersion, events);
    this.onWrite(result.envelope, events);
    return result;
  }
}

function jobOf(env: Envelope): number {
  return (env.input as { job: number }).job;
}

export async function runEngineClient(world: World, onProgress?: (fraction: number) => void): Promise<void> {
  const { clock, ledger, agent, net, jobs, settings } = world;
  const store = new WatchedStore();
  const intervalMs = settings.reconcileMin * MINUTE_MS;
  /** In-flight envelopes and their jobs, and when the client last heard from each job (for the per-task charge). */
  const inFlight = new Map<string, number>();
  const lastHeard = new Map<number, number>();
  const answered = new Set<string>();
  let plane: Plane | null = null;

  const connector = new SimConnector(clock, agent, net, ledger, {
    stream: settings.delivery === 'stream',
    push: settings.delivery === 'push',
    // Seed-style cost of the same round: one GetTask per in-flight job not heard from for an interval.
    // "Heard from" as for the baselines: any snapshot of the task reached the client (a stream event,
    // a reattach's first Task, a push, a get, a list item), whether or not it changed anything.
    onListRound: () => {
      const now = clock.now();
      for (const job of inFlight.values())
        if (now - (lastHeard.get(job) ?? 0) >= intervalMs) ledger.reconcilePerTaskCharge++;
    },
    onHeard: (snapshot) => lastHeard.set(snapshot.job, clock.now()),
  });

  store.onWrite = (env, events) => {
    const job = jobOf(env);
    for (const e of events) if (e.type === 'resubmitted') ledger.resubmitted++;
    if (isTerminal(env.state)) {
      if (inFlight.delete(env.id)) {
        if (env.state === 'succeeded') ledger.sideEffect(job);
        // `lost` (escalated) is not an outcome: the job's result stays unknown.
        if (env.state !== 'lost') ledger.learned(job, clock.now(), env.stateTimestamp ?? clock.now());
      }
      return;
    }
    inFlight.set(env.id, job);
    if (!lastHeard.has(job)) lastHeard.set(job, env.createdAt);
    const pending = env.pendingInput;
    if (pending && !pending.answeredAt && !answered.has(`${env.id}/${pending.requestId}`)) {
      // The operator (automation) answers as soon as the engine shows the request.
      answered.add(`${env.id}/${pending.requestId}`);
      const requestId = pending.requestId;
      clock.setTimer(0, () => {
        plane
          ?.answer(TENANT, env.id, { requestId, value: { edition: 'first' } })
          .catch(() => answered.delete(`${env.id}/${requestId}`));
      });
    }
  };

  net.setReceiver(async (d) => {
    const envelopeId = new URL(d.url).searchParams.get('envelope');
    const result = await plane!.handleWebhook(TARGET, { ...webhookBody(d), envelopeId });
    if (result.status !== 'observed') ledger.duplicatesAbsorbed++;
  });

  plane = new Plane({
    clock,
    random: world.clientRandom,
    store,
    connectors: (t) => (t === TARGET ? connector : undefined),
    options: engineOptions(world),
  });
  await plane.start();
  for (const job of jobs) {
    clock.setTimer(job.arrivalMs, () => {
      plane!
        .create({
          tenant: TENANT,
          target: TARGET,
          input: { job: job.index },
          idempotencyKey: `job-${job.index}`,
          contextId: `ctx-${job.index}`,
        })
        // A create the engine refuses leaves the job untracked: it shows as an unknown outcome.
        .catch(() => {});
    });
  }
  const done = () => ledger.learnedCount === jobs.length && agent.idle;
  const chunk = 5 * MINUTE_MS;
  for (let t = chunk; t <= WORLD.horizonMs; t += chunk) {
    await runSettled(clock, Math.min(t, WORLD.horizonMs), done);
    onProgress?.(clock.now() / WORLD.horizonMs);
    if (done()) break;
  }
  await plane.stop();
  onProgress?.(1);
}

/** Resolves on the next macrotask, by when every pending promise continuation has run (browser and Node). */
const nextMacrotask: () => Promise<void> =
  typeof setImmediate === 'function'
    ? () => new Promise((resolve) => setImmediate(resolve))
    : (() => {
        const channel = new MessageChannel();
        const waiting: Array<() => void> = [];
        channel.port1.onmessage = () => waiting.shift()?.();
        return () =>
          new Promise<void>((resolve) => {
            waiting.push(resolve);
            channel.port2.postMessage(null);
          });
      })();

/**
 * Drives the virtual clock to `untilMs` so the engine sees time as it would in real time: before the
 * clock moves on to a later instant, every continuation started at this instant (however many awaits
 * deep: store, observe, connector) has finished. VirtualClock.runUntil settles a fixed number of
 * microtask turns per timer, and a longer chain would otherwise resume at a later timer's time (found
 * when an engine change added awaits to create(): a job's start reached the agent two minutes late).
 * Timers due at the same instant fire with a microtask settle between them; a macrotask is taken only
 * when time is about to advance.
 */
export async function runSettled(clock: VirtualClock, untilMs: number, stop: () => boolean): Promise<void> {
  let settled = false;
  for (;;) {
    if (stop()) return;
    const due = clock.nextDue();
    const dueNow = due !== undefined && due <= clock.now();
    if (!dueNow && !settled) {
      await nextMacrotask();
      settled = true;
      continue;
    }
    if (!dueNow && (due === undefined || due > untilMs)) break;
    clock.step();
    settled = false;
    for (let i = 0; i < 8; i++) await Promise.resolve();
  }
  await clock.runUntil(untilMs);
}
