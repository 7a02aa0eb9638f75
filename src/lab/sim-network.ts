import type { VirtualClock } from '../core/clock.ts';
import type { SeededRandom } from '../core/random.ts';
import type { Ledger } from './ledger.ts';
import type { FaultName } from './settings.ts';
import { WORLD, exponential } from './world-model.ts';

/** What the agent says about one task, as every read path (send, get, list, stream, push) carries it. */
export interface AgentSnapshot {
  id: string;
  contextId: string;
  job: number;
  state: A2AState;
  /** Status timestamp (ms): what ListTasks filters on and what notify delay is measured from. */
  statusMs: number;
  /** Increases with every status change of this task. */
  version: number;
  inputRequestId: string | null;
}

export type A2AState =
  | 'TASK_STATE_WORKING'
  | 'TASK_STATE_INPUT_REQUIRED'
  | 'TASK_STATE_COMPLETED'
  | 'TASK_STATE_FAILED'
  | 'TASK_STATE_CANCELED';

export function isTerminalA2A(state: A2AState): boolean {
  return state === 'TASK_STATE_COMPLETED' || state === 'TASK_STATE_FAILED' || state === 'TASK_STATE_CANCELED';
}

export interface StreamSink {
  event(snapshot: AgentSnapshot): void;
  /** `done`: the agent closed the stream after a terminal event; `drop`: the connection broke. */
  end(reason: 'done' | 'drop'): void;
}

/** One open stream: events reach the client one latency later; flaps drop it after Exp(8 min). */
export class StreamConn {
  open = true;
  private cancelDrop: (() => void) | null = null;

  constructor(
    private readonly net: SimNetwork,
    readonly job: number,
    private readonly sink: StreamSink,
  ) {
    if (net.faults.flaps) {
      this.cancelDrop = net.clock.setTimer(exponential(net.random, WORLD.flapMeanMs), () => this.drop());
    }
    net.openStreams.add(this);
  }

  push(snapshot: AgentSnapshot): void {
    if (!this.open) return;
    this.net.clock.setTimer(WORLD.latencyMs, () => {
      if (this.open) this.sink.event(snapshot);
    });
  }

  /** The agent ends the stream after the terminal event (delivered in order, same latency). */
  finish(): void {
    if (!this.open) return;
    this.cancelDrop?.();
    this.net.clock.setTimer(WORLD.latencyMs, () => {
      if (!this.open) return;
      this.open = false;
      this.net.openStreams.delete(this);
      this.sink.end('done');
    });
  }

  /**
   * The agent's process died: what it had already written is on the wire and still arrives (TCP
   * delivers sent bytes before the close), then the connection ends as a drop. A network flap
   * (`drop`) loses what was in flight instead.
   */
  crash(): void {
    if (!this.open) return;
    this.cancelDrop?.();
    this.cancelDrop = null;
    this.net.clock.setTimer(WORLD.latencyMs, () => this.drop());
  }

  /** The client hung up (its own abort or the end of its loop). Its pending drop, if any, then does nothing. */
  close(): void {
    if (!this.open) return;
    this.open = false;
    this.net.openStreams.delete(this);
  }

  drop(): void {
    if (!this.open) return;
    this.open = false;
    this.net.openStreams.delete(this);
    this.cancelDrop?.();
    this.net.ledger.drop(this.job, this.net.clock.now());
    this.sink.end('drop');
  }
}

export interface WebhookDelivery {
  deliveryId: string;
  url: string;
  token: string;
  snapshot: AgentSnapshot;
}

/** The client's webhook receiver. Resolves when it has processed the delivery (then it answers 2xx). */
export type WebhookReceiver = (delivery: WebhookDelivery) => Promise<void> | void;

/**
 * The network between client and agent: latency, stream flaps, the receiver outage and lost acks.
 * Draws come from its own random stream so they do not disturb the jobs.
 */
export class SimNetwork {
  private receiver: WebhookReceiver | null = null;
  /** Streams open now, so a fault can break them all at once (`dropStreams`). */
  readonly openStreams = new Set<StreamConn>();

  constructor(
    readonly clock: VirtualClock,
    readonly random: SeededRandom,
    readonly ledger: Ledger,
    readonly faults: Record<FaultName, boolean>,
  ) {}

  setReceiver(receiver: WebhookReceiver): void {
    this.receiver = receiver;
  }

  openStream(job: number, sink: StreamSink): StreamConn {
    return new StreamConn(this, job, sink);
  }

  /** Every open stream breaks now, as when a proxy between client and agent restarts. */
  dropStreams(): void {
    for (const stream of [...this.openStreams]) stream.drop();
  }

  receiverDown(atMs: number): boolean {
    return this.faults.outage && atMs >= WORLD.outageStartMs && atMs < WORLD.outageEndMs;
  }

  /**
   * One webhook POST. `done(true)` when the agent saw a 2xx. During the outage the connection is refused;
   * with lost acks on, a processed delivery's response is lost with probability WORLD.lostAckShare, so
   * the agent counts it failed and retries: the same event arrives twice.
   */
  post(delivery: WebhookDelivery, done: (ok: boolean) => void): void {
    const lat = WORLD.latencyMs;
    this.clock.setTimer(lat, () => {
      const receiver = this.receiver;
      if (!receiver || this.receiverDown(this.clock.now())) {
        this.clock.setTimer(lat, () => done(false));
        return;
      }
      const respond = () => {
        const lostAck = this.faults.lostacks && this.random.next() < WORLD.lostAckShare;
        this.clock.setTimer(lat, () => done(!lostAck));
      };
      const processed = receiver(delivery);
      if (processed instanceof Promise) {
        processed.then(respond, () => this.clock.setTimer(lat, () => done(false)));
      } else respond();
    });
  }
}
