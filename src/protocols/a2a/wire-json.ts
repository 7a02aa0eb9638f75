/**
 * JSON text of wire objects, memoized per object: when one event fans out to 100 SSE subscribers the
 * handler hands every stream the same payload object, so it is serialized once, not 100 times.
 * Payloads must not be mutated after they are first serialized (the host never does).
 */
const cache = new WeakMap<object, string>();

export function wireJson(value: object): string {
  let text = cache.get(value);
  if (text === undefined) {
    text = JSON.stringify(value);
    cache.set(value, text);
  }
  return text;
}
