import * as grpc from '@grpc/grpc-js';
import { connect as tcpConnect, createServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHost, type RunningHost } from '../../src/host/start-host.ts';
import { A2A_SERVICE, a2aPackageDefinition, fromWire, toWire } from '../../src/protocols/a2a/grpc/codec.ts';
import { decodeStatusDetails, STATUS_DETAILS_KEY } from '../../src/protocols/a2a/grpc/status-details.ts';
import { freePort } from '../support/process.ts';
import { silent, type Wire } from './in-process.ts';

/**
 * The gRPC binding's wire contract with a bare grpc-js client (the official SDK client's view is in
 * sdk-interop.test.ts): status codes and the ErrorInfo trailer per error, the A2A-Version rule, keys
 * in metadata, tenancy, and input that must be refused without harming the process.
 */

type Unary = (
  req: unknown,
  md: grpc.Metadata,
  cb: (err: grpc.ServiceError | null, res: Wire) => void,
) => grpc.ClientUnaryCall;
type Streaming = (req: unknown, md: grpc.Metadata) => grpc.ClientReadableStream<Wire>;
type A2AClient = grpc.Client & Record<string, Unary & Streaming>;

const Client = grpc.makeGenericClientConstructor(
  a2aPackageDefinition()[A2A_SERVICE] as grpc.ServiceDefinition,
  'A2AService',
);

function connect(target: string): A2AClient {
  return new Client(target, grpc.credentials.createInsecure()) as unknown as A2AClient;
}

function md(extra: Record<string, string> = {}, version: string | null = '1.0'): grpc.Metadata {
  const m = new grpc.Metadata();
  if (version !== null) m.set('a2a-version', version);
  for (const [k, v] of Object.entries(extra)) m.set(k, v);
  return m;
}

function call(client: A2AClient, method: string, type: string, req: object, meta = md()): Promise<Wire> {
  return new Promise((resolve, reject) => {
    client[method]!(toWire(`lf.a2a.v1.${type}`, req), meta, (err, res) => (err ? reject(err) : resolve(res)));
  });
}

/** The status code, ErrorInfo reason and field violations of a failed call. */
async function failure(p: Promise<unknown>) {
  const err = (await p.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (e: unknown) => e,
  )) as grpc.ServiceError;
  const bin = err.metadata?.get(STATUS_DETAILS_KEY)[0];
  const details = bin ? decodeStatusDetails(bin as Buffer) : {};
  return { code: err.code, message: err.details, ...details };
}

function collect(stream: grpc.ClientReadableStream<Wire>): Promise<Wire[]> {
  const out: Wire[] = [];
  return new Promise((resolve, reject) => {
    stream.on('data', (d: Wire) => out.push(fromWire('lf.a2a.v1.StreamResponse', d)));
    stream.on('error', reject);
    stream.on('end', () => resolve(out));
  });
}

/** Protobuf bytes: field `n` of wire type 2 (length-delimited) holding `body`. */
function ld(n: number, body: Buffer): Buffer {
  const len: number[] = [];
  let v = body.length;
  while (v > 0x7f) {
    len.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  len.push(v);
  return Buffer.concat([Buffer.from([(n << 3) | 2, ...len]), body]);
}

/** A SendMessageRequest whose message metadata nests Structs `depth` levels deep. */
function deepSendMessage(depth: number): Buffer {
  let value: Buffer = ld(3, Buffer.from('leaf')); // Value.string_value
  let struct: Buffer = Buffer.alloc(0);
  for (let i = 0; i < depth; i++) {
    struct = ld(1, Buffer.concat([ld(1, Buffer.from('d')), ld(2, value)])); // Struct.fields entry
    value = ld(5, struct); // Value.struct_value
  }
  const msg = Buffer.concat([
    ld(1, Buffer.from('deep-1')), // message_id
    Buffer.from([0x20, 0x01]), // role ROLE_USER
    ld(5, ld(1, Buffer.from('hi'))), // parts[0].text
    ld(6, struct), // metadata
  ]);
  return ld(2, msg); // SendMessageRequest.message
}

const message = (text: string, extra: Record<string, unknown> = {}) => ({
  message: {
    messageId: `m-${Math.random().toString(36).slice(2)}`,
    role: 'ROLE_USER',
    parts: [{ text }],
    ...extra,
  },
});

describe('gRPC binding (bare grpc-js client)', () => {
  let host: RunningHost;
  let client: A2AClient;

  beforeAll(async () => {
    host = await startHost({ port: 0, grpcPort: 0, db: 'memory:', logger: silent, maxBodyBytes: 64 * 1024 });
    client = connect(host.grpcUrl!);
  });

  afterAll(async () => {
    client?.close();
    await host?.close();
  });

  it('the card declares the gRPC interface as host:port after the HTTP bindings', async () => {
    const card = (await (await fetch(host.cardUrl)).json()) as Wire;
    expect(card.supportedInterfaces).toContainEqual({
      url: host.grpcUrl,
      protocolBinding: 'GRPC',
      protocolVersion: '1.0',
    });
    expect(host.grpcUrl).toMatch(/^127\.0\.0\.1:\d+$/);
  });

  it('SendMessage → GetTask round-trips Struct metadata, data parts, raw bytes and timestamps', async () => {
    const sent = message('hello', {
      metadata: { nested: { list: [1, 'two', null, true] } },
      parts: [
        { text: 'hello' },
        { data: { k: [1, { x: null }] } },
        { raw: Buffer.from('bytes').toString('base64') },
      ],
    });
    const res = fromWire(
      'lf.a2a.v1.SendMessageResponse',
      await call(client, 'SendMessage', 'SendMessageRequest', sent),
    );
    const task = res.task as Wire;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(Date.parse(task.status.timestamp)).toBeGreaterThan(0);
    const got = fromWire(
      'lf.a2a.v1.Task',
      await call(client, 'GetTask', 'GetTaskRequest', { id: task.id }),
    ) as Wire;
    const first = got.history[0];
    expect(first.metadata).toEqual({ nested: { list: [1, 'two', null, true] } });
    expect(first.parts[1].data).toEqual({ k: [1, { x: null }] });
    expect(Buffer.from(first.parts[2].raw, 'base64').toString()).toBe('bytes');
    const none = fromWire(
      'lf.a2a.v1.Task',
      await call(client, 'GetTask', 'GetTaskRequest', { id: task.id, historyLength: 0 }),
    ) as Wire;
    expect(none.history).toBeUndefined();
  });

  it('errors carry the 1.0.1 status and an ErrorInfo (reason, domain a2a-protocol.org)', async () => {
    expect(await failure(call(client, 'GetTask', 'GetTaskRequest', { id: 'task_nope' }))).toMatchObject({
      code: grpc.status.NOT_FOUND,
      reason: 'TASK_NOT_FOUND',
      domain: 'a2a-protocol.org',
      metadata: { taskId: 'task_nope' },
    });
    const done = fromWire(
      'lf.a2a.v1.SendMessageResponse',
      await call(client, 'SendMessage', 'SendMessageRequest', message('quick')),
    ).task as Wire;
    expect(await failure(call(client, 'CancelTask', 'CancelTaskRequest', { id: done.id }))).toMatchObject({
      code: grpc.status.FAILED_PRECONDITION,
      reason: 'TASK_NOT_CANCELABLE',
    });
    expect(
      await failure(call(client, 'GetExtendedAgentCard', 'GetExtendedAgentCardRequest', {})),
    ).toMatchObject({ code: grpc.status.FAILED_PRECONDITION, reason: 'UNSUPPORTED_OPERATION' });
    expect(
      await failure(
        collect(client.SubscribeToTask!(toWire('lf.a2a.v1.SubscribeToTaskRequest', { id: done.id }), md())),
      ),
    ).toMatchObject({
      code: grpc.status.FAILED_PRECONDITION,
      reason: 'UNSUPPORTED_OPERATION',
    });
    expect(
      await failure(
        collect(
          client.SubscribeToTask!(toWire('lf.a2a.v1.SubscribeToTaskRequest', { id: 'task_nope' }), md()),
        ),
      ),
    ).toMatchObject({ code: grpc.status.NOT_FOUND, reason: 'TASK_NOT_FOUND' });
  });

  it('A2A-Version: missing (0.3) or 99.0 → FAILED_PRECONDITION VERSION_NOT_SUPPORTED; 1.0.3 is 1.0', async () => {
    for (const version of [null, '', '99.0', '0.3']) {
      expect(await failure(call(client, 'ListTasks', 'ListTasksRequest', {}, md({}, version)))).toMatchObject(
        { code: grpc.status.FAILED_PRECONDITION, reason: 'VERSION_NOT_SUPPORTED' },
      );
    }
    const ok = await call(client, 'ListTasks', 'ListTasksRequest', {}, md({}, '1.0.3'));
    expect(Number(ok.pageSize)).toBeGreaterThan(0);
  });

  it('an invalid request is INVALID_ARGUMENT with a BadRequest naming the field', async () => {
    const noParts = { message: { messageId: 'm-no-parts', role: 'ROLE_USER' } };
    const f = await failure(call(client, 'SendMessage', 'SendMessageRequest', noParts));
    expect(f).toMatchObject({ code: grpc.status.INVALID_ARGUMENT, reason: 'INVALID_PARAMS' });
    expect(f.fieldViolations?.[0]?.field).toBe('message.parts');
    const noId = await failure(call(client, 'GetTask', 'GetTaskRequest', {}));
    expect(noId).toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
    expect(noId.fieldViolations?.[0]?.field).toBe('id');
    const badSize = await failure(call(client, 'ListTasks', 'ListTasksRequest', { pageSize: 1000 }));
    expect(badSize.fieldViolations?.[0]?.field).toBe('pageSize');
  });

  it('tenant in the request message is a separate space of the same caller', async () => {
    const inA = fromWire(
      'lf.a2a.v1.SendMessageResponse',
      await call(client, 'SendMessage', 'SendMessageRequest', { tenant: 'team-a', ...message('scoped') }),
    ).task as Wire;
    const got = await call(client, 'GetTask', 'GetTaskRequest', { tenant: 'team-a', id: inA.id });
    expect(got.id).toBe(inA.id);
    expect(
      await failure(call(client, 'GetTask', 'GetTaskRequest', { tenant: 'team-b', id: inA.id })),
    ).toMatchObject({ code: grpc.status.NOT_FOUND });
    expect(await failure(call(client, 'GetTask', 'GetTaskRequest', { id: inA.id }))).toMatchObject({
      code: grpc.status.NOT_FOUND,
    });
  });

  it('push config CRUD over gRPC: create, get, list, delete (Empty)', async () => {
    const task = fromWire(
      'lf.a2a.v1.SendMessageResponse',
      await call(client, 'SendMessage', 'SendMessageRequest', message('p')),
    ).task as Wire;
    const created = await call(client, 'CreateTaskPushNotificationConfig', 'TaskPushNotificationConfig', {
      taskId: task.id,
      url: 'http://127.0.0.1:9/hook',
      authentication: { scheme: 'Bearer', credentials: 'secret-credential' },
    });
    expect(created.id).toBeTruthy();
    expect(created.authentication?.credentials).toBeUndefined();
    const listed = await call(
      client,
      'ListTaskPushNotificationConfigs',
      'ListTaskPushNotificationConfigsRequest',
      {
        taskId: task.id,
      },
    );
    expect(listed.configs.map((c: Wire) => c.id)).toEqual([created.id]);
    const empty = await call(
      client,
      'DeleteTaskPushNotificationConfig',
      'DeleteTaskPushNotificationConfigRequest',
      {
        taskId: task.id,
        id: created.id,
      },
    );
    expect(empty).toEqual({});
    expect(
      await failure(
        call(client, 'GetTaskPushNotificationConfig', 'GetTaskPushNotificationConfigRequest', {
          taskId: task.id,
          id: created.id,
        }),
      ),
    ).toMatchObject({ code: grpc.status.NOT_FOUND });
  });

  it('bad bytes, an unknown method, an oversized message and deep nesting are refused; the host keeps serving', async () => {
    const raw = (path: string, bytes: Buffer) =>
      new Promise<unknown>((resolve, reject) =>
        client.makeUnaryRequest(
          path,
          (b: Buffer) => b,
          (b: Buffer) => b,
          bytes,
          md(),
          (err, res) => (err ? reject(err) : resolve(res)),
        ),
      );
    // A length-delimited field claiming more bytes than follow: not a protobuf message.
    const garbage = await failure(
      raw('/lf.a2a.v1.A2AService/SendMessage', Buffer.from([0x12, 0xff, 0x01, 0x00])),
    );
    expect(garbage).toMatchObject({ code: grpc.status.INVALID_ARGUMENT, reason: 'INVALID_REQUEST' });
    expect((await failure(raw('/lf.a2a.v1.A2AService/QuerySkill', Buffer.alloc(0)))).code).toBe(
      grpc.status.UNIMPLEMENTED,
    );
    expect((await failure(raw('/a2a.v1.A2AService/SendMessage', Buffer.alloc(0)))).code).toBe(
      grpc.status.UNIMPLEMENTED,
    );
    const big = message('x'.repeat(100 * 1024));
    expect((await failure(call(client, 'SendMessage', 'SendMessageRequest', big))).code).toBe(
      grpc.status.RESOURCE_EXHAUSTED,
    );
    // Hand-encoded: protobufjs refuses to even serialize this depth. Struct metadata 200 levels deep.
    const nested = await failure(raw('/lf.a2a.v1.A2AService/SendMessage', deepSendMessage(200)));
    expect(nested).toMatchObject({ code: grpc.status.INVALID_ARGUMENT, reason: 'INVALID_REQUEST' });
    expect(nested.message).toMatch(/not a valid SendMessageRequest message/);
    const shallow = await failure(raw('/lf.a2a.v1.A2AService/SendMessage', deepSendMessage(80)));
    expect(shallow).toMatchObject({ code: grpc.status.INVALID_ARGUMENT, reason: 'INVALID_REQUEST' });
    const after = await call(client, 'ListTasks', 'ListTasksRequest', {});
    expect(after.tasks.length).toBeGreaterThan(0);
  });

  it('SendStreamingMessage streams Task first to the terminal update; a cancelled stream lets go of its subscription', async () => {
    const stream = client.SendStreamingMessage!(
      toWire('lf.a2a.v1.SendMessageRequest', {
        message: {
          messageId: 'stream-1',
          role: 'ROLE_USER',
          parts: [{ data: { durationMs: 100, steps: 2, artifactChunks: 2 } }],
        },
      }),
      md(),
    );
    const frames = await collect(stream);
    expect(Object.keys(frames[0]!)).toEqual(['task']);
    expect(frames.at(-1)!.statusUpdate?.status.state).toBe('TASK_STATE_COMPLETED');
    expect(frames.filter((f) => f.artifactUpdate).length).toBe(2);

    const long = fromWire(
      'lf.a2a.v1.SendMessageResponse',
      await call(client, 'SendMessage', 'SendMessageRequest', {
        message: {
          messageId: 'long-1',
          role: 'ROLE_USER',
          parts: [{ data: { durationMs: 60_000, steps: 2 } }],
        },
        configuration: { returnImmediately: true },
      }),
    ).task as Wire;
    const sub = client.SubscribeToTask!(toWire('lf.a2a.v1.SubscribeToTaskRequest', { id: long.id }), md());
    await new Promise<void>((resolve) => sub.once('data', () => resolve()));
    expect(host.stats().subscribers).toBeGreaterThan(0);
    sub.on('error', () => {});
    sub.cancel();
    await expect.poll(() => host.stats().subscribers, { timeout: 10_000, interval: 50 }).toBe(0);
    await call(client, 'CancelTask', 'CancelTaskRequest', { id: long.id });
  });
});

describe('gRPC binding options', () => {
  it('off by default: no listener, no GRPC interface in the card', async () => {
    const host = await startHost({ port: 0, db: 'memory:', logger: silent });
    try {
      const card = (await (await fetch(host.cardUrl)).json()) as Wire;
      expect(card.supportedInterfaces.map((i: Wire) => i.protocolBinding)).not.toContain('GRPC');
      expect(host.grpcUrl).toBeUndefined();
    } finally {
      await host.close();
    }
  });

  it('--auth keys: the key travels as `authorization` metadata; none or a wrong one is UNAUTHENTICATED', async () => {
    const keys = new Map([
      [
        (await import('node:crypto')).createHash('sha256').update('alice-secret-key-0001').digest('hex'),
        'alice',
      ],
    ]);
    const host = await startHost({ port: 0, grpcPort: 0, db: 'memory:', logger: silent, auth: 'keys', keys });
    const client = connect(host.grpcUrl!);
    try {
      expect(await failure(call(client, 'ListTasks', 'ListTasksRequest', {}))).toMatchObject({
        code: grpc.status.UNAUTHENTICATED,
        reason: 'UNAUTHENTICATED',
      });
      const wrong = md({ authorization: 'Bearer wrong-key-wrong-key-00' });
      expect((await failure(call(client, 'ListTasks', 'ListTasksRequest', {}, wrong))).code).toBe(
        grpc.status.UNAUTHENTICATED,
      );
      const ok = await call(
        client,
        'ListTasks',
        'ListTasksRequest',
        {},
        md({ authorization: 'Bearer alice-secret-key-0001' }),
      );
      expect(ok).toBeDefined();
    } finally {
      client.close();
      await host.close();
    }
  });

  it('a client gone silent (no FIN) is found by keep-alive pings and its subscription ends', async () => {
    const host = await startHost({ port: 0, grpcPort: 0, db: 'memory:', logger: silent, keepAliveMs: 300 });
    const target = Number(host.grpcUrl!.split(':').at(-1));
    // A TCP relay that can go silent: it stops passing bytes either way but keeps both sockets open,
    // as a client behind a dead NAT does.
    let silentNow = false;
    const relay = createServer((inbound) => {
      const outbound = tcpConnect(target, '127.0.0.1');
      inbound.on('data', (d) => silentNow || outbound.write(d));
      outbound.on('data', (d) => silentNow || inbound.write(d));
      inbound.on('error', () => outbound.destroy());
      outbound.on('error', () => inbound.destroy());
      inbound.on('close', () => outbound.destroy());
      outbound.on('close', () => inbound.destroy());
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', () => resolve()));
    const c = connect(`127.0.0.1:${(relay.address() as AddressInfo).port}`);
    try {
      const long = fromWire(
        'lf.a2a.v1.SendMessageResponse',
        await call(c, 'SendMessage', 'SendMessageRequest', {
          message: {
            messageId: 'ka-1',
            role: 'ROLE_USER',
            parts: [{ data: { durationMs: 60_000, steps: 2 } }],
          },
          configuration: { returnImmediately: true },
        }),
      ).task as Wire;
      const sub = c.SubscribeToTask!(toWire('lf.a2a.v1.SubscribeToTaskRequest', { id: long.id }), md());
      sub.on('error', () => {});
      await new Promise<void>((resolve) => sub.once('data', () => resolve()));
      expect(host.stats().subscribers).toBeGreaterThan(0);
      silentNow = true;
      await expect.poll(() => host.stats().subscribers, { timeout: 10_000, interval: 100 }).toBe(0);
    } finally {
      c.close();
      relay.close();
      await host.close();
    }
  });

  it('a gRPC port already taken is a config error naming grpcPort; the HTTP port is let go', async () => {
    const first = await startHost({ port: 0, grpcPort: 0, db: 'memory:', logger: silent });
    try {
      const taken = Number(first.grpcUrl!.split(':').at(-1));
      const httpPort = await freePort();
      const err = await startHost({ port: httpPort, grpcPort: taken, db: 'memory:', logger: silent }).catch(
        (e: unknown) => e,
      );
      expect(String(err)).toMatch(/grpcPort: cannot listen on 127\.0\.0\.1:\d+/);
      // The HTTP listener of the host that failed to start is closed: its port can be bound again.
      const probe = createServer();
      await new Promise<void>((resolve, reject) => {
        probe.once('error', reject);
        probe.listen(httpPort, '127.0.0.1', () => resolve());
      });
      await new Promise<void>((resolve) => probe.close(() => resolve()));
    } finally {
      await first.close();
    }
  });

  it('grpcPublicUrl is what the card declares; a URL that is not host:port is refused before start', async () => {
    const host = await startHost({
      port: 0,
      grpcPort: 0,
      grpcPublicUrl: 'a2a.example.com:443',
      db: 'memory:',
      logger: silent,
    });
    try {
      const card = (await (await fetch(host.cardUrl)).json()) as Wire;
      expect(card.supportedInterfaces.find((i: Wire) => i.protocolBinding === 'GRPC')).toMatchObject({
        url: 'a2a.example.com:443',
        protocolBinding: 'GRPC',
      });
    } finally {
      await host.close();
    }
    const err = await startHost({
      port: 0,
      grpcPort: 0,
      grpcPublicUrl: 'https://a2a.example.com',
      db: 'memory:',
    }).catch((e: unknown) => e);
    expect(String(err)).toMatch(/grpcPublicUrl: must be host:port/);
  });
});
