import { describe, expect, it } from 'vitest';
import { SessionFold, type SessionEvent } from '../../src/connectors/claude/session-fold.ts';
import { WEBHOOK_TO_STREAM, sessionWebhook } from '../../src/connectors/claude/claude-wire.ts';

/** The history fold on its own: the cases where only the order of the history tells the truth. */
const session = { id: 'sesn_1', status: 'running', metadata: { taskplane_context: 'ctx' } };
const idle = (id: string, type: string, extra: Record<string, unknown> = {}): SessionEvent => ({
  id,
  type: 'session.status_idle',
  stop_reason: { type, ...extra },
});
const fold = (events: SessionEvent[]) => {
  const f = new SessionFold(session, 'ctx');
  for (const e of events) f.add(e);
  return f.snapshot();
};

describe('Claude session fold', () => {
  it('an interrupt that lands after the turn ended does not make it cancelled: it completed', () => {
    const s = fold([
      { id: 'e1', type: 'session.status_running' },
      idle('e2', 'end_turn'),
      { id: 'e3', type: 'user.interrupt' },
    ]);
    expect([s.state, s.nativeState]).toEqual(['succeeded', 'idle/end_turn']);
  });

  it('an interrupt inside the turn makes its end_turn cancelled', () => {
    const s = fold([
      { id: 'e1', type: 'session.status_running' },
      { id: 'e2', type: 'user.interrupt' },
      idle('e3', 'end_turn'),
    ]);
    expect(s.state).toBe('cancelled');
  });

  it('the first outcome is final: a later turn or an archive changes nothing', () => {
    const s = fold([
      { id: 'e1', type: 'session.status_running' },
      idle('e2', 'end_turn'),
      { id: 'e3', type: 'session.status_running' },
      {
        id: 'e4',
        type: 'session.error',
        error: { type: 'billing_error', retry_status: { type: 'terminal' } },
      },
      { id: 'e5', type: 'session.status_terminated' },
    ]);
    expect(s.state).toBe('succeeded');
  });

  it('rescheduling is running, flagged retrying, whether read from the session or the history; running again clears it', () => {
    const fromObject = new SessionFold({ ...session, status: 'rescheduling' }, 'ctx').snapshot();
    expect([fromObject.state, fromObject.nativeState, fromObject.statusMessage]).toEqual([
      'running',
      'rescheduling',
      'retrying',
    ]);
    const rescheduled = fold([
      { id: 'e1', type: 'session.status_running' },
      { id: 'e2', type: 'session.status_rescheduled' },
    ]);
    expect([rescheduled.state, rescheduled.nativeState, rescheduled.statusMessage]).toEqual([
      'running',
      'rescheduling',
      'retrying',
    ]);
    const resumed = fold([
      { id: 'e1', type: 'session.status_running' },
      { id: 'e2', type: 'session.status_rescheduled' },
      { id: 'e3', type: 'session.status_running' },
    ]);
    expect([resumed.state, resumed.nativeState, resumed.statusMessage]).toEqual(['running', 'running', null]);
    expect(WEBHOOK_TO_STREAM['session.status_rescheduled']).toBe('session.status_rescheduled');
  });

  it('requires_action lists only unanswered blocking events; all answered reads as running again', () => {
    const base: SessionEvent[] = [
      { id: 'e1', type: 'session.status_running' },
      { id: 't1', type: 'agent.custom_tool_use', name: 'lookup', input: { q: 1 } },
      { id: 't2', type: 'agent.tool_use', name: 'bash', input: {}, evaluated_permission: 'ask' },
      idle('e2', 'requires_action', { event_ids: ['t1', 't2'] }),
    ];
    expect(fold(base).inputRequests?.map((r) => [r.requestId, r.method])).toEqual([
      ['t1', 'custom_tool_result'],
      ['t2', 'tool_confirmation'],
    ]);
    const one = fold([
      ...base,
      { id: 'a1', type: 'user.tool_confirmation', tool_use_id: 't2', result: 'allow' },
    ]);
    expect(one.inputRequests?.map((r) => r.requestId)).toEqual(['t1']);
    const both = fold([
      ...base,
      { id: 'a1', type: 'user.tool_confirmation', tool_use_id: 't2', result: 'allow' },
      { id: 'a2', type: 'user.custom_tool_result', custom_tool_use_id: 't1' },
    ]);
    expect([both.state, both.nativeState]).toEqual(['running', 'idle/requires_action/answered']);
  });

  it('a copy of an event already folded (the processed user.message) and preview deltas are not counted', () => {
    const f = new SessionFold(session, 'ctx');
    expect(f.add({ id: 'm1', type: 'user.message', processed_at: null })).toBe(true);
    expect(f.add({ id: 'm1', type: 'user.message', processed_at: '2026-01-01T00:00:00Z' })).toBe(false);
    expect(f.add({ type: 'event_delta', event_id: 'x' } as SessionEvent)).toBe(false);
    expect(f.add({ type: 'ping' })).toBe(false);
    expect(f.snapshot().remoteVersion).toBe(1);
  });

  it('webhook names map to stream names; events about other objects name no session', () => {
    expect(WEBHOOK_TO_STREAM['session.status_idled']).toBe('session.status_idle');
    expect(WEBHOOK_TO_STREAM['session.status_run_started']).toBe('session.status_running');
    const about = (type: string, id: string) =>
      sessionWebhook(JSON.stringify({ type: 'event', id: 'wevt_1', data: { type, id } })).sessionId;
    expect(about('session.status_idled', 'sesn_1')).toBe('sesn_1');
    expect(about('vault.created', 'vlt_1')).toBeNull();
    expect(() => sessionWebhook('{')).toThrow(/body: not JSON/);
  });
});
