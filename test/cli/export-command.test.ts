import { existsSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { newEnvelope } from '../../src/core/envelope.ts';
import { PostgresStore } from '../../src/store/postgres/pg-store.ts';
import { disposeSchema, freshSchemaName, urlForSchema } from '../support/pg.ts';
import { spawnTaskplane, type TestProcess } from '../support/process.ts';

/**
 * `taskplane export` against the database of a running `serve --demo`, and `serve --retention-days
 * --export-before-purge`: the audit trail as a person or a script meets it.
 */
const KEY = 'export-e2e-key-01234';
const auth = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
const procs: TestProcess[] = [];
afterAll(async () => {
  for (const p of procs) await p.kill('SIGKILL').catch(() => {});
});

async function serve(dir: string, ...extra: string[]): Promise<string> {
  const proc = await spawnTaskplane(
    ['serve', '--demo', '--port', '0', '--db', `sqlite:${dir}/plane.db`, ...extra],
    {
      cwd: dir,
      env: { TASKPLANE_API_KEYS: `default:${KEY}`, LOG_LEVEL: undefined },
      ready: /demo host: (http:\S+)/,
    },
  );
  procs.push(proc);
  return /taskplane serve ready (http:\S+)/.exec(proc.stdout)![1]!;
}

/** Reads the task's SSE stream until it reaches a terminal state (an event, not a sleep). */
async function terminal(url: string, id: string): Promise<void> {
  const res = await fetch(`${url}/v1/tasks/${id}/events`, { headers: auth });
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let buffered = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`event stream of ${id} ended before the task did`);
    buffered += dec.decode(value, { stream: true });
    if (/"to":"(succeeded|failed|cancelled|expired|lost)"/.test(buffered)) break;
  }
  await reader.cancel();
}

async function create(url: string, input: unknown): Promise<string> {
  const res = await fetch(`${url}/v1/tasks`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ target: 'demo', input }),
  });
  expect(res.status).toBe(202);
  return ((await res.json()) as { id: string }).id;
}

async function cli(args: string[], cwd: string): Promise<{ code: number | null; out: string; err: string }> {
  const proc = await spawnTaskplane(args, { cwd });
  const exit = await proc.exited;
  return { code: exit.code, out: proc.stdout, err: proc.stderr };
}

type Line = {
  v: number;
  seq: number;
  taskId: string;
  tenant: string;
  type: string;
  at: string;
  atMs: number;
  data: unknown;
};
const parse = (text: string): Line[] =>
  text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Line);

describe('taskplane export', () => {
  it("writes a task's and a tenant's events as JSON Lines while the plane runs; refuses what it cannot do", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'taskplane-export-'));
    const url = await serve(dir);
    const id = await create(url, 'two words');
    await terminal(url, id);
    const db = `sqlite:${dir}/plane.db`;

    const one = await cli(['export', '--db', db, '--task', id, '--out', join(dir, 'out', 'task.jsonl')], dir);
    expect(one.code).toBe(0);
    expect(one.out).toBe('');
    const lines = parse(readFileSync(join(dir, 'out', 'task.jsonl'), 'utf8'));
    expect(one.err).toMatch(new RegExp(`${lines.length} events written to`));
    expect(lines.map((l) => l.type)).toContain('created');
    expect(lines.at(-1)).toMatchObject({ v: 1, taskId: id, tenant: 'default' });
    expect(
      lines.some((l) => l.type === 'state_changed' && (l.data as { to?: string }).to === 'succeeded'),
    ).toBe(true);
    for (const l of lines) expect(new Date(l.at).getTime()).toBe(l.atMs);
    const seqs = lines.map((l) => l.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));

    // The tenant's whole log to stdout: this task's lines among the demo's sample tasks'.
    const all = await cli(['export', '--db', db, '--tenant', 'default', '--quiet'], dir);
    expect(all.code).toBe(0);
    expect(all.err).toBe('');
    const tenantLines = parse(all.out);
    expect(tenantLines.filter((l) => l.taskId === id)).toEqual(lines);
    expect(new Set(tenantLines.map((l) => l.taskId)).size).toBeGreaterThan(1);
    const future = await cli(
      ['export', '--db', db, '--tenant', 'default', '--since', '2999-01-01T00:00:00Z'],
      dir,
    );
    expect(future).toMatchObject({ code: 0, out: '' });

    const none = await cli(['export', '--db', db], dir);
    expect(none.code).toBe(2);
    expect(none.err).toMatch(/give --task ID or --tenant TENANT/);
    const unknown = await cli(['export', '--db', db, '--task', 'tsk_nope'], dir);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toMatch(/no task tsk_nope in this database/);
    const otherTenant = await cli(['export', '--db', db, '--task', id, '--tenant', 'someone-else'], dir);
    expect(otherTenant.code).toBe(2);
    const badSince = await cli(['export', '--db', db, '--tenant', 'default', '--since', 'yesterday'], dir);
    expect(badSince.code).toBe(2);
    expect(badSince.err).toMatch(/--since: "yesterday"/);
    const noDb = await cli(['export', '--db', `sqlite:${dir}/missing.db`, '--tenant', 'default'], dir);
    expect(noDb.code).toBe(2);
    expect(noDb.err).toMatch(/no database at/);
    // Nine CLI processes, each compiling the sources: a bound for a loaded machine, not a timing claim.
  }, 180_000);

  it('serve --retention-days 0 --export-before-purge: a finished task is exported, then purged', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'taskplane-purge-'));
    const exportDir = join(dir, 'audit');
    const url = await serve(
      dir,
      '--retention-days',
      '0',
      '--export-before-purge',
      exportDir,
      '--plane-options',
      JSON.stringify({ retention: { sweepIntervalMs: 100 } }),
    );
    const id = await create(url, 'purge me');
    // Bounded wait for the end and the purge (the sweep runs every 100 ms): the task's GET turns into 404.
    // Not its event stream: with a retention of 0 the task may be gone before a stream would open.
    for (let i = 0; ; i++) {
      const res = await fetch(`${url}/v1/tasks/${id}`, { headers: auth });
      if (res.status === 404) break;
      expect(i, 'task purged within 30 s').toBeLessThan(300);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(existsSync(exportDir)).toBe(true);
    const files = readdirSync(exportDir).filter((f) => /^purged-\d{4}-\d{2}-\d{2}\.jsonl$/.test(f));
    expect(files.length).toBeGreaterThan(0);
    const exported = files.flatMap((f) => parse(readFileSync(join(exportDir, f), 'utf8')));
    const mine = exported.filter((l) => l.taskId === id);
    expect(mine.map((l) => l.type)).toContain('created');
    expect(
      mine.some((l) => l.type === 'state_changed' && (l.data as { to?: string }).to === 'succeeded'),
    ).toBe(true);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(Number(/^taskplane_purged_total (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThan(0);
    // Nothing of it is left to export from the database.
    const after = await cli(['export', '--db', `sqlite:${dir}/plane.db`, '--task', id], dir);
    expect(after.code).toBe(2);
  }, 120_000);

  it('reads a PostgreSQL schema too, a page at a time, past the first page', async () => {
    const schema = freshSchemaName('tp_export');
    const url = urlForSchema(schema);
    const store = await PostgresStore.open({ url, poolMax: 2 });
    let failed = true;
    try {
      const env = newEnvelope({
        id: 'tsk_pg',
        tenant: 'acme',
        connector: 'a2a',
        target: 'x',
        requestKind: 'message',
        input: 'x',
        inputHash: 'sha256:0',
        createdAt: 1000,
      });
      // More events than one page of the export (500), so paging is what is under test.
      const events = Array.from({ length: 1203 }, (_, i) => ({
        envelopeId: env.id,
        tenant: 'acme',
        type: 'state_changed' as const,
        at: 1000 + i,
        data: { i },
      }));
      await store.createEnvelope(env, events);
      const other = { ...env, id: 'tsk_other', tenant: 'someone' };
      await store.createEnvelope(other, [{ ...events[0]!, envelopeId: other.id, tenant: 'someone' }]);
      const dir = mkdtempSync(join(tmpdir(), 'taskplane-export-pg-'));
      const out = await cli(['export', '--db', url, '--tenant', 'acme', '--since', '1100', '--quiet'], dir);
      expect(out.code).toBe(0);
      const lines = parse(out.out);
      expect(lines).toHaveLength(1103);
      expect(lines[0]).toMatchObject({
        v: 1,
        taskId: 'tsk_pg',
        tenant: 'acme',
        atMs: 1100,
        data: { i: 100 },
      });
      expect(new Set(lines.map((l) => l.seq)).size).toBe(1103);
      failed = false;
    } finally {
      await store.close();
      await disposeSchema(schema, failed);
    }
  }, 120_000);
});
