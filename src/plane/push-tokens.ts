import type { Envelope } from '../core/envelope.ts';
import { sha256Hex } from '../core/canonical-json.ts';
import { newToken } from '../core/ids.ts';
import type { Connector, PushRegistration } from '../connectors/connector.ts';
import type { PlaneContext } from './context.ts';
import { updateLocal } from './observe.ts';

/**
 * Push secrets: one fresh single-purpose secret per registration, sent to the agent as the push
 * config's bearer credentials and checked by the ingress against the hash kept on the envelope (the
 * secret itself is never stored).
 */

/** Whether this envelope's jobs ask the remote to push to us. */
export function pushEnabled(ctx: PlaneContext, connector: Connector): boolean {
  return ctx.config.delivery.push && connector.capabilities.push && ctx.config.publicUrl !== null;
}

/**
 * A fresh single-purpose push registration; only the hash of its secret is kept on the envelope. The
 * A2A notification token is derived from the secret (SHA-256 under a label) rather than drawn: it must
 * differ from the secret because an agent may return it, and deriving it leaves the Random sequence, and
 * so every lab replay, as it was.
 */
export function newPushRegistration(
  ctx: PlaneContext,
  connector: Connector,
  envelopeId: string,
): PushRegistration {
  const token = newToken(ctx.random, 160);
  // The envelope id rides along in the URL so a delivery that beats the start response still finds its envelope.
  const url = `${ctx.config.publicUrl}/v1/webhooks/${encodeURIComponent(connector.kind)}/${encodeURIComponent(connector.target)}?envelope=${encodeURIComponent(envelopeId)}`;
  return {
    url,
    token,
    notificationToken: 'tpn_' + sha256Hex(`a2a-notification-token\n${token}`).slice(0, 40),
  };
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
