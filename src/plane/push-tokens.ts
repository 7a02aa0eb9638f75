import type { Envelope } from '../core/envelope.ts';
import { sha256Hex } from '../core/canonical-json.ts';
import { newToken } from '../core/ids.ts';
import type { Connector, PushRegistration } from '../connectors/connector.ts';
import type { PlaneContext } from './context.ts';
import { updateLocal } from './observe.ts';

/**
 * Push tokens: one fresh single-purpose token per registration, carried in the webhook URL's target
 * and checked by the ingress against the hash kept on the envelope (the token itself is never stored).
 */

/** Whether this envelope's jobs ask the remote to push to us. */
export function pushEnabled(ctx: PlaneContext, connector: Connector): boolean {
  return ctx.config.delivery.push && connector.capabilities.push && ctx.config.publicUrl !== null;
}

/** A fresh single-purpose push registration; only its hash is kept on the envelope. */
export function newPushRegistration(
  ctx: PlaneContext,
  connector: Connector,
  envelopeId: string,
): PushRegistration {
  const token = newToken(ctx.random, 160);
  // The envelope id rides along in the URL so a delivery that beats the start response still finds its envelope.
  const url = `${ctx.config.publicUrl}/v1/webhooks/${encodeURIComponent(connector.kind)}/${encodeURIComponent(connector.target)}?envelope=${encodeURIComponent(envelopeId)}`;
  return { url, token };
}

export function tokenHash(token: string): string {
  return 'sha256:' + sha256Hex(token);
}

/** Prepares the push registration for a start (fresh token; its hash goes on the envelope first). */
export async function preparePush(
  ctx: PlaneContext,
  env: Envelope,
  connector: Connector,
): Promise<PushRegistration | undefined> {
  if (!pushEnabled(ctx, connector)) return undefined;
  const push = newPushRegistration(ctx, connector, env.id);
  const hash = tokenHash(push.token);
  await updateLocal(ctx, env.id, (cur) => ({
    next: { ...cur, subscription: { kind: 'push', tokenHash: hash, registeredAt: ctx.clock.now() } },
    events: [],
  }));
  return push;
}
