import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newEnvelope } from '../../src/core/envelope.ts';
import { openStore } from '../../src/store/open-store.ts';

/**
 * What summarizeUsage costs (GET /v1/workflows/{id}, GET /v1/costs, and /metrics once per scrape): CPU
 * time per call over N envelopes in an SQLite file, for every target at once and for one workflow.
 * `tsx test/bench/usage-summary-bench.ts [N]` (default 20000).
 */
const N = Number(process.argv[2] ?? 20_000);
const dir = mkdtempSync(join(tmpdir(), 'taskplane-usage-'));
const store = await openStore(`sqlite:${join(dir, 'bench.db')}`);
try {
  for (let i = 0; i < N; i++) {
    const e = newEnvelope({
      id: `tsk_${i}`,
      tenant: 't',
      connector: 'a2a',
      target: `agent-${i % 5}`,
      requestKind: 'message',
      input: { i },
      inputHash: 'sha256:00',
      createdAt: 1000 + i,
      workflowId: `wf-${i % 200}`,
    });
    e.usage = { cents: i % 7, total_tokens: 100 };
    e.state = 'succeeded';
    e.acceptance = { status: i % 3 ? 'accepted' : 'rejected', reasons: [] };
    await store.createEnvelope(e, []);
  }
  for (const [label, query] of [
    ['every target', {}],
    [`one workflow (${N / 200} tasks)`, { tenant: 't', workflowId: 'wf-7' }],
  ] as const) {
    const runs = 5;
    const before = process.cpuUsage();
    for (let r = 0; r < runs; r++) await store.summarizeUsage(query);
    const used = process.cpuUsage(before);
    console.log(
      `${label}: ${((used.user + used.system) / 1000 / runs).toFixed(1)} ms CPU per call, ${N} envelopes`,
    );
  }
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
