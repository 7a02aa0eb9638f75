/**
 * Standard Webhooks deliveries of terminal response events, as OpenAI sends them: a thin payload
 * naming the response, signed with the `standardwebhooks` package, retried with exponential backoff on
 * anything but a 2xx (redirects are not followed and count as failures), optionally duplicated.
 */
import { Webhook } from 'standardwebhooks';
import type { Clock } from '../../../src/core/clock.ts';
import type { Random } from '../../../src/core/random.ts';
import { hexId } from './responses.ts';

export interface WebhookOptions {
  /** Where deliveries are POSTed. */
  url: string;
  /** `whsec_` followed by base64 key bytes, as OpenAI shows it. */
  secret: string;
  /** Attempts per delivery, the first included. @default 5 */
  maxAttempts?: number;
  /** Wait before the first retry; doubles each retry. @default 1000 */
  firstRetryMs?: number;
  /** Per-attempt timeout (real time: it bounds a socket, not the emulated run). @default 5000 */
  attemptTimeoutMs?: number;
  /** Chance in [0, 1] that a delivery is sent twice, drawn from the seeded random. @default 0 */
  duplicateRate?: number;
}

export interface WebhookAttempt {
  webhookId: string;
  type: string;
  responseId: string;
  attempt: number;
  /** HTTP status, or undefined when the request failed before an answer. */
  status: number | undefined;
  ok: boolean;
  /** True when this was the last try for this delivery, whatever its outcome. */
  final: boolean;
}

export class WebhookSender {
  private readonly signer: Webhook;
  private readonly maxAttempts: number;
  private readonly firstRetryMs: number;
  private readonly attemptTimeoutMs: number;
  private readonly duplicateRate: number;
  private readonly inflight = new Set<Promise<void>>();
  private closed = false;

  constructor(
    private readonly options: WebhookOptions,
    private readonly clock: Clock,
    private readonly random: Random,
    private readonly report: (attempt: WebhookAttempt) => void,
  ) {
    this.signer = new Webhook(options.secret);
    this.maxAttempts = options.maxAttempts ?? 5;
    this.firstRetryMs = options.firstRetryMs ?? 1000;
    this.attemptTimeoutMs = options.attemptTimeoutMs ?? 5000;
    this.duplicateRate = options.duplicateRate ?? 0;
  }

  /** Schedules one delivery (and its duplicates) of `type` for response `responseId`. */
  send(type: string, responseId: string, opts: { duplicates?: number; delayMs?: number } = {}): void {
    const webhookId = hexId(this.random, 'wh_');
    const payload = JSON.stringify({
      object: 'event',
      id: hexId(this.random, 'evt_'),
      type,
      created_at: Math.floor(this.clock.now() / 1000),
      data: { id: responseId },
    });
    let copies = 1 + (opts.duplicates ?? 0);
    if (this.duplicateRate > 0 && this.random.next() < this.duplicateRate) copies++;
    const delivery = { webhookId, type, responseId, payload };
    for (let i = 0; i < copies; i++) {
      // Without a delay the first attempt leaves at once, so a virtual clock need not tick to see it.
      if (opts.delayMs) this.clock.setTimer(opts.delayMs, () => this.attempt(delivery, 1));
      else this.attempt(delivery, 1);
    }
  }

  /** Waits for attempts already on the wire; no new ones start after this. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([...this.inflight]);
  }

  private attempt(
    d: { webhookId: string; type: string; responseId: string; payload: string },
    n: number,
  ): void {
    if (this.closed) return;
    const p = this.post(d.webhookId, d.payload).then((status) => {
      const ok = status !== undefined && status >= 200 && status < 300;
      const final = ok || n >= this.maxAttempts || this.closed;
      this.report({
        webhookId: d.webhookId,
        type: d.type,
        responseId: d.responseId,
        attempt: n,
        status,
        ok,
        final,
      });
      if (!final) this.clock.setTimer(this.firstRetryMs * 2 ** (n - 1), () => this.attempt(d, n + 1));
    });
    this.inflight.add(p);
    void p.finally(() => this.inflight.delete(p));
  }

  private async post(webhookId: string, payload: string): Promise<number | undefined> {
    // Signed at send time, as each retry is: a receiver checks the timestamp against its own tolerance.
    const at = new Date(this.clock.now());
    const signature = this.signer.sign(webhookId, at, payload);
    try {
      const res = await fetch(this.options.url, {
        method: 'POST',
        redirect: 'manual',
        signal: AbortSignal.timeout(this.attemptTimeoutMs),
        headers: {
          'content-type': 'application/json',
          'user-agent': 'OpenAI/1.0 (+https://platform.openai.com/docs/webhooks)',
          'webhook-id': webhookId,
          'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
          'webhook-signature': signature,
        },
        body: payload,
      });
      await res.arrayBuffer().catch(() => undefined);
      return res.status;
    } catch {
      return undefined;
    }
  }
}
