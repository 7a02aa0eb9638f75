/** A decoded JSON object, before its fields are checked. */
export type Obj = Record<string, unknown>;

/** A JSON object: not null, not an array. What every wire decoder asks first. */
export function isObj(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
