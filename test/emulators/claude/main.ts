/**
 * Runs the Claude Managed Agents emulator by hand on real time: `npm run emulator:claude -- [options]`.
 * Point the SDK's `baseURL` (or ANTHROPIC_BASE_URL) at the printed URL; the first word of a user
 * message picks the scripted turn (README.md).
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { SeededRandom } from '../../../src/core/random.ts';
import { emulatorTarget } from './emulator-target.ts';
import { startClaudeEmulator } from './server.ts';

const USAGE = `usage: npm run emulator:claude -- [--port N] [--seed N] [--api-key KEY]
                                [--webhook-url URL --webhook-secret whsec_...] [--webhook-duplicates N]
                                [--ping-ms N] [--cost-cents N] [--targets-file PATH]

--targets-file creates an agent (with a custom tool "lookup") and an environment, and writes a
taskplane targets file with a "claude" target for them (key from CLAUDE_API_KEY, webhook secret
from CLAUDE_WEBHOOK_SECRET), for \`taskplane serve --targets-file PATH\`.`;

function fail(message: string): never {
  console.error(`${message}\n${USAGE}`);
  process.exit(2);
}

function intFlag(values: Record<string, unknown>, name: string): number | undefined {
  const raw = values[name];
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || !/^\d+$/.test(raw)) fail(`--${name} must be a non-negative integer`);
  return Number(raw);
}

async function main(): Promise<void> {
  let values: Record<string, unknown>;
  try {
    ({ values } = parseArgs({
      options: {
        port: { type: 'string' },
        seed: { type: 'string' },
        'api-key': { type: 'string' },
        'webhook-url': { type: 'string' },
        'webhook-secret': { type: 'string' },
        'webhook-duplicates': { type: 'string' },
        'ping-ms': { type: 'string' },
        'cost-cents': { type: 'string' },
        'targets-file': { type: 'string' },
        help: { type: 'boolean' },
      },
    }));
  } catch (err) {
    fail((err as Error).message);
  }
  if (values['help']) {
    console.log(USAGE);
    return;
  }
  const webhookUrl = values['webhook-url'] as string | undefined;
  const webhookSecret = values['webhook-secret'] as string | undefined;
  if ((webhookUrl === undefined) !== (webhookSecret === undefined))
    fail('--webhook-url and --webhook-secret go together');
  const emu = await startClaudeEmulator({
    port: intFlag(values, 'port') ?? 0,
    random: new SeededRandom(intFlag(values, 'seed') ?? Date.now() % 2 ** 31),
    apiKey: values['api-key'] as string | undefined,
    pingIntervalMs: intFlag(values, 'ping-ms'),
    costPerRequestCents: intFlag(values, 'cost-cents'),
    webhook:
      webhookUrl && webhookSecret
        ? { url: webhookUrl, secret: webhookSecret, duplicates: intFlag(values, 'webhook-duplicates') ?? 0 }
        : undefined,
  });
  const apiKey = (values['api-key'] as string | undefined) ?? 'sk-ant-emulator';
  console.log(`Claude Managed Agents emulator on ${emu.url} (api key ${apiKey})`);
  const targetsFile = values['targets-file'] as string | undefined;
  if (targetsFile) {
    const target = await emulatorTarget(emu, {
      apiKey,
      apiKeyEnv: 'CLAUDE_API_KEY',
      ...(webhookSecret ? { webhookSecretEnv: 'CLAUDE_WEBHOOK_SECRET' } : {}),
    });
    writeFileSync(targetsFile, JSON.stringify({ claude: target }, null, 2) + '\n');
    console.log(
      `targets file ${targetsFile}: target "claude" (agent ${String(target.agentId)}, environment ${String(target.environmentId)})`,
    );
  }
  const stop = () => void emu.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

void main();
