import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { TaskplaneError } from '../core/errors.ts';
import type { Resolver } from '../core/public-address.ts';
import { checkWebhookUrl, systemResolver } from '../host/ssrf.ts';
import type { VerifierPort } from '../plane/verifier.ts';

export interface VerifierTransportOptions {
  /** @default the system resolver */
  resolve?: Resolver;
  /**
   * Call verifiers on private, loopback and link-local addresses (a verifier beside the plane, tests).
   * The scheme rule still holds. @default false
   */
  allowPrivate?: boolean;
  /** Most bytes of a verifier's answer read; an answer is a verdict and a few reasons. @default 65536 */
  maxResponseBytes?: number;
}

/**
 * The plane's acceptance verifier calls over node:http(s), with the SSRF guard the host applies to push
 * URLs (host/ssrf.ts): http(s) only, every resolved address public unless allowed, the connection pinned
 * to the address checked (a second DNS answer cannot redirect it), no redirects, and the answer read up
 * to a bound. The plane's timeout aborts `signal`.
 */
export function createVerifierTransport(options: VerifierTransportOptions = {}): VerifierPort {
  const resolve = options.resolve ?? systemResolver;
  const allowPrivate = options.allowPrivate ?? false;
  const maxBytes = options.maxResponseBytes ?? 65_536;
  return {
    async check(url) {
      const checked = await checkWebhookUrl(url, resolve, allowPrivate);
      return checked.ok ? null : checked.reason;
    },
    async post(req) {
      const checked = await checkWebhookUrl(req.url, resolve, allowPrivate);
      if (!checked.ok) throw new TaskplaneError('unavailable', `verifier URL refused: ${checked.reason}`);
      const { url, address, family } = checked;
      const pinned: LookupFunction = (_host, opts, cb) => {
        if ((opts as { all?: boolean }).all)
          (cb as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [
            { address, family },
          ]);
        else cb(null, address, family);
      };
      const mod = url.protocol === 'https:' ? https : http;
      return new Promise((resolvePost, reject) => {
        const fail = (message: string) => reject(new TaskplaneError('unavailable', message));
        const request = mod.request(
          url,
          {
            method: 'POST',
            headers: {
              ...req.headers,
              'content-length': String(Buffer.byteLength(req.body)),
              'user-agent': 'taskplane-verifier',
            },
            lookup: pinned,
            agent: false,
            signal: req.signal,
          },
          (res) => {
            const status = res.statusCode ?? 0;
            if (status >= 300 && status < 400) {
              res.resume();
              resolvePost({ status, body: '' });
              return;
            }
            const chunks: Buffer[] = [];
            let size = 0;
            res.on('data', (chunk: Buffer) => {
              size += chunk.length;
              if (size > maxBytes) {
                request.destroy();
                fail(`the verifier's answer is larger than ${maxBytes} bytes`);
              } else chunks.push(chunk);
            });
            let ended = false;
            res.on('end', () => {
              ended = true;
              resolvePost({ status, body: Buffer.concat(chunks).toString('utf8') });
            });
            // Cut off mid-answer (the plane's timeout, the peer going away): settled here if nothing else did.
            res.on('close', () => {
              if (!ended) fail('the verifier connection closed before the answer ended');
            });
            res.on('error', () => fail('the verifier connection broke while answering'));
          },
        );
        request.on('error', (err: NodeJS.ErrnoException) =>
          fail(req.signal.aborted ? 'aborted' : `the verifier could not be reached (${err.code ?? 'error'})`),
        );
        request.end(req.body);
      });
    },
  };
}
