import { describe, expect, it } from 'vitest';
import {
  checkHeaders,
  decodeHeaderText,
  encodeHeaderText,
  requestHeaders,
} from '../../../src/protocols/mcp/headers.ts';
import { requestMeta } from '../../../src/protocols/mcp/encode.ts';

const meta = (version = '2026-07-28') => requestMeta({ tasks: true, protocolVersion: version });
const body = (method: string, params: Record<string, unknown> = {}, version?: string) => ({
  jsonrpc: '2.0',
  id: 1,
  method,
  params: { ...params, _meta: meta(version) },
});

function errorOf(headers: Record<string, string | string[]>, b: unknown) {
  const r = checkHeaders(headers, b);
  if (r.ok) throw new Error('expected a header error');
  return { code: r.error.rpcCode, http: r.error.httpStatus, message: r.error.message, data: r.error.data };
}

describe('Streamable HTTP header rules (2026-07-28)', () => {
  const get = body('tasks/get', { taskId: 'abc' });
  const ok = { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tasks/get', 'Mcp-Name': 'abc' };

  it('accepts matching headers, in any case and with surrounding spaces', () => {
    expect(checkHeaders(ok, get)).toEqual({ ok: true, era: 'modern', protocolVersion: '2026-07-28' });
    expect(
      checkHeaders(
        { 'mcp-protocol-version': '2026-07-28', 'mcp-method': ' tasks/get ', 'mcp-name': 'abc ' },
        get,
      ).ok,
    ).toBe(true);
    expect(checkHeaders(new Headers(ok), get).ok).toBe(true);
  });

  it('what the client side sends passes the server side check, non-ASCII names included', () => {
    for (const b of [
      get,
      body('tools/call', { name: 'grüße' }),
      body('resources/read', { uri: 'file:///ä b' }),
      body('tools/list'),
    ]) {
      expect(checkHeaders(requestHeaders(b, '2026-07-28'), b).ok).toBe(true);
    }
    expect(encodeHeaderText('grüße')).toMatch(/^=\?base64\?.*\?=$/);
    expect(decodeHeaderText(encodeHeaderText('grüße'))).toBe('grüße');
  });

  it('Mcp-Name different from params.taskId is -32020, HTTP 400', () => {
    expect(errorOf({ ...ok, 'Mcp-Name': 'other' }, get)).toMatchObject({
      code: -32020,
      http: 400,
      message: expect.stringContaining('Mcp-Name'),
    });
  });

  it('a duplicated Mcp-Name is a mismatch, not a match', () => {
    expect(errorOf({ ...ok, 'Mcp-Name': 'abc', 'mcp-name': 'abc' }, get).code).toBe(-32020);
    expect(errorOf({ ...ok, 'Mcp-Name': ['abc', 'abc'] }, get).code).toBe(-32020);
  });

  it.each([
    ['missing Mcp-Method', { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Name': 'abc' }, 'Mcp-Method'],
    ['Mcp-Method not the body method', { ...ok, 'Mcp-Method': 'tasks/cancel' }, 'Mcp-Method'],
    ['missing Mcp-Name', { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tasks/get' }, 'Mcp-Name'],
    ['malformed base64 Mcp-Name', { ...ok, 'Mcp-Name': '=?base64?***?=' }, 'Mcp-Name'],
    [
      'missing version header on a modern body',
      { 'Mcp-Method': 'tasks/get', 'Mcp-Name': 'abc' },
      'MCP-Protocol-Version',
    ],
  ])('%s → -32020 naming the header', (_case, headers, header) => {
    const e = errorOf(headers, get);
    expect(e).toMatchObject({ code: -32020, http: 400, data: { header } });
  });

  it('a version header that differs from _meta is -32020', () => {
    expect(errorOf({ ...ok, 'MCP-Protocol-Version': '2025-11-25' }, get).code).toBe(-32020);
  });

  it('an unsupported version is -32022 with the supported list and the requested version', () => {
    const e = errorOf(
      { ...ok, 'MCP-Protocol-Version': '2099-01-01' },
      body('tasks/get', { taskId: 'abc' }, '2099-01-01'),
    );
    expect(e.code).toBe(-32022);
    expect(e.http).toBe(400);
    expect(e.data).toMatchObject({
      requested: '2099-01-01',
      supported: expect.arrayContaining(['2026-07-28', '2025-11-25']),
    });
  });

  it('tools/call carries Mcp-Name = params.name; methods without a target need none', () => {
    const call = body('tools/call', { name: 'greet' });
    expect(
      checkHeaders(
        { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': 'greet' },
        call,
      ).ok,
    ).toBe(true);
    expect(
      errorOf({ 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': 'slow' }, call)
        .code,
    ).toBe(-32020);
    expect(
      checkHeaders(
        { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'server/discover' },
        body('server/discover'),
      ).ok,
    ).toBe(true);
  });
});

describe('legacy header rules', () => {
  it('no version header and no _meta: legacy, the 2025-03-26 transport default or the initialize version', () => {
    expect(checkHeaders({}, { jsonrpc: '2.0', id: 1, method: 'tools/list' })).toEqual({
      ok: true,
      era: 'legacy',
      protocolVersion: '2025-03-26',
    });
    expect(
      checkHeaders(
        {},
        { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25' } },
      ),
    ).toEqual({ ok: true, era: 'legacy', protocolVersion: '2025-11-25' });
  });

  it('a legacy version header needs no routing headers', () => {
    expect(
      checkHeaders(
        { 'mcp-protocol-version': '2025-11-25' },
        { jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { taskId: 'x' } },
      ),
    ).toEqual({
      ok: true,
      era: 'legacy',
      protocolVersion: '2025-11-25',
    });
  });
});
