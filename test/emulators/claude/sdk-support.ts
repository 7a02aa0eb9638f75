import Anthropic from '@anthropic-ai/sdk';
import type { ClaudeEmulator } from './server.ts';

/** What the tests share: the official client pointed at the emulator, and a stream reader. */

export type StreamEvent = { type: string; id?: string; [key: string]: unknown };

export function clientFor(emu: ClaudeEmulator, auth: 'bearer' | 'x-api-key' = 'bearer'): Anthropic {
  // The SDK retries 409 and 5xx on its own; the tests want to see each answer.
  if (auth === 'bearer') return new Anthropic({ apiKey: 'sk-ant-emulator', baseURL: emu.url, maxRetries: 0 });
  return new Anthropic({
    apiKey: null,
    authToken: null,
    baseURL: emu.url,
    maxRetries: 0,
    defaultHeaders: { 'x-api-key': 'sk-ant-emulator' },
  });
}

export async function agentAndEnvironment(
  client: Anthropic,
): Promise<{ agentId: string; environmentId: string }> {
  const agent = await client.beta.agents.create({ name: 'worker', model: 'claude-sonnet-4-6' });
  const env = await client.beta.environments.create({ name: 'sandbox', config: { type: 'cloud' } });
  return { agentId: agent.id, environmentId: env.id };
}

/** Reads an open SDK stream frame by frame, so a test can stop at a frame and read on later. */
export class StreamReader {
  readonly seen: StreamEvent[] = [];
  private readonly it: AsyncIterator<unknown>;

  constructor(stream: AsyncIterable<unknown>) {
    this.it = stream[Symbol.asyncIterator]();
  }

  /** Frames up to and including the first that `stop` accepts. */
  async until(stop: (e: StreamEvent) => boolean): Promise<StreamEvent[]> {
    const out: StreamEvent[] = [];
    for (;;) {
      const next = await this.it.next();
      if (next.done)
        throw new Error(`stream ended before the awaited frame; saw ${out.map((e) => e.type).join(',')}`);
      const e = next.value as StreamEvent;
      out.push(e);
      this.seen.push(e);
      if (stop(e)) return out;
    }
  }

  async idle(): Promise<StreamEvent> {
    const got = await this.until(
      (e) => e.type === 'session.status_idle' || e.type === 'session.status_terminated',
    );
    return got[got.length - 1]!;
  }

  async close(): Promise<void> {
    await this.it.return?.();
  }
}

export async function openStream(
  client: Anthropic,
  sessionId: string,
  params: { event_deltas?: ('agent.message' | 'agent.thinking')[] } = {},
): Promise<StreamReader> {
  return new StreamReader(await client.beta.sessions.events.stream(sessionId, params));
}

export const text = (t: string) => ({
  type: 'user.message' as const,
  content: [{ type: 'text' as const, text: t }],
});

export const stopType = (e: StreamEvent) => (e['stop_reason'] as { type: string } | undefined)?.type;
