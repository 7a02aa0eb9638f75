import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { SeededRandom } from '../../src/core/random.ts';
import { PaymentServer } from '../fixtures/payment-server.ts';
import { spawnHost, type TestProcess } from '../support/process.ts';
import { stepHistory, tempDb } from './helpers.ts';
import { call, type Wire } from './in-process.ts';

/**
 * The proof of journaled steps (docs/host.md "Side effects"): an agent charges a card on a fake payment
 * server (test/fixtures/payment-agent.mjs) while its `taskplane host` process is SIGKILLed at seeded
 * points: before the step, inside it before the charge, during the charge (before the server records
 * it, and after it but before the answer arrives), after the charge but before the step is journaled,
 * after the step, and before completion; a third of the trials are killed twice. Every task must end
 * completed with exactly one charge.
 *
 * To stay bounded, the trials of a batch share a host process: each task is parked at its own kill
 * point (the payment server holds its request open) and the process is killed once all of a batch's
 * tasks with a kill still to come are parked; tasks with none run on and are cut wherever they are.
 * Then the host restarts on the same database and recovery resumes every task. A batch needs at most
 * three processes; the two batches run side by side. The seed is printed with any failure
 * (`STEPS_CRASH_SEED=<n>` replays one).
 */
const SEED = Number(process.env.STEPS_CRASH_SEED ?? 20261201);
const TRIALS = 100;
const BATCH = 50;
const PARALLEL_BATCHES = 2;
const AGENT = fileURLToPath(new URL('../fixtures/payment-agent.mjs', import.meta.url));

/** In the order a run passes them; the two `charge-*` points are the payment server's. */
const POINTS = [
  'before-step',
  'in-step',
  'charge-unrecorded',
  'charge-recorded',
  'after-charge',
  'after-step',
  'before-complete',
] as const;
type Point = (typeof POINTS)[number];
/** Past these the step is journaled: a resumed execute no longer enters it. */
const AFTER_JOURNAL: readonly Point[] = ['before-step', 'after-step', 'before-complete'];

interface Trial {
  id: string;
  plan: Point[];
  /** Kills done so far (an index into plan). */
  next: number;
  /** The generation (host process) this trial is parked in, if parked. */
  parkedIn: number | undefined;
  taskId?: string;
}

function planOf(rng: SeededRandom): Point[] {
  const first = POINTS[Math.floor(rng.next() * POINTS.length)]!;
  if (rng.next() >= 1 / 3) return [first];
  // A second kill at a point the resumed run still passes: once the step is journaled, only those
  // outside it.
  const journaled = POINTS.indexOf(first) > POINTS.indexOf('after-charge');
  const choices = journaled ? AFTER_JOURNAL : POINTS;
  return [first, choices[Math.floor(rng.next() * choices.length)]!];
}

const payments = new PaymentServer();
const trials = new Map<string, Trial>();
const generationOf = new Map<string, number>(); // batch → current generation
const waiters = new Set<() => void>();
const procs: TestProcess[] = [];
const dirs: string[] = [];

payments.gate = (trialId, point) => {
  const t = trials.get(trialId);
  if (!t || t.plan[t.next] !== point) return 'continue';
  t.next++;
  t.parkedIn = generationOf.get(batchOf(trialId));
  for (const wake of [...waiters]) wake();
  return 'hold';
};

const batchOf = (trialId: string) => trialId.split('/')[0]!;

afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill('SIGKILL')));
  await payments.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Resolves once `done()` holds, re-checked on every park; rejects with `why()` past the bound. */
function until(done: () => boolean, why: () => Promise<string>, boundMs = 30_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (!done()) return;
      waiters.delete(check);
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      waiters.delete(check);
      void why().then((w) => reject(new Error(`seed ${SEED}: ${w}`)));
    }, boundMs);
    waiters.add(check);
    check();
  });
}

async function getTask(url: string, taskId: string): Promise<Wire> {
  const { body } = await call(url, 'GetTask', { id: taskId });
  if (!body.result) throw new Error(`GetTask ${taskId}: ${JSON.stringify(body.error)}`);
  return body.result;
}

async function states(url: string, batch: Trial[]): Promise<string> {
  const rows = await Promise.all(
    batch.map(
      async (t) =>
        `${t.id} plan=${t.plan.join('>')} next=${t.next} ${(await getTask(url, t.taskId!)).status.state}`,
    ),
  );
  return rows.join('\n');
}

const TERMINAL = new Set([
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_REJECTED',
]);

async function allTerminal(url: string, batch: Trial[]): Promise<Wire[]> {
  for (let i = 0; ; i++) {
    const tasks = await Promise.all(batch.map((t) => getTask(url, t.taskId!)));
    if (tasks.every((t) => TERMINAL.has(t.status.state))) return tasks;
    if (i > 600) throw new Error(`seed ${SEED}: tasks did not finish\n${await states(url, batch)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function runBatch(
  name: string,
  batch: Trial[],
  rng: SeededRandom,
  paymentsUrl: string,
): Promise<Wire[]> {
  const { dir, db } = tempDb(`steps-${name}`);
  dirs.push(dir);
  const args = ['--port', '0', '--db', db, '--host-id', `steps-${name}`, '--agent', AGENT];
  for (let gen = 0; ; gen++) {
    generationOf.set(name, gen);
    const { proc, url } = await spawnHost(args);
    procs.push(proc);
    if (gen === 0) {
      await Promise.all(
        batch.map(async (t) => {
          const { body } = await call(url, 'SendMessage', {
            message: {
              messageId: `pay-${t.id}`,
              role: 'ROLE_USER',
              parts: [{ data: { trial: t.id, payments: paymentsUrl } }],
            },
            configuration: { returnImmediately: true },
          });
          t.taskId = (body.result as Wire).task.id as string;
        }),
      );
    }
    const parking = batch.filter((t) => t.next < t.plan.length);
    if (parking.length === 0) {
      const tasks = await allTerminal(url, batch);
      await proc.stop();
      return tasks;
    }
    await until(
      () => parking.every((t) => t.parkedIn === gen),
      async () =>
        `batch ${name} generation ${gen}: not every task reached its kill point\n${await states(url, batch)}`,
    );
    // Tasks without a kill to come run on for a seeded moment and are cut wherever they are.
    await new Promise((r) => setTimeout(r, Math.floor(rng.next() * 30)));
    await proc.kill('SIGKILL');
    for (const t of parking) t.parkedIn = undefined;
  }
}

describe('journaled steps under SIGKILL', () => {
  it(`${TRIALS} seeded trials: every task completes with exactly one charge`, async () => {
    const url = await payments.start();
    const rng = new SeededRandom(SEED);
    const batches: Array<{ name: string; trials: Trial[]; rng: SeededRandom }> = [];
    for (let b = 0; b < TRIALS / BATCH; b++) {
      const name = `b${b}`;
      const list: Trial[] = [];
      for (let i = 0; i < BATCH; i++) {
        const t: Trial = { id: `${name}/t${i}`, plan: planOf(rng), next: 0, parkedIn: undefined };
        trials.set(t.id, t);
        list.push(t);
      }
      batches.push({ name, trials: list, rng: rng.fork() });
    }
    const results = new Map<string, Wire>();
    for (let i = 0; i < batches.length; i += PARALLEL_BATCHES) {
      await Promise.all(
        batches.slice(i, i + PARALLEL_BATCHES).map(async (b) => {
          const tasks = await runBatch(b.name, b.trials, b.rng, url);
          b.trials.forEach((t, k) => results.set(t.id, tasks[k]));
        }),
      );
    }

    const failures: string[] = [];
    for (const t of trials.values()) {
      const task = results.get(t.id);
      const charges = payments.chargesOf(t.id);
      const requests = payments.requestsOf(t.id);
      const receipt = task?.artifacts?.[0]?.parts?.[0]?.data as { id?: string } | undefined;
      const [step] = stepHistory(task);
      const why: string[] = [];
      if (task?.status?.state !== 'TASK_STATE_COMPLETED') why.push(`state ${task?.status?.state}`);
      if (charges.length !== 1) why.push(`${charges.length} charges`);
      else if (receipt?.id !== charges[0]!.id)
        why.push(`receipt ${receipt?.id} is not charge ${charges[0]!.id}`);
      if (step?.name !== 'charge' || step?.outcome !== 'succeeded')
        why.push(`history step ${JSON.stringify(step)}`);
      // Killed first past the journal: the step must never have run again.
      if (AFTER_JOURNAL.includes(t.plan[0]!) && t.plan[0] !== 'before-step' && requests !== 1)
        why.push(`${requests} charge requests after a journaled step`);
      // Killed with the charge made but not journaled: it ran again, under the same key.
      if (['charge-recorded', 'after-charge'].includes(t.plan[0]!) && requests < 2)
        why.push(`${requests} charge requests, expected a second run of the step`);
      if (why.length > 0) failures.push(`${t.id} plan=${t.plan.join('>')}: ${why.join(', ')}`);
    }
    expect(failures, `seed ${SEED}`).toEqual([]);
    // Every kill point was exercised.
    expect(new Set([...trials.values()].flatMap((t) => t.plan))).toEqual(new Set(POINTS));
  }, 180_000);
});
