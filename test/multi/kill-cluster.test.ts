import { afterAll, describe, expect, it } from 'vitest';
import { SeededRandom } from '../../src/core/random.ts';
import { disposeSchema, freshSchemaName, urlForSchema, withPgClient } from '../support/pg.ts';
import { ProcessCluster, RoamingFollower, type SeenEvent } from './process-cluster.ts';

/**
 * Proof by killing: three `taskplane serve` and two `taskplane host` processes on one PostgreSQL, a
 * steady stream of jobs (streams, pushes, input answers, cancels, failures) sent through whichever plane
 * the balancer picks, while one plane and one host are SIGKILLed at seeded random points, several
 * times, and restarted. Then: every job exists once, has exactly one task on the hosts, is at the state
 * the host holds for it, recorded exactly one outcome, and every SSE client (roaming between planes with
 * Last-Event-ID) saw every event exactly once. Takeover time (kill → every open job the dead plane
 * watched is watched by a live one) is printed.
 *
 * Seeded (TASKPLANE_KILL_SEED): the same seed gives the same jobs and kill points; the processes'
 * timing does not repeat exactly, which is the point of running real processes.
 */
const SEED = Number(process.env.TASKPLANE_KILL_SEED ?? 19);
const JOBS = 60;
const ROUNDS = 3;
const KEY = 'kill-key-0123456789';
const TENANT = 'kill';
const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'expired', 'lost']);
const HOST_STATE: Record<string, string> = {
  TASK_STATE_COMPLETED: 'succeeded',
  TASK_STATE_FAILED: 'failed',
  TASK_STATE_CANCELED: 'cancelled',
  TASK_STATE_REJECTED: 'failed',
};
const LEASE_TTL_MS = 3_000;
const PLANE_OPTIONS = {
  // Reconciliation is kept out of the way (an hour): what is shown is the instances' own fast paths.
  reconcile: { intervalMs: 3_600_000, startGraceMs: 1000 },
  // Leases renewed every second; the adoption interval stays at its default (= ttl): a dead plane's
  // jobs move at the next lease round.
  watch: { leaseTtlMs: LEASE_TTL_MS },
  stream: { reattach: { initialIntervalMs: 100, maximumIntervalMs: 1000 } },
  startRetry: { initialIntervalMs: 100, maximumIntervalMs: 1000 },
  requestTimeoutMs: 5000,
};

type Kind = 'plain' | 'input' | 'cancel' | 'fail';

const cleanup: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f().catch(() => {});
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('three planes and two hosts on one PostgreSQL, killed and restarted', () => {
  it('lose no job, duplicate no task or outcome, and every SSE client sees every event once', async () => {
    const rnd = new SeededRandom(SEED);
    const pick = <T>(xs: T[]): T | undefined => xs[Math.floor(rnd.next() * xs.length)];
    const planeSchema = freshSchemaName('tp_kill_plane');
    const hostSchema = freshSchemaName('tp_kill_host');
    let failed = true;
    cleanup.push(async () => {
      await disposeSchema(planeSchema, failed);
      await disposeSchema(hostSchema, failed);
    });
    const c = await ProcessCluster.start({
      planeDb: urlForSchema(planeSchema),
      hostDb: urlForSchema(hostSchema),
      planes: 3,
      hosts: 2,
      apiKeys: `${TENANT}:${KEY}`,
      planeOptions: PLANE_OPTIONS,
      hostLeaseMs: 2_000,
    });
    cleanup.push(() => c.close());
    const planeUrl = () => pick(c.live(c.planes))?.url;

    /** A request through a random live plane; a dead or dying one is retried on another. */
    const call = async (
      method: string,
      path: string,
      body?: unknown,
      headers: Record<string, string> = {},
    ) => {
      for (let attempt = 0; ; attempt++) {
        const url = planeUrl();
        try {
          if (!url) throw new Error('no live plane');
          const res = await fetch(url + path, {
            method,
            headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', ...headers },
            ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
            signal: AbortSignal.timeout(10_000),
          });
          if (res.status >= 500 && attempt < 50) throw new Error(`status ${res.status}`);
          return {
            status: res.status,
            body: (await res.json().catch(() => null)) as Record<string, unknown>,
          };
        } catch (err) {
          if (attempt >= 50) throw err;
          await sleep(100);
        }
      }
    };

    const jobs: Array<{ key: string; kind: Kind; id?: string }> = [];
    const ids = new Map<string, Kind>();
    const answered = new Set<string>();
    const cancelSent = new Set<string>();
    const answer = async (id: string) => {
      const t = (await call('GET', `/v1/tasks/${id}`)).body as {
        state: string;
        pendingInput: { requestId: string; answeredAt?: number | null } | null;
      };
      if (t.state !== 'waiting_for_input' || !t.pendingInput || t.pendingInput.answeredAt) return;
      const r = await call('POST', `/v1/tasks/${id}/input`, {
        requestId: t.pendingInput.requestId,
        value: 'second',
      });
      if (r.status === 200) answered.add(id);
    };
    const cancel = async (id: string) => {
      if (cancelSent.has(id)) return;
      cancelSent.add(id);
      await call('POST', `/v1/tasks/${id}/cancel`, {});
    };
    const pendingActions = new Set<Promise<unknown>>();
    const act = (p: Promise<unknown>) => {
      const q = p
        .catch((err: unknown) => console.error('action failed', err))
        .finally(() => pendingActions.delete(q));
      pendingActions.add(q);
    };
    const onEvent = (e: SeenEvent) => {
      if (e.type === 'input_requested') act(answer(e.envelopeId));
    };
    // Two SSE clients, roaming: one acts on what it sees, both are checked for exactly-once.
    const followers = [new RoamingFollower(KEY, planeUrl, onEvent), new RoamingFollower(KEY, planeUrl)];
    cleanup.push(async () => followers.forEach((f) => f.stop()));

    // The stream of jobs, created through random planes with idempotency keys (a create cut by a kill
    // is retried with the same key on another instance).
    const kinds: Kind[] = ['plain', 'plain', 'plain', 'input', 'input', 'cancel', 'fail'];
    const creating = (async () => {
      for (let i = 0; i < JOBS; i++) {
        const kind = pick(kinds)!;
        const key = `job-${SEED}-${i}`;
        const input = {
          durationMs: 2000 + Math.floor(rnd.next() * 4000),
          steps: 4,
          artifactChunks: 2,
          ...(kind === 'input' ? { askInput: `Which edition for #${i}?` } : {}),
          ...(kind === 'cancel' ? { durationMs: 8000 } : {}),
          ...(kind === 'fail' ? { fail: true } : {}),
        };
        const job: { key: string; kind: Kind; id?: string } = { key, kind };
        jobs.push(job);
        const r = await call('POST', '/v1/tasks', { target: 'demo', input }, { 'idempotency-key': key });
        expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
        job.id = r.body.id as string;
        ids.set(job.id, kind);
        // Cancelled while it runs (the job runs 8 s), through whichever plane the balancer picks.
        if (kind === 'cancel') act(sleep(500 + Math.floor(rnd.next() * 2000)).then(() => cancel(job.id!)));
        await sleep(200 + Math.floor(rnd.next() * 400));
      }
    })();

    // Kills: a plane and a host at seeded points, several rounds, each restarted after a short outage.
    const takeovers: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      await sleep(3000 + Math.floor(rnd.next() * 4000));
      const pi = Math.floor(rnd.next() * c.planes.length);
      const hi = Math.floor(rnd.next() * c.hosts.length);
      const dead = await c.kill('plane', pi);
      const killedAt = Date.now();
      const orphans = await openWatchedBy(planeSchema, `plane@`, dead.port);
      await sleep(Math.floor(rnd.next() * 1500));
      await c.kill('host', hi);
      followers[round % 2]!.hop();
      const waitTakeover = orphans.length
        ? untilTakenOver(planeSchema, orphans, dead.port).then(() =>
            takeovers.push(`${orphans.length} jobs in ${Date.now() - killedAt} ms`),
          )
        : Promise.resolve(takeovers.push('no open job watched'));
      await sleep(1000 + Math.floor(rnd.next() * 2000));
      await Promise.all([c.startPlane(pi), c.startHost(hi)]);
      await waitTakeover;
    }
    await creating;

    // Everything settles: every job terminal, and both SSE clients caught up with the log.
    const deadline = Date.now() + 60_000;
    let last = '';
    for (;;) {
      const rows = await planeRows(planeSchema);
      const open = rows.filter((r) => !TERMINAL.has(r.state));
      const maxSeq = await maxEventSeq(planeSchema);
      if (rows.length === JOBS && open.length === 0 && followers.every((f) => f.lastSeq >= maxSeq)) break;
      // An answer whose request went to a killed plane is asked again from the record.
      for (const r of open) if (r.state === 'waiting_for_input') act(answer(r.id));
      last = `${rows.length} jobs, open: ${JSON.stringify(open.map((r) => [r.id, ids.get(r.id), r.state]))}, seq ${maxSeq}, followers at ${followers.map((f) => f.lastSeq).join('/')}`;
      if (Date.now() > deadline) throw new Error(`not settled: ${last}`);
      await sleep(250);
    }
    await Promise.all([...pendingActions]);
    followers.forEach((f) => f.stop());

    // No job lost, none twice: one envelope per idempotency key.
    const rows = await planeRows(planeSchema);
    expect(new Set(rows.map((r) => r.idempotency_key))).toEqual(new Set(jobs.map((j) => j.key)));
    expect(rows).toHaveLength(JOBS);

    // One task on the hosts per job (each start carries the job's contextId), at the job's state.
    const tasks = await withPgClient(
      async (pg) =>
        (
          await pg.query<{ context_id: string; state: string }>(
            `SELECT context_id, state FROM ${hostSchema}.agent_tasks`,
          )
        ).rows,
    );
    const perContext = new Map<string, string[]>();
    for (const t of tasks) perContext.set(t.context_id, [...(perContext.get(t.context_id) ?? []), t.state]);
    const wrong: unknown[] = [];
    for (const r of rows) {
      const onHost = perContext.get(r.context_id) ?? [];
      if (onHost.length !== 1 || HOST_STATE[onHost[0]!] !== r.state)
        wrong.push({ id: r.id, kind: ids.get(r.id), plane: r.state, host: onHost });
    }
    if (wrong.length > 0) console.error(await explainWrong(planeSchema, hostSchema, rows, wrong));
    expect(wrong).toEqual([]);
    expect(tasks).toHaveLength(JOBS);
    for (const j of jobs.filter((x) => x.kind === 'fail'))
      expect(rows.find((r) => r.id === j.id)!.state).toBe('failed');

    // One outcome per job: exactly one move into a terminal state in its event log.
    const events = await planeEvents(planeSchema);
    const outcomes = new Map<string, number>();
    for (const e of events)
      if (e.type === 'state_changed' && TERMINAL.has(String(e.data.to)))
        outcomes.set(e.envelope_id, (outcomes.get(e.envelope_id) ?? 0) + 1);
    expect(rows.filter((r) => outcomes.get(r.id) !== 1).map((r) => [r.id, outcomes.get(r.id)])).toEqual([]);

    // Every SSE client saw every event of the log exactly once, in order, across instances.
    const logSeqs = events.map((e) => Number(e.seq));
    for (const f of followers) {
      expect(f.connections).toBeGreaterThan(1);
      expect(f.seen.map((e) => e.seq)).toEqual(logSeqs);
    }
    console.log(
      `kill-cluster seed ${SEED}: ${JOBS} jobs (${[...ids.values()].filter((k) => k === 'input').length} with input, ${cancelSent.size} cancels sent, ${answered.size} answers), ${ROUNDS} plane + ${ROUNDS} host SIGKILLs; takeovers: ${takeovers.join(', ')}; SSE reconnections ${followers.map((f) => f.connections - 1).join('/')}`,
    );
    failed = false;
  }, 240_000);
});

interface PlaneRow {
  id: string;
  state: string;
  context_id: string;
  idempotency_key: string;
}

async function planeRows(schema: string): Promise<PlaneRow[]> {
  return withPgClient(
    async (pg) =>
      (
        await pg.query<PlaneRow>(
          `SELECT id, state, doc->>'contextId' AS context_id, idempotency_key FROM ${schema}.envelopes`,
        )
      ).rows,
  );
}

async function planeEvents(
  schema: string,
): Promise<Array<{ seq: string; envelope_id: string; type: string; data: Record<string, unknown> }>> {
  return withPgClient(
    async (pg) =>
      (await pg.query(`SELECT seq, envelope_id, type, data FROM ${schema}.envelope_events ORDER BY seq`))
        .rows,
  );
}

async function maxEventSeq(schema: string): Promise<number> {
  return withPgClient(async (pg) =>
    Number((await pg.query(`SELECT COALESCE(MAX(seq), 0) AS n FROM ${schema}.envelope_events`)).rows[0].n),
  );
}

/** Open jobs whose watch lease the plane on `port` holds. */
async function openWatchedBy(schema: string, _prefix: string, port: number): Promise<string[]> {
  return withPgClient(async (pg) =>
    (
      await pg.query<{ id: string }>(
        `SELECT e.id FROM ${schema}.leases l JOIN ${schema}.envelopes e ON l.name = 'watch:' || e.id
         WHERE l.owner LIKE $1 AND e.state NOT IN ('succeeded','failed','cancelled','expired','lost')`,
        [`plane@%:${port}`],
      )
    ).rows.map((r) => r.id),
  );
}

/** Resolves once each of `ids` is finished or watched under a lease of another plane. */
async function untilTakenOver(schema: string, ids: string[], deadPort: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const left = await withPgClient(
      async (pg) =>
        (
          await pg.query(
            `SELECT e.id FROM ${schema}.envelopes e LEFT JOIN ${schema}.leases l ON l.name = 'watch:' || e.id
             WHERE e.id = ANY($1) AND e.state NOT IN ('succeeded','failed','cancelled','expired','lost')
               AND (l.owner IS NULL OR l.owner LIKE $2)`,
            [ids, `plane@%:${deadPort}`],
          )
        ).rowCount,
    );
    if (left === 0) return;
    if (Date.now() > deadline) throw new Error(`${left} orphaned jobs not taken over`);
    await sleep(100);
  }
}

/**
 * What a failed run needs to be understood after the processes are gone: for each job whose host tasks
 * disagree with its envelope, its plane event log and every host task of its context (creation, the
 * messageIds that name it, whether it was acknowledged, its own events).
 */
async function explainWrong(
  planeSchema: string,
  hostSchema: string,
  rows: PlaneRow[],
  wrong: unknown[],
): Promise<string> {
  const lines: string[] = [];
  await withPgClient(async (pg) => {
    for (const w of wrong as Array<{ id: string }>) {
      const row = rows.find((r) => r.id === w.id)!;
      lines.push(`job ${w.id} (context ${row.context_id}), plane events:`);
      const events = await pg.query(
        `SELECT seq, at, type, data FROM ${planeSchema}.envelope_events WHERE envelope_id = $1 ORDER BY seq`,
        [w.id],
      );
      for (const e of events.rows) lines.push(`  ${e.seq} ${e.at} ${e.type} ${JSON.stringify(e.data)}`);
      const tasks = await pg.query(
        `SELECT t.id, t.state, t.created_at, t.updated_at,
                (SELECT string_agg(m.message_id, ',') FROM ${hostSchema}.agent_task_messages m WHERE m.task_id = t.id) AS messages,
                EXISTS (SELECT 1 FROM ${hostSchema}.agent_task_acks a WHERE a.task_id = t.id) AS acked
           FROM ${hostSchema}.agent_tasks t WHERE t.context_id = $1 ORDER BY t.created_at`,
        [row.context_id],
      );
      for (const t of tasks.rows) {
        lines.push(
          `  host task ${t.id} ${t.state} created ${t.created_at} updated ${t.updated_at} messages ${t.messages} acked ${t.acked}`,
        );
        const te = await pg.query(
          `SELECT seq, at, payload FROM ${hostSchema}.agent_task_events WHERE task_id = $1 ORDER BY seq`,
          [t.id],
        );
        for (const e of te.rows)
          lines.push(`    ${e.seq} ${e.at} ${JSON.stringify(e.payload).slice(0, 200)}`);
      }
    }
  });
  return lines.join('\n');
}
