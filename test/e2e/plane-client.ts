import { createParser } from 'eventsource-parser';

/** Minimal client of a running plane for e2e tests and the bench. */
export interface PlaneTask {
  id: string;
  state: string;
  remoteId: string | null;
  contextId: string;
  messageId: string;
  pendingInput: { requestId: string; prompt: string; answeredAt?: number | null } | null;
  updatedAt: number;
}

export interface PlaneEvent {
  seq: number;
  envelopeId: string;
  type: string;
  at: number;
  data: Record<string, unknown>;
}

export class PlaneClient {
  constructor(
    public url: string,
    readonly key: string,
  ) {}

  async call<T>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; body: T }> {
    const res = await fetch(this.url + path, {
      method,
      headers: { authorization: `Bearer ${this.key}`, 'content-type': 'application/json', ...headers },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: res.status, body: (await res.json().catch(() => null)) as T };
  }

  async create(target: string, input: unknown, idempotencyKey?: string): Promise<PlaneTask> {
    const r = await this.call<PlaneTask>(
      'POST',
      '/v1/tasks',
      { target, input },
      idempotencyKey ? { 'idempotency-key': idempotencyKey } : {},
    );
    if (r.status >= 300) throw new Error(`create failed: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  }

  async tasks(): Promise<PlaneTask[]> {
    const out: PlaneTask[] = [];
    let cursor: string | null = null;
    do {
      const q: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
      const r = await this.call<{ tasks: PlaneTask[]; nextCursor: string | null }>(
        'GET',
        `/v1/tasks?limit=500${q}`,
      );
      if (r.status !== 200) throw new Error(`list failed: ${r.status}`);
      out.push(...r.body.tasks);
      cursor = r.body.nextCursor;
    } while (cursor);
    return out;
  }
}

/**
 * Follows `/v1/events` with Last-Event-ID resume across disconnects and plane restarts, calling
 * `onEvent` for each event and `onConnect` after each (re)connection. Given a function in place of a
 * client, it asks it for the plane to connect to at every (re)connection (several planes on one store:
 * the stream roams between them), and hop() drops the current connection. stop() ends it.
 */
export class EventFollower {
  lastSeq = 0;
  private stopped = false;
  private controller = new AbortController();
  readonly done: Promise<void>;
  private readonly pick: () => string | undefined;
  private readonly key: string;

  constructor(
    client: PlaneClient | { key: string; pick: () => string | undefined },
    private readonly onEvent: (e: PlaneEvent) => void,
    private readonly onConnect: () => void = () => {},
  ) {
    this.key = client.key;
    this.pick = client instanceof PlaneClient ? () => client.url : client.pick;
    this.done = this.run();
  }

  stop(): void {
    this.stopped = true;
    this.controller.abort();
  }

  /** Drops the current connection; the next one goes wherever the picker says. */
  hop(): void {
    this.controller.abort();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const url = this.pick();
      this.controller = new AbortController();
      if (url) {
        try {
          const res = await fetch(`${url}/v1/events`, {
            headers: { authorization: `Bearer ${this.key}`, 'last-event-id': String(this.lastSeq) },
            signal: this.controller.signal,
          });
          if (!res.ok || !res.body) throw new Error(`events: ${res.status}`);
          this.onConnect();
          const parser = createParser({
            onEvent: (ev) => {
              const e = JSON.parse(ev.data) as PlaneEvent;
              this.lastSeq = Math.max(this.lastSeq, e.seq);
              this.onEvent(e);
            },
          });
          const reader = res.body.getReader();
          const dec = new TextDecoder();
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            parser.feed(dec.decode(value, { stream: true }));
          }
        } catch {
          if (this.stopped) return;
        }
      }
      // Reconnect pacing while a plane restarts (a retry delay, not a timing assumption).
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
