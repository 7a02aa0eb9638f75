import type { A2ATransport, TransportOptions } from './transports.ts';

/**
 * The gRPC transport, its module imported on first use: grpc-js runs on Node only, and this connector
 * is also part of the lab's browser bundle (through the plane's index), which never dials gRPC. The lab
 * bundler leaves `./grpc-transport.ts` out (src/lab/page-assets.ts), so nothing of grpc-js reaches the
 * browser, while Node loads it the first time a card's gRPC interface is used.
 */
export function lazyGrpcTransport(o: TransportOptions): A2ATransport {
  let loaded: Promise<A2ATransport> | undefined;
  const { lookup } = o;
  const load = async () => {
    const m = await import('./grpc-transport.ts');
    return lookup ? m.pinnedGrpcTransport({ ...o, lookup }) : m.grpcTransport(o);
  };
  // A lookup refused (or failed) is asked again at the next call, not remembered for the binding's life.
  const transport = () =>
    (loaded ??= load().catch((err: unknown) => {
      loaded = undefined;
      throw err;
    }));
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
