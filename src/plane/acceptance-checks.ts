import type { AcceptanceCheck, AcceptanceRecord, ArtifactRef } from '../core/envelope.ts';
import { TaskplaneError } from '../core/errors.ts';

/**
 * The acceptance checks beyond the output schema (acceptance.ts runs them in order after it): artifact
 * hash pins, and a required receipt. Both are given by the caller at creation and checked only against
 * what the remote produced; nothing is inferred.
 */

/** Most artifact hash pins one task may carry. */
export const MAX_ARTIFACT_PINS = 32;
/** Longest receipt pointer (RFC 6901). */
const MAX_POINTER_CHARS = 512;
const HASH = /^sha256:[0-9a-f]{64}$/;
/** Longest receipt id kept: an id, not a document. */
const MAX_RECEIPT_ID_CHARS = 256;

const refuse = (field: string, message: string) =>
  new TaskplaneError('invalid_argument', `${field}: ${message}`, { field });

/**
 * Validates the pins and receipt of a create's `acceptance` and returns them as stored. Throws
 * invalid_argument naming the field (`acceptance.artifactHashes.report`, `acceptance.receipt.pointer`).
 */
export function checkAcceptanceExtras(
  acceptance: { artifactHashes?: unknown; receipt?: unknown } | null | undefined,
): Pick<AcceptanceRecord, 'artifactHashes' | 'receipt'> {
  const out: Pick<AcceptanceRecord, 'artifactHashes' | 'receipt'> = {};
  const pins = acceptance?.artifactHashes;
  if (pins !== undefined) {
    if (typeof pins !== 'object' || pins === null || Array.isArray(pins))
      throw refuse('acceptance.artifactHashes', 'must be an object of artifact id or name → "sha256:<hex>"');
    const entries = Object.entries(pins);
    if (entries.length === 0 || entries.length > MAX_ARTIFACT_PINS)
      throw refuse('acceptance.artifactHashes', `must pin 1 to ${MAX_ARTIFACT_PINS} artifacts`);
    for (const [name, hash] of entries) {
      if (typeof hash !== 'string' || !HASH.test(hash))
        throw refuse(`acceptance.artifactHashes.${name}`, 'must be "sha256:" and 64 lowercase hex digits');
    }
    out.artifactHashes = Object.fromEntries(entries) as Record<string, string>;
  }
  const receipt = acceptance?.receipt;
  if (receipt !== undefined) {
    const pointer = (receipt as { pointer?: unknown } | null)?.pointer;
    if (typeof receipt !== 'object' || receipt === null || Array.isArray(receipt))
      throw refuse('acceptance.receipt', 'must be an object {pointer}');
    if (
      typeof pointer !== 'string' ||
      pointer.length > MAX_POINTER_CHARS ||
      (pointer !== '' && !pointer.startsWith('/'))
    )
      throw refuse(
        'acceptance.receipt.pointer',
        `must be a JSON Pointer (RFC 6901: "" or starting with "/") of at most ${MAX_POINTER_CHARS} characters`,
      );
    out.receipt = { pointer };
  }
  return out;
}

/** Each pinned artifact (by id, else by name) must exist and hash to the pinned value. */
export function artifactHashCheck(pins: Record<string, string>, artifacts: ArtifactRef[]): AcceptanceCheck {
  const reasons: string[] = [];
  for (const [name, expected] of Object.entries(pins)) {
    const found = artifacts.find((a) => a.artifactId === name) ?? artifacts.find((a) => a.name === name);
    if (!found) reasons.push(`artifact ${name} was not produced`);
    else if (found.hash !== expected)
      reasons.push(`artifact ${name} hashes to ${found.hash}, not the pinned ${expected}`);
  }
  return { check: 'artifact_hash', verdict: reasons.length === 0 ? 'passed' : 'failed', reasons };
}

/** The value at `pointer` in `output` must be a receipt id: a non-empty string or a number. */
export function receiptCheck(
  pointer: string,
  output: unknown,
): { check: AcceptanceCheck; receiptId?: string } {
  const value = resolvePointer(output, pointer);
  const id = typeof value === 'number' && Number.isFinite(value) ? String(value) : value;
  if (typeof id !== 'string' || id === '')
    return {
      check: {
        check: 'receipt',
        verdict: 'failed',
        reasons: [`no receipt id at ${pointer || '(the whole output)'} in the output`],
      },
    };
  return {
    check: { check: 'receipt', verdict: 'passed', reasons: [] },
    receiptId: id.slice(0, MAX_RECEIPT_ID_CHARS),
  };
}

/** RFC 6901 lookup; undefined where the path does not exist. */
export function resolvePointer(value: unknown, pointer: string): unknown {
  if (pointer === '') return value;
  let at: unknown = value;
  for (const raw of pointer.slice(1).split('/')) {
    const token = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(at)) {
      if (!/^(0|[1-9][0-9]*)$/.test(token)) return undefined;
      at = at[Number(token)];
    } else if (typeof at === 'object' && at !== null && Object.hasOwn(at, token)) {
      at = (at as Record<string, unknown>)[token];
    } else return undefined;
  }
  return at;
}
