import type { A2ATransport, TransportOptions } from './transports.ts';

/**
 * The gRPC transport, its module imported on first use: grpc-js runs on Node only, and this connector
 * is also part of the lab's browser bundle (through the plane's index), which never dials gRPC. The lab
 * bundler leaves `./grpc-transport.ts` out (src/lab/page-assets.ts), so nothing of grpc-js reaches the
 * browser, while Node loads it the first time a card's gRPC interface is used.
 */
export function lazyGrpcTransport(o: TransportOptions): A2ATransport {
  let loaded: Promise<A2ATransport> | undefined;
  const transport = () => (loaded ??= import('./grpc-transport.ts').then((m) => m.grpcTransport(o)));
  return {
    binding: 'GRPC',
    async call(method, params, signal) {
      return (await transport()).call(method, params, signal);
    },
    async *stream(method, params, signal) {
      yield* (await transport()).stream(method, params, signal);
    },
  };
}
