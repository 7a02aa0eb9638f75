import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { ValidateFunction } from 'ajv';
import type { Clock } from '../core/clock.ts';
import {
  LINEAR_REGEXP_MODULE,
  SchemaCompileTimeout,
  type CompiledSchema,
  type SchemaCompiler,
} from '../plane/acceptance.ts';
import { linearRegExp } from '../plane/linear-regexp.ts';

/** One compile sent to the worker (schema-compile-worker.ts). */
export interface CompileRequest {
  id: number;
  schema: Record<string, unknown>;
}

/** The worker's answer: a standalone validator's source, or what is wrong with the schema. */
export type CompileReply =
  | { id: number; ok: true; source: string; longestPattern: number }
  | { id: number; ok: false; message: string };

interface Job {
  schema: Record<string, unknown>;
  deadlineMs: number;
  owner: string;
  resolve: (compiled: CompiledSchema) => void;
  reject: (err: Error) => void;
}

/**
 * How compile time is shared among owners (server/tenant-limits.ts): `admit` throws (a 429) for an owner
 * past its share before its compile is queued, `charge` counts the time a compile of the owner took.
 */
export interface CompileBudget {
  admitCompile(owner: string): void;
  chargeCompile(owner: string, ms: number): void;
}

/** The owner of compiles that name none (a stored schema recompiled after a restart). */
const NO_OWNER = '';

/**
 * Compiles acceptance schemas in a worker thread, one at a time, each within its deadline. Owners (the
 * tenants whose creates need the compiles) take turns: each has its own queue and the worker takes the
 * next compile from each in turn, so one tenant's many schemas do not hold back another's one; with a
 * CompileBudget, each compile's time (in the worker and turning its code into a function here) is
 * charged to its owner, and an owner past its share is refused before its compile is queued. Compiling is
 * the one costly step of a schema a caller controls (Ajv generates and compiles code for every keyword;
 * a large schema with many patterns takes a noticeable fraction of a second), and on the event loop it
 * stalled every tenant. Here the loop only sends the schema and turns the returned source into a
 * function (`new Function` over Ajv's standalone code; its patterns compile in RE2 at their first use).
 * A compile past its deadline is answered with SchemaCompileTimeout and the worker is terminated (a
 * compile cannot be interrupted otherwise); the next compile starts a fresh one. A deadline counts from
 * when the compile is handed to a loaded worker: waiting in the queue or for a worker to boot is not
 * the schema's fault.
 *
 * The worker is referenced only while a compile runs: an idle compiler does not keep the process alive.
 */
export class WorkerSchemaCompiler implements SchemaCompiler {
  private worker: Worker | null = null;
  /** Whether the worker has loaded (it says so once); compiles wait for it, their deadlines too. */
  private ready = false;
  /** Waiting compiles by owner, in the order owners take their turns (Map order, rotated). */
  private readonly queues = new Map<string, Job[]>();
  private budget: CompileBudget | null = null;
  private current: { id: number; job: Job; cancelTimer: () => void; startedAt: number } | null = null;
  private nextId = 1;
  private closed = false;

  constructor(private readonly o: { clock: Clock }) {}

  compile(schema: Record<string, unknown>, deadlineMs: number, owner = NO_OWNER): Promise<CompiledSchema> {
    if (this.closed) return Promise.reject(new Error('the schema compiler is closed'));
    try {
      if (owner !== NO_OWNER) this.budget?.admitCompile(owner);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    return new Promise((resolve, reject) => {
      const job = { schema, deadlineMs, owner, resolve, reject };
      const queue = this.queues.get(owner);
      if (queue) queue.push(job);
      else this.queues.set(owner, [job]);
      this.pump();
    });
  }

  /** Shares compile time among owners from now on (the plane's server wires its per-tenant limits). */
  useBudget(budget: CompileBudget): void {
    this.budget = budget;
  }

  /** Refuses what is queued and stops the worker. */
  async close(): Promise<void> {
    this.closed = true;
    const stopped = new Error('the schema compiler is closed');
    for (const job of this.takeAll()) job.reject(stopped);
    this.finish()?.reject(stopped);
    await this.stopWorker();
  }

  private pump(): void {
    if (this.current || this.closed) return;
    if (this.queues.size === 0) {
      this.worker?.unref();
      return;
    }
    const worker = this.worker ?? this.startWorker();
    worker.ref();
    if (!this.ready) return;
    const job = this.nextJob();
    const id = this.nextId++;
    const cancelTimer = this.o.clock.setTimer(job.deadlineMs, () => {
      if (this.current?.id !== id) return;
      this.finish()?.reject(new SchemaCompileTimeout(job.deadlineMs));
      void this.stopWorker();
      this.pump();
    });
    this.current = { id, job, cancelTimer, startedAt: this.o.clock.now() };
    const request: CompileRequest = { id, schema: job.schema };
    worker.postMessage(request);
  }

  /** The next owner's oldest compile; that owner goes to the back of the turns. */
  private nextJob(): Job {
    const [owner, queue] = this.queues.entries().next().value!;
    const job = queue.shift()!;
    this.queues.delete(owner);
    if (queue.length > 0) this.queues.set(owner, queue);
    return job;
  }

  private takeAll(): Job[] {
    const jobs = [...this.queues.values()].flat();
    this.queues.clear();
    return jobs;
  }

  /**
   * Ends the current compile (its timer too), charges its time so far to its owner, and hands its job
   * back to be settled.
   */
  private finish(): Job | undefined {
    const current = this.current;
    if (!current) return undefined;
    this.current = null;
    current.cancelTimer();
    this.charge(current.job.owner, this.o.clock.now() - current.startedAt);
    return current.job;
  }

  private charge(owner: string, ms: number): void {
    // A clock that stepped back charges nothing rather than a credit.
    if (owner !== NO_OWNER) this.budget?.chargeCompile(owner, Math.max(0, ms));
  }

  private startWorker(): Worker {
    const worker = startCompileWorker();
    this.worker = worker;
    this.ready = false;
    worker.on('message', (reply: CompileReply | { ready: true }) => {
      if ('ready' in reply) {
        if (this.worker !== worker) return;
        this.ready = true;
        return this.pump();
      }
      if (this.current?.id !== reply.id) return;
      const job = this.finish()!;
      if (!reply.ok) job.reject(new Error(reply.message));
      else {
        const t0 = performance.now();
        try {
          const validate = validatorFromSource(reply.source);
          // Turning the code into a function runs on this thread: the owner's too.
          this.charge(job.owner, performance.now() - t0);
          job.resolve({ validate, longestPattern: reply.longestPattern });
        } catch (err) {
          job.reject(err instanceof Error ? err : new Error(String(err)));
        }
      }
      this.pump();
    });
    const lost = (err: Error) => {
      if (this.worker !== worker) return;
      this.worker = null;
      // A worker that cannot even load fails what waits for it, rather than being restarted for ever.
      if (!this.ready) for (const job of this.takeAll()) job.reject(err);
      this.finish()?.reject(err);
      this.pump();
    };
    worker.on('error', lost);
    worker.on('exit', () => lost(new Error('the schema compile worker exited')));
    return worker;
  }

  private async stopWorker(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    this.ready = false;
    if (worker) await worker.terminate();
  }
}

const requireModule = createRequire(import.meta.url);
/** Patterns of a worker-made validator: the worker compiled each already, so here they compile at first use. */
const lazyRegExp = linearRegExp(undefined, true);

/**
 * A validator from Ajv's standalone source (CommonJS: it sets `module.exports` and requires Ajv's runtime
 * helpers and the regular-expression engine by name). The source is Ajv's own code generation from the
 * schema, with every value of the schema embedded as JSON literals, as Ajv's in-process compile
 * (`new Function` too) would make it.
 */
function validatorFromSource(source: string): ValidateFunction {
  const module = { exports: {} as unknown };
  const require = (id: string): unknown => (id === LINEAR_REGEXP_MODULE ? lazyRegExp : requireModule(id));
  new Function('require', 'module', 'exports', source)(require, module, module.exports);
  return module.exports as ValidateFunction;
}

/**
 * The compile worker thread. Compiled, schema-compile-worker.js sits beside this module and starts
 * directly. Run from source (vitest, tsx) the entry is TypeScript, and a worker thread does not inherit
 * the main thread's loader on Node 20, so it starts through schema-compile-worker-source.mjs, which
 * registers tsx (a dev dependency, present wherever the sources run) first; as the SQLite store's write
 * worker does (store/sqlite/worker-writes.ts).
 */
function startCompileWorker(): Worker {
  const fromSource = import.meta.url.endsWith('.ts');
  const entry = new URL(
    fromSource ? './schema-compile-worker-source.mjs' : './schema-compile-worker.js',
    import.meta.url,
  );
  return new Worker(entry);
}
