import { A2AService as SdkService } from '@a2a-js/sdk/server/grpc';
import { describe, expect, it } from 'vitest';
import { A2A_SERVICE, a2aPackageDefinition, fromWire, toWire } from '../../src/protocols/a2a/grpc/codec.ts';

/**
 * Our a2a.proto against the official JS SDK's codec, generated from the specification's a2a.proto:
 * every message the service uses, with every field set, is encoded by us, decoded and re-encoded by
 * the SDK, and decoded by us again. The SDK drops a field whose number or wire type it does not know,
 * so any drift in a field number, a type or a oneof member makes the round trip lose it.
 */

type Codec = {
  requestSerialize(v: unknown): Buffer;
  requestDeserialize(b: Buffer): unknown;
  responseSerialize(v: unknown): Buffer;
  responseDeserialize(b: Buffer): unknown;
};
const ours = a2aPackageDefinition()[A2A_SERVICE] as unknown as Record<string, Codec>;
const sdk = SdkService as unknown as Record<string, Codec>;

const metadata = { a: 1, b: 'two', c: [true, null, { d: 2.5 }], e: { f: {} } };
const parts = [
  { text: 'hi', metadata, filename: 'a.txt', mediaType: 'text/plain' },
  {
    raw: Buffer.from('raw bytes').toString('base64'),
    filename: 'b.bin',
    mediaType: 'application/octet-stream',
  },
  { url: 'https://example.com/f.pdf', mediaType: 'application/pdf' },
  { data: { k: [1, 'x', null] } },
  { data: 'a bare string value' },
];
const msg = {
  messageId: 'm-1',
  contextId: 'ctx-1',
  taskId: 'task-1',
  role: 'ROLE_AGENT',
  parts,
  metadata,
  extensions: ['https://example.com/ext'],
  referenceTaskIds: ['task-0'],
};
const push = {
  tenant: 't1',
  id: 'cfg-1',
  taskId: 'task-1',
  url: 'https://hook.example.com/a2a',
  token: 'tok',
  authentication: { scheme: 'Bearer', credentials: 'secret' },
};
const artifact = {
  artifactId: 'art-1',
  name: 'report',
  description: 'the report',
  parts,
  metadata,
  extensions: ['https://example.com/ext'],
};
const task = {
  id: 'task-1',
  contextId: 'ctx-1',
  status: { state: 'TASK_STATE_INPUT_REQUIRED', message: msg, timestamp: '2026-05-01T10:00:00.123Z' },
  artifacts: [artifact],
  history: [msg, { ...msg, messageId: 'm-2', role: 'ROLE_USER' }],
  metadata,
};
const requirement = { schemes: { bearer: { list: ['read', 'write'] }, oauth: { list: ['x'] } } };
const card = {
  name: 'Agent',
  description: 'Does things',
  supportedInterfaces: [
    { url: 'https://a.example.com/a2a', protocolBinding: 'JSONRPC', tenant: 't1', protocolVersion: '1.0' },
    { url: 'a.example.com:443', protocolBinding: 'GRPC', protocolVersion: '1.0' },
  ],
  provider: { url: 'https://example.com', organization: 'Example' },
  version: '1.2.3',
  documentationUrl: 'https://example.com/docs',
  capabilities: {
    streaming: true,
    pushNotifications: false,
    extensions: [{ uri: 'https://example.com/ext', description: 'ext', required: true, params: metadata }],
    extendedAgentCard: true,
  },
  securitySchemes: {
    key: { apiKeySecurityScheme: { description: 'k', location: 'header', name: 'X-Key' } },
    bearer: { httpAuthSecurityScheme: { description: 'b', scheme: 'Bearer', bearerFormat: 'JWT' } },
    code: {
      oauth2SecurityScheme: {
        description: 'o',
        oauth2MetadataUrl: 'https://auth.example.com/.well-known/oauth-authorization-server',
        flows: {
          authorizationCode: {
            authorizationUrl: 'https://auth.example.com/authorize',
            tokenUrl: 'https://auth.example.com/token',
            refreshUrl: 'https://auth.example.com/refresh',
            scopes: { read: 'Read' },
            pkceRequired: true,
          },
        },
      },
    },
    client: {
      oauth2SecurityScheme: {
        flows: {
          clientCredentials: {
            tokenUrl: 'https://auth.example.com/token',
            refreshUrl: 'https://r',
            scopes: { a: 'A' },
          },
        },
      },
    },
    implicit: {
      oauth2SecurityScheme: {
        flows: { implicit: { authorizationUrl: 'https://a', refreshUrl: 'https://r', scopes: { a: 'A' } } },
      },
    },
    password: {
      oauth2SecurityScheme: {
        flows: { password: { tokenUrl: 'https://t', refreshUrl: 'https://r', scopes: { a: 'A' } } },
      },
    },
    device: {
      oauth2SecurityScheme: {
        flows: {
          deviceCode: {
            deviceAuthorizationUrl: 'https://d',
            tokenUrl: 'https://t',
            refreshUrl: 'https://r',
            scopes: { a: 'A' },
          },
        },
      },
    },
    oidc: {
      openIdConnectSecurityScheme: { description: 'i', openIdConnectUrl: 'https://auth.example.com/oidc' },
    },
    mtls: { mtlsSecurityScheme: { description: 'm' } },
  },
  securityRequirements: [requirement],
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['application/json'],
  skills: [
    {
      id: 's1',
      name: 'Skill',
      description: 'skill',
      tags: ['t'],
      examples: ['e'],
      inputModes: ['text/plain'],
      outputModes: ['text/plain'],
      securityRequirements: [requirement],
    },
  ],
  signatures: [{ protected: 'eyJhbGciOiJFUzI1NiJ9', signature: 'c2ln', header: { kid: 'k1' } }],
  iconUrl: 'https://example.com/icon.png',
};

/** [method, side, message type, value]: every request and response message of the service. */
const CASES: [string, 'request' | 'response', string, object][] = [
  [
    'SendMessage',
    'request',
    'SendMessageRequest',
    {
      tenant: 't1',
      message: msg,
      configuration: {
        acceptedOutputModes: ['text/plain'],
        taskPushNotificationConfig: push,
        historyLength: 0,
        returnImmediately: true,
      },
      metadata,
    },
  ],
  ['SendMessage', 'response', 'SendMessageResponse', { task }],
  ['SendMessage', 'response', 'SendMessageResponse', { message: msg }],
  ['SendStreamingMessage', 'response', 'StreamResponse', { task }],
  ['SendStreamingMessage', 'response', 'StreamResponse', { message: msg }],
  [
    'SendStreamingMessage',
    'response',
    'StreamResponse',
    { statusUpdate: { taskId: 'task-1', contextId: 'ctx-1', status: task.status, metadata } },
  ],
  [
    'SendStreamingMessage',
    'response',
    'StreamResponse',
    {
      artifactUpdate: {
        taskId: 'task-1',
        contextId: 'ctx-1',
        artifact,
        append: true,
        lastChunk: true,
        metadata,
      },
    },
  ],
  ['GetTask', 'request', 'GetTaskRequest', { tenant: 't1', id: 'task-1', historyLength: 3 }],
  ['GetTask', 'response', 'Task', task],
  [
    'ListTasks',
    'request',
    'ListTasksRequest',
    {
      tenant: 't1',
      contextId: 'ctx-1',
      status: 'TASK_STATE_WORKING',
      pageSize: 10,
      pageToken: 'p2',
      historyLength: 0,
      statusTimestampAfter: '2026-05-01T10:00:00.000Z',
      includeArtifacts: false,
    },
  ],
  [
    'ListTasks',
    'response',
    'ListTasksResponse',
    { tasks: [task], nextPageToken: 'p3', pageSize: 10, totalSize: 42 },
  ],
  ['CancelTask', 'request', 'CancelTaskRequest', { tenant: 't1', id: 'task-1', metadata }],
  ['SubscribeToTask', 'request', 'SubscribeToTaskRequest', { tenant: 't1', id: 'task-1' }],
  ['CreateTaskPushNotificationConfig', 'request', 'TaskPushNotificationConfig', push],
  [
    'GetTaskPushNotificationConfig',
    'request',
    'GetTaskPushNotificationConfigRequest',
    { tenant: 't1', taskId: 'task-1', id: 'cfg-1' },
  ],
  [
    'ListTaskPushNotificationConfigs',
    'request',
    'ListTaskPushNotificationConfigsRequest',
    { tenant: 't1', taskId: 'task-1', pageSize: 5, pageToken: 'p' },
  ],
  [
    'ListTaskPushNotificationConfigs',
    'response',
    'ListTaskPushNotificationConfigsResponse',
    { configs: [push], nextPageToken: 'n' },
  ],
  [
    'DeleteTaskPushNotificationConfig',
    'request',
    'DeleteTaskPushNotificationConfigRequest',
    { tenant: 't1', taskId: 'task-1', id: 'cfg-1' },
  ],
  ['GetExtendedAgentCard', 'request', 'GetExtendedAgentCardRequest', { tenant: 't1' }],
  ['GetExtendedAgentCard', 'response', 'AgentCard', card],
];

const lower = (s: string) => s[0]!.toLowerCase() + s.slice(1);

describe('a2a.proto matches the official SDK codec', () => {
  it.each(CASES)('%s %s %s', (method, side, type, value) => {
    const o = ours[method]!;
    const s = sdk[lower(method)]!;
    const full = `lf.a2a.v1.${type}`;
    const [ser, de, sdkDe, sdkSer] =
      side === 'request'
        ? [o.requestSerialize, o.requestDeserialize, s.requestDeserialize, s.requestSerialize]
        : [o.responseSerialize, o.responseDeserialize, s.responseDeserialize, s.responseSerialize];
    const bytes = ser(toWire(full, value));
    const direct = fromWire(full, de(bytes));
    // The conversion itself is lossless…
    expect(direct).toEqual(JSON.parse(JSON.stringify(value)));
    // …and the SDK reads and writes every field we do.
    const through = fromWire(full, de(Buffer.from(sdkSer(sdkDe(bytes)))));
    expect(through).toEqual(direct);
  });

  it('enum values agree with the SDK (TaskState, Role)', () => {
    const bytes = ours.GetTask!.responseSerialize(
      toWire('lf.a2a.v1.Task', { id: 't', status: { state: 'TASK_STATE_AUTH_REQUIRED' }, history: [msg] }),
    );
    const decoded = sdk.getTask!.responseDeserialize(bytes) as {
      status: { state: number };
      history: { role: number }[];
    };
    expect(decoded.status.state).toBe(8);
    expect(decoded.history[0]!.role).toBe(2);
  });
});
