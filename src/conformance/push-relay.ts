import http from 'node:http';
import { isTerminalWireState, parseBody, type StateFact } from './wire-facts.ts';
import { listenLoopback, readBounded } from './wire-proxy.ts';

/**
 * The receiving side of push notifications: the agent delivers to this loopback server, which hands each
 * delivery to the engine's webhook ingress and records what happened. Faults, when on:
 *
 * - `duplicate`: every delivery is handed over twice (the second must be absorbed);
 * - `hold`: says, per delivery, whether it is acknowledged to the agent and held back: `final`, handed
 *   over after the task's first terminal delivery (a delayed push arriving after the final state);
 *   `manual`, handed over when the row calls `release` (a delayed push arriving while the task still
 *   works and a newer state was fetched); either way after `holdMaxMs` at the latest.
 */
export type HoldMode = 'final' | 'manual';

export interface PushDelivery {
  at: number;
  /** The envelope its URL names (the engine puts it there). */
  envelopeId: string | null;
  states: StateFact[];
  /** What the ingress answered each time the delivery was handed over (`observed`, `duplicate`, …, or an error code). */
  results: string[];
  held: HoldMode | null;
  /** When it was handed over to the engine the first time (null: not yet). */
  handedAt: number | null;
  /** It carried a Standard Webhooks signature (`webhook-signature`). */
  signed: boolean;
}

export type Ingress = (request: {
  headers: Record<string, string>;
  rawBody: string;
  envelopeId: string | null;
}) => Promise<string>;

export class PushRelay {
  readonly deliveries: PushDelivery[] = [];
  duplicate = false;
  /** Which deliveries to hold back (a terminal one never is), or null for none. */
  hold: ((delivery: PushDelivery) => HoldMode | null) | null = null;
  holdMaxMs = 10_000;
  private readonly held = new Map<string, Array<{ mode: HoldMode; send: () => Promise<void> }>>();

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
    private readonly ingress: Ingress,
    private readonly now: () => number,
  ) {}

  static async start(ingress: Ingress, now: () => number = Date.now): Promise<PushRelay> {
    const holder: { relay?: PushRelay } = {};
    const { server, url } = await listenLoopback((req, res) => holder.relay?.handle(req, res));
    holder.relay = new PushRelay(server, url, ingress, now);
    return holder.relay;
  }

  async close(): Promise<void> {
    await this.releaseAll();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  /** Hands over every delivery still held (end of a row). */
  async releaseAll(): Promise<void> {
    for (const taskId of [...this.held.keys()]) await this.release(taskId);
  }

  /** Hands over the deliveries of a task held with `manual`; the others stay held. */
  async releaseManual(taskId: string): Promise<void> {
    await this.release(taskId, 'manual');
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const body = await readBounded(req, 1024 * 1024).catch(() => null);
    if (!body) return void req.socket.destroy();
    const rawBody = body.toString('utf8');
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
    const envelopeId = new URL(req.url ?? '/', 'http://relay').searchParams.get('envelope');
    const delivery: PushDelivery = {
      at: this.now(),
      envelopeId,
      states: parseBody(rawBody),
      results: [],
      held: null,
      handedAt: null,
      signed: Boolean(headers['webhook-signature']),
    };
    this.deliveries.push(delivery);
    const handOver = async (): Promise<string> => {
      delivery.handedAt ??= this.now();
      const result = await this.ingress({ headers, rawBody, envelopeId }).catch(
        (err: unknown) => `error:${(err as { code?: string }).code ?? 'internal'}`,
      );
      delivery.results.push(result);
      return result;
    };
    const taskId = delivery.states[0]?.taskId;
    const terminal = delivery.states.some((s) => isTerminalWireState(s.state));
    const mode = taskId && !terminal ? (this.hold?.(delivery) ?? null) : null;
    if (mode && taskId) {
      delivery.held = mode;
      const send = async () => {
        await handOver();
      };
      const list = this.held.get(taskId) ?? [];
      list.push({ mode, send });
      this.held.set(taskId, list);
      setTimeout(() => void this.release(taskId), this.holdMaxMs).unref();
      res.writeHead(200).end();
      return;
    }
    const first = await handOver();
    if (this.duplicate) await handOver();
    if (terminal && taskId) await this.release(taskId, 'final');
    const status = first.startsWith('error:unauthenticated') ? 401 : first.startsWith('error:') ? 500 : 200;
    res.writeHead(status).end();
  }

  private async release(taskId: string, only?: HoldMode): Promise<void> {
    const list = this.held.get(taskId);
    if (!list) return;
    const now = list.filter((h) => only === undefined || h.mode === only);
    const rest = list.filter((h) => !now.includes(h));
    if (rest.length) this.held.set(taskId, rest);
    else this.held.delete(taskId);
    for (const { send } of now) {
      await send();
      if (this.duplicate) await send();
    }
  }
}
