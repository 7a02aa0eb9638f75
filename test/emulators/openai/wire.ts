/** OpenAI's wire rules for requests and errors, as the emulator enforces them. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { FAULTS_METADATA_KEY, FaultInputError } from './faults.ts';

/** Thrown by routes; the one handler in `handle` turns it into OpenAI's JSON error body. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const invalid = (message: string, param: string | null, code: string | null = null) =>
  new ApiError(400, message, 'invalid_request_error', param, code);

const MAX_BODY_BYTES = 1 << 20;

export function sendJson(res: ServerResponse, body: Record<string, unknown>): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

export async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new ApiError(413, 'Request body too large.', 'invalid_request_error');
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw invalid('We could not parse the JSON body of your request.', null);
  }
}

export function startingAfter(raw: string | null): number {
  if (raw === null) return -1;
  if (!/^\d+$/.test(raw))
    throw invalid("Invalid 'starting_after': expected a non-negative integer.", 'starting_after');
  return Number(raw);
}

/** The text of `input`: a string, or the text parts of a list of message items. */
export function inputText(input: unknown): string {
  if (typeof input === 'string') return input;
  if (Array.isArray(input)) {
    const texts: string[] = [];
    for (const item of input as unknown[]) {
      const content = (item as { content?: unknown } | null)?.content;
      if (typeof content === 'string') texts.push(content);
      else if (Array.isArray(content)) {
        for (const part of content as unknown[]) {
          const text = (part as { text?: unknown } | null)?.text;
          if (typeof text === 'string') texts.push(text);
        }
      } else throw invalid("Invalid 'input': each item needs a 'content'.", 'input');
    }
    return texts.join('\n');
  }
  throw invalid("Missing required parameter: 'input'.", 'input', 'missing_required_parameter');
}

/** OpenAI's metadata rules: at most 16 string values, keys up to 64 and values up to 512 characters. */
export function parseMetadata(raw: unknown): Record<string, string> {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== 'object' || Array.isArray(raw))
    throw invalid("Invalid 'metadata': expected an object.", 'metadata');
  const entries = Object.entries(raw as Record<string, unknown>);
  if (entries.length > 16) throw invalid("Invalid 'metadata': at most 16 keys.", 'metadata');
  const out: Record<string, string> = {};
  for (const [k, v] of entries) {
    if (k.length > 64)
      throw invalid(`Invalid 'metadata': key '${k.slice(0, 16)}…' is longer than 64.`, 'metadata');
    if (typeof v !== 'string' || v.length > 512) {
      throw invalid(`Invalid 'metadata.${k}': expected a string of at most 512 characters.`, `metadata.${k}`);
    }
    out[k] = v;
  }
  return out;
}

export function parseFaultJson(raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    throw new FaultInputError(
      `metadata.${FAULTS_METADATA_KEY}`,
      `metadata.${FAULTS_METADATA_KEY} is not valid JSON`,
    );
  }
}
