import type { AgentFacts, ChecklistAnswer, RowReport } from './report.ts';
import type { RowKit } from './row-kit.ts';

const NOT_MEASURED = 'not measured';

/**
 * The procurement checklist for asynchronous task infrastructure, answered from this run's evidence: each answer names the rows it
 * rests on, and says "not measured" when no row of this run could tell.
 */
export function answerChecklist(rows: RowReport[], kits: RowKit[], agent: AgentFacts): ChecklistAnswer[] {
  const row = (id: string) => rows.find((r) => r.id === id);
  const ran = (id: string) => {
    const r = row(id);
    return r !== undefined && (r.status === 'passed' || r.status === 'failed');
  };
  const verdict = (id: string, yes: string, no: string) => {
    const r = row(id);
    if (!r || (r.status !== 'passed' && r.status !== 'failed')) return null;
    return r.status === 'passed' ? yes : `${no} (${r.reason ?? 'see row'})`;
  };
  const ids = (...list: string[]) => list.filter(ran);
  const answer = (question: string, rowIds: string[], parts: Array<string | null>): ChecklistAnswer => {
    const said = parts.filter((p): p is string => p !== null);
    return { question, answer: said.length ? said.join(' ') : NOT_MEASURED, rows: ids(...rowIds) };
  };
  const checksOk = (suffix: string) => {
    const all = rows.flatMap((r) => r.checks).filter((c) => c.name.endsWith(suffix));
    if (all.length === 0) return null;
    const bad = all.filter((c) => !c.ok);
    return bad.length === 0 ? true : bad;
  };
  const backward = checksOk(': no backward state');
  const signed = kits.map((k) => k.signedPushes).find((s) => s !== null) ?? null;
  return [
    answer(
      'What survives client disconnect, server restart, worker crash, region failure, and deployment?',
      ['create-disconnect', 'create-response-lost', 'stream-cut', 'worker-crash', 'deploy-while-active'],
      [
        verdict(
          'create-disconnect',
          'Client disconnect around creation: survived.',
          'Client disconnect around creation: NOT survived',
        ),
        verdict(
          'create-response-lost',
          'Lost creation response: survived.',
          'Lost creation response: NOT survived',
        ),
        verdict('stream-cut', 'Stream cut: survived.', 'Stream cut: NOT survived'),
        verdict(
          'worker-crash',
          'Agent restart / worker crash: survived.',
          'Agent restart / worker crash: NOT survived',
        ),
        verdict('deploy-while-active', 'Deployment: survived.', 'Deployment: NOT survived'),
        ran('worker-crash') || ran('create-disconnect') ? 'Region failure: not measured.' : null,
      ],
    ),
    answer(
      'Is the handle durable or merely stored process state?',
      ['worker-crash', 'deploy-while-active'],
      [
        verdict(
          'worker-crash',
          'Durable: tasks were known and finished after the agent restarted.',
          'Process state: tasks did not survive the restart',
        ),
      ],
    ),
    answer(
      'Which states are terminal, and can states ever move backward?',
      rows.filter((r) => r.status === 'passed' || r.status === 'failed').map((r) => r.id),
      [
        backward === null
          ? null
          : backward === true
            ? 'No state moved backward in any job of this run, on the wire or in the engine.'
            : `States moved backward: ${backward.map((c) => c.detail).join('; ')}.`,
      ],
    ),
    answer(
      'Can streams resume from a cursor, and are all event types replayable?',
      ['stream-cut'],
      [
        agent.streaming ? null : 'The agent does not stream.',
        verdict(
          'stream-cut',
          'A2A has no stream cursor; re-subscribing (SubscribeToTask, current task first) recovered everything after cuts.',
          'Re-subscribing after a cut did not recover',
        ),
      ],
    ),
    answer('What is the polling contract, rate limit, and maximum task duration?', [], [null]),
    answer(
      'How are webhooks signed, retried, ordered, deduplicated, and rotated?',
      ['push-duplicate-delayed'],
      [
        agent.push ? null : 'The agent card declares no push notifications.',
        signed === null
          ? null
          : signed
            ? 'Pushes carried a Standard Webhooks signature.'
            : 'Pushes carried no signature (a bearer token at most).',
        verdict(
          'push-duplicate-delayed',
          'Duplicated and reordered pushes were absorbed by the engine (retries, rotation: not measured).',
          'Duplicated or reordered pushes were NOT absorbed',
        ),
      ],
    ),
    answer(
      'How are task reads, listings, updates, artifacts, and cancellations authorized?',
      ['permission-revoked'],
      [
        verdict(
          'permission-revoked',
          'Revoked credentials were refused.',
          'Revoked credentials were NOT refused',
        ),
      ],
    ),
    answer(
      'What exactly does cancellation stop, and what can still finish afterward?',
      ['cancel'],
      [
        verdict(
          'cancel',
          'Cancels before start and while working ended in the state the agent reached; a cancel after completion changed nothing.',
          'Cancellation was not recorded honestly',
        ),
      ],
    ),
    answer(
      'How are input requests correlated, expired, and protected from replay?',
      ['input-twice'],
      [
        verdict(
          'input-twice',
          'A duplicated input request produced one answer; a wrong request id and a second answer were refused (expiry: not measured).',
          'Input correlation failed',
        ),
      ],
    ),
    answer(
      'What are result, event, artifact, and audit-history retention periods?',
      ['retention-expiry'],
      [null],
    ),
    answer('Can an object use zero-data-retention controls while remaining recoverable?', [], [null]),
    answer('How are cost budgets enforced across tools, child agents, and retries?', ['budget'], [null]),
    answer('Can task and event data be exported into a vendor-neutral audit store?', [], [null]),
    answer(
      'What migration path exists for active objects when schemas or runtimes change?',
      ['deploy-while-active'],
      [
        verdict(
          'deploy-while-active',
          'Active tasks survived a deployment and finished.',
          'Active tasks did not survive a deployment',
        ),
      ],
    ),
  ];
}
