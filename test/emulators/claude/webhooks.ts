import type { Clock } from '../../../src/core/clock.ts';
import { signatureHeaders, signingKey } from '../../../src/protocols/standard-webhooks.ts';

/**
 * Sends Claude's thin webhook payloads, signed with Standard Webhooks. A failed attempt (anything
 * but 2xx; redirects are not followed) is retried on a short schedule read from the clock; the
 * `webhook-id` stays the same across retries and duplicates, as the specification says.
 */

export interface WebhookOptions {
  url: string;
  /** `whsec_<base64>` signing secret. */
  secret: string;
  /** Extra copies of every delivery, sent after the first succeeds. Default 0. */
  duplicates?: number;
  /** Waits before each retry. Default [1000, 5000, 30000]. */
  retryDelaysMs?: number[];
}

export interface Delivery {
  webhookId: string;
  type: string;
  sessionId: string;
  attempt: number;
  status: number | 'network_error';
}

export class WebhookSender {
  readonly deliveries: Delivery[] = [];
  private inFlight = new Set<Promise<void>>();

  constructor(
    private readonly clock: Clock,
    private readonly options: WebhookOptions,
    private readonly newId: (prefix: string) => string,
  ) {}

  set duplicates(n: number) {
    this.options.duplicates = n;
  }

  send(type: string, sessionId: string): void {
    const id = this.newId('wevt_');
    const body = JSON.stringify({
      type: 'event',
      id,
      created_at: new Date(this.clock.now()).toISOString(),
      data: { type, id: sessionId, organization_id: 'org_emulator', workspace_id: 'wrkspc_emulator' },
    });
    const webhookId = this.newId('msg_');
    this.track(this.attempt(webhookId, type, sessionId, body, 1));
  }

  /** Resolves once every delivery started so far, retries included, has ended. */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  private track(p: Promise<void>): void {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
  }

  private async attempt(
    webhookId: string,
    type: string,
    sessionId: string,
    body: string,
    attempt: number,
  ): Promise<void> {
    const ok = await this.post(webhookId, type, sessionId, body, attempt);
    if (ok) {
      for (let i = 0; i < (this.options.duplicates ?? 0); i++)
        await this.post(webhookId, type, sessionId, body, attempt);
      return;
    }
    const delays = this.options.retryDelaysMs ?? [1000, 5000, 30_000];
    const delay = delays[attempt - 1];
    if (delay === undefined) return;
    await this.clock.sleep(delay);
    await this.attempt(webhookId, type, sessionId, body, attempt + 1);
  }

  private async post(
    webhookId: string,
    type: string,
    sessionId: string,
    body: string,
    attempt: number,
  ): Promise<boolean> {
    const key = signingKey(this.options.secret, 'webhook.secret');
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'Anthropic-Webhooks/emulator',
      ...signatureHeaders(key, webhookId, this.clock.now(), body),
    };
    let status: number | 'network_error';
    try {
      const res = await fetch(this.options.url, { method: 'POST', headers, body, redirect: 'manual' });
      await res.arrayBuffer();
      status = res.status;
    } catch {
      status = 'network_error';
    }
    this.deliveries.push({ webhookId, type, sessionId, attempt, status });
    return typeof status === 'number' && status >= 200 && status < 300;
  }
}
