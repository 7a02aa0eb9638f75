import type { Command } from 'commander';
import { TaskplaneError } from '../core/errors.ts';
import { NORMALIZED_STATES } from '../core/states.ts';
import { intOption, listOption } from './cli-options.ts';
import { followEvents, type WatchedEvent } from './task-watch.ts';
import {
  acceptanceLines,
  detailLines,
  indent,
  localTime,
  TERMINAL,
  taskRows,
  type OutputSummary,
  type TaskRow,
} from './task-views.ts';

/**
 * `taskplane tasks create|get|list|cancel|answer|accept|reject|watch|result|verifier-secret`: a thin client of the /v1 API. Readable
 * tables by default, `--json` for scripts. URL and key from `--url`/`--key` or
 * TASKPLANE_URL/TASKPLANE_API_KEY.
 */
export interface Conn {
  url: string;
  key: string;
  json: boolean;
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

export function conn(cmd: Command): Conn {
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

export async function call(
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

export function print(c: Conn, value: unknown, human: () => string): void {
  console.log(c.json ? JSON.stringify(value, null, 2) : human());
}

/**
 * The value of `tasks answer`: `--input` must be JSON (an error naming where it breaks), `--text` is a
 * plain string, and the positional value is JSON when it parses as JSON, else text; exactly one of them.
 */
export function answerValue(o: { value?: string; input?: string; text?: string }): unknown {
  const given = [o.value, o.input, o.text].filter((v) => v !== undefined).length;
  if (given !== 1)
    throw new TaskplaneError(
      'invalid_argument',
      'give the answer as <value>, --input <json> or --text <text>, one of them',
      { field: 'value' },
    );
  if (o.text !== undefined) return o.text;
  if (o.input !== undefined) {
    try {
      return JSON.parse(o.input) as unknown;
    } catch (err) {
      throw new TaskplaneError(
        'invalid_argument',
        `--input is not JSON: ${(err as Error).message} (--text sends a plain string)`,
        { field: 'input' },
      );
    }
  }
  try {
    return JSON.parse(o.value!) as unknown;
  } catch {
    return o.value;
  }
}

/**
 * The request of `tasks create`: `--input` must be JSON (a typo in it is an error naming where, not a
 * silently sent string), `--text` is a plain string; exactly one of them.
 */
export function createInput(o: { input?: string; text?: string }): unknown {
  if ((o.input === undefined) === (o.text === undefined))
    throw new TaskplaneError(
      'invalid_argument',
      'give the request as --input <json> or --text <text>, one of them',
      {
        field: 'input',
      },
    );
  if (o.text !== undefined) return o.text;
  try {
    return JSON.parse(o.input!) as unknown;
  } catch (err) {
    throw new TaskplaneError(
      'invalid_argument',
      `--input is not JSON: ${(err as Error).message} (--text sends a plain string)`,
      { field: 'input' },
    );
  }
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

/** One event as a line: local time, task, type, and what happened. */
function eventLine(e: WatchedEvent): string {
  const detail =
    e.type === 'state_changed'
      ? `${String(e.data.from)} → ${String(e.data.to)} (${String(e.data.source)})`
      : JSON.stringify(e.data);
  return `${localTime(e.at)}  ${e.envelopeId}  ${e.type.padEnd(16)} ${detail}`;
}

export function registerTasksCommand(program: Command): void {
  const tasks = program
    .command('tasks')
    .description('Create, inspect, answer and cancel tasks through the control plane API')
    .option('--url <url>', 'control plane URL (TASKPLANE_URL, default http://127.0.0.1:8080)')
    .option('--key <key>', 'API key (TASKPLANE_API_KEY)')
    .option('--json', 'print JSON instead of tables', false);

  tasks
    .command('create')
    .description('Start a task on a target; prints it (state accepted until the remote answers)')
    .requiredOption('--target <name>', 'target agent name')
    .option('--input <json>', 'the request as JSON (e.g. a demo script); see --text for a plain string')
    .option('--text <text>', 'the request as a plain string')
    .option('--idempotency-key <key>', 'same key + same input returns the same task')
    .option('--workflow <id>', 'the workflow the task belongs to (its budget is checked)')
    .option('--parent <id>', "the task that started this one; the task joins the parent's workflow")
    .option(
      '--verifier <url>',
      'an acceptance verifier: called with the output once the task succeeds; its answer accepts or rejects',
    )
    .option(
      '--expected-duration-ms <ms>',
      'after this plus a margin the task counts as an orphan',
      intOption(1),
    )
    .action(
      async (
        o: {
          target: string;
          input?: string;
          text?: string;
          idempotencyKey?: string;
          expectedDurationMs?: number;
          workflow?: string;
          parent?: string;
          verifier?: string;
        },
        cmd: Command,
      ) => {
        const input = createInput(o);
        const c = conn(cmd);
        const body = {
          target: o.target,
          input,
          ...(o.expectedDurationMs !== undefined ? { expectedDurationMs: o.expectedDurationMs } : {}),
          ...(o.workflow !== undefined ? { workflowId: o.workflow } : {}),
          ...(o.parent !== undefined ? { parentId: o.parent } : {}),
          ...(o.verifier !== undefined ? { acceptance: { verifier: { url: o.verifier } } } : {}),
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

  tasks
    .command('get <id>')
    .description('Show one task: state, times, output, failure, pending input, cancel and acceptance')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const c = conn(cmd);
      const t = (await call(c, 'GET', `/v1/tasks/${encodeURIComponent(id)}`)) as TaskRow;
      print(c, t, () => {
        const lines = [
          taskRows([t]),
          '',
          `remote id:   ${String(t.remoteId ?? '-')}`,
          `message id:  ${String(t.messageId)}`,
          `context id:  ${String(t.contextId)}`,
          ...detailLines(t),
        ];
        lines.push(...outputLines(t.output, t.id));
        const arts = (t.artifacts as Array<{ artifactId: string; hash: string }>) ?? [];
        for (const a of arts) lines.push(`artifact:    ${a.artifactId} ${a.hash}`);
        return lines.join('\n');
      });
    });

  tasks
    .command('list')
    .description('List tasks, newest change first; filter by state and target')
    .option('--state <states>', 'comma-separated states', listOption(NORMALIZED_STATES))
    .option('--target <name>', 'only tasks on this target')
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

  tasks
    .command('cancel <id>')
    .description(
      'Ask the remote to cancel a task; its final state comes from the remote (tasks get shows it)',
    )
    .action(async (id: string, _o: unknown, cmd: Command) => {
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
        print(c, t, () => [taskRows([t]), ...acceptanceLines(t.acceptance!)].join('\n'));
      });
  }

  tasks
    .command('answer <id> [value]')
    .description(
      'Answer the pending input request: <value> (JSON, else taken as text), --input <json> or --text <text>',
    )
    .option('--input <json>', 'the answer as JSON (an object for a form); see --text for a plain string')
    .option('--text <text>', 'the answer as a plain string, even when it looks like JSON')
    .option('--request-id <id>', 'defaults to the pending request shown by `tasks get`')
    .action(
      async (
        id: string,
        positional: string | undefined,
        o: { requestId?: string; input?: string; text?: string },
        cmd: Command,
      ) => {
        // Checked before any call: a malformed answer never reaches the plane.
        const value = answerValue({
          ...(positional !== undefined ? { value: positional } : {}),
          ...(o.input !== undefined ? { input: o.input } : {}),
          ...(o.text !== undefined ? { text: o.text } : {}),
        });
        const c = conn(cmd);
        let requestId = o.requestId;
        if (!requestId) {
          const t = (await call(c, 'GET', `/v1/tasks/${encodeURIComponent(id)}`)) as TaskRow;
          requestId = t.pendingInput?.requestId;
          if (!requestId) throw new TaskplaneError('conflict', 'this task has no pending input request');
        }
        const t = (await call(c, 'POST', `/v1/tasks/${encodeURIComponent(id)}/input`, {
          requestId,
          value,
        })) as TaskRow;
        print(c, t, () => taskRows([t]));
      },
    );

  tasks
    .command('result <id>')
    .description(
      "Print a task's output: one text artifact raw, several one after another, the final status message when there are none; --json for all of it",
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
    .description(
      'Follow events live (one task from its start until it ends, or all tasks from now); reconnects after a plane restart',
    )
    .option('--replay', 'with no id: replay the whole event log first instead of starting from now')
    .action(async (id: string | undefined, o: { replay?: boolean }, cmd: Command) => {
      const c = conn(cmd);
      // One task's history is short and worth seeing; every task's since the beginning is not.
      const path = id
        ? `/v1/tasks/${encodeURIComponent(id)}/events`
        : o.replay
          ? '/v1/events'
          : '/v1/events?from=now';
      await followEvents({
        url: c.url,
        key: c.key,
        path,
        notice: (line) => console.error(line),
        onEvent: (e) => {
          console.log(c.json ? JSON.stringify(e) : eventLine(e));
          return id !== undefined && e.type === 'state_changed' && TERMINAL.has(String(e.data.to));
        },
      });
    });

  tasks
    .command('verifier-secret')
    .description("Print the secret (whsec_…) acceptance verifiers check this tenant's signed requests with")
    .action(async (_o: unknown, cmd: Command) => {
      const c = conn(cmd);
      const r = (await call(c, 'GET', '/v1/verifier-secret')) as { secret: string };
      print(c, r, () => r.secret);
    });
}
