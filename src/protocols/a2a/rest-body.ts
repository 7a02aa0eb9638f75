import { asObject } from './decode.ts';
import { checkJsonContentType, parseJson, type HttpRequest } from './http-common.ts';

// The HTTP+JSON request body and path verb, read the same way for A2A 1.0 (rest-core.ts) and 0.3
// (v03/rest.ts).

/** A body's limits: bytes while it streams in, nesting levels when it is parsed. */
export interface BodyLimits {
  bytes: number;
  depth: number;
}

/** The JSON object body; an empty or blank one is `{}`. */
export async function readBody(req: HttpRequest, limits: BodyLimits): Promise<Record<string, unknown>> {
  checkJsonContentType(req);
  const text = await req.text(limits.bytes);
  if (text.trim() === '') return {};
  return asObject(parseJson(text, limits.depth), 'body');
}

/** Splits `abc:cancel` into id and verb; ids of ours never contain `:`. */
export function splitVerb(segment: string): [string, string | undefined] {
  const i = segment.lastIndexOf(':');
  return i < 0 ? [segment, undefined] : [segment.slice(0, i), segment.slice(i + 1)];
}
