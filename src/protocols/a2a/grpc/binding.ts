import {
  Metadata,
  type ServerUnaryCall,
  type ServerWritableStream,
  type ServiceDefinition,
  type UntypedServiceImplementation,
  type sendUnaryData,
} from '@grpc/grpc-js';
import {
  decodeCancelTaskRequest,
  decodeCreatePushConfigRequest,
  decodeDeletePushConfigRequest,
  decodeGetExtendedAgentCardRequest,
  decodeGetPushConfigRequest,
  decodeGetTaskRequest,
  decodeListPushConfigsRequest,
  decodeListTasksRequest,
  decodeSendMessageRequest,
  decodeSubscribeToTaskRequest,
} from '../decode.ts';
import { A2AError, toA2AError } from '../errors.ts';
import type { A2ARequestHandler, Authenticate, CallContext, HeaderReader, StreamItem } from '../handler.ts';
import { A2A_EXTENSIONS_HEADER, A2A_PROTOCOL_VERSION, A2A_VERSION_HEADER } from '../types.ts';
import { A2A_PACKAGE, A2A_SERVICE, a2aPackageDefinition, fromWire, toWire } from './codec.ts';
import { GRPC_CODES, STATUS_DETAILS_KEY, encodeStatusDetails } from './status-details.ts';

/**
 * The A2A 1.0 gRPC binding (service `lf.a2a.v1.A2AService`) over the same A2ARequestHandler as the
 * JSON-RPC and HTTP+JSON bindings: each request message is converted to its ProtoJSON shape and run
 * through the same decoders, so a field is refused with the same InvalidParams naming it; the
 * `A2A-Version`, `A2A-Extensions` and `authorization` service parameters come from the call metadata.
 * Errors end the call with the gRPC status of the 1.0.1 table and the ErrorInfo trailer. Nothing a
 * client sends can throw out of a handler: every path ends in a status.
 */
export interface GrpcBindingOptions {
  handler: A2ARequestHandler;
  authenticate: Authenticate;
  /** Reports errors that reach the edge as InternalError (the client sees no internal text). */
  onInternalError?: (err: unknown) => void;
}

export interface GrpcA2AService {
  definition: ServiceDefinition;
  implementation: UntypedServiceImplementation;
}

const T = (name: string) => `${A2A_PACKAGE}.${name}`;
const STREAM_RESPONSE = T('StreamResponse');

/** Serialized stream frames per payload object: one event fanned out to many streams is encoded once. */
const encodedFrames = new WeakMap<object, Buffer>();

/** Stands for a request whose bytes are not the method's message (see `serviceDefinition`). */
class Undecodable {
  constructor(readonly reason: string) {}
}

/**
 * The service definition proto-loader builds, with two changes: a request that does not decode is
 * handed to the method as `Undecodable`, so it is answered INVALID_ARGUMENT naming the problem
 * (grpc-js would answer INTERNAL, which says the server failed), and a stream response serializer
 * passes an already encoded frame through (see `encodedFrames`).
 */
function serviceDefinition(): ServiceDefinition {
  const base = a2aPackageDefinition()[A2A_SERVICE] as unknown as ServiceDefinition;
  const out: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(base)) {
    const serialize = method.responseSerialize as (v: unknown) => Buffer;
    const deserialize = method.requestDeserialize as (b: Buffer) => unknown;
    out[name] = {
      ...method,
      requestDeserialize: (b: Buffer) => {
        try {
          return deserialize(b);
        } catch (err) {
          return new Undecodable(err instanceof Error ? err.message.slice(0, 120) : 'undecodable');
        }
      },
      ...(method.responseStream
        ? { responseSerialize: (v: unknown) => (Buffer.isBuffer(v) ? v : serialize(v)) }
        : {}),
    };
  }
  return out as ServiceDefinition;
}

/** The request in ProtoJSON shape, or InvalidRequest when its bytes were not a `type` message. */
function requestOf(type: string, request: unknown): Record<string, unknown> {
  if (request instanceof Undecodable)
    throw new A2AError('InvalidRequestError', `not a valid ${type} message: ${request.reason}`);
  return fromWire(T(type), request);
}

function metadataReader(md: Metadata): HeaderReader {
  return {
    get(name) {
      const values = md.get(name.toLowerCase());
      return values.length > 0 ? String(values[0]) : null;
    },
  };
}

const VERSION_KEY = A2A_VERSION_HEADER.toLowerCase();
const EXTENSIONS_KEY = A2A_EXTENSIONS_HEADER.toLowerCase();

/**
 * A2A 1.0, versioning: a missing or empty `A2A-Version` is 0.3, which this 1.0 service refuses with
 * VersionNotSupportedError (a 0.3 gRPC client calls the 0.3 package `a2a.v1`, not this one); only
 * Major.Minor counts.
 */
function checkVersion(headers: HeaderReader): void {
  const value = headers.get(VERSION_KEY)?.trim();
  if (value === A2A_PROTOCOL_VERSION) return;
  const version = value ? value : '0.3';
  const m = /^(\d+)\.(\d+)(?:\.\d+)?$/.exec(version);
  if (m && `${Number(m[1])}.${Number(m[2])}` === A2A_PROTOCOL_VERSION) return;
  throw new A2AError(
    'VersionNotSupportedError',
    `A2A version ${version.slice(0, 32)} is not supported; this agent speaks ${A2A_PROTOCOL_VERSION}`,
    { metadata: { requested: version.slice(0, 32), supported: A2A_PROTOCOL_VERSION } },
  );
}

/** The call's AbortSignal, made only when a handler asks for it, aborted when the client goes away. */
class GrpcCallContext implements CallContext {
  declare tenant?: string;
  #controller?: AbortController;

  constructor(
    readonly owner: string,
    readonly extensions: string[],
    private readonly call: ServerUnaryCall<unknown, unknown> | ServerWritableStream<unknown, unknown>,
  ) {}

  get signal(): AbortSignal {
    if (!this.#controller) {
      const controller = new AbortController();
      this.#controller = controller;
      if (this.call.cancelled) controller.abort();
      else this.call.once('cancelled', () => controller.abort());
    }
    return this.#controller.signal;
  }
}

async function callContext(
  o: GrpcBindingOptions,
  call: ServerUnaryCall<unknown, unknown> | ServerWritableStream<unknown, unknown>,
): Promise<GrpcCallContext> {
  const headers = metadataReader(call.metadata);
  checkVersion(headers);
  const owner = await o.authenticate(headers);
  const extensions = (headers.get(EXTENSIONS_KEY) ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return new GrpcCallContext(owner, extensions, call);
}

/** An error as a gRPC status: code per the 1.0.1 table, the A2A message, the details trailer. */
function grpcError(
  o: GrpcBindingOptions,
  err: unknown,
): { code: number; details: string; metadata: Metadata } {
  if (!(err instanceof A2AError)) o.onInternalError?.(err);
  const e = toA2AError(err);
  const code = GRPC_CODES[e.spec.status];
  const metadata = new Metadata();
  metadata.set(STATUS_DETAILS_KEY, encodeStatusDetails(e, code));
  return { code, details: e.message, metadata };
}

type Decode<P> = (params: unknown) => P;
type Run<P> = (h: A2ARequestHandler, p: P, ctx: CallContext) => Promise<unknown>;

function withTenant<P extends { tenant?: string }>(ctx: CallContext, p: P): P {
  if (p.tenant) ctx.tenant = p.tenant;
  return p;
}

function unary<P extends { tenant?: string }>(
  o: GrpcBindingOptions,
  requestType: string,
  responseType: string | null,
  decode: Decode<P>,
  run: Run<P>,
) {
  return (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>): void => {
    void (async () => {
      try {
        const ctx = await callContext(o, call);
        const params = withTenant(ctx, decode(requestOf(requestType, call.request)));
        const result = await run(o.handler, params, ctx);
        callback(null, responseType ? toWire(T(responseType), result as object) : {});
      } catch (err) {
        callback(grpcError(o, err));
      }
    })();
  };
}

/** Resolves when the call can take more (or is gone): a slow reader holds the stream, not our memory. */
function drained(call: ServerWritableStream<unknown, unknown>): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      call.off('drain', done);
      call.off('cancelled', done);
      call.off('close', done);
      resolve();
    };
    call.on('drain', done);
    call.on('cancelled', done);
    call.on('close', done);
  });
}

function encodeFrame(item: StreamItem): Buffer {
  const payload = item.payload as object;
  let bytes = encodedFrames.get(payload);
  if (!bytes) {
    const serialize = (a2aPackageDefinition()[STREAM_RESPONSE] as unknown as { serialize(v: object): Buffer })
      .serialize;
    bytes = serialize(toWire(STREAM_RESPONSE, payload));
    encodedFrames.set(payload, bytes);
  }
  return bytes;
}

function streaming<P extends { tenant?: string }>(
  o: GrpcBindingOptions,
  requestType: string,
  decode: Decode<P>,
  run: (h: A2ARequestHandler, p: P, ctx: CallContext) => Promise<AsyncIterable<StreamItem[]>>,
) {
  return (call: ServerWritableStream<unknown, unknown>): void => {
    void (async () => {
      try {
        const ctx = await callContext(o, call);
        const params = withTenant(ctx, decode(requestOf(requestType, call.request)));
        const frames = await run(o.handler, params, ctx);
        for await (const batch of frames) {
          for (const item of batch) {
            if (call.cancelled) return;
            if (!call.write(encodeFrame(item))) await drained(call);
          }
        }
        if (!call.cancelled) call.end();
      } catch (err) {
        // A2A 1.0, streaming: an error before or during the stream ends it with a status.
        if (!call.cancelled) call.emit('error', grpcError(o, err));
      }
    })();
  };
}

/** The service definition and its implementation, for `server.addService`. */
export function a2aGrpcService(o: GrpcBindingOptions): GrpcA2AService {
  const implementation: UntypedServiceImplementation = {
    SendMessage: unary(o, 'SendMessageRequest', 'SendMessageResponse', decodeSendMessageRequest, (h, p, c) =>
      h.sendMessage(p, c),
    ),
    SendStreamingMessage: streaming(o, 'SendMessageRequest', decodeSendMessageRequest, (h, p, c) =>
      h.sendStreamingMessage(p, c),
    ),
    GetTask: unary(o, 'GetTaskRequest', 'Task', decodeGetTaskRequest, (h, p, c) => h.getTask(p, c)),
    ListTasks: unary(o, 'ListTasksRequest', 'ListTasksResponse', decodeListTasksRequest, (h, p, c) =>
      h.listTasks(p, c),
    ),
    CancelTask: unary(o, 'CancelTaskRequest', 'Task', decodeCancelTaskRequest, (h, p, c) =>
      h.cancelTask(p, c),
    ),
    SubscribeToTask: streaming(o, 'SubscribeToTaskRequest', decodeSubscribeToTaskRequest, (h, p, c) =>
      h.subscribeToTask(p, c),
    ),
    CreateTaskPushNotificationConfig: unary(
      o,
      'TaskPushNotificationConfig',
      'TaskPushNotificationConfig',
      decodeCreatePushConfigRequest,
      (h, p, c) => h.createTaskPushNotificationConfig(p, c),
    ),
    GetTaskPushNotificationConfig: unary(
      o,
      'GetTaskPushNotificationConfigRequest',
      'TaskPushNotificationConfig',
      decodeGetPushConfigRequest,
      (h, p, c) => h.getTaskPushNotificationConfig(p, c),
    ),
    ListTaskPushNotificationConfigs: unary(
      o,
      'ListTaskPushNotificationConfigsRequest',
      'ListTaskPushNotificationConfigsResponse',
      decodeListPushConfigsRequest,
      (h, p, c) => h.listTaskPushNotificationConfigs(p, c),
    ),
    GetExtendedAgentCard: unary(
      o,
      'GetExtendedAgentCardRequest',
      'AgentCard',
      decodeGetExtendedAgentCardRequest,
      (h, p, c) => h.getExtendedAgentCard(p, c),
    ),
    DeleteTaskPushNotificationConfig: unary(
      o,
      'DeleteTaskPushNotificationConfigRequest',
      null,
      decodeDeletePushConfigRequest,
      (h, p, c) => h.deleteTaskPushNotificationConfig(p, c),
    ),
  };
  return { definition: serviceDefinition(), implementation };
}
