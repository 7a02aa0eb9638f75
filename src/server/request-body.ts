import { JsonDepthScanner, JsonTooDeepError, parseBoundedJson } from '../core/bounded-json.ts';
import { TaskplaneError } from '../core/errors.ts';
import { readLimitedBody } from '../protocols/http-body.ts';

/**
 * The one way the plane's routes read a request body: counted in bytes while it streams in, so a body
 * over the limit is refused (413) after at most `limit` bytes are held, never read whole first; and
 * JSON parsed with a nesting limit (400), so no later step recurses past the stack.
 */
export interface BodyLimits {
  /** Bytes a body may have. */
  maxBytes: number;
  /** Nesting levels of arrays and objects a JSON body may have. */
  maxJsonDepth: number;
}

/** What the API routes take. A task's input is carried inline; large content belongs behind a URL. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/**
 * What the webhook route takes. It answers callers without an API key, and a push is a wake-up signal
 * (the plane fetches the task when it needs more), so its limit is small.
 */
export const DEFAULT_MAX_WEBHOOK_BYTES = 64 * 1024;

/**
 * A refused body still arriving would be read to its end (up to 64 MiB) to keep the connection; these
 * errors carry `closeConnection`, and the answer closes it instead (RFC 9110 §15.5.14 allows it for 413).
 */
export function payloadTooLarge(limit: number): TaskplaneError {
  return new TaskplaneError('payload_too_large', `body: larger than ${limit} bytes`, {
    field: 'body',
    details: { closeConnection: true },
  });
}

export function tooDeep(maxDepth: number): TaskplaneError {
  return new TaskplaneError('invalid_argument', `body: ${new JsonTooDeepError(maxDepth).message}`, {
    field: 'body',
    details: { closeConnection: true },
  });
}

/**
 * The body as UTF-8 text. A declared Content-Length over the limit is refused before any byte is read;
 * otherwise the stream is counted chunk by chunk and cancelled at the first chunk past the limit. With
 * `maxJsonDepth`, nesting is scanned as the chunks arrive and a body past it is refused there too.
 */
export async function readBodyText(
  req: Request,
  maxBytes: number,
  maxJsonDepth?: number,
  pace?: BodyPace,
): Promise<string> {
  const depth = maxJsonDepth === undefined ? null : new JsonDepthScanner(maxJsonDepth);
  const scan = depth ? (chunk: Uint8Array) => (depth.feed(chunk) ? null : tooDeep(depth.maxDepth)) : null;
  const inspect = pace
    ? (chunk: Uint8Array) => {
        const refused = scan?.(chunk) ?? null;
        const wait = refused ? undefined : pace(chunk.byteLength);
        return wait ? wait.then(() => null) : refused;
      }
    : (scan ?? undefined);
  const text = await readLimitedBody(req, maxBytes, () => payloadTooLarge(maxBytes), inspect);
  bodiesRead.add(req);
  return text;
}

/**
 * Counts a chunk's bytes against the sender's body rate; a promise means: read the next chunk once it
 * settles (server/tenant-limits.ts paceBody).
 */
export type BodyPace = (bytes: number) => Promise<void> | undefined;

/** Requests whose body was read to its end (readBodyText): their connection can carry the next request. */
const bodiesRead = new WeakSet<Request>();

/**
 * Whether `req` came with a body that nobody read to its end: refused before it was read (401, 403, 404,
 * 429) or part way. Answering keeps it arriving; @hono/node-server would then read and discard up to
 * 64 MiB of it to keep the connection, so the answer closes the connection instead (http-errors.ts).
 */
export function bodyLeftUnread(req: Request): boolean {
  if (bodiesRead.has(req) || req.method === 'GET' || req.method === 'HEAD') return false;
  const declared = req.headers.get('content-length');
  if (declared !== null) return Number(declared) > 0;
  if (req.headers.has('transfer-encoding')) return true;
  return req.body !== null && !req.bodyUsed;
}

/** Parses `text` as JSON within the depth limit; bad or too deep JSON is a 400 naming `body`. */
export function parseJsonBody(text: string, maxJsonDepth: number): unknown {
  try {
    return parseBoundedJson(text, maxJsonDepth);
  } catch (err) {
    const message = err instanceof JsonTooDeepError ? err.message : 'not valid JSON';
    throw new TaskplaneError('invalid_argument', `body: ${message}`, { field: 'body' });
  }
}

/**
 * A body sent as something other than JSON (`curl -d` sends `application/x-www-form-urlencoded`) is
 * refused with 415 before it is read, saying what to send. No Content-Type at all is taken as JSON.
 */
function requireJsonContentType(req: Request): void {
  const type = req.headers.get('content-type');
  if (type === null) return;
  const media = type.split(';')[0]!.trim().toLowerCase();
  if (media === 'application/json' || /^application\/[\w.+-]+\+json$/.test(media)) return;
  throw new TaskplaneError(
    'unsupported_media_type',
    `body: Content-Type ${media || '(empty)'} is not JSON; send Content-Type: application/json`,
    { field: 'content-type', details: { closeConnection: true } },
  );
}

/** A JSON object body within the limits, read at `pace`; an empty body is `{}`. */
export async function readJsonObject(
  req: Request,
  limits: BodyLimits,
  pace?: BodyPace,
): Promise<Record<string, unknown>> {
  requireJsonContentType(req);
  const text = await readBodyText(req, limits.maxBytes, limits.maxJsonDepth, pace);
  if (!text) return {};
  const body = parseJsonBody(text, limits.maxJsonDepth);
  if (!body || typeof body !== 'object' || Array.isArray(body))
    throw new TaskplaneError('invalid_argument', 'body: must be a JSON object', { field: 'body' });
  return body as Record<string, unknown>;
}
