/**
 * The agent of the create-latency bench, run as its own process (create-latency.ts spawns it): an A2A
 * agent on the official `@a2a-js/sdk` server (test/peers/sdk-peer.ts) that answers SendMessage only after
 * `startDelayMs` and completes each task shortly after. Its own process, so its request handling does not
 * run on the plane's event loop, as a remote agent's would not. Prints `slow agent ready <url>`.
 *
 *   npx tsx test/bench/slow-agent.ts [startDelayMs=2000]
 */
import { startSdkPeer } from '../peers/sdk-peer.ts';

const peer = await startSdkPeer({
  streaming: false,
  startDelayMs: Number(process.argv[2] ?? 2_000),
  autoFinishMs: 100,
});
process.stdout.write(`slow agent ready ${peer.base}\n`);
process.on('SIGTERM', () => void peer.close().then(() => process.exit(0)));
