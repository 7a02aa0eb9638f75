import * as grpc from '@grpc/grpc-js';
import type { LookupFunction } from 'node:net';
import { TaskplaneError } from '../../core/errors.ts';
import { MAX_REMOTE_MESSAGE_BYTES } from '../remote-limits.ts';
import { A2A_SERVICE, a2aPackageDefinition, fromWire, toWire } from '../../protocols/a2a/grpc/codec.ts';
import { STATUS_DETAILS_KEY, decodeStatusDetails } from '../../protocols/a2a/grpc/status-details.ts';
import { A2A_PROTOCOL_VERSION, A2A_VERSION_HEADER, type A2AMethod } from '../../protocols/a2a/types.ts';
import { traceHeaders } from '../trace-headers.ts';
import { transportError } from '../transport-errors.ts';
import type { A2ATransport, StreamFrame, TransportOptions } from './transports.ts';
import { grpcDialTarget, grpcTarget, splitHostPort } from './interface-host.ts';
import { lookupAll } from '../http-stream.ts';
import { a2aWireError, routeError } from './wire-errors.ts';

/**
 * The A2A 1.0 gRPC binding as a connector transport: the same calls as the HTTP bindings, in the same
 * ProtoJSON shapes (codec.ts converts), over one grpc-js channel per chosen interface. Service
 * parameters go as metadata (`a2a-version: 1.0`, the target's headers such as `authorization`, trace
 * context); the tenant of the chosen interface goes in every request message.
 *
 * The interface URL is a gRPC target. `https://host[:port]` and `grpcs://host:port` use TLS;
 * `http://host:port`, `grpc://host:port` and a bare `host:port` use plaintext, except a bare target on
 * port 443, which uses TLS.
 */

const T = (name: string) => `lf.a2a.v1.${name}`;

/** Request and response message of each call the connector makes. */
const METHODS: Partial<Record<A2AMethod, [string, string]>> = {
  SendMessage: ['SendMessageRequest', 'SendMessageResponse'],
  GetTask: ['GetTaskRequest', 'Task'],
  ListTasks: ['ListTasksRequest', 'ListTasksResponse'],
  CancelTask: ['CancelTaskRequest', 'Task'],
  CreateTaskPushNotificationConfig: ['TaskPushNotificationConfig', 'TaskPushNotificationConfig'],
  SendStreamingMessage: ['SendMessageRequest', 'StreamResponse'],
  SubscribeToTask: ['SubscribeToTaskRequest', 'StreamResponse'],
};

type UnaryFn = (
  req: unknown,
  md: grpc.Metadata,
  options: grpc.CallOptions,
  cb: (err: grpc.ServiceError | null, res: unknown) => void,
) => grpc.ClientUnaryCall;
type StreamFn = (
  req: unknown,
  md: grpc.Metadata,
  options: grpc.CallOptions,
) => grpc.ClientReadableStream<unknown>;

let ClientCtor: grpc.ServiceClientConstructor | undefined;

/** Headers that belong to HTTP/1.1 framing, not to service parameters. */
const NOT_METADATA = new Set(['content-type', 'accept', 'content-length', 'host', 'connection', 'te']);

function metadata(o: TransportOptions): grpc.Metadata {
  const md = new grpc.Metadata();
  md.set(A2A_VERSION_HEADER.toLowerCase(), A2A_PROTOCOL_VERSION);
  for (const [k, v] of Object.entries({ ...traceHeaders(), ...o.headers })) {
    const key = k.toLowerCase();
    if (!NOT_METADATA.has(key) && !key.endsWith('-bin')) md.set(key, v);
  }
  return md;
}

/**
 * A failed call as our error: by ErrorInfo reason first (wire-errors.ts), then by status. A status
 * without A2A details from UNIMPLEMENTED is a target that does not serve A2A 1.0 here (the agent moved):
 * a route error, on which the connector re-reads the card.
 */
function callError(err: grpc.ServiceError, signal: AbortSignal): TaskplaneError {
  const bin = err.metadata?.get(STATUS_DETAILS_KEY)[0];
  const details = Buffer.isBuffer(bin) ? decodeStatusDetails(bin) : {};
  const message = err.details ?? '';
  if (details.reason) return a2aWireError({ details: [{ reason: details.reason }], message });
  const s = grpc.status;
  switch (err.code) {
    case s.DEADLINE_EXCEEDED:
      return new TaskplaneError('timeout', 'remote call timed out', { cause: err });
    case s.CANCELLED:
      if (signal.aborted) return new TaskplaneError('unavailable', 'remote call aborted', { cause: err });
      return new TaskplaneError('unavailable', `remote: gRPC CANCELLED ${message}`.trim(), { cause: err });
    case s.UNAVAILABLE: {
      const refused = /ECONNREFUSED/.test(message);
      return new TaskplaneError(
        'unavailable',
        refused ? 'remote refused the connection' : 'remote unreachable',
        {
          cause: err,
          details: { notSent: refused },
        },
      );
    }
    case s.UNIMPLEMENTED:
      return routeError(404, `gRPC UNIMPLEMENTED ${message}`);
    case s.UNAUTHENTICATED:
      return a2aWireError({ httpStatus: 401, message });
    case s.PERMISSION_DENIED:
      return a2aWireError({ httpStatus: 403, message });
    case s.INVALID_ARGUMENT:
      return a2aWireError({ rpcCode: -32602, message });
    case s.FAILED_PRECONDITION:
      return new TaskplaneError('failed_precondition', `remote: ${message}`.slice(0, 200));
    default:
      return a2aWireError({ httpStatus: 500, message: `gRPC ${err.code} ${message}` });
  }
}

function types(method: A2AMethod): [string, string] {
  const t = METHODS[method];
  if (!t) throw new TaskplaneError('unsupported', `${method} is not used by the connector`);
  return t;
}

/** Where a channel whose host was looked up by the transport's own lookup dials, and as whom. */
interface Pinned {
  /** `ipv4:a.b.c.d:port` or `ipv6:[…]:port`. */
  dial: string;
  /** The interface's `host:port`: the channel's authority, its host the name TLS checks. */
  authority: string;
  host: string;
}

/**
 * The gRPC transport for an interface whose connections must be looked up its own way (`o.lookup`:
 * interface-reach.ts publicOnlyLookup). grpc-js resolves names itself and takes no lookup, so the host is
 * looked up here, once, and the channel dials the address found, keeping the host name as its authority
 * and as the name its TLS certificate must carry. It holds that address until the card is read again and
 * the interface bound anew (every `cardTtlMs`).
 */
export async function pinnedGrpcTransport(
  o: TransportOptions & { lookup: LookupFunction },
): Promise<A2ATransport> {
  const { target } = grpcTarget(o.url);
  const split = splitHostPort(target);
  if (!split) throw new TaskplaneError('permission_denied', `gRPC target ${target} shows no host to look up`);
  const [first] = await lookupAll(o.lookup, split.host).catch((err: unknown) => {
    throw transportError(err, new AbortController().signal, () => false);
  });
  const dial =
    first!.family === 6 ? `ipv6:[${first!.address}]:${split.port}` : `ipv4:${first!.address}:${split.port}`;
  return grpcTransport(o, { dial, authority: target, host: split.host });
}

export function grpcTransport(o: TransportOptions, pinned?: Pinned): A2ATransport {
  ClientCtor ??= grpc.makeGenericClientConstructor(
    a2aPackageDefinition()[A2A_SERVICE] as grpc.ServiceDefinition,
    'A2AService',
  );
  const { target, tls } = grpcTarget(o.url);
  const client = new ClientCtor(
    pinned?.dial ?? grpcDialTarget(target),
    tls ? grpc.credentials.createSsl() : grpc.credentials.createInsecure(),
    // A transport dropped after a card change is never closed explicitly: an idle channel lets go of
    // its connection on its own. A message may be as large as an HTTP answer (grpc-js's own default is
    // 4 MiB), so a task reads the same on every binding.
    {
      'grpc.client_idle_timeout_ms': 60_000,
      'grpc.max_receive_message_length': MAX_REMOTE_MESSAGE_BYTES,
      ...(pinned
        ? {
            'grpc.default_authority': pinned.authority,
            ...(tls ? { 'grpc.ssl_target_name_override': pinned.host } : {}),
          }
        : {}),
    },
  ) as unknown as grpc.Client & Record<string, UnaryFn & StreamFn>;
  const request = (type: string, params: Record<string, unknown>) =>
    toWire(T(type), o.tenant ? { tenant: o.tenant, ...params } : params);
  return {
    binding: 'GRPC',
    call(method, params, signal) {
      const [req, res] = types(method);
      return new Promise((resolve, reject) => {
        if (signal.aborted) {
          reject(new TaskplaneError('unavailable', 'remote call aborted'));
          return;
        }
        const onAbort = () => pending.cancel();
        const pending = client[method]!(
          request(req, params),
          metadata(o),
          { deadline: Date.now() + o.timeoutMs },
          (err, value) => {
            signal.removeEventListener('abort', onAbort);
            if (err) reject(callError(err, signal));
            else resolve(fromWire(T(res), value));
          },
        );
        signal.addEventListener('abort', onAbort, { once: true });
      });
    },
    async *stream(method, params, signal): AsyncGenerator<StreamFrame> {
      const [req, res] = types(method);
      const call = client[method]!(request(req, params), metadata(o), {});
      // As on HTTP, the timeout covers only the time to the response headers: a stream may then stay
      // open as long as the task runs.
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        call.cancel();
      }, o.timeoutMs);
      call.once('metadata', () => clearTimeout(timer));
      const onAbort = () => call.cancel();
      signal.addEventListener('abort', onAbort, { once: true });
      // A signal aborted before the call was made fires no 'abort' event.
      if (signal.aborted) call.cancel();
      try {
        for await (const frame of call) yield { frame: fromWire(T(res), frame), eventId: null };
      } catch (err) {
        if (timedOut) throw new TaskplaneError('timeout', 'remote call timed out', { cause: err });
        throw callError(err as grpc.ServiceError, signal);
      } finally {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        call.cancel();
      }
    },
  };
}
