import { TaskplaneError } from '../core/errors.ts';
import type { HookName } from './hooks.ts';
import { cancelRow } from './cancel-row.ts';
import { retentionRow } from './retention-row.ts';
import { pushRow } from './push-row.ts';
import { expectRefused, fired, needsStreaming, work } from './row-helpers.ts';
import { TENANT, type RowKit, type Session } from './row-kit.ts';

/**
 * The failure matrix for asynchronous agent tasks, one row each (docs/conformance.md, "The rows"). A
 * row runs its jobs through the proxy with its faults armed, then applies the standard checks (one
 * remote task per job, the true final state, no backward state, one outcome recorded) and its own. A row that needs a hook the user
 * did not give, or a capability the agent's card does not declare, is not run, never passed; a row the
 * target's protocol (A2A or MCP) has nothing for is not applicable, never passed.
 */
const isMcp = (s: Session) => s.agent.protocol === 'mcp';
export interface RowDef {
  id: string;
  number: number;
  title: string;
  /** What it proves, for the report and docs/conformance.md. */
  proves: string;
  hook?: HookName;
  /** Why the target's protocol has nothing this row can exercise, or null (reported not applicable). */
  notApplicable?: (s: Session) => string | null;
  /** Why it cannot run against this agent, or null. */
  unavailable?: (s: Session) => string | null;
  run: (kit: RowKit) => Promise<void>;
}

async function hookRow(kit: RowKit, hook: HookName): Promise<void> {
  await kit.startPlane();
  const a = await kit.job('a', work(kit, 4));
  const b = await kit.job('b', { ...work(kit, 4), steps: 5 });
  const envs = [await kit.running(a), await kit.running(b)];
  await kit.hook(hook);
  const back = Date.now();
  for (const [i, job] of [a, b].entries()) {
    const remoteId = envs[i]!.remoteId!;
    const truth = await kit.truth(remoteId).catch(() => null);
    kit.check(
      `${job.label}: the agent still knows its task`,
      truth !== null,
      truth
        ? `task ${remoteId} is ${truth.native}`
        : `task ${remoteId} is unknown to the agent after the ${hook}`,
    );
  }
  for (const job of [a, b]) await kit.terminal(job);
  kit.sample('recoveryMs', Date.now() - back);
  for (const job of [a, b]) await kit.standardChecks(job);
}

/**
 * Row 4 on MCP: the creating call is not a stream; the task's notifications are (subscriptions/listen).
 * The first listen is cut after one or two frames (by seed), the next after one: the engine listens
 * again (tasks/get first, so nothing between is lost) and never calls the tool again.
 */
async function mcpStreamCut(kit: RowKit): Promise<void> {
  await kit.startPlane();
  const afterFrames = 1 + Math.floor(kit.session.random.next() * 2);
  kit.note(
    'note',
    `seeded schedule: cut the first task-notification stream after ${afterFrames} frame(s), then the next after 1`,
  );
  const listen = (c: { method: string }) => c.method === 'subscriptions/listen';
  kit.session.proxy.arm({ kind: 'cut-stream', afterFrames, match: listen });
  kit.session.proxy.arm({ kind: 'cut-stream', afterFrames: 1, match: listen });
  const job = await kit.job('stream', { ...work(kit, 2), steps: 4 });
  const env = await kit.terminal(job);
  const creations = kit.creations(job).length;
  const listens = kit.calls().filter((c) => listen(c) && c.taskId === env.remoteId);
  const cut = listens.filter((c) => c.fault === 'cut-stream').length;
  kit.check(
    'stream: listened again, never resent',
    creations === 1 && cut >= 1 && listens.length > cut,
    `${creations} tools/call(s) reached the server; ${listens.length} subscriptions/listen call(s), ${cut} of them cut`,
  );
  await kit.standardChecks(job);
}

export const ROWS: RowDef[] = [
  {
    id: 'create-disconnect',
    number: 1,
    title: 'Disconnect just before and just after task creation',
    proves:
      'A creating request cut before it reaches the agent is sent again; a connection cut right after the agent created the task does not make a second task.',
    async run(kit) {
      await kit.startPlane();
      const before = await kit.job('before', work(kit), (ctx) =>
        kit.session.proxy.arm({ kind: 'drop-before', match: (c) => c.creates && c.contextId === ctx }),
      );
      // MCP: a tools/call whose answer was lost made a task nothing can find again (no tasks/list, no
      // idempotency key); that is row 2, not applicable there.
      const after = isMcp(kit.session)
        ? null
        : await kit.job('after', work(kit), (ctx) =>
            kit.session.proxy.arm(
              kit.session.agent.streaming
                ? { kind: 'cut-stream', afterFrames: 1, match: (c) => c.creates && c.contextId === ctx }
                : { kind: 'lose-response', match: (c) => c.creates && c.contextId === ctx },
            ),
          );
      if (!after)
        kit.note('note', 'no job "after": on MCP a lost creating answer cannot be recovered (row 2)');
      const jobs = after ? [before, after] : [before];
      for (const job of jobs) await kit.terminal(job);
      for (const job of jobs) await kit.standardChecks(job);
    },
  },
  {
    id: 'create-response-lost',
    number: 2,
    title: 'Creation response lost while the task already runs',
    notApplicable: (s) =>
      isMcp(s)
        ? 'MCP tools/call takes no idempotency key and MCP Tasks has no tasks/list: a task whose creating answer was lost cannot be found again (the engine records such a job unknown)'
        : null,
    proves:
      'The agent acted on the creating request but its answer never arrived: the engine finds that task, it does not start another.',
    async run(kit) {
      await kit.startPlane();
      const job = await kit.job('lost', work(kit, 2), (ctx) =>
        kit.session.proxy.arm({ kind: 'lose-response', match: (c) => c.creates && c.contextId === ctx }),
      );
      await kit.terminal(job);
      await kit.standardChecks(job);
    },
  },
  {
    id: 'push-duplicate-delayed',
    number: 3,
    title: 'A webhook delivered twice; a delayed webhook after a newer state',
    proves:
      'Every push is handed to the engine twice; one job has its first push held while it still works until the engine has fetched a newer state, the other has every non-final push held until after the final one: duplicates are absorbed and no late push moves anything back.',
    notApplicable: (s) =>
      isMcp(s)
        ? 'MCP Tasks has no push notifications: task notifications come over subscriptions/listen (row 4)'
        : null,
    unavailable: (s) => (s.agent.push ? null : 'the agent card declares no push notifications'),
    run: pushRow,
  },
  {
    id: 'stream-cut',
    number: 4,
    title: 'A stream dropped before its cursor was persisted',
    proves:
      'The creating stream and the first re-subscription are cut mid-flight: the engine re-subscribes (SubscribeToTask starts with the current task) and never sends the creating message again.',
    unavailable: needsStreaming,
    async run(kit) {
      if (isMcp(kit.session)) return mcpStreamCut(kit);
      await kit.startPlane();
      const afterFrames = 1 + Math.floor(kit.session.random.next() * 2);
      kit.note(
        'note',
        `seeded schedule: cut the creating stream after ${afterFrames} frame(s), then the next subscription after 1`,
      );
      kit.session.proxy.arm({
        kind: 'cut-stream',
        afterFrames: 1,
        match: (c) => c.method === 'SubscribeToTask',
      });
      // Four job lengths: the re-subscription must come before reconciliation reads the end anyway.
      const job = await kit.job('stream', { ...work(kit, 4), steps: 4 }, (ctx) =>
        kit.session.proxy.arm({
          kind: 'cut-stream',
          afterFrames,
          match: (c) => c.creates && c.contextId === ctx,
        }),
      );
      const env = await kit.terminal(job);
      const creations = kit.creations(job).length;
      const resubscribed = kit
        .calls()
        .filter((c) => c.method === 'SubscribeToTask' && c.taskId === env.remoteId).length;
      kit.check(
        'stream: re-subscribed, never resent',
        creations === 1 && resubscribed >= 1,
        `${creations} creating message(s) reached the agent, ${resubscribed} SubscribeToTask call(s)`,
      );
      await kit.standardChecks(job);
    },
  },
  {
    id: 'retention-expiry',
    number: 5,
    title: 'Polling after TTL or retention expiry',
    proves:
      "MCP: a job still working when its task's ttlMs passes is recorded expired once the server may drop it, never given an invented outcome.",
    notApplicable: (s) =>
      isMcp(s) ? null : 'A2A 1.0 declares no task lifetime, so there is nothing to expire on demand',
    run: retentionRow,
  },
  {
    id: 'input-twice',
    number: 6,
    unavailable: (s) =>
      s.input !== undefined ? 'needs the test contract (askInput); --input was given' : null,
    title: 'An input request delivered twice, or answered with the wrong request id',
    proves:
      'The input-required frame is delivered twice; an answer naming the wrong request and a second answer are refused; exactly one answer reaches the agent.',
    async run(kit) {
      await kit.startPlane();
      const job = await kit.job('input', { ...work(kit), askInput: 'Which edition?' }, (ctx) => {
        if (kit.session.agent.streaming)
          kit.session.proxy.arm({
            kind: 'duplicate-frame',
            frameState: isMcp(kit.session) ? 'input_required' : 'TASK_STATE_INPUT_REQUIRED',
            times: 3,
            match: (c) =>
              kit.session.remote.wire.streaming(c.method) && (c.contextId === ctx || c.taskId !== null),
          });
      });
      const env = await kit.until(
        job,
        'asked for input',
        (e) => e.state === 'waiting_for_input' && e.pendingInput !== null,
      );
      const requestId = env.pendingInput!.requestId;
      const wrong = await expectRefused(
        kit.plane.answer(TENANT, job.envelopeId, { requestId: `${requestId}-wrong`, value: 'first' }),
      );
      kit.check('input: wrong request id refused', wrong !== null, wrong ? `refused (${wrong})` : 'accepted');
      await kit.plane.answer(TENANT, job.envelopeId, { requestId, value: 'first' });
      const again = await expectRefused(
        kit.plane.answer(TENANT, job.envelopeId, { requestId, value: 'second' }),
      );
      kit.check('input: second answer refused', again !== null, again ? `refused (${again})` : 'accepted');
      const done = await kit.terminal(job);
      const answers = new Set(
        kit
          .calls()
          .filter((c) => !c.creates && c.messageId && c.taskId === done.remoteId && c.fault !== 'drop-before')
          .map((c) => c.messageId),
      );
      kit.check(
        'input: one answer reached the agent',
        answers.size === 1,
        `${answers.size} distinct answer message(s)`,
      );
      await kit.standardChecks(job);
    },
  },
  {
    id: 'permission-revoked',
    number: 7,
    title: "The actor's permission revoked while work runs",
    proves:
      "After --revoke-cmd the agent refuses the run's credentials, and the engine records no outcome the agent did not give.",
    hook: 'revoke',
    async run(kit) {
      await kit.startPlane();
      const job = await kit.job('revoked', work(kit, 4));
      const env = await kit.running(job);
      await kit.hook('revoke');
      const refused = await expectRefused(kit.session.truth.get(env.remoteId!, AbortSignal.timeout(5000)));
      kit.sample('unauthorizedAttempts', 1);
      kit.sample('unauthorizedAnswered', refused === null ? 1 : 0);
      kit.check(
        'revoked: the agent refuses the old credentials',
        refused !== null && refused !== 'not_found',
        refused ? `refused (${refused})` : `task ${env.remoteId} was still readable`,
      );
      // A few reconciliation rounds: whatever the engine records now must not be an invented outcome.
      await new Promise((r) => setTimeout(r, 3 * 2000));
      const after = await kit.envelope(job);
      kit.check(
        'revoked: no invented outcome',
        !['succeeded', 'failed', 'cancelled'].includes(after.state),
        `the engine holds ${after.state}`,
      );
    },
  },
  {
    id: 'cancel',
    number: 8,
    title: 'Cancellation before start, during model work, during a tool side effect, after completion',
    proves:
      'Each cancel ends in the state the agent really reached (cancelled, or completed when it finished first); a cancel during a side effect the agent cannot stop leaves on record what the agent recorded of it; a cancel after completion changes nothing.',
    run: cancelRow,
  },
  {
    id: 'worker-crash',
    number: 9,
    title: 'Worker crash with task metadata kept but execution lost',
    proves:
      '--restart-cmd kills the agent mid-work and starts it again: its tasks must still be known and must finish, with no second task per job.',
    hook: 'restart',
    run: (kit) => hookRow(kit, 'restart'),
  },
  {
    id: 'effect-before-commit',
    number: 10,
    title: 'External side effect done before local completion is committed',
    proves:
      'The agent finishes but the final answer is cut and the engine crashes before recording it: the restarted engine learns the outcome without running the work again.',
    async run(kit) {
      await kit.startPlane();
      const hit = fired(kit);
      const job = await kit.job('effect', work(kit), () =>
        kit.session.proxy.arm({
          kind: 'cut-before-terminal',
          times: 1,
          // Any call: the row's one job is the only one in flight, and whichever answer carries the
          // final state first (stream frame, GetTask or a ListTasks page) is the one to lose.
          match: (c) => c.method !== 'card',
          onFired: (call) => {
            // From here the engine's network is down, as for a process that is dying.
            kit.session.proxy.blackhole = true;
            hit.resolve(call);
          },
        }),
      );
      try {
        await hit.promise;
        await kit.crashPlane();
      } finally {
        kit.session.proxy.blackhole = false;
        kit.session.proxy.disarmAll();
      }
      await kit.restartPlane();
      await kit.terminal(job);
      await kit.standardChecks(job);
    },
  },
  {
    id: 'budget',
    number: 11,
    title: 'Budget exhausted during parallel or in-flight work',
    proves: 'Work stops being started once a budget is used up, and what was in flight ends truthfully.',
    notApplicable: (s) =>
      isMcp(s)
        ? 'MCP Tasks reports no usage the engine can count against a budget'
        : 'A2A 1.0 agents report no usage the engine can count against a budget',
    run: () => Promise.resolve(),
  },
  {
    id: 'deploy-while-active',
    number: 12,
    title: 'A new agent version deployed while tasks are active',
    proves:
      '--deploy-cmd replaces the agent mid-work: its tasks must still be known and must finish, with no second task per job.',
    hook: 'deploy',
    run: (kit) => hookRow(kit, 'deploy'),
  },
];

/** Rows chosen by `--rows` (ids or numbers, comma-separated); all when empty. */
export function selectRows(spec: string[] | undefined): RowDef[] {
  if (!spec || spec.length === 0) return ROWS;
  const out: RowDef[] = [];
  for (const s of spec) {
    const row = ROWS.find((r) => r.id === s || String(r.number) === s);
    if (!row)
      throw new TaskplaneError(
        'invalid_argument',
        `--rows: unknown row "${s}" (one of ${ROWS.map((r) => `${r.number}=${r.id}`).join(', ')})`,
        {
          field: 'rows',
        },
      );
    if (!out.includes(row)) out.push(row);
  }
  return out.sort((a, b) => a.number - b.number);
}

/**
 * The order rows run in: by number, except that the revocation row goes last, because it withdraws the
 * credentials every other row needs.
 */
export function runOrder(rows: RowDef[]): RowDef[] {
  return [...rows.filter((r) => r.hook !== 'revoke'), ...rows.filter((r) => r.hook === 'revoke')];
}
