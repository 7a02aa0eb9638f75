import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock, SystemClock } from '../../src/core/clock.ts';
import { TaskplaneError } from '../../src/core/errors.ts';
import type { Envelope } from '../../src/core/envelope.ts';
import { makeEnvelope } from '../store/suite/fixtures.ts';
import {
  COMPILED_SCHEMAS_KEPT,
  checkAcceptanceSchema,
  checkAcceptanceSchemaOffLoop,
  compiledSchemaCount,
  decideAcceptance,
  prepareAcceptance,
  type CompiledSchema,
  type SchemaCompiler,
} from '../../src/plane/acceptance.ts';
import { acceptanceLimits } from '../../src/plane/acceptance-limits.ts';
import { WorkerSchemaCompiler } from '../../src/server/worker-schema-compiler.ts';
import { planeApp } from '../server/plane-app-fixture.ts';
import { untilStored } from '../support/until-stored.ts';

/**
 * Acceptance schemas compiled off the event loop: in a worker thread (the server's compiler), within a
 * deadline, the validator coming back as code that behaves as an in-process compile's.
 */
const compilers: WorkerSchemaCompiler[] = [];
afterEach(async () => {
  for (const c of compilers.splice(0)) await c.close();
});

function compiler(clock = new SystemClock()): WorkerSchemaCompiler {
  const c = new WorkerSchemaCompiler({ clock });
  compilers.push(c);
  return c;
}

let unique = 0;
/** A schema no other test compiled (the validator cache is shared by the process). */
const fresh = (schema: Record<string, unknown>) => ({ ...schema, $comment: `acceptance-worker ${++unique}` });

function finished(schema: Record<string, unknown>, result: unknown): Envelope {
  const env = makeEnvelope({ tenant: 'a', acceptance: { status: 'pending', reasons: [], schema } });
  return { ...env, state: 'succeeded', result };
}

/** Counts compiles and hands each to the worker compiler. */
function counting(inner: SchemaCompiler): SchemaCompiler & { calls: number } {
  const c = {
    calls: 0,
    compile(schema: Record<string, unknown>, deadlineMs: number): Promise<CompiledSchema> {
      c.calls++;
      return inner.compile(schema, deadlineMs);
    },
  };
  return c;
}

describe('acceptance schemas compile in a worker thread', () => {
  it('the validator made from the worker decides as one compiled in process, RE2 patterns included', async () => {
    const workers = counting(compiler());
    const schema = fresh({
      type: 'object',
      required: ['s'],
      properties: { s: { type: 'string', pattern: '^(a+)+$' }, n: { type: 'integer', minimum: 3 } },
      patternProperties: { '^x\\d+$': { type: 'boolean' } },
      additionalProperties: false,
    });
    await checkAcceptanceSchemaOffLoop(schema, workers);
    expect(workers.calls).toBe(1);
    const ok = decideAcceptance(finished(schema, { s: 'aaaa', n: 4, x1: true }), [], 1);
    expect(ok?.status).toBe('accepted');
    const bad = decideAcceptance(finished(schema, { s: 'a'.repeat(29) + '!', n: 1, x2: 'no', y: 1 }), [], 1);
    expect(bad?.status).toBe('rejected');
    expect(bad?.reasons.join('\n')).toMatch(/must match pattern/);
    expect(bad?.reasons.join('\n')).toMatch(/must be >= 3/);
    expect(bad?.reasons.join('\n')).toMatch(/must be boolean/);
    expect(bad?.reasons.join('\n')).toMatch(/must NOT have additional properties/);
  });

  it('a schema the worker refuses is a 400 naming acceptance.schema, with its reason', async () => {
    const workers = compiler();
    for (const [schema, reason] of [
      [fresh({ type: 'not-a-type' }), /schema is invalid/],
      [fresh({ type: 'string', pattern: '(?=a)b' }), /acceptance\.schema: /],
      [fresh({ $ref: 'https://example.com/elsewhere' }), /acceptance\.schema: /],
    ] as const) {
      const err = await checkAcceptanceSchemaOffLoop(schema, workers).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TaskplaneError);
      expect(err).toMatchObject({ code: 'invalid_argument', field: 'acceptance.schema' });
      expect((err as Error).message).toMatch(reason);
    }
    // The worker still compiles after refusals.
    await checkAcceptanceSchemaOffLoop(fresh({ type: 'string' }), workers);
  });

  it('the pattern length limit holds off the loop too', async () => {
    const limits = acceptanceLimits({ maxPatternLength: 10 });
    const err = await checkAcceptanceSchemaOffLoop(
      fresh({ pattern: 'a'.repeat(11) }),
      compiler(),
      limits,
    ).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/acceptance\.maxPatternLength/);
  });

  it('concurrent checks of one schema share one compile, and a repeat compiles nothing', async () => {
    const workers = counting(compiler());
    const schema = fresh({ type: 'array', items: { type: 'string', maxLength: 4 } });
    await Promise.all(
      Array.from({ length: 5 }, () => checkAcceptanceSchemaOffLoop(structuredClone(schema), workers)),
    );
    await checkAcceptanceSchemaOffLoop({ ...structuredClone(schema) }, workers);
    expect(workers.calls).toBe(1);
  });

  it('a compile past its deadline is refused naming the field and the limit, then refused at once; the next schema compiles', async () => {
    const clock = new VirtualClock(0);
    const workers = counting(compiler(clock));
    const limits = acceptanceLimits({ compileTimeoutMs: 50 });
    // A loaded worker takes a compile at once; the deadline counts from there.
    await checkAcceptanceSchemaOffLoop(fresh({ type: 'boolean' }), workers, limits);
    const slow = fresh({ type: 'object', properties: { a: { type: 'string' } } });
    const pending = checkAcceptanceSchemaOffLoop(slow, workers, limits).catch((e: unknown) => e);
    // The deadline passes before the worker's answer can be read: it arrives as a message, after this.
    await clock.advance(50);
    const err = await pending;
    expect(err).toMatchObject({ code: 'invalid_argument', field: 'acceptance.schema' });
    expect((err as Error).message).toBe(
      'acceptance.schema: took longer than 50 ms to compile (limit acceptance.compileTimeoutMs)',
    );
    // Sent again: refused without another compile.
    const again = await checkAcceptanceSchemaOffLoop(structuredClone(slow), workers, limits).catch(
      (e: unknown) => e,
    );
    expect((again as Error).message).toMatch(/acceptance\.compileTimeoutMs/);
    expect(workers.calls).toBe(2);
    // A fresh worker takes the next compile.
    const next = fresh({ type: 'number' });
    await checkAcceptanceSchemaOffLoop(next, workers, limits);
    expect(decideAcceptance(finished(next, 3), [], 1)?.status).toBe('accepted');
  });

  it('prepareAcceptance compiles a stored schema the cache does not hold, off the loop', async () => {
    const workers = counting(compiler());
    const schema = fresh({ type: 'string', minLength: 2 });
    const held = compiledSchemaCount();
    await prepareAcceptance(schema, workers);
    expect(workers.calls).toBe(1);
    expect(compiledSchemaCount()).toBeGreaterThanOrEqual(Math.min(held + 1, 256));
    await prepareAcceptance(structuredClone(schema), workers);
    expect(workers.calls).toBe(1);
    expect(decideAcceptance(finished(schema, 'x'), [], 1)?.status).toBe('rejected');
  });

  it('through the plane: the create compiles in the worker, and so does a job decided after the cache let its schema go', async () => {
    const workers = counting(compiler());
    const app = await planeApp({ schemaCompiler: workers });
    try {
      const schema = fresh({
        type: 'object',
        required: ['total'],
        properties: { total: { type: 'number' } },
      });
      const { envelope } = await app.plane.create(
        { tenant: 'alpha', target: 'fake', input: 1, acceptance: { schema } },
        { wait: 'started' },
      );
      expect(workers.calls).toBe(1);
      // Other schemas push this one out of the validator cache.
      for (let i = 0; i < COMPILED_SCHEMAS_KEPT; i++) checkAcceptanceSchema(fresh({ const: i }));
      app.remote.set(envelope.remoteId!, 'succeeded', {
        artifacts: [{ artifactId: 'a', content: { total: 'no' } }],
      });
      const decided = async () =>
        (await app.store.getEnvelope(envelope.id))?.acceptance?.status !== 'pending';
      await untilStored(app.store, envelope.id, decided, 'acceptance decided');
      const env = await app.plane.get('alpha', envelope.id);
      expect(env.acceptance?.status).toBe('rejected');
      expect(env.acceptance?.reasons.join(' ')).toMatch(/must be number/);
      expect(workers.calls).toBe(2);
    } finally {
      await app.close();
    }
  });
});
