import { describe, expect, it } from 'vitest';
import {
  acceptanceLines,
  cancelText,
  detailLines,
  duration,
  relative,
  taskRows,
  type TaskRow,
} from '../../src/cli/task-views.ts';
import { createInput } from '../../src/cli/tasks-command.ts';

/** What `taskplane tasks` tables say to a person: words and relative times, not epoch ms and JSON. */
const NOW = Date.UTC(2026, 11, 1, 12, 0, 0);
const MIN = 60_000;

function row(over: Partial<TaskRow>): TaskRow {
  return {
    id: 'tsk_1',
    state: 'running',
    target: 'demo',
    nativeState: 'TASK_STATE_WORKING',
    createdAt: NOW - 10 * MIN,
    updatedAt: NOW - MIN,
    pendingInput: null,
    ...over,
  };
}

describe('task tables', () => {
  it('says spans and times the way people do', () => {
    expect(duration(45_000)).toBe('45 s');
    expect(duration(3 * MIN + 10_000)).toBe('3 min');
    expect(duration(125 * MIN)).toBe('2 h 5 min');
    expect(duration(50 * 60 * MIN)).toBe('2 d 2 h');
    expect(relative(NOW - 3 * MIN, NOW)).toBe('3 min ago');
    expect(relative(NOW + 20_000, NOW)).toBe('in 20 s');
    expect(relative(NOW - 200, NOW)).toBe('just now');
  });

  it("freezes a terminal task's age at its end, and a running task's keeps counting", () => {
    const done = taskRows(
      [row({ state: 'succeeded', createdAt: NOW - 60 * MIN, updatedAt: NOW - 55 * MIN })],
      NOW,
    );
    expect(done).toMatch(/succeeded .*1 h ago\s+5 min/);
    const running = taskRows([row({ createdAt: NOW - 60 * MIN })], NOW);
    expect(running).toMatch(/running .*1 h ago\s+1 h\b/);
  });

  it('shows the failure reason and the pending question as words in the list', () => {
    const failed = taskRows(
      [row({ state: 'failed', error: { code: 'failed', message: 'disk full\nmore detail' } })],
      NOW,
    );
    expect(failed).toContain('failed: disk full');
    expect(failed).not.toContain('more detail');
    const asking = taskRows(
      [row({ state: 'waiting_for_input', pendingInput: { requestId: 'r1', prompt: 'Which edition?' } })],
      NOW,
    );
    expect(asking).toContain('asks (r1): Which edition?');
  });

  it('writes the cancel, reconciliation and acceptance records as sentences, with no epoch ms', () => {
    const t = row({
      state: 'cancelled',
      cancel: {
        requestedAt: NOW - 2 * MIN,
        requestedBy: 'key_abc',
        acknowledgedAt: NOW - MIN,
        outcome: 'cancelled',
        pending: null,
        attempts: 1,
      },
      reconciliation: { result: 'resubmitted', at: NOW - 5 * MIN, attempts: 1 },
      acceptance: { status: 'rejected', reasons: ['/total: must be >= 0'], decidedAt: NOW - MIN },
    });
    const text = detailLines(t, NOW).join('\n');
    expect(text).toContain(
      'cancel:      requested 2 min ago by key_abc; acknowledged 1 min ago; 1 cancel call; the remote cancelled it',
    );
    expect(text).toContain('resubmitted under the same idempotency key');
    expect(text).toContain('acceptance:  rejected: /total: must be >= 0 (1 min ago)');
    expect(text).not.toMatch(/\d{13}/);
    expect(text).not.toContain('{');
    expect(
      cancelText(
        { requestedAt: NOW, requestedBy: null, acknowledgedAt: null, outcome: 'succeeded', pending: null },
        NOW,
      ),
    ).toBe('requested just now; the remote ended it as succeeded anyway');
  });
});

describe('acceptance with a verifier', () => {
  it('says where a verifier without a verdict stands, and nothing once it answered', () => {
    const base = {
      status: 'pending',
      reasons: ['verifier gave no verdict after 5 attempt(s): timed out after 5000 ms'],
      verifier: { url: 'https://ledger.example/verify', maxAttempts: 5 },
      checks: [{ check: 'receipt', verdict: 'passed', reasons: [] }],
    };
    const gaveUp = acceptanceLines(
      {
        ...base,
        verification: { dueAt: null, attempts: 5, lastError: 'timed out after 5000 ms', outcome: 'gave_up' },
      },
      NOW,
    );
    expect(gaveUp).toContain('  verifier      gave up (5 of 5 calls): timed out after 5000 ms');
    const waiting = acceptanceLines(
      { ...base, verification: { dueAt: NOW + MIN, attempts: 2, lastError: 'HTTP 503', outcome: null } },
      NOW,
    );
    expect(waiting).toContain('  verifier      waiting (2 of 5 calls): HTTP 503');
    const answered = acceptanceLines(
      {
        ...base,
        status: 'accepted',
        checks: [...base.checks, { check: 'verifier', verdict: 'passed', reasons: [] }],
        verification: { dueAt: null, attempts: 1, outcome: 'answered' },
      },
      NOW,
    );
    expect(answered.filter((l) => l.includes('verifier'))).toEqual(['  verifier      passed']);
  });
});

describe('tasks create input', () => {
  it('--input must be JSON and an error names the position; --text is a plain string', () => {
    expect(createInput({ input: '{"steps":3}' })).toEqual({ steps: 3 });
    expect(createInput({ text: 'hello' })).toBe('hello');
    expect(() => createInput({ input: '{"steps":3,}' })).toThrow(
      /--input is not JSON: .*position 11.*--text/,
    );
    expect(() => createInput({})).toThrow(/--input <json> or --text <text>/);
    expect(() => createInput({ input: '1', text: 'x' })).toThrow(/one of them/);
  });
});
