import Anthropic from '@anthropic-ai/sdk';
import type { ClaudeEmulator } from './server.ts';

/**
 * A taskplane `claude` target on an emulator: an agent with one custom tool (`lookup`) and an
 * environment, created through the official SDK, and the target settings that point at them. The key
 * and the webhook secret are named as environment variables, as a targets file must.
 */
export async function emulatorTarget(
  emu: ClaudeEmulator,
  o: { apiKey: string; apiKeyEnv: string; webhookSecretEnv?: string; name?: string },
): Promise<Record<string, unknown>> {
  const client = new Anthropic({ apiKey: o.apiKey, baseURL: emu.url, maxRetries: 0 });
  const agent = await client.beta.agents.create({
    name: o.name ?? 'demo',
    model: 'claude-sonnet-4-6',
    tools: [
      {
        type: 'custom',
        name: 'lookup',
        description: 'looks a thing up',
        input_schema: { type: 'object', properties: { query: { type: 'string' } } },
      },
    ],
  } as never);
  const env = await client.beta.environments.create({ name: o.name ?? 'demo', config: { type: 'cloud' } });
  return {
    kind: 'claude',
    baseUrl: emu.url,
    agentId: agent.id,
    environmentId: env.id,
    apiKey: { env: o.apiKeyEnv },
    ...(o.webhookSecretEnv ? { webhookSigningKey: { env: o.webhookSecretEnv } } : {}),
  };
}
