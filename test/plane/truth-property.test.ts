import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { isTerminal } from '../../src/core/states.ts';
import { harness } from './harness.ts';

/**
 * The truth rule as a property over the real engine on a virtual clock: for random fault schedules
 * (stream drops, 404 pages instead of protocol answers, the remote moving to another interface, slow
 * starts, transport failures, cancels and timeouts at random points), no envelope ever ends in a
 * terminal state the simulated remote did not reach, and the event that ended it names its source.
 */
const JOBS = 3;
const REMOTE_STATES = ['running', 'waiting_for_input', 'succeeded', 'failed', 'cancelled'] as const;
const METHODS = ['start', 'get', 'list', 'observe', 'cancel'] as const;

const action = fc.oneof(
  fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 40_000 }) }),
  fc.record({
    kind: fc.constant('set' as const),
    job: fc.nat(JOBS - 1),
    state: fc.constantFrom(...REMOTE_STATES),
  }),
  fc.record({ kind: fc.constant('drop' as const) }),
  fc.record({ kind: fc.constant('page404' as const), method: fc.constantFrom(...METHODS) }),
  fc.record({
    kind: fc.constant('flaky' as const),
    method: fc.constantFrom(...METHODS),
    code: fc.constantFrom('unavailable' as const, 'timeout' as const),
  }),
  fc.record({ kind: fc.constant('cardChange' as const) }),
  fc.record({ kind: fc.constant('cancel' as const), job: fc.nat(JOBS - 1) }),
  fc.record({ kind: fc.constant('reconcile' as const) }),
);

const scenario = fc.record({
  startStream: fc.boolean(),
  stream: fc.boolean(),
  startDelayMs: fc.constantFrom(0, 2_000, 45_000),
  cancelCompletes: fc.boolean(),
  timeoutMs: fc.option(fc.integer({ min: 1_000, max: 120_000 }), { nil: null }),
  actions: fc.array(action, { maxLength: 30 }),
});

describe('the truth rule (property)', () => {
  it('no envelope ends in a terminal state the remote did not reach, and the event says the source', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const h = await harness(
          {
            delivery: { stream: s.stream, push: false, poll: !s.stream },
            poll: { intervalMs: 5_000, maximumIntervalMs: 20_000 },
            reconcile: { intervalMs: 30_000, startGraceMs: 5_000 },
            startRetry: { initialIntervalMs: 500, maximumIntervalMs: 5_000 },
            stream: { reattach: { initialIntervalMs: 500, maximumIntervalMs: 5_000 } },
            lostPolicy: 'escalate',
          },
          { push: false, stream: s.stream },
          1,
          { startStream: s.startStream },
        );
        try {
          h.remote.startDelayMs = s.startDelayMs;
          h.remote.cancelCompletes = s.cancelCompletes;
          const ids: string[] = [];
          for (let i = 0; i < JOBS; i++) {
            const { envelope } = await h.plane.create({
              tenant: 't',
              target: 'fake',
              input: `job ${i}`,
              timeoutMs: i === 0 ? s.timeoutMs : null,
            });
            ids.push(envelope.id);
          }
          let revision = 1;
          for (const a of s.actions) {
            switch (a.kind) {
              case 'advance':
                await h.advance(a.ms);
                break;
              case 'set': {
                const env = await h.store.getEnvelope(ids[a.job]!);
                const job = env?.remoteId ? h.remote.jobs.get(env.remoteId) : undefined;
                // A remote's terminal state never changes either.
                if (job && !isTerminal(job.state)) h.remote.set(job.id, a.state);
                break;
              }
              case 'drop':
                h.remote.dropStreams();
                break;
              case 'page404':
                h.remote.failNext(a.method, 'route');
                break;
              case 'flaky':
                h.remote.failNext(a.method, a.code);
                break;
              case 'cardChange':
                h.remote.revision = `v${++revision}`;
                break;
              case 'cancel':
                await h.plane.cancel('t', ids[a.job]!).catch(() => {});
                break;
              case 'reconcile':
                await h.plane.reconcileNow('fake').catch(() => {});
                break;
            }
            await h.settle();
          }
          await h.advance(120_000);
          for (const id of ids) {
            const env = (await h.store.getEnvelope(id))!;
            if (!isTerminal(env.state)) continue;
            const events = await h.plane.events('t', { afterSeq: 0, envelopeId: id });
            const ending = events.find((e) => e.type === 'state_changed' && e.data.to === env.state);
            expect(ending?.data.source, `${id} ended ${env.state} without a source`).toBeTruthy();
            const job = env.remoteId ? h.remote.jobs.get(env.remoteId) : undefined;
            if (job) {
              expect(env.state, `${id} recorded ${env.state}, the remote says ${job.state}`).toBe(job.state);
            } else {
              // Never bound: only "cancelled before it ever reached the remote" is a true outcome.
              expect(env.state).toBe('cancelled');
              expect(ending?.data.note).toBe('never started');
              expect(h.remote.jobsByMessageId(env.messageId!)).toHaveLength(0);
            }
          }
        } finally {
          await h.close();
        }
      }),
      { numRuns: 40, seed: 20261201 },
    );
  }, 120_000);
});
