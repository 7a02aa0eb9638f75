import type { Context, Hono } from 'hono';
import { contentBytes, type ArtifactRef, type ContentPart, type Envelope } from '../core/envelope.ts';
import type { ArtifactContent } from '../plane/artifact-content.ts';
import type { Plane } from '../plane/plane.ts';
import type { ServerEnv } from './task-routes.ts';

/**
 * How much of the output the task JSON carries, in characters of text and data JSON together. The task
 * JSON is also what lists return, up to 500 tasks a page, so the summary stays small and the content
 * itself is one request away at /v1/tasks/{id}/artifacts.
 */
export const OUTPUT_SUMMARY_MAX_CHARS = 4096;

export interface OutputSummary {
  /** The text parts of every artifact, in order, joined with newlines; null when there are none. */
  text: string | null;
  /** The data parts' values, in order. */
  data: unknown[];
  files: Array<{ artifactId: string; name: string | null; mediaType: string | null; size: number | null }>;
  /** Ids of artifacts whose content was over the result caps: only the remote has it. */
  remoteOnly: string[];
  /** Text or data was left out to keep the summary under OUTPUT_SUMMARY_MAX_CHARS. */
  truncated: boolean;
}

/** An artifact as the task JSON describes it: everything but its content. */
export function artifactView(ref: ArtifactRef): Record<string, unknown> {
  return {
    artifactId: ref.artifactId,
    name: ref.name ?? null,
    mediaType: ref.mediaType ?? null,
    hash: ref.hash,
    size: ref.size ?? null,
    kept: ref.parts !== undefined,
    provenance: ref.provenance,
  };
}

function fileSize(p: Extract<ContentPart, { kind: 'file' }>): number | null {
  if (p.size !== undefined) return p.size;
  return p.bytes !== undefined ? contentBytes([p]) : null;
}

/** Text parts joined, data parts as their JSON values, files as name, media type and size. */
export function outputSummary(env: Envelope): OutputSummary {
  const texts: string[] = [];
  const out: OutputSummary = { text: null, data: [], files: [], remoteOnly: [], truncated: false };
  let room = OUTPUT_SUMMARY_MAX_CHARS;
  for (const ref of env.artifacts) {
    if (!ref.parts) {
      out.remoteOnly.push(ref.artifactId);
      continue;
    }
    for (const p of ref.parts) {
      if (p.kind === 'file') {
        out.files.push({
          artifactId: ref.artifactId,
          name: p.name ?? ref.name ?? null,
          mediaType: p.mediaType ?? ref.mediaType ?? null,
          size: fileSize(p),
        });
      } else if (p.kind === 'text') {
        if (p.text.length > room) {
          texts.push(p.text.slice(0, room));
          out.truncated = true;
        } else texts.push(p.text);
        room = Math.max(0, room - p.text.length);
      } else {
        const chars = (JSON.stringify(p.data) ?? 'null').length;
        if (chars > room) out.truncated = true;
        else {
          out.data.push(p.data);
          room -= chars;
        }
      }
    }
  }
  if (texts.length > 0) out.text = texts.join('\n');
  return out;
}

function contentView(a: ArtifactContent): Record<string, unknown> {
  return { ...a };
}

/** One part as its own body, when it can be one: text, data as JSON, or a file given inline. */
function rawBody(a: ArtifactContent): { body: string | Uint8Array<ArrayBuffer>; type: string } | null {
  if (a.parts.length !== 1) return null;
  const p = a.parts[0]!;
  const declared = p.mediaType ?? a.mediaType;
  if (p.kind === 'text') {
    const type = declared ?? 'text/plain';
    return {
      body: p.text,
      type: /^text\//.test(type) && !/charset=/i.test(type) ? `${type}; charset=utf-8` : type,
    };
  }
  if (p.kind === 'data')
    return { body: JSON.stringify(p.data) ?? 'null', type: declared ?? 'application/json' };
  if (p.bytes !== undefined)
    return {
      body: Uint8Array.from(Buffer.from(p.bytes, 'base64')),
      type: declared ?? 'application/octet-stream',
    };
  return null;
}

/**
 * The content routes: `GET /v1/tasks/{id}/artifacts` lists every artifact with its parts as JSON;
 * `GET /v1/tasks/{id}/artifacts/{artifactId}` answers one artifact's content as itself, with its media
 * type, when it is one text, data or inline file part (`?format=json`, or more parts, give the JSON
 * form). Both are tenant-checked like every task route: another tenant's task is a 404.
 */
export function registerArtifactRoutes(app: Hono<ServerEnv>, deps: { plane: Plane }): void {
  const { plane } = deps;

  app.get('/v1/tasks/:id/artifacts', async (c) => {
    const list = await plane.artifacts(c.get('tenant'), c.req.param('id'));
    return c.json({ artifacts: list.map(contentView) });
  });

  app.get('/v1/tasks/:id/artifacts/:artifactId', async (c: Context<ServerEnv>) => {
    const [a] = await plane.artifacts(c.get('tenant'), c.req.param('id')!, c.req.param('artifactId')!);
    const headers = { etag: `"${a!.hash}"`, 'x-artifact-from': a!.from };
    const raw = c.req.query('format') === 'json' ? null : rawBody(a!);
    if (!raw) return c.json(contentView(a!), 200, headers);
    return c.body(raw.body, 200, { ...headers, 'content-type': raw.type });
  });
}
