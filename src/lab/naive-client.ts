import type { VirtualClock } from '../core/clock.ts';
import { isTaskplaneError } from '../core/errors.ts';
import type { Ledger, RequestKind } from './ledger.ts';
import type { LabSettings } from './settings.ts';
import type { SimAgent } from './sim-agent.ts';
import {
  isTerminalA2A,
  type AgentSnapshot,
  type SimNetwork,
  type StreamConn,
  type WebhookDelivery,
} from './sim-network.ts';
import { MINUTE_MS, WORLD, type JobSpec } from './world-model.ts';

interface ClientJob {
  spec: JobSpec;
  messageId: string;
  remoteId: string | null;
  done: boolean;
  lastHeardMs: number;
  answered: string | null;
  stream: StreamConn | null;
  handled: Set<string>;
}

/**
 * The baseline clients that live in lab/ only: what teams write before they meet the failure
 * modes. One class, switched by the settings:
 * - stream + `resend`: on a drop, SendStreamingMessage again with the original message (a
 *   common mistake): the agent starts a second task while the first keeps running.
 * - stream + `reattach`: SubscribeToTask on the same task id; GetTask if it already ended.
 * - push: register a webhook in the send and wait for the agent to speak; no reconciliation unless
 *   `reconcileMin` > 0, and then one GetTask per in-flight task not heard from for an interval.
 * - poll: GetTask every `pollS` seconds, fixed, until terminal.
 * The handler does its side effect on every COMPLETED it sees unless `idempotent` (then once per
 * task and state, repeats counted as absorbed). TaskNotFound on a task we created is treated as lost
 * and resubmitted with the same messageId, by every baseline but resend (which never asks).
 */
export class NaiveClient {
  private readonly jobs: ClientJob[];

  constructor(
    private readonly clock: VirtualClock,
    private readonly agent: SimAgent,
    private readonly net: SimNetwork,
    private readonly ledger: Ledger,
    specs: readonly JobSpec[],
    private readonly settings: LabSettings,
  ) {
    this.jobs = specs.map((spec) => ({
      spec,
      messageId: `m-${spec.index}`,
      remoteId: null,
      done: false,
      lastHeardMs: 0,
      answered: null,
      stream: null,
      handled: new Set(),
    }));
    net.setReceiver((d) => this.onWebhook(d));
  }

  start(): void {
    for (const job of this.jobs)
      this.clock.setTimer(job.spec.arrivalMs - this.clock.now(), () => this.submit(job));
    const everyMs = this.settings.reconcileMin * MINUTE_MS;
    if (everyMs > 0) {
      const tick = () => {
        this.reconcile(everyMs);
        this.clock.setTimer(everyMs, tick);
      };
      this.clock.setTimer(everyMs, tick);
    }
  }

  /** A request: counted, reaches the agent one latency later, its answer one more latency later. */
  private call<T>(
    kind: RequestKind,
    fn: () => T,
    ok: (r: T) => void,
    fail: (code: string) => void = () => {},
  ): void {
    this.ledger.request(kind);
    this.clock.setTimer(WORLD.latencyMs, () => {
      let result: T;
      try {
        result = fn();
      } catch (err) {
        const code = isTaskplaneError(err) ? err.code : 'internal';
        this.clock.setTimer(WORLD.latencyMs, () => fail(code));
        return;
      }
      this.clock.setTimer(WORLD.latencyMs, () => ok(result));
    });
  }

  private submit(job: ClientJob): void {
    job.remoteId = null;
    const base = { messageId: job.messageId, contextId: `ctx-${job.spec.index}`, job: job.spec.index };
    const { delivery } = this.settings;
    if (delivery === 'stream') {
      const conn = this.openStream(job);
      this.call(
        'send',
        () => this.agent.send(base, conn),
        (s) => this.handle(job, s, 'send'),
      );
      return;
    }
    const push =
      delivery === 'push' ? { url: 'https://client.example/hook', token: `tok-${job.spec.index}` } : null;
    this.call(
      'send',
      () => this.agent.send({ ...base, push }),
      (s) => {
        this.handle(job, s, 'send');
        if (delivery === 'poll') this.schedulePoll(job, s.id);
      },
    );
  }

  private openStream(job: ClientJob): StreamConn {
    const conn = this.net.openStream(job.spec.index, {
      event: (s) => {
        if (job.stream === conn) this.handle(job, s, 'stream');
      },
      end: (reason) => {
        if (reason === 'drop' && job.stream === conn && !job.done) this.onDrop(job);
      },
    });
    job.stream = conn;
    return conn;
  }

  private onDrop(job: ClientJob): void {
    this.clock.setTimer(WORLD.reconnectDelayMs, () => {
      if (job.done) return;
      if (this.settings.onDrop === 'resend' || job.remoteId === null) {
        this.submit(job);
        return;
      }
      const id = job.remoteId;
      const conn = this.openStream(job);
      this.call(
        'subscribe',
        () => this.agent.subscribe(id, conn),
        (s) => this.handle(job, s, 'stream'),
        (code) => {
          if (job.stream === conn) job.stream = null;
          conn.open = false;
          if (code === 'not_found') this.resubmit(job);
          else
            this.call(
              'get',
              () => this.agent.get(id),
              (s) => this.handle(job, s, 'get'),
              (c) => c === 'not_found' && this.resubmit(job),
            );
        },
      );
    });
  }

  private schedulePoll(job: ClientJob, id: string): void {
    this.clock.setTimer(this.settings.pollS * 1000, () => {
      if (job.done || job.remoteId !== id) return;
      this.call(
        'get',
        () => this.agent.get(id),
        (s) => {
          this.handle(job, s, 'get');
          this.schedulePoll(job, id);
        },
        (code) => (code === 'not_found' ? this.resubmit(job) : this.schedulePoll(job, id)),
      );
    });
  }

  private reconcile(everyMs: number): void {
    const now = this.clock.now();
    let checked = 0;
    for (const job of this.jobs) {
      if (job.done || job.remoteId === null || now - job.lastHeardMs < everyMs) continue;
      checked++;
      const id = job.remoteId;
      this.call(
        'get',
        () => this.agent.get(id),
        (s) => this.handle(job, s, 'get'),
        (code) => code === 'not_found' && this.resubmit(job),
      );
    }
    this.ledger.reconcileReal += checked;
    this.ledger.reconcilePerTaskCharge += checked;
    // The same pass as ListTasks: one page of up to 100 per interval (statusTimestampAfter the last pass).
    this.ledger.reconcileListCharge += Math.max(1, Math.ceil(checked / 100));
  }

  private resubmit(job: ClientJob): void {
    if (job.done) return;
    this.ledger.resubmitted++;
    this.submit(job);
  }

  private onWebhook(d: WebhookDelivery): void {
    const job = this.jobs[d.snapshot.job];
    // Clients "should check that the task ID matches a task they created" (A2A 4.3.3).
    if (!job || d.snapshot.id !== job.remoteId) return;
    if (this.settings.idempotent) {
      if (job.handled.has(d.deliveryId)) {
        this.ledger.duplicatesAbsorbed++;
        return;
      }
      job.handled.add(d.deliveryId);
    }
    this.handle(job, d.snapshot, 'push');
  }

  private handle(job: ClientJob, s: AgentSnapshot, _source: string): void {
    if (job.remoteId === null) job.remoteId = s.id;
    if (s.id !== job.remoteId) return;
    const now = this.clock.now();
    job.lastHeardMs = now;
    if (s.state === 'TASK_STATE_INPUT_REQUIRED' && s.inputRequestId && job.answered !== s.inputRequestId) {
      const requestId = s.inputRequestId;
      job.answered = requestId;
      // A streaming client answers with SendStreamingMessage on the task: the agent closed the stream at
      // INPUT_REQUIRED, and the answer's own stream carries the rest (one request, not answer + subscribe).
      const conn = this.settings.delivery === 'stream' ? this.openStream(job) : undefined;
      this.call(
        'answer',
        () => this.agent.answer(s.id, requestId, conn),
        (r) => this.handle(job, r, 'answer'),
        () => {
          if (conn) conn.open = false;
        },
      );
    }
    if (!isTerminalA2A(s.state)) return;
    if (s.state === 'TASK_STATE_COMPLETED') {
      if (!this.settings.idempotent) this.ledger.sideEffect(job.spec.index);
      else if (!job.handled.has(`done:${s.id}`)) {
        job.handled.add(`done:${s.id}`);
        this.ledger.sideEffect(job.spec.index);
      }
    }
    if (!job.done) {
      job.done = true;
      this.ledger.learned(job.spec.index, now, s.statusMs);
      if (job.stream?.open) job.stream.open = false;
    }
  }

  allLearned(): boolean {
    return this.ledger.learnedCount === this.jobs.length;
  }
}
