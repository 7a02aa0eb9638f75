import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { Clock } from '../core/clock.ts';
import { A2A_CONTENT_TYPE } from '../protocols/a2a/types.ts';
import { signatureHeaders, signingKey } from '../protocols/standard-webhooks.ts';
import type { Resolver } from '../core/public-address.ts';
import { checkWebhookUrl } from './ssrf.ts';

export interface PushRequest {
  url: string;
  body: string;
  deliveryId: string;
  /** `Authorization: <scheme> <credentials>` from the config's AuthenticationInfo. */
  authorization?: string;
  /** The A2A `token`, also sent as `X-A2A-Notification-Token` for receivers written to 0.3 SDKs. */
  token?: string;
  /** @default application/a2a+json (A2A 1.0); 0.3 bodies go as application/json */
  contentType?: string;
}

export type PushResult = { ok: true; status: number } | { ok: false; error: string; retryable: boolean };

export type PushSender = (req: PushRequest) => Promise<PushResult>;

/** Header carrying the stable delivery id on every attempt, so receivers can deduplicate. */
export const DELIVERY_ID_HEADER = 'A2A-Delivery-Id';

export interface SenderOptions {
  clock: Clock;
  resolve: Resolver;
  allowPrivate: boolean;
  /** Per-call timeout (spec: 10–30 s). @default 15000 */
  timeoutMs: number;
  /**
   * Standard Webhooks signing secret (`whsec_<base64>`), kept apart from every config's `token`, which
   * a client can read back. When set, each delivery carries `webhook-id` (the delivery id),
   * `webhook-timestamp` and `webhook-signature`. @default unsigned
   */
  signingSecret?: string;
}

/**
 * Sends one push over node:http(s), connecting to the address the SSRF check approved (a pinned
 * `lookup`, so a second DNS answer cannot redirect the connection) and never following redirects: a
 * 3xx is a failure. The timeout runs on the Clock port and covers the whole exchange.
 */
export function createPushSender(options: SenderOptions): PushSender {
  const key =
    options.signingSecret !== undefined ? signingKey(options.signingSecret, 'pushSigningSecret') : null;
  return async (req) => {
    const check = await checkWebhookUrl(req.url, options.resolve, options.allowPrivate);
    if (!check.ok) return { ok: false, error: `refused: ${check.reason}`, retryable: true };
    const { url, address, family } = check;
    const pinned: LookupFunction = (_host, opts, cb) => {
      if ((opts as { all?: boolean }).all)
        (cb as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [
          { address, family },
        ]);
      else cb(null, address, family);
    };
    const headers: Record<string, string> = {
      'content-type': req.contentType ?? A2A_CONTENT_TYPE,
      'content-length': String(Buffer.byteLength(req.body)),
      [DELIVERY_ID_HEADER.toLowerCase()]: req.deliveryId,
      'user-agent': 'taskplane-host',
    };
    if (req.authorization) headers.authorization = req.authorization;
    // The A2A token travels as the spec's notification-token header; it is not a signing key.
    if (req.token) headers['x-a2a-notification-token'] = req.token;
    if (key) Object.assign(headers, signatureHeaders(key, req.deliveryId, options.clock.now(), req.body));
    const mod = url.protocol === 'https:' ? https : http;
    // A value Node will not put in a header makes `request` throw: a failed attempt, not a rejection.
    const invalid = Object.entries(headers).find(([name, value]) => {
      try {
        http.validateHeaderValue(name, value);
        return false;
      } catch {
        return true;
      }
    });
    if (invalid) return { ok: false, error: `header ${invalid[0]}: invalid characters`, retryable: false };
    return new Promise<PushResult>((resolve) => {
      let settled = false;
      const settle = (r: PushResult) => {
        if (settled) return;
        settled = true;
        cancelTimer();
        resolve(r);
      };
      const request = mod.request(url, { method: 'POST', headers, lookup: pinned, agent: false }, (res) => {
        res.resume();
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) settle({ ok: true, status });
          else if (status >= 300 && status < 400)
            settle({ ok: false, error: `redirect ${status} refused`, retryable: true });
          else settle({ ok: false, error: `HTTP ${status}`, retryable: true });
        });
        res.on('error', (err) => settle({ ok: false, error: err.message, retryable: true }));
      });
      const cancelTimer = options.clock.setTimer(options.timeoutMs, () => {
        request.destroy(new Error(`timed out after ${options.timeoutMs} ms`));
      });
      request.on('error', (err) => settle({ ok: false, error: err.message, retryable: true }));
      request.end(req.body);
    });
  };
}
