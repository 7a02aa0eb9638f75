import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decideLocalTransition,
  decideTransition,
  isTerminal,
  type NormalizedState,
  type Observation,
  type StateRecord,
} from '../../src/core/states.ts';

const START: StateRecord = { state: 'accepted', nativeState: null, remoteVersion: null };

function apply(record: StateRecord, obs: Observation): StateRecord {
  const d = decideTransition(record, obs);
  return d.apply ? d.next : record;
}

const REMOTE_NON_TERMINAL: NormalizedState[] = ['accepted', 'running', 'waiting_for_input'];
const REMOTE_TERMINAL: NormalizedState[] = ['succeeded', 'failed', 'cancelled', 'expired'];

/**
 * A valid remote history: some non-terminal states then (maybe) one terminal state, with strictly
 * increasing remote versions (a sequence number or a status timestamp).
 */
const history = fc
  .record({
    middle: fc.array(fc.constantFrom(...REMOTE_NON_TERMINAL), { minLength: 0, maxLength: 8 }),
    end: fc.option(fc.constantFrom(...REMOTE_TERMINAL), { nil: undefined }),
    gaps: fc.array(fc.integer({ min: 1, max: 1000 }), { minLength: 10, maxLength: 10 }),
  })
  .map(({ middle, end, gaps }) => {
    const states = end ? [...middle, end] : middle.length ? middle : (['running'] as NormalizedState[]);
    let version = 1_700_000_000_000;
    return states.map((state, i): Observation => {
      version += gaps[i % gaps.length]!;
      return { state, nativeState: `NATIVE_${state.toUpperCase()}`, remoteVersion: version };
    });
  });

/** The history's observations, each delivered 1–3 times, in any order. */
const deliveries = history.chain((h) =>
  fc
    .array(fc.integer({ min: 1, max: 3 }), { minLength: h.length, maxLength: h.length })
    .chain((copies) => {
      const all = h.flatMap((obs, i) => Array.from({ length: copies[i]! }, () => obs));
      return fc.shuffledSubarray(all, { minLength: all.length, maxLength: all.length });
    })
    .map((order) => ({ history: h, order })),
);

describe('forward-only transition', () => {
  it('any order with duplicates ends at the history’s final state', () => {
    fc.assert(
      fc.property(deliveries, ({ history: h, order }) => {
        const final = h[h.length - 1]!;
        const end = order.reduce(apply, START);
        expect(end.state).toBe(final.state);
        expect(end.remoteVersion).toBe(final.remoteVersion);
      }),
      { numRuns: 500 },
    );
  });

  it('no terminal state ever changes, whatever arrives after it', () => {
    const anyObs = fc.record({
      state: fc.constantFrom<NormalizedState>(...REMOTE_NON_TERMINAL, ...REMOTE_TERMINAL, 'unknown'),
      nativeState: fc.option(fc.string(), { nil: null }),
      remoteVersion: fc.option(fc.integer(), { nil: null }),
    });
    fc.assert(
      fc.property(fc.array(anyObs, { maxLength: 30 }), (observations) => {
        let record = START;
        let terminal: StateRecord | undefined;
        for (const obs of observations) {
          record = apply(record, obs);
          if (terminal) expect(record).toEqual(terminal);
          else if (isTerminal(record.state)) terminal = record;
        }
      }),
      { numRuns: 500 },
    );
  });

  it('a delayed webhook with an older state never moves a record back', () => {
    const now: StateRecord = { state: 'succeeded', nativeState: 'TASK_STATE_COMPLETED', remoteVersion: 200 };
    expect(
      decideTransition(now, { state: 'running', nativeState: 'TASK_STATE_WORKING', remoteVersion: 100 }),
    ).toEqual({
      apply: false,
      reason: 'terminal',
    });
    const working: StateRecord = { state: 'waiting_for_input', nativeState: 'X', remoteVersion: 200 };
    expect(decideTransition(working, { state: 'running', nativeState: 'Y', remoteVersion: 150 })).toEqual({
      apply: false,
      reason: 'stale',
    });
  });

  it('an end applies whatever its version: a clock that went back (another replica of the agent) cannot hide it', () => {
    const working: StateRecord = { state: 'running', nativeState: 'TASK_STATE_WORKING', remoteVersion: 200 };
    const ended = { state: 'succeeded', nativeState: 'TASK_STATE_COMPLETED', remoteVersion: 150 } as const;
    expect(decideTransition(working, ended)).toEqual({ apply: true, next: { ...ended, remoteVersion: 200 } });
    const cancelling: StateRecord = {
      state: 'cancel_requested',
      nativeState: 'TASK_STATE_WORKING',
      remoteVersion: 200,
    };
    expect(
      decideTransition(cancelling, { ...ended, state: 'cancelled', nativeState: 'TASK_STATE_CANCELED' })
        .apply,
    ).toBe(true);
  });

  it('cancel_requested keeps the intent until the true outcome, including completion after cancel', () => {
    let record: StateRecord = { state: 'running', nativeState: 'TASK_STATE_WORKING', remoteVersion: 10 };
    const local = decideLocalTransition(record, 'cancel_requested');
    expect(local.apply).toBe(true);
    record = local.apply ? local.next : record;
    record = apply(record, { state: 'running', nativeState: 'TASK_STATE_WORKING', remoteVersion: 20 });
    expect(record.state).toBe('cancel_requested');
    record = apply(record, { state: 'succeeded', nativeState: 'TASK_STATE_COMPLETED', remoteVersion: 30 });
    expect(record).toEqual({ state: 'succeeded', nativeState: 'TASK_STATE_COMPLETED', remoteVersion: 30 });
  });

  it('unknown never overwrites a known state, and local transitions respect terminal states', () => {
    const record: StateRecord = { state: 'running', nativeState: 'W', remoteVersion: 5 };
    expect(decideTransition(record, { state: 'unknown', nativeState: null, remoteVersion: 9 }).apply).toBe(
      false,
    );
    const done: StateRecord = { state: 'failed', nativeState: 'F', remoteVersion: 5 };
    expect(decideLocalTransition(done, 'lost')).toEqual({ apply: false, reason: 'terminal' });
    expect(decideLocalTransition(record, 'lost').apply).toBe(true);
  });

  it('an exact duplicate is reported as a duplicate', () => {
    const record: StateRecord = { state: 'running', nativeState: 'W', remoteVersion: 5 };
    expect(decideTransition(record, { state: 'running', nativeState: 'W', remoteVersion: 5 })).toEqual({
      apply: false,
      reason: 'duplicate',
    });
  });
});
