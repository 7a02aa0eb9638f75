import { Ajv, type ValidateFunction } from 'ajv';
import type { AcceptanceRecord, Envelope } from '../core/envelope.ts';
import { TaskplaneError } from '../core/errors.ts';

/**
 * Business acceptance, kept apart from task completion (seed 000, "Separate task completion from
 * business acceptance"): a job can succeed remotely and still be rejected here because its output does
 * not match the schema the caller gave at creation.
 */
const ajv = new Ajv({ allErrors: true, strict: false });
const compiled = new WeakMap<object, ValidateFunction>();

function validatorFor(schema: Record<string, unknown>): ValidateFunction {
  let fn = compiled.get(schema);
  if (!fn) {
    fn = ajv.compile(schema);
    compiled.set(schema, fn);
  }
  return fn;
}

/** Throws invalid_argument (field `acceptance.schema`) when the schema itself does not compile. */
export function checkAcceptanceSchema(schema: unknown): Record<string, unknown> {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    throw new TaskplaneError('invalid_argument', 'acceptance.schema: must be a JSON Schema object', {
      field: 'acceptance.schema',
    });
  }
  try {
    ajv.compile(schema);
  } catch (err) {
    throw new TaskplaneError('invalid_argument', `acceptance.schema: ${(err as Error).message}`, {
      field: 'acceptance.schema',
    });
  }
  return schema as Record<string, unknown>;
}

/** The output the schema is checked against: the remote's result when it gave one, else its artifacts' contents. */
function outputOf(envelope: Envelope, artifactContents: unknown[]): unknown {
  if (envelope.result !== undefined && envelope.result !== null) return envelope.result;
  return artifactContents.length === 1 ? artifactContents[0] : artifactContents;
}

/** Decides acceptance for an envelope that just reached a terminal state; null when none was asked for. */
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
  if (!current.schema) return { ...current, status: 'accepted', reasons: [], decidedAt: now };
  const validate = validatorFor(current.schema);
  if (validate(outputOf(envelope, artifactContents))) {
    return { ...current, status: 'accepted', reasons: [], decidedAt: now };
  }
  const reasons = (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? 'invalid'}`);
  return {
    ...current,
    status: 'rejected',
    reasons: reasons.length ? reasons : ['output does not match schema'],
    decidedAt: now,
  };
}
