import { McpError, headerMismatch, unsupportedProtocolVersion } from './errors.ts';
import { isObj, own } from './fields.ts';
import { eraOf, type Era } from './era.ts';
import { META, SUPPORTED_PROTOCOL_VERSIONS } from './types.ts';

/**
 * The Streamable HTTP header rules, as one pure function of the request headers and the parsed body.
 *
 * 2026-07-28: every POST carries `MCP-Protocol-Version` equal to the `_meta` version, `Mcp-Method`
 * equal to the body's method, and `Mcp-Name` mirroring the body's target (`params.name` for
 * `tools/call` and `prompts/get`, `params.uri` for `resources/read`, `params.taskId` for the tasks
 * methods) so a load balancer can route on headers alone; a missing or different value is -32020.
 * Values are trimmed, and `=?base64?…?=` carries non-ASCII text.
 *
 * Older versions had only `MCP-Protocol-Version`, defaulting to 2025-03-26 when absent; the routing
 * headers are not checked for them.
 */

export type HeaderSource = Headers | Record<string, string | string[] | undefined>;

export type HeaderCheck = { ok: true; era: Era; protocolVersion: string } | { ok: false; error: McpError };

/** What a 2025 Streamable HTTP server assumes when a request has no version header. */
export const LEGACY_DEFAULT_VERSION = '2025-03-26';

/** Where `Mcp-Name` comes from, per method. */
export const MCP_NAME_SOURCE: Readonly<Record<string, string>> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId',
};

/** Case-insensitive; repeated headers are joined the way fetch joins them, so a duplicate never matches. */
export function headerValue(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function' && typeof (headers as Headers).has === 'function') {
    return (headers as Headers).get(name) ?? undefined;
  }
  const lower = name.toLowerCase();
  const parts: string[] = [];
  for (const [k, v] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (k.toLowerCase() !== lower || v === undefined) continue;
    if (Array.isArray(v)) parts.push(...v);
    else parts.push(v);
  }
  return parts.length === 0 ? undefined : parts.join(', ');
}

const BASE64_FORM = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/i;

/** Trimmed, with the `=?base64?…?=` form decoded; undefined when the encoded form is malformed. */
export function decodeHeaderText(raw: string): string | undefined {
  const v = raw.trim();
  if (!v.startsWith('=?')) return v;
  const m = BASE64_FORM.exec(v);
  if (m === null) return v.toLowerCase().startsWith('=?base64?') ? undefined : v;
  const bytes = Buffer.from(m[1] ?? '', 'base64');
  const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  return text.includes('\uFFFD') ? undefined : text;
}

/** The header form of a value: plain when it is printable ASCII, base64 otherwise. */
export function encodeHeaderText(value: string): string {
  return /^[\x20-\x7e]*$/.test(value) && value.trim() === value
    ? value
    : `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;
}

function bodyParts(body: unknown): { method?: string; params?: Record<string, unknown> } {
  if (!isObj(body)) return {};
  const method = own(body, 'method');
  const params = own(body, 'params');
  const out: { method?: string; params?: Record<string, unknown> } = {};
  if (typeof method === 'string') out.method = method;
  if (isObj(params)) out.params = params;
  return out;
}

export function checkHeaders(headers: HeaderSource, body: unknown): HeaderCheck {
  try {
    return checkOrThrow(headers, body);
  } catch (e) {
    if (e instanceof McpError) return { ok: false, error: e };
    throw e;
  }
}

function checkOrThrow(headers: HeaderSource, body: unknown): HeaderCheck {
  const { method, params } = bodyParts(body);
  const meta = params === undefined ? undefined : own(params, '_meta');
  const metaVersionRaw = isObj(meta) ? own(meta, META.protocolVersion) : undefined;
  const metaVersion = typeof metaVersionRaw === 'string' ? metaVersionRaw : undefined;

  const rawVersion = headerValue(headers, 'MCP-Protocol-Version');
  if (rawVersion === undefined) {
    if (metaVersion !== undefined)
      throw headerMismatch('MCP-Protocol-Version', 'required, and must equal the _meta protocol version');
    // A legacy initialize names its version in the body; anything else falls back to the transport default.
    const init = method === 'initialize' && params !== undefined ? own(params, 'protocolVersion') : undefined;
    const v = typeof init === 'string' ? init : LEGACY_DEFAULT_VERSION;
    return { ok: true, era: 'legacy', protocolVersion: v };
  }
  const version = rawVersion.trim();
  const era = eraOf(version);
  if (era === undefined) throw unsupportedProtocolVersion(version, SUPPORTED_PROTOCOL_VERSIONS);
  if (metaVersion !== undefined && metaVersion !== version) {
    throw headerMismatch('MCP-Protocol-Version', `${version} but _meta says ${metaVersion}`);
  }
  if (era === 'legacy') return { ok: true, era, protocolVersion: version };

  const rawMethod = headerValue(headers, 'Mcp-Method');
  if (rawMethod === undefined) throw headerMismatch('Mcp-Method', 'required');
  const headerMethod = decodeHeaderText(rawMethod);
  if (headerMethod === undefined) throw headerMismatch('Mcp-Method', 'malformed base64 form');
  if (method !== undefined && headerMethod !== method) {
    throw headerMismatch(
      'Mcp-Method',
      `${JSON.stringify(headerMethod)} but the body method is ${JSON.stringify(method)}`,
    );
  }

  const source = method === undefined ? undefined : MCP_NAME_SOURCE[method];
  const target = source === undefined || params === undefined ? undefined : own(params, source);
  if (typeof target === 'string') {
    const rawName = headerValue(headers, 'Mcp-Name');
    if (rawName === undefined) throw headerMismatch('Mcp-Name', `required for ${method ?? ''}`);
    const name = decodeHeaderText(rawName);
    if (name === undefined) throw headerMismatch('Mcp-Name', 'malformed base64 form');
    if (name !== target) throw headerMismatch('Mcp-Name', `must equal params.${source}`);
  }
  return { ok: true, era, protocolVersion: version };
}

/** The headers a modern client sends with `body`. */
export function requestHeaders(
  body: { method: string; params?: Record<string, unknown> },
  protocolVersion: string,
): Record<string, string> {
  const out: Record<string, string> = { 'MCP-Protocol-Version': protocolVersion, 'Mcp-Method': body.method };
  const source = MCP_NAME_SOURCE[body.method];
  const target = source === undefined || body.params === undefined ? undefined : own(body.params, source);
  if (typeof target === 'string') out['Mcp-Name'] = encodeHeaderText(target);
  return out;
}
