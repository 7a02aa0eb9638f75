import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The wire edges of the emulated Claude API: the error envelope, JSON answers, cursor pages. Every
 * JSON answer carries `content-type: application/json` (the SDK hands back a string otherwise) and a
 * `request-id` header (the SDK reads it into `_request_id`).
 */

export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'api_error'
  | 'overloaded_error';

/** Thrown by routes; the one handler in the server turns it into the error envelope. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: ErrorType,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const badRequest = (message: string) => new ApiError(400, 'invalid_request_error', message);
export const notFound = (what: string, id: string) =>
  new ApiError(404, 'not_found_error', `${what} ${id} not found`);

export function sendJson(res: ServerResponse, status: number, body: unknown, requestId: string): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'request-id': requestId,
  });
  res.end(text);
}

export function sendError(res: ServerResponse, err: ApiError, requestId: string): void {
  const text = JSON.stringify({
    type: 'error',
    error: { type: err.type, message: err.message },
    request_id: requestId,
  });
  res.writeHead(err.status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'request-id': requestId,
    ...err.headers,
  });
  res.end(text);
}

const MAX_BODY_BYTES = 1 << 20;

export async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new ApiError(413, 'invalid_request_error', 'request body too large');
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw badRequest('body: not valid JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw badRequest('body: must be a JSON object');
  return parsed as Record<string, unknown>;
}

/** A cursor is the offset into the ordered list, opaque to the client. */
export function page<T>(
  items: T[],
  query: URLSearchParams,
  defaultLimit: number,
): { data: T[]; next_page: string | null; prev_page: string | null } {
  const limitText = query.get('limit');
  const limit = limitText === null ? defaultLimit : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
    throw badRequest('limit: must be an integer from 1 to 1000');
  const cursor = query.get('page');
  let offset = 0;
  if (cursor !== null) {
    const decoded = Buffer.from(cursor, 'base64url').toString('utf8');
    if (!/^off:\d+$/.test(decoded)) throw badRequest('page: not a cursor this server issued');
    offset = Number(decoded.slice(4));
  }
  const data = items.slice(offset, offset + limit);
  const next = offset + limit < items.length ? encodeCursor(offset + limit) : null;
  const prev = offset > 0 ? encodeCursor(Math.max(0, offset - limit)) : null;
  return { data, next_page: next, prev_page: prev };
}

function encodeCursor(offset: number): string {
  return Buffer.from(`off:${offset}`, 'utf8').toString('base64url');
}

/** `order=asc|desc` (asc by default), naming the field when it is neither. */
export function order(query: URLSearchParams): 'asc' | 'desc' {
  const value = query.get('order') ?? 'asc';
  if (value !== 'asc' && value !== 'desc') throw badRequest('order: must be asc or desc');
  return value;
}

export function requireString(body: Record<string, unknown>, field: string): string {
  const value = body[field];
  if (typeof value !== 'string' || value === '') throw badRequest(`${field}: must be a non-empty string`);
  return value;
}
