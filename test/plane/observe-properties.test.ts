import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { isTerminal, NORMALIZED_STATES, type NormalizedState } from '../../src/core/states.ts';
import type { RemoteSnapshot } from '../../src/connectors/connector.ts';
import { harness } from './harness.ts';
import { planeConfig } from '../../src/plane/options.ts';

const remoteStates = NORMALIZED_STATES.filter(
  (s) => s !== 'lost' && s !== 'cancel_requested',
) as NormalizedState[];

const snapshotArb = fc.record({
  state: fc.constantFrom(...remoteStates),
  version: fc.integer({ min: 0, max: 20 }),
  artifact: fc.option(fc.string({ maxLength: 3 }), { nil: undefined }),
});

describe('the one observe path (property)', () => {
  it('never leaves a terminal state, never goes back in remote version, and logs every state change', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(snapshotArb, { minLength: 1, maxLength: 25 }),
        fc.array(fc.nat(), { maxLength: 25 }),
        async (seq, order) => {
          const h = await harness({
            delivery: { stream: false, push: false, poll: false },
            reconcile: { enabled: false },
          });
          try {
            const { envelope } = await h.plane.create(
              { tenant: 't', target: 'fake', input: 1 },
              { wait: 'started' },
            );
            const id = envelope.id;
            const rid = envelope.remoteId!;
            // Deliver the observations concurrently in a shuffled order, as several sources would.
            const shuffled = seq.map((s, i) => ({ s, k: order[i] ?? i })).sort((a, b) => a.k - b.k);
            const writes: Array<{ version: number; state: NormalizedState; remoteVersion: number | null }> =
              [];
            await Promise.all(
              shuffled.map(async ({ s }) => {
                const snap: RemoteSnapshot = {
                  remoteId: rid,
                  contextId: null,
                  state: s.state,
                  nativeState: s.state.toUpperCase(),
                  remoteVersion: h.clock.now() + s.version,
                  stateTimestamp: null,
                  ...(s.artifact !== undefined
                    ? { artifacts: [{ artifactId: 'a', content: s.artifact }] }
                    : {}),
                };
                const r = await h.plane.observe(id, snap, 'api');
                // Only a write says what the record became; a no-op returns the record as that observation
                // read it, which with a networked store may predate a concurrent write (regression: this
                // assertion once ran on every result and failed on PostgreSQL only).
                if (!r.written) return;
                writes.push({
                  version: r.envelope.version,
                  state: r.envelope.state,
                  remoteVersion: r.envelope.remoteVersion,
                });
              }),
            );
            // In commit (row version) order: nothing after the first terminal write changes the state,
            // and the remote version never goes back.
            writes.sort((a, b) => a.version - b.version);
            let terminalSeen: NormalizedState | null = null;
            let lastVersion = -Infinity;
            for (const w of writes) {
              if (terminalSeen) expect(w.state).toBe(terminalSeen);
              if (isTerminal(w.state)) terminalSeen = w.state;
              if (w.remoteVersion !== null) {
                expect(w.remoteVersion).toBeGreaterThanOrEqual(lastVersion);
                lastVersion = w.remoteVersion;
              }
            }
            const final = await h.store.getEnvelope(id);
            const events = await h.store.listEvents({ afterSeq: 0, envelopeId: id });
            const changes = events.filter((e) => e.type === 'state_changed');
            // The event log replays to the stored state.
            const replayed = changes.reduce<NormalizedState>(
              (_, e) => e.data['to'] as NormalizedState,
              'accepted',
            );
            expect(replayed).toBe(final!.state);
            const firstTerminal = changes.findIndex((e) => isTerminal(e.data['to'] as NormalizedState));
            if (firstTerminal >= 0) expect(changes.length).toBe(firstTerminal + 1);
          } finally {
            await h.close();
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('absorbs any mix of duplicate webhook deliveries and counts each duplicate once', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 1, maxLength: 20 }),
        async (picks) => {
          const h = await harness({
            delivery: { stream: false, push: true, poll: false },
            publicUrl: 'http://127.0.0.1:9',
            reconcile: { enabled: false },
          });
          try {
            const { envelope } = await h.plane.create(
              { tenant: 't', target: 'fake', input: 1 },
              { wait: 'started' },
            );
            const states: NormalizedState[] = [
              'running',
              'waiting_for_input',
              'running',
              'running',
              'succeeded',
            ];
            for (const s of states) {
              h.remote.set(envelope.remoteId!, s);
              await h.advance(1000);
            }
            const pushes = h.remote.pushes;
            for (const i of picks) {
              const p = pushes[i]!;
              await h.plane.handleWebhook('fake', {
                headers: { authorization: `Bearer ${p.token}` },
                rawBody: p.body,
                envelopeId: envelope.id,
              });
            }
            const unique = new Set(picks).size;
            const s = await h.plane.signals();
            expect(s.duplicatesAbsorbed.webhook).toBe(picks.length - unique);
            expect(s.requests.byKind.get).toBeLessThanOrEqual(unique);
            expect((await h.store.getEnvelope(envelope.id))!.state).toBe('succeeded');
          } finally {
            await h.close();
          }
        },
      ),
      { numRuns: 40 },
    );
  });
});

describe('options', () => {
  it('validation names the field', () => {
    expect(() => planeConfig({ reconcile: { intervalMs: 0 } })).toThrow(/reconcile\.intervalMs/);
    expect(() => planeConfig({ poll: { intervalMs: 10, maximumIntervalMs: 5 } })).toThrow(
      /poll\.maximumIntervalMs/,
    );
    expect(() => planeConfig({ lostPolicy: 'maybe' as never })).toThrow(/lostPolicy/);
    expect(() => planeConfig({ publicUrl: 'ftp://x' })).toThrow(/publicUrl/);
    expect(() => planeConfig({ stream: { reattach: { initialIntervalMs: -1 } } })).toThrow(
      /stream\.reattach\.initialIntervalMs/,
    );
    expect(planeConfig().reconcile.intervalMs).toBe(600_000);
  });
});
