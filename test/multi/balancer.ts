import net from 'node:net';
import { once } from 'node:events';

/**
 * A round-robin TCP load balancer on loopback, as one stands in front of several instances: each new
 * connection goes to the next backend; a backend that refuses (its process is dead) is skipped, as a
 * balancer's health check would, so callers see a dead instance only through the connections that were
 * open to it when it died.
 */
export class Balancer {
  private backends: number[] = [];
  private next = 0;
  private readonly open = new Set<net.Socket>();

  private constructor(
    private readonly server: net.Server,
    readonly port: number,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  static async start(): Promise<Balancer> {
    const holder: { lb?: Balancer } = {};
    const server = net.createServer((client) => {
      if (holder.lb) holder.lb.accept(client);
      else client.destroy();
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    holder.lb = new Balancer(server, (server.address() as net.AddressInfo).port);
    return holder.lb;
  }

  /** The backends' ports (replaces the list: a restarted instance listens on a new port). */
  setBackends(ports: number[]): void {
    this.backends = [...ports];
  }

  private accept(client: net.Socket, tried = 0): void {
    client.pause();
    if (this.backends.length === 0 || tried >= this.backends.length) {
      client.destroy();
      return;
    }
    const port = this.backends[this.next++ % this.backends.length]!;
    const upstream = net.connect(port, '127.0.0.1');
    let connected = false;
    upstream.once('connect', () => {
      connected = true;
      this.open.add(client).add(upstream);
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
    const close = () => {
      this.open.delete(client);
      this.open.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    upstream.on('error', () => {
      if (connected) close();
      else this.accept(client, tried + 1);
    });
    upstream.on('close', () => {
      if (connected) close();
    });
    client.on('error', close).on('close', () => {
      if (connected) close();
    });
  }

  async close(): Promise<void> {
    for (const s of this.open) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
