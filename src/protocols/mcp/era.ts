import { methodNotFound, missingRequiredClientCapability, unsupportedProtocolVersion } from './errors.ts';
import {
  LEGACY_PROTOCOL_VERSION,
  MODERN_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
  TASKS_EXTENSION,
  type ClientCapabilities,
  type JsonObject,
  type JsonValue,
  type RequestMeta,
  type ServerCapabilities,
} from './types.ts';

/**
 * Which protocol generation a version belongs to, and the negotiation rules of each: a modern
 * (2026-07-28) exchange is per request (`_meta`, `server/discover`), a legacy one is fixed at
 * `initialize`. The tasks features never mix: on a legacy version only the experimental core tasks
 * apply, on the modern one only the extension.
 */

export type Era = 'modern' | 'legacy';

export function eraOf(version: string): Era | undefined {
  if (version === MODERN_PROTOCOL_VERSION) return 'modern';
  return (SUPPORTED_PROTOCOL_VERSIONS as readonly string[]).includes(version) ? 'legacy' : undefined;
}

/**
 * The version a legacy server answers `initialize` with: the client's own when supported, else the
 * newest legacy one (the client then decides whether it can go on). Never the modern version, which
 * has no `initialize`.
 */
export function negotiateInitializeVersion(requested: string): string {
  return eraOf(requested) === 'legacy' ? requested : LEGACY_PROTOCOL_VERSION;
}

/** The newest version both sides support, from the server's `server/discover` list. */
export function pickVersion(
  serverSupported: readonly string[],
  clientSupported: readonly string[] = SUPPORTED_PROTOCOL_VERSIONS,
): string | undefined {
  return clientSupported.find((v) => serverSupported.includes(v));
}

/**
 * What a failed `server/discover` means for a client probing the era. A legacy server answers it as
 * an unknown method or, when stateful, refuses it for lacking the state `initialize` sets up (HTTP 400); those mean "try
 * `initialize`". Authentication failures and server errors are not era answers and are reported as is.
 */
export function discoverFallback(httpStatus: number, rpcCode?: number): 'legacy' | 'error' {
  if (httpStatus === 401 || httpStatus === 403 || httpStatus >= 500) return 'error';
  if (httpStatus === 404 || httpStatus === 405 || httpStatus === 400) return 'legacy';
  if (rpcCode === -32601 || rpcCode === -32600 || rpcCode === -32000) return 'legacy';
  return 'error';
}

function isObject(v: JsonValue | undefined): v is JsonObject {
  return v !== null && v !== undefined && typeof v === 'object' && !Array.isArray(v);
}

/** Whether this request declared the tasks extension. Only this request's `_meta` counts. */
export function declaresTasks(capabilities: ClientCapabilities | RequestMeta): boolean {
  const caps: ClientCapabilities =
    'raw' in capabilities && 'protocolVersion' in capabilities
      ? (capabilities as RequestMeta).clientCapabilities
      : (capabilities as ClientCapabilities);
  const ext = caps.extensions;
  return isObject(ext as JsonValue | undefined) && isObject((ext as JsonObject)[TASKS_EXTENSION]);
}

/**
 * The era a stateless request's `_meta` version selects, or -32022 with the supported list. The HTTP
 * header check does the same from `MCP-Protocol-Version`; this covers transports without headers.
 */
export function eraOfRequest(meta: RequestMeta): Era {
  const era = eraOf(meta.protocolVersion);
  if (era === undefined) throw unsupportedProtocolVersion(meta.protocolVersion);
  return era;
}

/** -32021 with `requiredCapabilities` unless the request declared the extension. */
export function requireTasksDeclared(meta: RequestMeta): void {
  if (!declaresTasks(meta)) throw missingRequiredClientCapability();
}

/**
 * Whether a `server/discover` result advertises the extension. Exactly an empty object: the official
 * requester treats any other value as unsupported, so this side reads it the same way.
 */
export function advertisesTasks(capabilities: ServerCapabilities | JsonObject): boolean {
  const ext = capabilities.extensions as JsonValue | undefined;
  if (!isObject(ext)) return false;
  const v = ext[TASKS_EXTENSION];
  return isObject(v) && Object.keys(v).length === 0;
}

/** Methods of the 2025 experimental tasks the extension removed; they are unknown methods there. */
export const REMOVED_IN_MODERN: ReadonlySet<string> = new Set(['tasks/result', 'tasks/list']);

export const MODERN_TASK_METHODS: ReadonlySet<string> = new Set([
  'tasks/get',
  'tasks/update',
  'tasks/cancel',
]);
export const LEGACY_TASK_METHODS: ReadonlySet<string> = new Set([
  'tasks/get',
  'tasks/result',
  'tasks/list',
  'tasks/cancel',
]);

/** -32601 (HTTP 404) for a tasks method the era does not have. */
export function checkTaskMethod(method: string, era: Era): void {
  const known = era === 'modern' ? MODERN_TASK_METHODS : LEGACY_TASK_METHODS;
  if (method.startsWith('tasks/') && !known.has(method)) throw methodNotFound(method);
}
