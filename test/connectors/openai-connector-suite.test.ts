import { afterAll } from 'vitest';
import { SystemClock } from '../../src/core/clock.ts';
import { OpenAIConnector } from '../../src/connectors/openai/openai-connector.ts';
import { OpenAIEmulator } from '../emulators/openai/emulator.ts';
import { connectorBehaviour } from './suite/connector-suite.ts';

/**
 * The connector behaviour suite on the OpenAI connector, through the official `openai` SDK against the
 * emulator (test/emulators/openai/README.md). A response there emits one output delta every 10 s, so a
 * reply of a dozen words stays live for two minutes.
 */
const emu = new OpenAIEmulator({ clock: new SystemClock(), deltaIntervalMs: 10_000, jitter: 0 });
afterAll(async () => {
  await emu.close();
});

connectorBehaviour(
  'openai',
  async () =>
    new OpenAIConnector({
      target: 'gpt',
      baseUrl: await emu.start(),
      apiKey: 'sk-test',
      model: 'gpt-test',
    }),
  {
    input: () => 'a request whose answer is long enough to keep the response running for minutes',
  },
);
