import { TaskplaneError } from '../../core/errors.ts';
import { McpError } from '../../protocols/mcp/errors.ts';
import { decodeInputResponses } from '../../protocols/mcp/input.ts';
import type { InputResponses, JsonObject, JsonValue } from '../../protocols/mcp/types.ts';
import type { RemoteInputRequest } from '../connector.ts';
import { asJsonObject } from './task-snapshot.ts';

/**
 * Input on the MCP connector's side: the state of an MRTR exchange (2026-07-28 input rounds before any
 * task exists) and how it travels in the envelope's cursor across a plane restart, a caller's answer as
 * an MCP input response, and the refusal of a key that is not outstanding.
 */

/** One MRTR exchange the connector holds: the call to repeat and what was answered so far. */
export interface Mrtr {
  name: string;
  args: JsonObject;
  contextId: string | null;
  requestState?: string;
  requests: RemoteInputRequest[];
  responses: InputResponses;
  round: number;
}

/** The refusal of an answer to a key that is not outstanding, naming the keys that are. */
export function staleKey(key: string, outstanding: RemoteInputRequest[]): TaskplaneError {
  const keys = outstanding.map((r) => r.requestId);
  return new TaskplaneError(
    'conflict',
    `requestId: '${key}' is not an outstanding input request of this task (outstanding: ${keys.join(', ') || 'none'})`,
    { field: 'requestId', retryable: false },
  );
}

/**
 * A caller's answer as an MCP input response. An elicitation answer may be given whole
 * (`{action, content}`) or as its content alone, which means "accept" with that content.
 */
export function inputResponse(key: string, value: unknown): JsonObject {
  const v = value && typeof value === 'object' && !Array.isArray(value) ? (value as JsonObject) : null;
  const whole = v && ('action' in v || 'roots' in v || 'model' in v);
  const response = whole
    ? v
    : { action: 'accept', content: (v ?? { value: value as JsonValue }) as JsonObject };
  try {
    return decodeInputResponses({ [key]: response }, 'value')[key]!;
  } catch (err) {
    if (err instanceof McpError)
      throw new TaskplaneError('invalid_argument', err.message.replace(/^Invalid params: /, ''), {
        field: err.field ?? 'value',
        retryable: false,
      });
    throw err;
  }
}

/** An MRTR round as the envelope keeps it (its stream cursor), so an answer survives a plane restart. */
export function mrtrCursor(m: Mrtr): string {
  return JSON.stringify({ mrtr: 1, ...m });
}

export function mrtrFromCursor(cursor: string | null | undefined): Mrtr | undefined {
  if (!cursor) return undefined;
  try {
    const v = JSON.parse(cursor) as Partial<Mrtr> & { mrtr?: number };
    if (
      v.mrtr !== 1 ||
      typeof v.name !== 'string' ||
      !Array.isArray(v.requests) ||
      typeof v.round !== 'number'
    )
      return undefined;
    return {
      name: v.name,
      args: asJsonObject(v.args),
      contextId: typeof v.contextId === 'string' ? v.contextId : null,
      requests: v.requests,
      responses: asJsonObject(v.responses) as InputResponses,
      round: v.round,
      ...(typeof v.requestState === 'string' ? { requestState: v.requestState } : {}),
    };
  } catch {
    return undefined;
  }
}
