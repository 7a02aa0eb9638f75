import { afterAll, beforeAll } from 'vitest';
import { silentLogger } from '../../src/core/logger.ts';
import { SystemClock } from '../../src/core/clock.ts';
import { A2AConnector } from '../../src/connectors/a2a/a2a-connector.ts';
import { startHost, type RunningHost } from '../../src/host/start-host.ts';
import { FakeRemote } from '../plane/fake-remote.ts';
import { connectorBehaviour } from './suite/connector-suite.ts';

/** The connector behaviour suite on the engine's fake and on the A2A connector (every binding) against the durable host. */
let host: RunningHost;
beforeAll(async () => {
  host = await startHost({ port: 0, grpcPort: 0, db: 'memory:', logger: silentLogger });
});
afterAll(async () => {
  await host?.close();
});

const longJob = () => ({ durationMs: 60_000, steps: 2 });

connectorBehaviour('fake', async () => new FakeRemote(new SystemClock()).connector('fake'), {
  input: longJob,
});
for (const binding of ['JSONRPC', 'HTTP+JSON', 'GRPC'] as const)
  connectorBehaviour(
    `a2a ${binding === 'JSONRPC' ? 'JSON-RPC' : binding}`,
    () =>
      A2AConnector.connect({
        target: 'demo',
        baseUrl: host.url,
        preferBinding: binding,
        idempotentStart: true,
      }),
    // gRPC frames carry no event id (StreamResponse has no field for one; the SSE id is ours).
    { input: longJob, ...(binding === 'GRPC' ? { streamEventIds: false } : {}) },
  );
