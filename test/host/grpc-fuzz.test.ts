import * as grpc from '@grpc/grpc-js';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHost, type RunningHost } from '../../src/host/start-host.ts';
import { A2A_SERVICE, a2aPackageDefinition, toWire } from '../../src/protocols/a2a/grpc/codec.ts';
import { silent } from './in-process.ts';

/**
 * Mutated request bytes on every method of the gRPC binding (property, seeded): valid encodings of each
 * request with bytes replaced, inserted or cut, so some no longer decode and others decode to odd
 * content (unknown enum numbers, invalid UTF-8, negative sizes, wrong wire types, repeated oneofs).
 * Every call must end with a status the protocol names, never INTERNAL or UNKNOWN (which is what an
 * unexpected exception becomes), and the host must keep answering.
 */

type Codec = { requestSerialize(v: unknown): Buffer; responseStream: boolean; path: string };
const service = a2aPackageDefinition()[A2A_SERVICE] as unknown as Record<string, Codec>;

const message = {
  messageId: 'fuzz-1',
  contextId: 'ctx-fuzz',
  role: 'ROLE_USER',
  parts: [{ text: 'hi', metadata: { a: [1, 'b'] } }, { data: { k: true } }, { raw: 'AAEC', filename: 'f' }],
  metadata: { x: { y: null } },
};
/** A valid request of each method (the task ids need not exist: not found is a fine answer). */
const SEEDS: Record<string, [string, object]> = {
  SendMessage: [
    'SendMessageRequest',
    {
      tenant: 't',
      message,
      configuration: { historyLength: 2, returnImmediately: true },
      metadata: { m: 1 },
    },
  ],
  SendStreamingMessage: ['SendMessageRequest', { message: { ...message, messageId: 'fuzz-2' } }],
  GetTask: ['GetTaskRequest', { id: 'task_x', historyLength: 1 }],
  ListTasks: [
    'ListTasksRequest',
    {
      contextId: 'c',
      status: 'TASK_STATE_WORKING',
      pageSize: 5,
      pageToken: 'p',
      statusTimestampAfter: '2026-01-01T00:00:00.000Z',
      includeArtifacts: true,
    },
  ],
  CancelTask: ['CancelTaskRequest', { id: 'task_x', metadata: { r: 'why' } }],
  SubscribeToTask: ['SubscribeToTaskRequest', { id: 'task_x' }],
  CreateTaskPushNotificationConfig: [
    'TaskPushNotificationConfig',
    { taskId: 'task_x', url: 'https://example.com/h', token: 't', authentication: { scheme: 'Bearer' } },
  ],
  GetTaskPushNotificationConfig: ['GetTaskPushNotificationConfigRequest', { taskId: 'task_x', id: 'c' }],
  ListTaskPushNotificationConfigs: [
    'ListTaskPushNotificationConfigsRequest',
    { taskId: 'task_x', pageSize: 3 },
  ],
  DeleteTaskPushNotificationConfig: [
    'DeleteTaskPushNotificationConfigRequest',
    { taskId: 'task_x', id: 'c' },
  ],
  GetExtendedAgentCard: ['GetExtendedAgentCardRequest', { tenant: 't' }],
};
const METHODS = Object.keys(SEEDS);
const SEED_BYTES = Object.fromEntries(
  METHODS.map((m) => [m, service[m]!.requestSerialize(toWire(`lf.a2a.v1.${SEEDS[m]![0]}`, SEEDS[m]![1]))]),
);

type Mutation = { at: number; kind: 'set' | 'insert' | 'cut'; byte: number };
const mutationArb: fc.Arbitrary<Mutation> = fc.record({
  at: fc.nat(),
  kind: fc.constantFrom('set', 'insert', 'cut'),
  byte: fc.nat({ max: 255 }),
});

function mutate(bytes: Buffer, mutations: Mutation[]): Buffer {
  let out = Buffer.from(bytes);
  for (const m of mutations) {
    const at = out.length === 0 ? 0 : m.at % out.length;
    if (m.kind === 'set' && out.length > 0) out[at] = m.byte;
    else if (m.kind === 'insert')
      out = Buffer.concat([out.subarray(0, at), Buffer.from([m.byte]), out.subarray(at)]);
    else out = out.subarray(0, at);
  }
  return out;
}

/** Codes an answer may have: the protocol's own answers, and OK. */
const ACCEPTED = new Set([
  grpc.status.OK,
  grpc.status.INVALID_ARGUMENT,
  grpc.status.NOT_FOUND,
  grpc.status.FAILED_PRECONDITION,
]);

describe('gRPC binding under mutated requests (property)', () => {
  let host: RunningHost;
  let client: grpc.Client;
  const md = new grpc.Metadata();
  md.set('a2a-version', '1.0');

  beforeAll(async () => {
    host = await startHost({ port: 0, grpcPort: 0, db: 'memory:', logger: silent });
    client = new grpc.Client(host.grpcUrl!, grpc.credentials.createInsecure());
  });
  afterAll(async () => {
    client?.close();
    await host?.close();
  });

  /** The status a call of `method` with `bytes` ends with (a stream is read to its end). */
  function statusOf(method: string, bytes: Buffer): Promise<number> {
    const path = service[method]!.path;
    const id = (b: Buffer) => b;
    // A deadline bounds a stream that opened on a task that stays open.
    const options = { deadline: Date.now() + 5_000 };
    return new Promise((resolve) => {
      if (service[method]!.responseStream) {
        const call = client.makeServerStreamRequest(path, id, id, bytes, md, options);
        call.on('data', () => {
          call.cancel();
        });
        call.on('error', (err: grpc.ServiceError) =>
          resolve(err.code === grpc.status.CANCELLED ? 0 : err.code),
        );
        call.on('end', () => resolve(0));
      } else {
        client.makeUnaryRequest(path, id, id, bytes, md, options, (err) => resolve(err ? err.code : 0));
      }
    });
  }

  it('every call ends with a protocol status, and the host keeps serving', async () => {
    const codes = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...METHODS),
        fc.array(mutationArb, { minLength: 1, maxLength: 4 }),
        async (method, mutations) => {
          const code = await statusOf(method, mutate(SEED_BYTES[method]!, mutations));
          codes.set(code, (codes.get(code) ?? 0) + 1);
          expect(ACCEPTED.has(code), `${method} answered ${grpc.status[code]}`).toBe(true);
        },
      ),
      { numRuns: 300, seed: 17 },
    );
    // The run reached both sides: calls that decoded and were answered, and calls refused as input.
    expect(codes.get(grpc.status.INVALID_ARGUMENT) ?? 0).toBeGreaterThan(0);
    expect((codes.get(grpc.status.OK) ?? 0) + (codes.get(grpc.status.NOT_FOUND) ?? 0)).toBeGreaterThan(0);
    const plain = service.ListTasks!.requestSerialize(toWire('lf.a2a.v1.ListTasksRequest', { pageSize: 5 }));
    expect(await statusOf('ListTasks', plain)).toBe(grpc.status.OK);
  });
});
