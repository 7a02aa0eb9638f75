import { EventFollower, type PlaneEvent } from '../e2e/plane-client.ts';
import { spawnHost, spawnTaskplane, freePort, type TestProcess } from '../support/process.ts';
import { Balancer } from './balancer.ts';

/**
 * Plane and host processes (`taskplane serve`, `taskplane host`, run from source) on one PostgreSQL, each
 * kind behind its own round-robin balancer the way a deployment puts them behind a load balancer: planes
 * reach "the host" through the host balancer, hosts push to "the plane" through the plane balancer.
 * Instances can be SIGKILLed and restarted (a restarted plane listens on a new port, so it is a new
 * instance; a restarted host keeps its host id, as a systemd unit or a StatefulSet would).
 */
export interface Instance {
  name: string;
  proc: TestProcess;
  port: number;
  url: string;
}

export interface ProcessClusterOptions {
  planeDb: string;
  hostDb: string;
  planes: number;
  hosts: number;
  apiKeys: string;
  planeOptions: Record<string, unknown>;
  hostLeaseMs: number;
}

export class ProcessCluster {
  readonly planes: Array<Instance | null>;
  readonly hosts: Array<Instance | null>;

  private constructor(
    private readonly o: ProcessClusterOptions,
    readonly planeLb: Balancer,
    readonly hostLb: Balancer,
  ) {
    this.planes = new Array<Instance | null>(o.planes).fill(null);
    this.hosts = new Array<Instance | null>(o.hosts).fill(null);
  }

  static async start(o: ProcessClusterOptions): Promise<ProcessCluster> {
    const c = new ProcessCluster(o, await Balancer.start(), await Balancer.start());
    // Hosts first: the planes' first starts go to them. One plane alone first, so the three do not all
    // race to create the schema on a cold database (they would manage, but slower on a busy machine).
    await Promise.all(c.hosts.map((_, i) => c.startHost(i)));
    await c.startPlane(0);
    await Promise.all(c.planes.slice(1).map((_, i) => c.startPlane(i + 1)));
    return c;
  }

  /** Plane lease owner names are `plane@<hostname>:<port>` (start-server.ts) for a fixed port. */
  async startPlane(i: number): Promise<Instance> {
    const port = await freePort();
    const proc = await spawnTaskplane(
      [
        'serve',
        '--port',
        String(port),
        '--db',
        this.o.planeDb,
        '--public-url',
        this.planeLb.url,
        '--target',
        `demo=${this.hostLb.url}`,
        '--plane-options',
        JSON.stringify(this.o.planeOptions),
        '--log-level',
        'warn',
      ],
      {
        env: { TASKPLANE_API_KEYS: this.o.apiKeys },
        ready: /taskplane serve ready (http:\S+)/,
        readyTimeoutMs: 60_000,
      },
    );
    const inst = { name: `plane-${i}`, proc, port, url: `http://127.0.0.1:${port}` };
    this.planes[i] = inst;
    this.planeLb.setBackends(this.live(this.planes).map((p) => p.port));
    return inst;
  }

  async startHost(i: number): Promise<Instance> {
    const port = await freePort();
    const { proc, url } = await spawnHost(
      [
        '--port',
        String(port),
        '--db',
        this.o.hostDb,
        '--host-id',
        `host-${i}`,
        '--public-url',
        this.hostLb.url,
        '--allow-private-webhooks',
        '--push-base-ms',
        '200',
        '--push-attempts',
        '40',
        '--host-lease-ms',
        String(this.o.hostLeaseMs),
        '--log-level',
        'warn',
      ],
      { readyTimeoutMs: 60_000 },
    );
    const inst = { name: `host-${i}`, proc, port, url };
    this.hosts[i] = inst;
    this.hostLb.setBackends(this.live(this.hosts).map((h) => h.port));
    return inst;
  }

  /** SIGKILL: no shutdown code runs, leases are left as they were, connections drop. */
  async kill(kind: 'plane' | 'host', i: number): Promise<Instance> {
    const list = kind === 'plane' ? this.planes : this.hosts;
    const inst = list[i]!;
    list[i] = null;
    (kind === 'plane' ? this.planeLb : this.hostLb).setBackends(this.live(list).map((x) => x.port));
    await inst.proc.kill('SIGKILL');
    return inst;
  }

  live(list: Array<Instance | null>): Instance[] {
    return list.filter((x): x is Instance => x !== null);
  }

  async close(): Promise<void> {
    for (const inst of [...this.live(this.planes), ...this.live(this.hosts)]) await inst.proc.stop(5_000);
    await this.planeLb.close();
    await this.hostLb.close();
  }
}

export type SeenEvent = PlaneEvent;

/**
 * An SSE client of `/v1/events` that connects to one plane instance at a time, picked by `pick()` at
 * every (re)connection, and resumes with `Last-Event-ID`: across a killed instance it goes on at
 * another one. Keeps every event it received, in order, duplicates included (the test counts them).
 */
export class RoamingFollower {
  readonly seen: SeenEvent[] = [];
  connections = 0;
  private readonly follower: EventFollower;

  constructor(key: string, pick: () => string | undefined, onEvent: (e: SeenEvent) => void = () => {}) {
    this.follower = new EventFollower(
      { key, pick },
      (e) => {
        this.seen.push(e);
        onEvent(e);
      },
      () => this.connections++,
    );
  }

  get done(): Promise<void> {
    return this.follower.done;
  }

  get lastSeq(): number {
    return this.follower.lastSeq;
  }

  stop(): void {
    this.follower.stop();
  }

  hop(): void {
    this.follower.hop();
  }
}
