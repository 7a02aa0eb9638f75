import { Server, ServerCredentials } from '@grpc/grpc-js';
import type { Logger } from '../core/logger.ts';
import { TaskplaneError } from '../core/errors.ts';
import type { A2ARequestHandler, Authenticate } from '../protocols/a2a/handler.ts';
import { a2aGrpcService } from '../protocols/a2a/grpc/binding.ts';

/**
 * The host's gRPC listener: the A2A gRPC binding on its own port (gRPC is HTTP/2; the JSON bindings
 * share the HTTP/1.1 port), plaintext like the HTTP listener (TLS is the reverse proxy's job, as for
 * HTTP). A request message is bounded like a JSON body (`maxBodyBytes`); grpc-js refuses a bigger one
 * with RESOURCE_EXHAUSTED before it is decoded.
 */
export interface GrpcListenerOptions {
  handler: A2ARequestHandler;
  authenticate: Authenticate;
  logger: Logger;
  port: number;
  bind: string;
  maxMessageBytes: number;
  /** HTTP/2 PING interval on each connection, as the SSE keep-alive on the HTTP bindings. */
  keepAliveMs: number;
}

export interface GrpcListener {
  /** The port bound (the real one when 0 was asked for). */
  port: number;
  close(): Promise<void>;
}

export async function startGrpcListener(o: GrpcListenerOptions): Promise<GrpcListener> {
  const server = new Server({
    'grpc.max_receive_message_length': o.maxMessageBytes,
    // Pings keep an idle SubscribeToTask alive through proxies and NATs, and find a client that is gone
    // without closing its connection, so its subscriptions end instead of lingering.
    'grpc.keepalive_time_ms': o.keepAliveMs,
    'grpc.keepalive_timeout_ms': o.keepAliveMs,
    // A client's pings keep an idle stream open; refuse abusive rates rather than answer each.
    'grpc.http2.min_ping_interval_without_data_ms': 10_000,
  });
  const { definition, implementation } = a2aGrpcService({
    handler: o.handler,
    authenticate: o.authenticate,
    onInternalError: (err) => o.logger.error({ err }, 'gRPC request failed'),
  });
  server.addService(definition, implementation);
  const host = o.bind.includes(':') && !o.bind.startsWith('[') ? `[${o.bind}]` : o.bind;
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${host}:${o.port}`, ServerCredentials.createInsecure(), (err, bound) => {
      if (err)
        reject(
          new TaskplaneError('config', `grpcPort: cannot listen on ${host}:${o.port}: ${err.message}`, {
            field: 'grpcPort',
            cause: err,
          }),
        );
      else resolve(bound);
    });
  });
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        // Open streams (SubscribeToTask) would hold a graceful shutdown forever: the executions stop
        // with the host and resume on the next start, so the calls are ended now.
        server.forceShutdown();
        resolve();
      }),
  };
}
