import net from 'node:net';
import { once } from 'node:events';

/**
 * A small TCP fault proxy on loopback for end-to-end tests: forwards to a target port, and on command
 * drops every open connection (a network flap: streams break mid-flight) or refuses new ones (a
 * receiver outage). Refusals are counted and can be awaited as events.
 */
export class FaultProxy {
  refusing = false;
  refused = 0;
  dropped = 0;
  private readonly pairs = new Set<[net.Socket, net.Socket]>();
  private readonly refusedWaiters = new Set<{ n: number; resolve: () => void }>();

  private constructor(
    private readonly server: net.Server,
    readonly port: number,
    readonly targetPort: number,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  static async start(targetPort: number, port = 0): Promise<FaultProxy> {
    const holder: { proxy?: FaultProxy } = {};
    const server = net.createServer((client) => {
      if (holder.proxy) holder.proxy.accept(client);
      else client.destroy();
    });
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
    holder.proxy = new FaultProxy(server, (server.address() as net.AddressInfo).port, targetPort);
    return holder.proxy;
  }

  private accept(client: net.Socket): void {
    if (this.refusing) {
      this.refused++;
      for (const w of [...this.refusedWaiters]) {
        if (this.refused >= w.n) {
          this.refusedWaiters.delete(w);
          w.resolve();
        }
      }
      client.destroy();
      return;
    }
    const upstream = net.connect(this.targetPort, '127.0.0.1');
    const pair: [net.Socket, net.Socket] = [client, upstream];
    this.pairs.add(pair);
    const close = () => {
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
    client.pipe(upstream);
    upstream.pipe(client);
  }

  /** Breaks every open connection (both directions), as a flapping network would. */
  dropAll(): number {
    const n = this.pairs.size;
    for (const [a, b] of this.pairs) {
      a.destroy();
      b.destroy();
    }
    this.pairs.clear();
    this.dropped += n;
    return n;
  }

  refuse(on: boolean): void {
    this.refusing = on;
  }

  /** Resolves once `n` connections in total have been refused. */
  waitRefused(n: number): Promise<void> {
    if (this.refused >= n) return Promise.resolve();
    return new Promise((resolve) => this.refusedWaiters.add({ n, resolve }));
  }

  async close(): Promise<void> {
    this.dropAll();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

/** A free loopback port (listen on 0, read it, close). */
export async function freePort(): Promise<number> {
  const s = net.createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}
