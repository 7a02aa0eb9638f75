import { Ajv, type ValidateFunction } from 'ajv';
import type { RegExpEngine } from 'ajv/dist/types/index.js';
import standalone from 'ajv/dist/standalone/index.js';
import type { AcceptanceCheck, AcceptanceRecord, Envelope } from '../core/envelope.ts';
import { TaskplaneError } from '../core/errors.ts';
import { canonicalJson, sha256Hex } from '../core/canonical-json.ts';
import { artifactHashCheck, receiptCheck } from './acceptance-checks.ts';
import { defaultAcceptanceLimits, type AcceptanceLimits } from './acceptance-limits.ts';
import { linearRegExp } from './linear-regexp.ts';

/**
 * Business acceptance, kept apart from task completion (docs/a2a-notes.md,
 * "Completion is not acceptance"): a job can succeed remotely and still be rejected here because its output does
 * not match the schema the caller gave at creation.
 *
 * A schema is one tenant's input compiled into code that runs in the shared process, so:
 * - each schema is compiled by an Ajv instance of its own: nothing it declares (`$id`, nested `$id`s,
 *   definitions) is visible to another tenant's schema, and two tenants may use the same `$id`;
 * - every regular expression (`pattern`, `patternProperties`, `propertyNames.pattern`) runs in RE2
 *   (linear time in the input), never in the backtracking RegExp;
 * - `format` is an annotation, as JSON Schema 2020-12 makes it by default: no format validator (each a
 *   hand-written regular expression) ever runs on an output;
 * - size, depth and pattern length are capped before anything is kept (acceptance-limits.ts);
 * - with a SchemaCompiler (the server wires server/worker-schema-compiler.ts) the compile runs in a worker thread
 *   within a deadline, and the event loop only validates, which RE2 keeps linear in the output;
 * - compiled validators are cached by the schema's canonical hash in a bounded LRU, so repeats of one
 *   schema (idempotent retries parse a fresh object each time) compile once and memory stays flat.
 */

/** Compiled validators kept; the least recently used goes first. */
export const COMPILED_SCHEMAS_KEPT = 256;

/** Rejection reasons kept on the envelope: a large output can fail in every element. */
const REASONS_KEPT = 20;

/** A schema compiled into a validator, with what the limit checks need to know of it. */
export interface CompiledSchema {
  validate: ValidateFunction;
  /** Characters in its longest regular expression. */
  longestPattern: number;
}

/**
 * Compiles schemas somewhere other than the event loop (server/worker-schema-compiler.ts: a worker thread with a
 * deadline). Without one, the plane compiles in process, as the lab (in a browser) does.
 */
export interface SchemaCompiler {
  /**
   * Compiles `schema` (already within the size and depth limits) into a validator. Rejects with an
   * Error whose message says what is wrong with the schema, or with a SchemaCompileTimeout after
   * `deadlineMs` of compiling. `owner` (the tenant whose request needs it) lets the compiler share its
   * time among tenants; a compiler may refuse with a TaskplaneError (an owner past its share), which
   * reaches the caller as it is.
   */
  compile(schema: Record<string, unknown>, deadlineMs: number, owner?: string): Promise<CompiledSchema>;
}

/** A compile that ran past its deadline (and was stopped). */
export class SchemaCompileTimeout extends Error {
  constructor(readonly deadlineMs: number) {
    super(`compiling took longer than ${deadlineMs} ms`);
    this.name = 'SchemaCompileTimeout';
  }
}

const compiled = new Map<string, CompiledSchema>();
/** Compiles in flight off the loop, by key: concurrent creates with one schema share one compile. */
const compiling = new Map<string, Promise<CompiledSchema>>();
/**
 * Schemas whose compile ran out of time, by key (least recently refused goes first): sending one again is
 * refused at once instead of holding the compiler for another deadline.
 */
const tooSlow = new Map<string, number>();
const TOO_SLOW_KEPT = 256;
const utf8 = new TextEncoder();

/** Checks schemas against the JSON Schema meta-schema; it never compiles or registers a caller's schema. */
const metaValidator = new Ajv({ strict: false, validateFormats: false, logger: false });

/** How many compiled validators are held now (bounded by COMPILED_SCHEMAS_KEPT). */
export function compiledSchemaCount(): number {
  return compiled.size;
}

function refuse(message: string): TaskplaneError {
  return new TaskplaneError('invalid_argument', `acceptance.schema: ${message}`, {
    field: 'acceptance.schema',
  });
}

/** Walks the schema without recursion, so a deep one is refused rather than overflowing the stack. */
function checkDepth(schema: object, maxDepth: number): void {
  const stack: Array<[unknown, number]> = [[schema, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (typeof value !== 'object' || value === null) continue;
    if (depth > maxDepth)
      throw refuse(`nested deeper than ${maxDepth} levels (limit acceptance.maxSchemaDepth)`);
    for (const child of Object.values(value)) stack.push([child, depth + 1]);
  }
}

/** The Ajv options of every compile; `source` keeps the generated code for standaloneCode. */
function ajvFor(regExp: RegExpEngine, source: boolean): Ajv {
  return new Ajv({
    allErrors: true,
    strict: false,
    // Nothing the schema declares is registered for later compiles; the instance is this schema's alone.
    addUsedSchema: false,
    // The meta-schema check ran above on the shared instance; loading it again here costs each compile.
    meta: false,
    validateSchema: false,
    validateFormats: false,
    logger: false,
    // Ajv's optimizer roughly doubles compile time to save little at validation; compiling is the cost a
    // caller controls (one compile per distinct schema), so it is the one kept small.
    code: { regExp, optimize: false, source },
  });
}

function checkMeta(schema: Record<string, unknown>): void {
  if (!metaValidator.validateSchema(schema)) {
    throw new Error(`schema is invalid: ${metaValidator.errorsText(metaValidator.errors)}`);
  }
}

/** Compiles a schema in this thread. Throws an Error saying what is wrong with it. */
export function compileSchema(schema: Record<string, unknown>): CompiledSchema {
  checkMeta(schema);
  let longestPattern = 0;
  const regExp = linearRegExp((pattern) => {
    longestPattern = Math.max(longestPattern, pattern.length);
  });
  return { validate: ajvFor(regExp, false).compile(schema), longestPattern };
}

/**
 * Compiles a schema into the source of a standalone validator (Ajv's standalone code, CommonJS), for a
 * compile that runs in another thread: the code crosses as a string and `validatorFromSource` turns it
 * into a function here. Its regular expressions are required as LINEAR_REGEXP_MODULE.
 */
export function compileSchemaSource(schema: Record<string, unknown>): {
  source: string;
  longestPattern: number;
} {
  checkMeta(schema);
  let longestPattern = 0;
  const regExp = Object.assign(
    linearRegExp((pattern) => {
      longestPattern = Math.max(longestPattern, pattern.length);
    }),
    { code: `require(${JSON.stringify(LINEAR_REGEXP_MODULE)})` },
  );
  const ajv = ajvFor(regExp, true);
  return { source: standalone.default(ajv, ajv.compile(schema)), longestPattern };
}

/** The name a standalone validator requires its regular-expression engine by. */
export const LINEAR_REGEXP_MODULE = 'taskplane:linear-regexp';

function remember(key: string, fresh: CompiledSchema): CompiledSchema {
  compiled.set(key, fresh);
  if (compiled.size > COMPILED_SCHEMAS_KEPT) compiled.delete(compiled.keys().next().value!);
  return fresh;
}

function cached(key: string): CompiledSchema | undefined {
  const hit = compiled.get(key);
  if (hit) {
    compiled.delete(key);
    compiled.set(key, hit);
  }
  return hit;
}

const keyOf = (schema: Record<string, unknown>) => sha256Hex(canonicalJson(schema));

function compiledFor(schema: Record<string, unknown>): CompiledSchema {
  const key = keyOf(schema);
  return cached(key) ?? remember(key, compileSchema(schema));
}

/** The checks that need no compile: shape, depth, size. Returns the schema's cache key. */
function precheck(schema: unknown, limits: AcceptanceLimits): string {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    throw refuse('must be a JSON Schema object');
  }
  checkDepth(schema, limits.maxSchemaDepth);
  let text: string;
  try {
    text = canonicalJson(schema);
  } catch (err) {
    throw refuse((err as Error).message);
  }
  if (utf8.encode(text).length > limits.maxSchemaBytes)
    throw refuse(`larger than ${limits.maxSchemaBytes} bytes (limit acceptance.maxSchemaBytes)`);
  return sha256Hex(text);
}

function checkPatterns(result: CompiledSchema, limits: AcceptanceLimits): void {
  if (result.longestPattern > limits.maxPatternLength) {
    throw refuse(
      `a pattern is longer than ${limits.maxPatternLength} characters (limit acceptance.maxPatternLength)`,
    );
  }
}

/**
 * Checks a caller's schema: its shape, the limits, that it compiles. Throws invalid_argument naming the
 * field `acceptance.schema`. The compiled validator is kept for when the job's output arrives. Compiles
 * on this thread; `checkAcceptanceSchemaOffLoop` is the same with a SchemaCompiler.
 */
export function checkAcceptanceSchema(
  schema: unknown,
  limits: AcceptanceLimits = defaultAcceptanceLimits,
): Record<string, unknown> {
  const key = precheck(schema, limits);
  let result: CompiledSchema;
  try {
    result = cached(key) ?? remember(key, compileSchema(schema as Record<string, unknown>));
  } catch (err) {
    throw refuse((err as Error).message);
  }
  checkPatterns(result, limits);
  return schema as Record<string, unknown>;
}

/**
 * `checkAcceptanceSchema` with the compile done by `compiler` (a worker thread), within
 * `limits.compileTimeoutMs`: a schema that takes longer is refused (and refused at once when sent again).
 * Only the cheap checks and the cache lookup run on this thread.
 */
export async function checkAcceptanceSchemaOffLoop(
  schema: unknown,
  compiler: SchemaCompiler,
  limits: AcceptanceLimits = defaultAcceptanceLimits,
  owner?: string,
): Promise<Record<string, unknown>> {
  const key = precheck(schema, limits);
  if (tooSlow.has(key)) throw slowRefusal(tooSlow.get(key)!);
  let result = cached(key);
  if (!result) {
    try {
      result = await compileOffLoop(
        key,
        schema as Record<string, unknown>,
        compiler,
        limits.compileTimeoutMs,
        owner,
      );
    } catch (err) {
      if (err instanceof TaskplaneError) throw err;
      if (err instanceof SchemaCompileTimeout) {
        tooSlow.delete(key);
        tooSlow.set(key, err.deadlineMs);
        if (tooSlow.size > TOO_SLOW_KEPT) tooSlow.delete(tooSlow.keys().next().value!);
        throw slowRefusal(err.deadlineMs);
      }
      throw refuse((err as Error).message);
    }
  }
  checkPatterns(result, limits);
  return schema as Record<string, unknown>;
}

function slowRefusal(deadlineMs: number): TaskplaneError {
  return refuse(`took longer than ${deadlineMs} ms to compile (limit acceptance.compileTimeoutMs)`);
}

function compileOffLoop(
  key: string,
  schema: Record<string, unknown>,
  compiler: SchemaCompiler,
  deadlineMs: number,
  owner: string | undefined,
): Promise<CompiledSchema> {
  let pending = compiling.get(key);
  if (!pending) {
    pending = compiler.compile(schema, deadlineMs, owner).then((fresh) => remember(key, fresh));
    compiling.set(key, pending);
    const forget = () => compiling.delete(key);
    pending.then(forget, forget);
  }
  return pending;
}

/**
 * Makes sure the validator of a stored schema is compiled before its job's output is decided, compiling
 * it with `compiler` when it is not held (the plane restarted, or the cache let it go), so deciding does
 * not compile on this thread. A schema that fails here fails again in decideAcceptance, which says why.
 */
export async function prepareAcceptance(
  schema: Record<string, unknown>,
  compiler: SchemaCompiler,
  limits: AcceptanceLimits = defaultAcceptanceLimits,
): Promise<void> {
  const key = keyOf(schema);
  if (compiled.has(key)) return;
  await compileOffLoop(key, schema, compiler, limits.compileTimeoutMs, undefined).catch(() => undefined);
}

/** How many failing places a refusal names: the first few are what a person acts on. */
export const INPUT_VIOLATIONS_NAMED = 5;

/** One place where a job's input fails its target's input schema (JSON Pointer paths, as Ajv gives them). */
export interface InputViolation {
  /** Where in `input` (`""` is the input itself). */
  instancePath: string;
  /** The schema keyword that failed (`required`, `type`, `minimum`, …). */
  keyword: string;
  /** Where in the schema that keyword is (`#/properties/amount/minimum`). */
  schemaPath: string;
  message: string;
}

/**
 * Checks a job's input against its target's input schema (Connector.inputSchema), compiled and cached
 * like an acceptance schema (own Ajv instance, RE2 patterns, no format validators). A mismatch is
 * `unprocessable` (HTTP 422, not 400): the request is well-formed and every field valid, but the target
 * does not take this input. The error names each failing instance path and keyword, in its message and
 * in `details.violations`. A schema that does not compile is the operator's configuration error.
 */
/**
 * Checks a target's input schema when it is configured (it must be an object that compiles), so a bad
 * one stops the start with a `config` error naming `field` instead of failing each create later.
 */
export function checkInputSchema(field: string, schema: unknown): Record<string, unknown> {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema))
    throw new TaskplaneError('config', `${field}: must be a JSON Schema object`, { field });
  try {
    compiledFor(schema as Record<string, unknown>);
  } catch (err) {
    throw new TaskplaneError('config', `${field}: ${(err as Error).message}`, { field });
  }
  return schema as Record<string, unknown>;
}

export function checkTargetInput(target: string, schema: Record<string, unknown>, input: unknown): void {
  let validate: ValidateFunction;
  try {
    validate = compiledFor(schema).validate;
  } catch (err) {
    throw new TaskplaneError('config', `targets.${target}.inputSchema: ${(err as Error).message}`, {
      field: `targets.${target}.inputSchema`,
    });
  }
  if (validate(input) === true) return;
  const errors = validate.errors ?? [];
  const violations: InputViolation[] = errors.slice(0, INPUT_VIOLATIONS_NAMED).map((e) => ({
    instancePath: e.instancePath,
    keyword: e.keyword,
    schemaPath: e.schemaPath,
    message: e.message ?? 'is not valid',
  }));
  const named = violations.map(
    (v) => `input${v.instancePath} ${v.message} (${v.keyword} at ${v.schemaPath})`,
  );
  if (errors.length > INPUT_VIOLATIONS_NAMED)
    named.push(`… and ${errors.length - INPUT_VIOLATIONS_NAMED} more`);
  throw new TaskplaneError(
    'unprocessable',
    `target ${target} does not take this input: ${named.join('; ') || 'it does not match the input schema'}`,
    { field: 'input', details: { violations } },
  );
}

/** The output the schema is checked against: the remote's result when it gave one, else its artifacts' contents. */
function outputOf(envelope: Envelope, artifactContents: unknown[]): unknown {
  if (envelope.result !== undefined && envelope.result !== null) return envelope.result;
  return artifactContents.length === 1 ? artifactContents[0] : artifactContents;
}

/**
 * Decides acceptance for an envelope that just reached a terminal state; null when none was asked for.
 * The checks run in order (schema, artifact hash pins, receipt, then the external verifier), each recorded
 * with its verdict and reasons, and the first that fails rejects: later ones are not run on an output
 * already rejected. With a verifier the record stays `pending`, its call due now (plane/verifier.ts).
 * Never throws: a schema that no longer compiles (stored under older rules) or a validator that fails
 * rejects this job with the reason, instead of failing the observation that carries its terminal state.
 */
export function decideAcceptance(
  envelope: Envelope,
  artifactContents: unknown[],
  now: number,
): AcceptanceRecord | null {
  const current = envelope.acceptance;
  if (!current || current.status !== 'pending') return current;
  if (envelope.state !== 'succeeded') {
    return { ...current, status: 'rejected', reasons: [`task ended ${envelope.state}`], decidedAt: now };
  }
  const output = outputOf(envelope, artifactContents);
  const checks: AcceptanceCheck[] = [];
  let receiptId: string | undefined;
  const run: Array<() => AcceptanceCheck> = [];
  if (current.schema) run.push(() => schemaCheck(current.schema!, output));
  if (current.artifactHashes) run.push(() => artifactHashCheck(current.artifactHashes!, envelope.artifacts));
  if (current.receipt)
    run.push(() => {
      const r = receiptCheck(current.receipt!.pointer, output);
      receiptId = r.receiptId;
      return r.check;
    });
  for (const check of run) {
    const result = check();
    checks.push(result);
    if (result.verdict === 'failed') break;
  }
  const failed = checks.find((c) => c.verdict === 'failed');
  if (!failed && current.verifier) {
    // The external verifier decides last (plane/verifier.ts): until it answers, acceptance is pending.
    return {
      ...current,
      reasons: ['waiting for the verifier'],
      ...(checks.length > 0 ? { checks } : {}),
      ...(receiptId !== undefined ? { receiptId } : {}),
      verification: { dueAt: now, attempts: 0, lastError: null, outcome: null },
    };
  }
  return {
    ...current,
    status: failed ? 'rejected' : 'accepted',
    reasons: failed ? failed.reasons : [],
    ...(checks.length > 0 ? { checks } : {}),
    ...(receiptId !== undefined ? { receiptId } : {}),
    decidedAt: now,
  };
}

function schemaCheck(schema: Record<string, unknown>, output: unknown): AcceptanceCheck {
  const failed = (reasons: string[]): AcceptanceCheck => ({ check: 'schema', verdict: 'failed', reasons });
  let validate: ValidateFunction;
  let valid: boolean;
  try {
    validate = compiledFor(schema).validate;
    valid = validate(output) === true;
  } catch (err) {
    return failed([`acceptance schema could not be checked: ${(err as Error)?.message ?? String(err)}`]);
  }
  if (valid) return { check: 'schema', verdict: 'passed', reasons: [] };
  const errors = validate.errors ?? [];
  const reasons = errors
    .slice(0, REASONS_KEPT)
    .map((e) => `${e.instancePath || '/'} ${e.message ?? 'invalid'}`);
  if (errors.length > REASONS_KEPT) reasons.push(`… and ${errors.length - REASONS_KEPT} more`);
  return failed(reasons.length ? reasons : ['output does not match schema']);
}
