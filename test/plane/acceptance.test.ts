import { afterEach, describe, expect, it } from 'vitest';
import { TaskplaneError } from '../../src/core/errors.ts';
import type { Envelope } from '../../src/core/envelope.ts';
import { makeEnvelope } from '../store/suite/fixtures.ts';
import {
  COMPILED_SCHEMAS_KEPT,
  checkAcceptanceSchema,
  compiledSchemaCount,
  decideAcceptance,
} from '../../src/plane/acceptance.ts';
import { planeConfig } from '../../src/plane/options.ts';
import { Plane } from '../../src/plane/plane.ts';
import { SeededRandom } from '../../src/core/random.ts';
import { harness, type Harness } from './harness.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const A = 'tenant-a';
const B = 'tenant-b';

/** A succeeded envelope whose acceptance is still to be decided against `schema`. */
function finished(schema: Record<string, unknown>, result: unknown): Envelope {
  const env = makeEnvelope({ tenant: A, acceptance: { status: 'pending', reasons: [], schema } });
  return { ...env, state: 'succeeded', result };
}

/** Runs a job to success with `result` as its output and returns the stored envelope. */
async function runWith(tenant: string, schema: Record<string, unknown>, result: unknown, input: unknown) {
  const { envelope } = await h!.plane.create(
    { tenant, target: 'fake', input, acceptance: { schema } },
    { wait: 'started' },
  );
  await h!.settle();
  h!.remote.set(envelope.remoteId!, 'succeeded', { artifacts: [{ artifactId: 'a', content: result }] });
  await h!.settle();
  return h!.plane.get(tenant, envelope.id);
}

describe('acceptance patterns run in linear time', () => {
  it('a catastrophic-backtracking pattern against 29 a and ! is decided (rejected)', () => {
    const schema = checkAcceptanceSchema({ type: 'string', pattern: '^(a+)+$' });
    const decided = decideAcceptance(finished(schema, 'a'.repeat(29) + '!'), [], 1);
    expect(decided?.status).toBe('rejected');
    expect(decided?.reasons.join(' ')).toContain('must match pattern');
    expect(decideAcceptance(finished(schema, 'a'.repeat(29)), [], 1)?.status).toBe('accepted');
  });

  it('the same through the plane: the job ends succeeded, acceptance rejected, the plane keeps answering', async () => {
    h = await harness({ delivery: { stream: true, push: false } });
    const evil = {
      type: 'object',
      properties: { s: { type: 'string', pattern: '^(a+)+$' } },
      patternProperties: { '^(x+x+)+y$': { type: 'number' } },
    };
    const env = await runWith(A, evil, { s: 'a'.repeat(29) + '!', ['x'.repeat(40)]: 'not a number' }, 1);
    expect([env.state, env.acceptance?.status]).toEqual(['succeeded', 'rejected']);
    const other = await runWith(B, { type: 'object' }, { ok: true }, 2);
    expect(other.acceptance?.status).toBe('accepted');
  });

  it('patterns keep ECMA-262 meaning for what RE2 supports, and lookaround/backreferences are refused by name', () => {
    const schema = checkAcceptanceSchema({ type: 'string', pattern: '^\\d{3}-[a-z]+\\/\\w$' });
    expect(decideAcceptance(finished(schema, '123-abc/x'), [], 1)?.status).toBe('accepted');
    expect(decideAcceptance(finished(schema, '12-abc/x'), [], 1)?.status).toBe('rejected');
    // Unanchored, as JSON Schema's pattern is.
    const inner = checkAcceptanceSchema({ type: 'string', pattern: 'b+' });
    expect(decideAcceptance(finished(inner, 'abbbc'), [], 1)?.status).toBe('accepted');
    for (const pattern of ['(?=a)b', '(a)\\1']) {
      expect(() => checkAcceptanceSchema({ pattern })).toThrow(
        expect.objectContaining({ code: 'invalid_argument', field: 'acceptance.schema' }),
      );
    }
  });

  it('format is an annotation: no format check runs on the output', () => {
    const schema = checkAcceptanceSchema({ type: 'string', format: 'email' });
    expect(decideAcceptance(finished(schema, 'x'.repeat(10_000)), [], 1)?.status).toBe('accepted');
  });
});

describe('acceptance schema limits', () => {
  const nested = (depth: number): Record<string, unknown> => {
    let s: Record<string, unknown> = { type: 'string' };
    for (let i = 1; i < depth; i++) s = { type: 'array', items: s };
    return s;
  };

  it('refuses a schema over the size, depth or pattern-length limit, naming acceptance.schema and the limit', () => {
    const big = { enum: Array.from({ length: 10_000 }, (_, i) => `value-${i}`) };
    expect(() => checkAcceptanceSchema(big)).toThrow(/acceptance\.schema: .*acceptance\.maxSchemaBytes/);
    expect(() => checkAcceptanceSchema(nested(40))).toThrow(
      /acceptance\.schema: .*acceptance\.maxSchemaDepth/,
    );
    expect(() => checkAcceptanceSchema({ pattern: 'a'.repeat(2000) })).toThrow(
      /acceptance\.schema: .*acceptance\.maxPatternLength/,
    );
    try {
      checkAcceptanceSchema(nested(40));
    } catch (err) {
      expect(err).toMatchObject({ code: 'invalid_argument', field: 'acceptance.schema' });
    }
    // A depth far past any stack is refused, not a stack overflow.
    expect(() => checkAcceptanceSchema(nested(100_000))).toThrow(/maxSchemaDepth/);
  });

  it('the limits are plane options, and create refuses by them', async () => {
    h = await harness({ acceptance: { maxSchemaBytes: 200, maxSchemaDepth: 4, maxPatternLength: 8 } });
    const create = (schema: Record<string, unknown>) =>
      h!.plane.create({ tenant: A, target: 'fake', input: 1, acceptance: { schema } }, { wait: 'started' });
    await expect(create({ enum: ['x'.repeat(300)] })).rejects.toMatchObject({ field: 'acceptance.schema' });
    await expect(create(nested(5))).rejects.toThrow(/maxSchemaDepth/);
    await expect(create({ pattern: 'abcdefghij' })).rejects.toThrow(/maxPatternLength/);
    expect((await create({ pattern: 'abc' })).created).toBe(true);
  });

  it('a bad limit is a config error naming its field', () => {
    expect(() => planeConfig({ acceptance: { maxSchemaDepth: 0 } })).toThrow(TaskplaneError);
    expect(() => planeConfig({ acceptance: { maxSchemaDepth: 0 } })).toThrow(
      expect.objectContaining({ code: 'config', field: 'acceptance.maxSchemaDepth' }),
    );
    expect(() => planeConfig({ acceptance: { maxSchemaBytes: 1.5 } })).toThrow(/acceptance\.maxSchemaBytes/);
    expect(() => planeConfig({ acceptance: { compileTimeoutMs: 0 } })).toThrow(
      /acceptance\.compileTimeoutMs/,
    );
    expect(() => planeConfig({ acceptance: { verifierMaxAttempts: 0 } })).toThrow(
      /acceptance\.verifierMaxAttempts/,
    );
    expect(() => planeConfig({ acceptance: { verifiers: { pay: { url: 'ftp://x' } } } })).toThrow(
      expect.objectContaining({ code: 'config', field: 'acceptance.verifiers.pay.url' }),
    );
    expect(planeConfig().acceptance).toEqual({
      maxSchemaBytes: 16_384,
      maxSchemaDepth: 32,
      maxPatternLength: 1024,
      compileTimeoutMs: 2000,
      verifierTimeoutMs: 10_000,
      verifierMaxAttempts: 5,
      verifierRetryMs: 1000,
      verifiers: {},
    });
  });
});

describe('acceptance schemas are isolated per job', () => {
  it('two tenants may use the same $id with different schemas; each job is checked against its own', async () => {
    h = await harness({ delivery: { stream: true, push: false } });
    const a = await runWith(A, { $id: 'https://example.com/result', type: 'string' }, 'text', 1);
    const b = await runWith(B, { $id: 'https://example.com/result', type: 'number' }, 7, 2);
    const bWrong = await runWith(B, { $id: 'https://example.com/result', type: 'number' }, 'text', 3);
    expect([a.acceptance?.status, b.acceptance?.status, bWrong.acceptance?.status]).toEqual([
      'accepted',
      'accepted',
      'rejected',
    ]);
  });

  it("a nested $id of one schema is not resolvable from another tenant's schema", () => {
    checkAcceptanceSchema({
      type: 'object',
      definitions: { s: { $id: 'https://example.com/shared', type: 'string' } },
    });
    expect(() => checkAcceptanceSchema({ $ref: 'https://example.com/shared' })).toThrow(
      expect.objectContaining({ field: 'acceptance.schema' }),
    );
  });

  it('6,000 idempotent repeats with fresh schema objects compile nothing new; distinct schemas stay bounded', async () => {
    h = await harness({
      delivery: { stream: false, push: false, poll: false },
      reconcile: { enabled: false },
    });
    const schema = () => ({ type: 'object', properties: { n: { type: 'integer', minimum: 0 } } });
    const first = await h.plane.create({
      tenant: A,
      target: 'fake',
      input: 1,
      idempotencyKey: 'k',
      acceptance: { schema: schema() },
    });
    const held = compiledSchemaCount();
    for (let i = 0; i < 6000; i++) {
      const again = await h.plane.create({
        tenant: A,
        target: 'fake',
        input: 1,
        idempotencyKey: 'k',
        // A fresh object each time, as a parsed request body is, and one that would not even compile.
        acceptance: { schema: i % 2 ? schema() : { type: 'not-a-type' } },
      });
      expect(again.envelope.id).toBe(first.envelope.id);
    }
    expect(compiledSchemaCount()).toBe(held);
    for (let i = 0; i < COMPILED_SCHEMAS_KEPT + 100; i++) checkAcceptanceSchema({ const: i });
    expect(compiledSchemaCount()).toBe(COMPILED_SCHEMAS_KEPT);
  });

  it('the same schema with its keys in another order is one cache entry', () => {
    checkAcceptanceSchema({ type: 'string', minLength: 3, maxLength: 9 });
    const held = compiledSchemaCount();
    checkAcceptanceSchema({ maxLength: 9, minLength: 3, type: 'string' });
    expect(compiledSchemaCount()).toBe(held);
  });
});

describe("the target's input schema (422)", () => {
  const inputSchema = {
    type: 'object',
    required: ['kind'],
    properties: { kind: { enum: ['report'] }, pages: { type: 'integer', minimum: 1 } },
  };

  /** A plane whose target `fake` declares an input schema. */
  async function strictPlane(): Promise<Harness> {
    const made = await harness();
    const plain = made.remote.connector('fake');
    const strict = { ...plain, inputSchema };
    await made.plane.stop();
    made.plane = new Plane({
      clock: made.clock,
      random: new SeededRandom(2),
      store: made.store,
      connectors: (t) => (t === 'fake' ? strict : undefined),
    });
    await made.plane.start();
    return made;
  }

  it('refuses an input the schema does not take as unprocessable, naming instance path and keyword; nothing is recorded or sent', async () => {
    h = await strictPlane();
    const err = (await h.plane
      .create({ tenant: A, target: 'fake', input: { kind: 'report', pages: 0 }, idempotencyKey: 'k1' })
      .catch((e: unknown) => e)) as TaskplaneError;
    expect(err).toBeInstanceOf(TaskplaneError);
    expect(err.code).toBe('unprocessable');
    expect(err.field).toBe('input');
    expect(err.message).toContain('input/pages must be >= 1 (minimum at #/properties/pages/minimum)');
    expect(err.details?.violations).toEqual([
      {
        instancePath: '/pages',
        keyword: 'minimum',
        schemaPath: '#/properties/pages/minimum',
        message: 'must be >= 1',
      },
    ]);
    expect((await h.plane.list(A)).items).toHaveLength(0);
    expect(h.remote.calls.filter((c) => c.method === 'start')).toHaveLength(0);
    // The same key with an input the target takes creates the job: the refusal kept nothing.
    const { envelope } = await h.plane.create({
      tenant: A,
      target: 'fake',
      input: { kind: 'report', pages: 3 },
      idempotencyKey: 'k1',
    });
    expect(envelope.state).toBe('accepted');
  });

  it('a field error is still invalid_argument (400), checked before the input schema', async () => {
    h = await strictPlane();
    const err = (await h.plane
      .create({ tenant: A, target: 'fake', input: {}, acceptance: { schema: { type: 'nonsense' } } })
      .catch((e: unknown) => e)) as TaskplaneError;
    expect(err.code).toBe('invalid_argument');
    expect(err.field).toBe('acceptance.schema');
  });

  it('names the first five places and says how many more', async () => {
    h = await strictPlane();
    const many = {
      type: 'object',
      properties: Object.fromEntries([...'abcdefg'].map((k) => [k, { type: 'string' }])),
    };
    const plane = new Plane({
      clock: h.clock,
      random: new SeededRandom(3),
      store: h.store,
      connectors: () => ({ ...h!.remote.connector('fake'), inputSchema: many }),
    });
    const input = Object.fromEntries([...'abcdefg'].map((k) => [k, 1]));
    const err = (await plane
      .create({ tenant: A, target: 'fake', input })
      .catch((e: unknown) => e)) as TaskplaneError;
    expect(err.code).toBe('unprocessable');
    expect(err.details?.violations).toHaveLength(5);
    expect(err.message).toMatch(/… and 2 more$/);
  });
});
