import { TaskplaneError } from '../core/errors.ts';
import { RowStopped, type RowKit, type Session } from './row-kit.ts';
import type { TestContract } from './test-contract.ts';
import type { WireCall } from './wire-proxy.ts';

/** What the rows share: the usual job, refusals, waits for a fault to fire. */

export const work = (kit: RowKit, factor = 1): TestContract => ({
  durationMs: Math.round(kit.session.jobMs * factor),
  steps: 3,
  artifactChunks: 1,
});

export const needsStreaming = (s: Session) =>
  s.agent.streaming
    ? null
    : s.agent.protocol === 'mcp'
      ? 'the MCP server offers no task notifications (subscriptions/listen, MCP 2026-07-28)'
      : 'the agent card declares no streaming';

/** The error code a call was refused with, or null when it succeeded. */
export async function expectRefused(what: Promise<unknown>): Promise<string | null> {
  try {
    await what;
    return null;
  } catch (err) {
    return err instanceof TaskplaneError ? err.code : String(err);
  }
}

/** Waits for a fault to fire (bounded by the row's deadline). */
export function fired(kit: RowKit): { promise: Promise<WireCall>; resolve: (c: WireCall) => void } {
  let resolve!: (c: WireCall) => void;
  const promise = new Promise<WireCall>((r) => (resolve = r));
  const bound = new Promise<never>((_, reject) =>
    setTimeout(
      () => reject(new RowStopped('the fault never found its request')),
      Math.max(0, kit.deadline - Date.now()),
    ).unref(),
  );
  return { promise: Promise.race([promise, bound]), resolve };
}

/** Waits, bounded by the row's deadline, until `pred` holds. */
export async function waitFor(
  kit: RowKit,
  what: string,
  pred: () => Promise<boolean> | boolean,
): Promise<void> {
  while (!(await pred())) {
    if (Date.now() > kit.deadline) throw new RowStopped(`${what} within ${kit.session.rowTimeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
