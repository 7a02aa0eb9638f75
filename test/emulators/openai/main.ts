/**
 * Runs the OpenAI Responses emulator by hand on real time: `npm run emulator:openai -- [options]`.
 * Point the SDK (or OPENAI_BASE_URL) at the printed base URL. Faults are set per request through
 * `metadata.emulator_faults` or with `POST /_emulator/faults` ({"next": {...}, "request": {...}}).
 */
import { parseArgs } from 'node:util';
import { OpenAIEmulator } from './emulator.ts';

const USAGE = `usage: npm run emulator:openai -- [--port N] [--seed N] [--api-key KEY]
                                [--webhook-url URL --webhook-secret whsec_...]
                                [--delta-ms N] [--queued-ms N] [--retention-ms N]`;

function intFlag(values: Record<string, unknown>, name: string): number | undefined {
  const raw = values[name];
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || !/^\d+$/.test(raw)) {
    console.error(`--${name} must be a non-negative integer\n${USAGE}`);
    process.exit(2);
  }
  return Number(raw);
}

function main(): void {
  let values: Record<string, unknown>;
  try {
    ({ values } = parseArgs({
      options: {
        port: { type: 'string' },
        seed: { type: 'string' },
        'api-key': { type: 'string' },
        'webhook-url': { type: 'string' },
        'webhook-secret': { type: 'string' },
        'delta-ms': { type: 'string' },
        'queued-ms': { type: 'string' },
        'retention-ms': { type: 'string' },
        help: { type: 'boolean' },
      },
    }));
  } catch (err) {
    console.error(`${(err as Error).message}\n${USAGE}`);
    process.exit(2);
  }
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const webhookUrl = values['webhook-url'] as string | undefined;
  const webhookSecret = values['webhook-secret'] as string | undefined;
  if ((webhookUrl === undefined) !== (webhookSecret === undefined)) {
    console.error(`--webhook-url and --webhook-secret go together\n${USAGE}`);
    process.exit(2);
  }
  const seed = intFlag(values, 'seed');
  const deltaIntervalMs = intFlag(values, 'delta-ms');
  const queuedMs = intFlag(values, 'queued-ms');
  const retentionMs = intFlag(values, 'retention-ms');
  const apiKey = values['api-key'] as string | undefined;
  const emu = new OpenAIEmulator({
    ...(seed !== undefined ? { seed } : {}),
    ...(deltaIntervalMs !== undefined ? { deltaIntervalMs } : {}),
    ...(queuedMs !== undefined ? { queuedMs } : {}),
    ...(retentionMs !== undefined ? { retentionMs } : {}),
    ...(apiKey !== undefined ? { apiKey } : {}),
    ...(webhookUrl && webhookSecret ? { webhook: { url: webhookUrl, secret: webhookSecret } } : {}),
  });
  emu.on('webhook', (a) =>
    console.log(`webhook ${a.type} ${a.responseId} attempt ${a.attempt}: ${a.status ?? 'no answer'}`),
  );
  emu.on('terminal', (run) => console.log(`${run.id} ${run.status}`));
  emu.start(intFlag(values, 'port') ?? 0).then(
    (baseURL) => {
      console.log(`OpenAI Responses emulator (not the real API) at ${baseURL}`);
      const stop = () => void emu.close().then(() => process.exit(0));
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    },
    (err: unknown) => {
      console.error(`cannot listen: ${(err as Error).message}`);
      process.exit(1);
    },
  );
}

main();
