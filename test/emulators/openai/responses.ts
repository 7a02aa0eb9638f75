/**
 * One emulated response: its wire object, its numbered event log, and the timers that move it from
 * `queued` to a terminal state on the injected clock. Everything a stream, a retrieve or a webhook
 * shows is read from here, so the three paths can never disagree.
 */
import type { Clock } from '../../../src/core/clock.ts';
import type { Random } from '../../../src/core/random.ts';
import type { ResponseFaults } from './faults.ts';

export type ResponseStatus = 'queued' | 'in_progress' | 'completed' | 'failed' | 'incomplete' | 'cancelled';

export const TERMINAL_STATUSES: ReadonlySet<ResponseStatus> = new Set([
  'completed',
  'failed',
  'incomplete',
  'cancelled',
]);

export type WireObject = Record<string, unknown>;

export interface StreamEvent {
  type: string;
  sequence_number: number;
  [key: string]: unknown;
}

export interface RunTiming {
  /** Time spent `queued` before `in_progress` (background only). */
  queuedMs: number;
  /** Mean time between output deltas. */
  deltaIntervalMs: number;
  /** Each delta waits `deltaIntervalMs * (1 ± jitter/2)`, drawn from the seeded random. */
  jitter: number;
}

export interface RunHooks {
  /** Called once when the response reaches a terminal status. */
  onTerminal(run: ResponseRun): void;
}

export function hexId(random: Random, prefix: string, bytes = 12): string {
  return prefix + Buffer.from(random.bytes(bytes)).toString('hex');
}

/** Splits text into deltas that keep their whitespace, so the deltas concatenate to the text. */
export function chunkText(text: string): string[] {
  return text.match(/\s*\S+/g) ?? [text];
}

function countTokens(text: string): number {
  return Math.max(1, chunkText(text).length);
}

export class ResponseRun {
  readonly id: string;
  readonly events: StreamEvent[] = [];
  readonly createdAtMs: number;
  /** Streams attached to this response; each gets every event after it joined. */
  readonly listeners = new Set<(event: StreamEvent) => void>();
  /** How many stream connections were opened, so one-shot stream faults hit only the first. */
  streamConnections = 0;
  forgotten = false;
  private readonly wire: WireObject;
  private readonly itemId: string;
  private readonly chunks: string[];
  private emitted = 0;
  private stopTimer: (() => void) | undefined;

  constructor(
    readonly request: {
      model: string;
      input: string;
      background: boolean;
      stream: boolean;
      store: boolean;
      metadata: Record<string, string>;
    },
    readonly faults: ResponseFaults,
    reply: string,
    private readonly clock: Clock,
    private readonly random: Random,
    private readonly timing: RunTiming,
    private readonly hooks: RunHooks,
  ) {
    this.id = hexId(random, 'resp_');
    this.itemId = hexId(random, 'msg_');
    this.createdAtMs = clock.now();
    this.chunks = chunkText(reply);
    this.wire = {
      id: this.id,
      object: 'response',
      created_at: Math.floor(this.createdAtMs / 1000),
      status: request.background ? 'queued' : 'in_progress',
      background: request.background,
      completed_at: null,
      error: null,
      incomplete_details: null,
      instructions: null,
      max_output_tokens: null,
      metadata: request.metadata,
      model: request.model,
      output: [],
      parallel_tool_calls: true,
      previous_response_id: null,
      service_tier: 'default',
      store: request.store,
      temperature: 1,
      text: { format: { type: 'text' } },
      tool_choice: 'auto',
      tools: [],
      top_p: 1,
      truncation: 'disabled',
      usage: null,
      user: null,
    };
  }

  get status(): ResponseStatus {
    return this.wire.status as ResponseStatus;
  }

  get terminal(): boolean {
    return TERMINAL_STATUSES.has(this.status);
  }

  /** A deep copy of the response as the API would return it now. */
  snapshot(): WireObject {
    return structuredClone(this.wire);
  }

  start(): void {
    this.emit('response.created', { response: this.snapshot() });
    if (this.request.background) {
      this.emit('response.queued', { response: this.snapshot() });
      if (this.faults.stuckInQueued) return;
      this.stopTimer = this.clock.setTimer(this.timing.queuedMs, () => this.begin());
    } else {
      this.begin();
    }
  }

  /** Cancels a running response. Returns the response as the cancel call should answer it. */
  cancel(): WireObject {
    if (this.terminal) return this.snapshot();
    this.stopTimer?.();
    if (this.faults.cancelLosesRace) {
      if (this.status === 'queued') this.begin(false);
      while (this.emitted < this.chunks.length) this.delta();
      this.finish();
      return this.snapshot();
    }
    this.wire.status = 'cancelled';
    this.emit('response.cancelled', { response: this.snapshot() });
    this.hooks.onTerminal(this);
    return this.snapshot();
  }

  private begin(schedule = true): void {
    this.wire.status = 'in_progress';
    this.emit('response.in_progress', { response: this.snapshot() });
    const item = { id: this.itemId, type: 'message', status: 'in_progress', role: 'assistant', content: [] };
    this.emit('response.output_item.added', { output_index: 0, item });
    this.emit('response.content_part.added', {
      item_id: this.itemId,
      output_index: 0,
      content_index: 0,
      part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
    });
    if (schedule) this.scheduleNext();
  }

  private limit(): number {
    return this.faults.incompleteReason ? Math.ceil(this.chunks.length / 2) : this.chunks.length;
  }

  private scheduleNext(): void {
    const { deltaIntervalMs, jitter } = this.timing;
    const wait = Math.round(deltaIntervalMs * (1 + jitter * (this.random.next() - 0.5)));
    this.stopTimer = this.clock.setTimer(wait, () => {
      if (this.emitted < this.limit()) {
        this.delta();
        this.scheduleNext();
      } else {
        this.finish();
      }
    });
  }

  private delta(): void {
    const delta = this.chunks[this.emitted++]!;
    this.emit('response.output_text.delta', {
      item_id: this.itemId,
      output_index: 0,
      content_index: 0,
      delta,
      logprobs: [],
    });
  }

  private finish(): void {
    const text = this.chunks.slice(0, this.emitted).join('');
    const part = { type: 'output_text', text, annotations: [], logprobs: [] };
    const base = { item_id: this.itemId, output_index: 0, content_index: 0 };
    this.emit('response.output_text.done', { ...base, text, logprobs: [] });
    this.emit('response.content_part.done', { ...base, part });
    const done = this.faults.incompleteReason ? 'incomplete' : 'completed';
    const item = { id: this.itemId, type: 'message', status: done, role: 'assistant', content: [part] };
    this.emit('response.output_item.done', { output_index: 0, item });

    const inputTokens = countTokens(this.request.input);
    const outputTokens = this.faults.failWith ? 0 : this.emitted;
    this.wire.usage = {
      input_tokens: inputTokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: outputTokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: inputTokens + outputTokens,
    };
    if (this.faults.failWith) {
      this.wire.status = 'failed';
      this.wire.error = { ...this.faults.failWith };
      this.emit('response.failed', { response: this.snapshot() });
    } else if (this.faults.incompleteReason) {
      this.wire.status = 'incomplete';
      this.wire.output = [item];
      this.wire.incomplete_details = { reason: this.faults.incompleteReason };
      this.emit('response.incomplete', { response: this.snapshot() });
    } else {
      this.wire.status = 'completed';
      this.wire.output = [item];
      this.wire.completed_at = Math.floor(this.clock.now() / 1000);
      this.emit('response.completed', { response: this.snapshot() });
    }
    this.hooks.onTerminal(this);
  }

  private emit(type: string, body: Record<string, unknown>): void {
    const event: StreamEvent = { type, ...body, sequence_number: this.events.length };
    this.events.push(event);
    for (const listener of [...this.listeners]) listener(event);
  }
}
