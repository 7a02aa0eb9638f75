import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decodeCallToolParams,
  decodeMessage,
  decodeRequestMeta,
  decodeSubscriptionsListenParams,
  decodeTaskIdParams,
  decodeUpdateTaskEnvelope,
  decodeUpdateTaskParams,
} from '../../../src/protocols/mcp/decode.ts';
import {
  decodeAckResult,
  decodeCreateTaskResult,
  decodeDiscoverResult,
  decodeGetTaskResult,
  decodeInputRequiredResult,
  decodeTaskNotificationParams,
  decodeToolCallAnswer,
} from '../../../src/protocols/mcp/decode-result.ts';
import { McpError } from '../../../src/protocols/mcp/errors.ts';
import { checkHeaders } from '../../../src/protocols/mcp/headers.ts';
import { decodeInputRequests, decodeInputResponses } from '../../../src/protocols/mcp/input.ts';
import {
  decodeInitializeParams,
  decodeInitializeResult,
  decodeLegacyCreateTaskResult,
  decodeLegacyListTasksResult,
  decodeLegacyTaskResult,
  decodeLegacyTaskStatusParams,
} from '../../../src/protocols/mcp/legacy.ts';
import { validator } from './schema.ts';

type Obj = Record<string, unknown>;
const asParams = (v: unknown): Obj | undefined => v as Obj | undefined;

const DECODERS: Record<string, (v: unknown) => unknown> = {
  decodeMessage,
  decodeRequestMeta: (v) => decodeRequestMeta(asParams(v)),
  decodeCallToolParamsModern: (v) => decodeCallToolParams(asParams(v), true),
  decodeCallToolParamsLegacy: (v) => decodeCallToolParams(asParams(v), false),
  decodeTaskIdParams: (v) => decodeTaskIdParams(asParams(v), true),
  decodeUpdateTaskParams: (v) => decodeUpdateTaskParams(asParams(v)),
  decodeUpdateTaskEnvelope: (v) => decodeUpdateTaskEnvelope(asParams(v)),
  decodeSubscriptionsListenParams: (v) => decodeSubscriptionsListenParams(asParams(v)),
  decodeInputRequests: (v) => decodeInputRequests(v, 'inputRequests'),
  decodeInputResponses: (v) => decodeInputResponses(v, 'inputResponses'),
  decodeCreateTaskResult,
  decodeGetTaskResult,
  decodeAckResult,
  decodeInputRequiredResult,
  decodeToolCallAnswer: (v) => decodeToolCallAnswer(v, true),
  decodeDiscoverResult,
  decodeTaskNotificationParams,
  decodeInitializeParams: (v) => decodeInitializeParams(asParams(v)),
  decodeInitializeResult,
  decodeLegacyCreateTaskResult,
  decodeLegacyTaskResult,
  decodeLegacyListTasksResult,
  decodeLegacyTaskStatusParams,
};

const iso = fc.constantFrom('2026-07-28T10:00:00Z', '2025-11-25T00:00:00.000Z', 'yesterday');

/** Inputs shaped like MCP messages, with wrong types sprinkled in, so fuzzing reaches deep fields. */
const wireish = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constantFrom(
      'working',
      'input_required',
      'completed',
      'failed',
      'cancelled',
      'task',
      'complete',
      'elicitation/create',
      'sampling/createMessage',
      'roots/list',
      'accept',
      'decline',
      'object',
      'boolean',
      'user',
      '2.0',
      '2026-07-28',
      0,
      1,
      -1,
      1.5,
      2 ** 60,
      '',
      'x',
      true,
      null,
    ),
    iso,
    fc.jsonValue(),
    tie('obj'),
    fc.array(tie('value'), { maxLength: 3 }),
  ),
  obj: fc.dictionary(
    fc.constantFrom(
      'jsonrpc',
      'id',
      'method',
      'params',
      '_meta',
      'io.modelcontextprotocol/protocolVersion',
      'io.modelcontextprotocol/clientCapabilities',
      'io.modelcontextprotocol/clientInfo',
      'extensions',
      'io.modelcontextprotocol/tasks',
      'name',
      'version',
      'arguments',
      'inputResponses',
      'inputRequests',
      'requestState',
      'task',
      'ttl',
      'taskId',
      'status',
      'statusMessage',
      'createdAt',
      'lastUpdatedAt',
      'ttlMs',
      'pollIntervalMs',
      'pollInterval',
      'result',
      'error',
      'code',
      'message',
      'data',
      'resultType',
      'content',
      'isError',
      'type',
      'text',
      'action',
      'roots',
      'uri',
      'model',
      'role',
      'messages',
      'maxTokens',
      'requestedSchema',
      'properties',
      'required',
      'mode',
      'url',
      'items',
      'supportedVersions',
      'capabilities',
      'serverInfo',
      'notifications',
      'taskIds',
      'tasks',
      'nextCursor',
      'protocolVersion',
      'clientInfo',
      'k1',
      'k2',
      '__proto__',
      'constructor',
    ),
    tie('value'),
    { maxKeys: 8 },
  ),
}));

const anyInput = fc.oneof(fc.anything(), wireish.value, wireish.obj);

const TASK = {
  taskId: 't1',
  status: 'working',
  createdAt: '2026-07-28T10:00:00Z',
  lastUpdatedAt: '2026-07-28T10:00:01Z',
  ttlMs: 60000,
};
const ELICIT = {
  method: 'elicitation/create',
  params: {
    message: 'ok?',
    requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' } } },
  },
};
/** Valid messages of each kind, so that mutation lands near the boundary of what is allowed. */
const VALID: Obj[] = [
  { ...TASK, resultType: 'task', pollIntervalMs: 500 },
  { ...TASK, resultType: 'complete', status: 'completed', result: { content: [], resultType: 'complete' } },
  { ...TASK, resultType: 'complete', status: 'failed', error: { code: -32603, message: 'x' } },
  {
    ...TASK,
    resultType: 'complete',
    status: 'input_required',
    inputRequests: { k1: ELICIT, k2: { method: 'roots/list' } },
  },
  { ...TASK, status: 'cancelled', _meta: {} },
  { resultType: 'complete' },
  {
    taskId: 't1',
    inputResponses: {
      k1: { action: 'accept', content: { confirm: true } },
      k2: { roots: [{ uri: 'file:///' }] },
    },
    _meta: {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
    },
  },
  {
    k1: ELICIT,
    k2: {
      method: 'sampling/createMessage',
      params: { maxTokens: 5, messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }] },
    },
  },
  { k1: { action: 'decline' }, k2: { model: 'm', role: 'assistant', content: { type: 'text', text: 'x' } } },
];

/** A valid message with one field replaced (possibly nested one level down) or removed. */
const mutated = fc
  .tuple(
    fc.constantFrom(...VALID),
    fc.constantFrom(...new Set(VALID.flatMap((v) => Object.keys(v)))),
    fc.option(wireish.value),
    fc.boolean(),
    fc.nat(7),
  )
  .map(([base, key, value, deep, pick]) => {
    const copy = structuredClone(base);
    const inner = copy[key];
    if (deep && inner !== null && typeof inner === 'object' && !Array.isArray(inner)) {
      const keys = Object.keys(inner);
      const k = keys[keys.length > 0 ? pick % keys.length : 0] ?? 'x';
      if (value === null) delete (inner as Obj)[k];
      else (inner as Obj)[k] = value;
    } else if (value === null) delete copy[key];
    else copy[key] = value;
    return copy;
  });

const schemaInput = fc.oneof(anyInput, mutated, fc.constantFrom(...VALID));

describe('MCP decoders never throw anything but McpError', () => {
  for (const [name, decode] of Object.entries(DECODERS)) {
    it(`${name}: any input → a value or an McpError naming the field`, () => {
      fc.assert(
        fc.property(anyInput, (input) => {
          try {
            decode(input);
          } catch (err) {
            expect(err).toBeInstanceOf(McpError);
            const e = err as McpError;
            expect(['InvalidParams', 'InvalidRequest', 'InvalidResult']).toContain(e.code);
            expect(e.field).toBeTruthy();
          }
        }),
        { numRuns: 300 },
      );
    });
  }

  it('checkHeaders: any headers and body → ok or an McpError, never a throw', () => {
    const header = fc.oneof(
      fc.string(),
      fc.constantFrom('2026-07-28', '2025-11-25', 'tasks/get', '=?base64?dA==?=', '=?base64?%%?='),
    );
    const headers = fc.dictionary(
      fc.constantFrom(
        'MCP-Protocol-Version',
        'mcp-protocol-version',
        'Mcp-Method',
        'Mcp-Name',
        'mcp-name',
        'x',
      ),
      fc.oneof(header, fc.array(header, { maxLength: 2 })),
    );
    fc.assert(
      fc.property(headers, anyInput, (h, body) => {
        const r = checkHeaders(h, body);
        if (!r.ok) expect(r.error).toBeInstanceOf(McpError);
      }),
      { numRuns: 500 },
    );
  });
});

/** What the decoder accepted, wrapped the way the schema defines it. */
const SCHEMA_CASES: [string, (v: unknown) => unknown, string, (v: unknown) => unknown][] = [
  ['decodeCreateTaskResult', decodeCreateTaskResult, 'CreateTaskResult', (v) => v],
  ['decodeGetTaskResult', decodeGetTaskResult, 'GetTaskResult', (v) => v],
  ['decodeAckResult', decodeAckResult, 'UpdateTaskResult', (v) => v],
  ['decodeTaskNotificationParams', decodeTaskNotificationParams, 'TaskStatusNotificationParams', (v) => v],
  [
    'decodeTaskIdParams',
    (v) => decodeTaskIdParams(asParams(v), false),
    'GetTaskRequest',
    (v) => ({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: v }),
  ],
  [
    'decodeUpdateTaskParams',
    (v) => decodeUpdateTaskParams(asParams(v)),
    'UpdateTaskRequest',
    (v) => ({ jsonrpc: '2.0', id: 1, method: 'tasks/update', params: v }),
  ],
  ['decodeInputRequests', (v) => decodeInputRequests(v, 'x'), 'InputRequests', (v) => v],
  ['decodeInputResponses', (v) => decodeInputResponses(v, 'x'), 'InputResponses', (v) => v],
];

describe('MCP decoders never accept what the tasks extension schema forbids', () => {
  for (const [name, decode, def, wrap] of SCHEMA_CASES) {
    const valid = validator(def);
    it(`${name} accepts only valid ${def}`, () => {
      let accepted = 0;
      fc.assert(
        fc.property(schemaInput, (input) => {
          try {
            decode(input);
          } catch {
            return;
          }
          accepted++;
          expect(valid(wrap(input))).toBeNull();
        }),
        { numRuns: 1000 },
      );
      // The property means nothing unless some inputs get through.
      expect(accepted).toBeGreaterThan(0);
    });
  }
});
