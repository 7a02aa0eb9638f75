import { McpError, invalidParams } from './errors.ts';
import type { JsonObject, JsonValue } from './types.ts';
import { isObj, type Obj } from '../../core/json-object.ts';

export { isObj, type Obj };

/**
 * Field readers shared by the MCP decoders. Each names the full path of what it reads in the error
 * (`params.inputResponses["k"].action`), and throws only McpError. `fail` picks the error kind, so
 * the same readers serve requests (-32602 to the client) and results (a peer that answered badly).
 */

export type Fail = (field: string, reason: string) => McpError;

/** JSON nesting bound: deeper input is refused instead of risking the stack on hostile bodies. */
const MAX_DEPTH = 64;

export function obj(v: unknown, path: string, fail: Fail = invalidParams): Obj {
  if (!isObj(v)) throw fail(path, 'expected an object');
  return v;
}

export function optObj(o: Obj, key: string, path: string, fail: Fail = invalidParams): Obj | undefined {
  const v = own(o, key);
  return v === undefined ? undefined : obj(v, `${path}.${key}`, fail);
}

/** Own properties only: `__proto__` and inherited names never count as present. */
export function own(o: Obj, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(o, key) ? o[key] : undefined;
}

export function str(o: Obj, key: string, path: string, fail: Fail = invalidParams): string {
  const v = own(o, key);
  if (typeof v !== 'string') throw fail(`${path}.${key}`, v === undefined ? 'required' : 'expected a string');
  return v;
}

export function optStr(o: Obj, key: string, path: string, fail: Fail = invalidParams): string | undefined {
  return own(o, key) === undefined ? undefined : str(o, key, path, fail);
}

export function nonEmptyStr(o: Obj, key: string, path: string, fail: Fail = invalidParams): string {
  const v = str(o, key, path, fail);
  if (v.length === 0) throw fail(`${path}.${key}`, 'must not be empty');
  return v;
}

export function optBool(o: Obj, key: string, path: string, fail: Fail = invalidParams): boolean | undefined {
  const v = own(o, key);
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') throw fail(`${path}.${key}`, 'expected a boolean');
  return v;
}

/** A safe integer ≥ `min`. */
export function int(v: unknown, field: string, min: number, fail: Fail = invalidParams): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw fail(field, 'expected an integer');
  if (v < min) throw fail(field, `must be at least ${min}`);
  return v;
}

export function optInt(
  o: Obj,
  key: string,
  path: string,
  min: number,
  fail: Fail = invalidParams,
): number | undefined {
  const v = own(o, key);
  return v === undefined ? undefined : int(v, `${path}.${key}`, min, fail);
}

export function strArray(v: unknown, field: string, fail: Fail = invalidParams): string[] {
  if (!Array.isArray(v)) throw fail(field, 'expected an array of strings');
  v.forEach((s, i) => {
    if (typeof s !== 'string') throw fail(`${field}[${i}]`, 'expected a string');
  });
  return v as string[];
}

/** `v` as plain JSON: refuses non-JSON values (undefined, functions, NaN) and excessive nesting. */
export function json(v: unknown, field: string, fail: Fail = invalidParams, depth = 0): JsonValue {
  if (depth > MAX_DEPTH) throw fail(field, 'nested too deeply');
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw fail(field, 'expected a finite number');
    return v;
  }
  if (Array.isArray(v)) {
    v.forEach((x, i) => json(x, `${field}[${i}]`, fail, depth + 1));
    return v as JsonValue[];
  }
  if (isObj(v)) {
    for (const k of Object.keys(v)) json(v[k], `${field}.${k}`, fail, depth + 1);
    return v as JsonObject;
  }
  throw fail(field, 'expected JSON');
}

export function jsonObj(v: unknown, field: string, fail: Fail = invalidParams): JsonObject {
  obj(v, field, fail);
  return json(v, field, fail) as JsonObject;
}

export function optJsonObj(
  o: Obj,
  key: string,
  path: string,
  fail: Fail = invalidParams,
): JsonObject | undefined {
  const v = own(o, key);
  return v === undefined ? undefined : jsonObj(v, `${path}.${key}`, fail);
}

/** A map key rendered so a reader can find it: `inputRequests["a.b"]`. */
export function keyPath(path: string, key: string): string {
  return `${path}[${JSON.stringify(key)}]`;
}
