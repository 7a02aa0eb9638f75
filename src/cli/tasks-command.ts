import type { Command } from 'commander';
import { createParser } from 'eventsource-parser';
import { TaskplaneError } from '../core/errors.ts';
import { NORMALIZED_STATES } from '../core/states.ts';
import { intOption, listOption, table } from './cli-options.ts';

/**
 * `taskplane tasks create|get|list|cancel|answer|accept|reject|watch|result`: a thin client of the /v1 API. Readable
 * tables by default, `--json` for scripts. URL and key from `--url`/`--key` or
 * TASKPLANE_URL/TASKPLANE_API_KEY.
 */
interface Conn {
  url: string;
  key: string;
  json: boolean;
}

interface TaskRow {
  id: string;
  state: string;
  target: string;
  nativeState: string | null;
  createdAt: number;
  updatedAt: number;
  pendingInput: { requestId: string; prompt: string; answeredAt?: number | null } | null;
  statusMessage?: string | null;
  error?: { code: string; message: string } | null;
  output?: OutputSummary;
  lastError?: { code: string; message: string; at: number; during: string } | null;
  startAttempts?: number;
  nextRetryAt?: number | null;
  [k: string]: unknown;
}

interface OutputSummary {
  text: string | null;
  data: unknown[];
  files: Array<{ artifactId: string; name: string | null; mediaType: string | null; size: number | null }>;
  remoteOnly: string[];
  truncated: boolean;
}

type ContentPart =
  | { kind: 'text'; text: string }
  | { kind: 'data'; data: unknown }
  | { kind: 'file'; name?: string; mediaType?: string; size?: number; bytes?: string; url?: string };

interface ArtifactContent {
  artifactId: string;
  name: string | null;
  mediaType: string | null;
  size: number;
  parts: ContentPart[];
}

function conn(cmd: Command): Conn {
  const o = cmd.optsWithGlobals<{ url?: string; key?: string; json?: boolean }>();
  const key = o.key ?? process.env.TASKPLANE_API_KEY ?? '';
  if (!key)
    throw new TaskplaneError(
      'invalid_argument',
      'an API key is needed: --key or TASKPLANE_API_KEY (printed by `taskplane serve` at first start)',
      { field: 'key' },
    );
  return {
    url: (o.url ?? process.env.TASKPLANE_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, ''),
    key,
    json: o.json === true,
  };
}

async function call(
  c: Conn,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(c.url + path, {
      method,
      headers: { authorization: `Bearer ${c.key}`, 'content-type': 'application/json', ...headers },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  } catch {
    throw new TaskplaneError('unavailable', `cannot reach ${c.url} (is \`taskplane serve\` running?)`);
  }
  const json = (await res.json().catch(() => null)) as { error?: { code: string; message: string } } | null;
  if (!res.ok)
    throw new TaskplaneError(
      'remote_error',
      `${res.status} ${json?.error?.code ?? ''}: ${json?.error?.message ?? res.statusText}`,
    );
  return json;
}

/** Why a job has no remote answer yet: the last failed attempt, how many starts, when the next is due. */
function attemptLines(t: TaskRow): string[] {
  const lines: string[] = [];
  if (t.lastError)
    lines.push(
      `last error:  ${t.lastError.during}, ${age(t.lastError.at)} ago: ${t.lastError.code}: ${indent(t.lastError.message)}`,
    );
  if (t.lastError || (t.startAttempts ?? 0) > 1) lines.push(`start calls: ${t.startAttempts ?? 0}`);
  if (t.nextRetryAt) lines.push(`next retry:  ${new Date(t.nextRetryAt).toLocaleTimeString()}`);
  return lines;
}

function age(ms: number): string {
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  return s < 60
    ? `${s}s`
    : s < 3600
      ? `${Math.floor(s / 60)}m${s % 60}s`
      : `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
}

interface AcceptanceView {
  status: string;
  reasons: string[];
  receiptId?: string;
  checks?: Array<{ check: string; verdict: string; reasons: string[] }>;
  decidedBy?: { keyId: string | null; actor: string | null };
}

/** The acceptance verdict, then each check run with its verdict and reasons. */
function acceptanceLines(a: AcceptanceView): string[] {
  const by = a.decidedBy ? ` by ${a.decidedBy.actor ?? a.decidedBy.keyId ?? 'anonymous'}` : '';
  const lines = [`acceptance:  ${a.status}${by}${a.receiptId ? ` (receipt ${a.receiptId})` : ''}`];
  for (const c of a.checks ?? [])
    lines.push(
      `  ${c.check.padEnd(13)} ${c.verdict}${c.reasons.length ? `: ${indent(c.reasons.join('; '))}` : ''}`,
    );
  if (!a.checks?.length && a.reasons.length) lines.push(`  ${indent(a.reasons.join('; '))}`);
  return lines;
}

function taskRows(tasks: TaskRow[]): string {
  const rows = [['ID', 'STATE', 'TARGET', 'NATIVE', 'AGE', 'PENDING INPUT']];
  for (const t of tasks) {
    const input =
      t.pendingInput && !t.pendingInput.answeredAt
        ? `${t.pendingInput.requestId}: ${t.pendingInput.prompt}`
        : '';
    rows.push([t.id, t.state, t.target, t.nativeState ?? '', age(t.createdAt), input]);
  }
  return table(rows);
}

function print(c: Conn, value: unknown, human: () => string): void {
  console.log(c.json ? JSON.stringify(value, null, 2) : human());
}

/** `--input` is JSON when it parses as JSON, else plain text. */
function parseValue(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

const DETAIL_INDENT = ' '.repeat('output:      '.length);

/** Continuation lines of a multi-line value line up under the first. */
function indent(text: string): string {
  return text.replace(/\n/g, `\n${DETAIL_INDENT}`);
}

function fileLine(f: { name: string | null; mediaType: string | null; size: number | null }): string {
  return [f.name ?? '(unnamed)', f.mediaType ?? '', f.size !== null ? `${f.size} bytes` : '']
    .filter(Boolean)
    .join('  ');
}

/** The output summary as `tasks get` detail lines. */
function outputLines(out: OutputSummary | undefined, id: string): string[] {
  if (!out) return [];
  const lines: string[] = [];
  if (out.text !== null) lines.push(`output:      ${indent(out.text)}`);
  for (const d of out.data) lines.push(`data:        ${JSON.stringify(d)}`);
  for (const f of out.files) lines.push(`file:        ${fileLine(f)}`);
  if (out.truncated || out.remoteOnly.length > 0)
    lines.push(`             (more: taskplane tasks result ${id})`);
  return lines;
}

/** An artifact for a person: its text, its data as indented JSON, its files described. */
function artifactText(a: ArtifactContent): string {
  return a.parts
    .map((p) =>
      p.kind === 'text'
        ? p.text
        : p.kind === 'data'
          ? JSON.stringify(p.data, null, 2)
          : `[file ${fileLine({ name: p.name ?? null, mediaType: p.mediaType ?? null, size: p.size ?? null })}${p.url ? ` ${p.url}` : ''}; --json has its bytes]`,
    )
    .join('\n');
}

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'expired', 'lost']);

export function registerTasksCommand(program: Command): void {
  const tasks = program
    .command('tasks')
    .description('Create, inspect, answer and cancel tasks through the control plane API')
    .option('--url <url>', 'control plane URL (TASKPLANE_URL, default http://127.0.0.1:8080)')
    .option('--key <key>', 'API key (TASKPLANE_API_KEY)')
    .option('--json', 'print JSON instead of tables', false);

  tasks
    .command('create')
    .requiredOption('--target <name>', 'target agent name')
    .requiredOption('--input <json|text>', 'the request: JSON (e.g. a demo script) or plain text')
    .option('--idempotency-key <key>', 'same key + same input returns the same task')
    .option(
      '--expected-duration-ms <ms>',
      'after this plus a margin the task counts as an orphan',
      intOption(1),
    )
    .action(
      async (
        o: { target: string; input: string; idempotencyKey?: string; expectedDurationMs?: number },
        cmd: Command,
      ) => {
        const c = conn(cmd);
        const body = {
          target: o.target,
          input: parseValue(o.input),
          ...(o.expectedDurationMs !== undefined ? { expectedDurationMs: o.expectedDurationMs } : {}),
        };
        const t = (await call(
          c,
          'POST',
          '/v1/tasks',
          body,
          o.idempotencyKey ? { 'idempotency-key': o.idempotencyKey } : {},
        )) as TaskRow;
        print(c, t, () => taskRows([t]));
      },
    );

  tasks.command('get <id>').action(async (id: string, _o: unknown, cmd: Command) => {
    const c = conn(cmd);
    const t = (await call(c, 'GET', `/v1/tasks/${encodeURIComponent(id)}`)) as TaskRow;
    print(c, t, () => {
      const lines = [
        taskRows([t]),
        '',
        `remote id:   ${String(t.remoteId ?? '-')}`,
        `message id:  ${String(t.messageId)}`,
        `context id:  ${String(t.contextId)}`,
      ];
      if (t.error) lines.push(`failure:     ${t.error.code}: ${indent(t.error.message)}`);
      if (t.statusMessage) lines.push(`message:     ${indent(t.statusMessage)}`);
      lines.push(...attemptLines(t));
      lines.push(...outputLines(t.output, t.id));
      const arts = (t.artifacts as Array<{ artifactId: string; hash: string }>) ?? [];
      for (const a of arts) lines.push(`artifact:    ${a.artifactId} ${a.hash}`);
      if (t.cancel) lines.push(`cancel:      ${JSON.stringify(t.cancel)}`);
      if (t.reconciliation) lines.push(`reconcile:   ${JSON.stringify(t.reconciliation)}`);
      if (t.acceptance) lines.push(...acceptanceLines(t.acceptance as AcceptanceView));
      return lines.join('\n');
    });
  });

  tasks
    .command('list')
    .option('--state <states>', 'comma-separated states', listOption(NORMALIZED_STATES))
    .option('--target <name>')
    .option('--limit <n>', 'page size', intOption(1, 500), 50)
    .action(async (o: { state?: string[]; target?: string; limit: number }, cmd: Command) => {
      const c = conn(cmd);
      const q = new URLSearchParams({
        limit: String(o.limit),
        ...(o.state ? { state: o.state.join(',') } : {}),
        ...(o.target ? { target: o.target } : {}),
      });
      const page = (await call(c, 'GET', `/v1/tasks?${q}`)) as {
        tasks: TaskRow[];
        nextCursor: string | null;
      };
      print(c, page, () => (page.tasks.length ? taskRows(page.tasks) : 'no tasks'));
    });

  tasks.command('cancel <id>').action(async (id: string, _o: unknown, cmd: Command) => {
    const c = conn(cmd);
    const t = (await call(c, 'POST', `/v1/tasks/${encodeURIComponent(id)}/cancel`, {})) as TaskRow;
    print(c, t, () => taskRows([t]));
  });

  for (const decision of ['accepted', 'rejected'] as const) {
    tasks
      .command(`${decision === 'accepted' ? 'accept' : 'reject'} <id>`)
      .description(`record that a person ${decision} the finished task's output (its state does not change)`)
      .requiredOption('--reason <text>', 'why (kept in the acceptance record and its event)')
      .option('--actor <name>', 'who decided, beside the API key the call is made with')
      .action(async (id: string, o: { reason: string; actor?: string }, cmd: Command) => {
        const c = conn(cmd);
        const t = (await call(c, 'POST', `/v1/tasks/${encodeURIComponent(id)}/acceptance`, {
          decision,
          reason: o.reason,
          ...(o.actor !== undefined ? { actor: o.actor } : {}),
        })) as TaskRow;
        print(c, t, () => [taskRows([t]), ...acceptanceLines(t.acceptance as AcceptanceView)].join('\n'));
      });
  }

  tasks
    .command('answer <id> <value>')
    .description('answer the pending input request (value: JSON or text)')
    .option('--request-id <id>', 'defaults to the pending request shown by `tasks get`')
    .action(async (id: string, value: string, o: { requestId?: string }, cmd: Command) => {
      const c = conn(cmd);
      let requestId = o.requestId;
      if (!requestId) {
        const t = (await call(c, 'GET', `/v1/tasks/${encodeURIComponent(id)}`)) as TaskRow;
        requestId = t.pendingInput?.requestId;
        if (!requestId) throw new TaskplaneError('conflict', 'this task has no pending input request');
      }
      const t = (await call(c, 'POST', `/v1/tasks/${encodeURIComponent(id)}/input`, {
        requestId,
        value: parseValue(value),
      })) as TaskRow;
      print(c, t, () => taskRows([t]));
    });

  tasks
    .command('result <id>')
    .description(
      "print a task's output: one text artifact raw, several one after another, the final status message when there are none; --json for all of it",
    )
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const c = conn(cmd);
      const path = `/v1/tasks/${encodeURIComponent(id)}`;
      const t = (await call(c, 'GET', path)) as TaskRow;
      const { artifacts } = (await call(c, 'GET', `${path}/artifacts`)) as { artifacts: ArtifactContent[] };
      if (c.json) {
        const { state, statusMessage, error } = t;
        console.log(JSON.stringify({ id: t.id, state, statusMessage, error, artifacts }, null, 2));
      } else if (artifacts.length === 1 && artifacts[0]!.parts.every((p) => p.kind === 'text')) {
        // Raw, so `tasks result ID > file` holds exactly what the agent wrote.
        process.stdout.write(artifacts[0]!.parts.map((p) => (p as { text: string }).text).join('\n'));
      } else if (artifacts.length > 0) {
        const many = artifacts.length > 1;
        const blocks = artifacts.map((a) =>
          many ? `── ${a.name ?? a.artifactId} ──\n${artifactText(a)}` : artifactText(a),
        );
        console.log(blocks.join('\n\n'));
      } else if (t.statusMessage) {
        console.log(t.statusMessage);
      }
      if (t.error) {
        console.error(`taskplane: task ${t.state}: ${t.error.message}`);
        process.exitCode = 1;
      } else if (!TERMINAL.has(t.state)) {
        console.error(`taskplane: task is ${t.state}; this is its output so far`);
      } else if (t.state !== 'succeeded') {
        console.error(`taskplane: task ${t.state}`);
        process.exitCode = 1;
      }
    });

  tasks
    .command('watch [id]')
    .description('follow events live (one task from its start until it ends, or all tasks from now)')
    .option('--replay', 'with no id: replay the whole event log first instead of starting from now')
    .action(async (id: string | undefined, o: { replay?: boolean }, cmd: Command) => {
      const c = conn(cmd);
      // One task's history is short and worth seeing; every task's since the beginning is not.
      const path = id
        ? `/v1/tasks/${encodeURIComponent(id)}/events`
        : o.replay
          ? '/v1/events'
          : '/v1/events?from=now';
      const res = await fetch(c.url + path, {
        headers: { authorization: `Bearer ${c.key}`, accept: 'text/event-stream' },
      }).catch(() => {
        throw new TaskplaneError('unavailable', `cannot reach ${c.url}`);
      });
      if (!res.ok || !res.body) throw new TaskplaneError('remote_error', `${res.status}: cannot watch`);
      let done = false;
      const parser = createParser({
        onEvent: (ev) => {
          const e = JSON.parse(ev.data) as {
            seq: number;
            envelopeId: string;
            type: string;
            at: number;
            data: Record<string, unknown>;
          };
          if (c.json) console.log(JSON.stringify(e));
          else {
            const detail =
              e.type === 'state_changed'
                ? `${String(e.data.from)} → ${String(e.data.to)} (${String(e.data.source)})`
                : JSON.stringify(e.data);
            console.log(`${new Date(e.at).toISOString()}  ${e.envelopeId}  ${e.type.padEnd(16)} ${detail}`);
          }
          if (id && e.type === 'state_changed' && TERMINAL.has(String(e.data.to))) done = true;
        },
      });
      const reader = res.body.getReader();
      const dec = new TextDecoder();
      while (!done) {
        const { value, done: end } = await reader.read();
        if (end) break;
        parser.feed(dec.decode(value, { stream: true }));
      }
      await reader.cancel();
    });
}
