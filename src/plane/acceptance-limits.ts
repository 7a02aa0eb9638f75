import { configError } from '../core/errors.ts';

/**
 * Bounds on a caller's acceptance schema. A schema is tenant input that the plane compiles into code and
 * runs against every output, so its size bounds the compile work and the generated code, its depth bounds
 * the recursion of the compiler, and the pattern length bounds the per-character cost of each regular
 * expression (linear-time, but still proportional to the pattern's size).
 */
export interface AcceptanceLimitsOptions {
  /**
   * Largest schema, measured as its canonical JSON in UTF-8 bytes. Compiling a schema costs in
   * proportion to its size (on the event loop when the plane has no off-loop compiler, as in the lab),
   * so this bounds the work one create can cause; real acceptance schemas are a few KiB. @default 16384
   */
  maxSchemaBytes?: number;
  /** Deepest nesting of objects and arrays in a schema (the schema object itself is depth 1). @default 32 */
  maxSchemaDepth?: number;
  /** Longest `pattern`, `patternProperties` key or other regular expression, in characters. @default 1024 */
  maxPatternLength?: number;
  /**
   * Longest a schema may take to compile when the plane compiles off the event loop (the server does, in
   * a worker thread); past it the compile is stopped and the schema refused, and refused at once when
   * sent again. @default 2000
   */
  compileTimeoutMs?: number;
  /** Per-call timeout of an external verifier, when the task or target names none. @default 10000 */
  verifierTimeoutMs?: number;
  /**
   * Verifier calls before giving up (acceptance then stays `pending` with the last error as its reason),
   * when the task or target names none. @default 5
   */
  verifierMaxAttempts?: number;
  /** First wait before a verifier call is retried; it doubles per attempt up to 5 min, with full jitter. @default 1000 */
  verifierRetryMs?: number;
  /**
   * A verifier per target name: every task of that target is verified there after its other checks (a
   * task's own `acceptance.verifier` wins). Its URL is checked at each call like a task's. @default {}
   */
  verifiers?: Record<string, { url: string; timeoutMs?: number; maxAttempts?: number }>;
}

export type AcceptanceLimits = Required<AcceptanceLimitsOptions>;

export const defaultAcceptanceLimits: AcceptanceLimits = {
  maxSchemaBytes: 16_384,
  maxSchemaDepth: 32,
  maxPatternLength: 1024,
  compileTimeoutMs: 2000,
  verifierTimeoutMs: 10_000,
  verifierMaxAttempts: 5,
  verifierRetryMs: 1000,
  verifiers: {},
};

function positiveInteger(field: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw configError(field, 'must be an integer >= 1');
  return value;
}

export function acceptanceLimits(options: AcceptanceLimitsOptions = {}): AcceptanceLimits {
  const d = defaultAcceptanceLimits;
  return {
    maxSchemaBytes: positiveInteger('acceptance.maxSchemaBytes', options.maxSchemaBytes ?? d.maxSchemaBytes),
    maxSchemaDepth: positiveInteger('acceptance.maxSchemaDepth', options.maxSchemaDepth ?? d.maxSchemaDepth),
    maxPatternLength: positiveInteger(
      'acceptance.maxPatternLength',
      options.maxPatternLength ?? d.maxPatternLength,
    ),
    compileTimeoutMs: positiveInteger(
      'acceptance.compileTimeoutMs',
      options.compileTimeoutMs ?? d.compileTimeoutMs,
    ),
    verifierTimeoutMs: positiveInteger(
      'acceptance.verifierTimeoutMs',
      options.verifierTimeoutMs ?? d.verifierTimeoutMs,
    ),
    verifierMaxAttempts: positiveInteger(
      'acceptance.verifierMaxAttempts',
      options.verifierMaxAttempts ?? d.verifierMaxAttempts,
    ),
    verifierRetryMs: positiveInteger(
      'acceptance.verifierRetryMs',
      options.verifierRetryMs ?? d.verifierRetryMs,
    ),
    verifiers: targetVerifiers(options.verifiers ?? {}),
  };
}

function targetVerifiers(
  verifiers: Record<string, { url: string; timeoutMs?: number; maxAttempts?: number }>,
): AcceptanceLimits['verifiers'] {
  const out: AcceptanceLimits['verifiers'] = {};
  for (const [target, v] of Object.entries(verifiers)) {
    const field = `acceptance.verifiers.${target}`;
    let url: URL | null = null;
    try {
      url = new URL(v?.url);
    } catch {
      url = null;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
      throw configError(`${field}.url`, 'must be an http(s) URL');
    if (url.username !== '' || url.password !== '')
      throw configError(`${field}.url`, 'must not carry credentials: requests are signed');
    out[target] = {
      url: v.url,
      ...(v.timeoutMs !== undefined ? { timeoutMs: positiveInteger(`${field}.timeoutMs`, v.timeoutMs) } : {}),
      ...(v.maxAttempts !== undefined
        ? { maxAttempts: positiveInteger(`${field}.maxAttempts`, v.maxAttempts) }
        : {}),
    };
  }
  return out;
}
