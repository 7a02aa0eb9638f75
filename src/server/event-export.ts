import { mkdirSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import type { Clock } from '../core/clock.ts';
import { TaskplaneError } from '../core/errors.ts';
import type { EnvelopeEvent } from '../core/envelope.ts';
import type { BeforePurge } from '../plane/retention-sweeper.ts';
import type { EnvelopeStore } from '../store/store.ts';

/**
 * The vendor-neutral audit trail (seed 000: "Can task and event data be exported into a vendor-neutral
 * audit store?"): a job's event log as JSON Lines, one event per line, each line self-describing:
 *
 *   {"v":1,"seq":42,"taskId":"tsk_…","tenant":"acme","type":"state_changed",
 *    "at":"2026-12-01T16:00:00.000Z","atMs":1796140800000,"data":{…}}
 *
 * `v` is the line format's version (a change that breaks a reader raises it); `seq` is the event's
 * global sequence number (unique, increasing: a reader deduplicates on it); `data` is the event as the
 * plane recorded it (docs/plane.md "Retention and export"). `taskplane export` and the plane's export
 * before purge write the same lines.
 */
export const EXPORT_LINE_VERSION = 1;

/** Events read per store query while exporting: memory stays flat whatever the log's length. */
const PAGE = 500;

export function eventLine(e: EnvelopeEvent): string {
  return `${JSON.stringify({
    v: EXPORT_LINE_VERSION,
    seq: e.seq,
    taskId: e.envelopeId,
    tenant: e.tenant,
    type: e.type,
    at: new Date(e.at).toISOString(),
    atMs: e.at,
    data: e.data,
  })}\n`;
}

export interface ExportFilter {
  /** One job's events. */
  envelopeId?: string;
  /** One tenant's events (with envelopeId: that job's, only if it is the tenant's). */
  tenant?: string;
  /** Only events recorded at or after this epoch ms. */
  sinceMs?: number;
}

/**
 * Writes the events matching `filter` in seq order, a page at a time: `write` is awaited per page, so a
 * slow destination slows the reads instead of filling memory. Returns how many lines were written;
 * `progress` hears the running count after each page.
 */
export async function exportEvents(
  store: EnvelopeStore,
  filter: ExportFilter,
  write: (chunk: string) => Promise<void>,
  progress?: (lines: number) => void,
): Promise<number> {
  let afterSeq = 0;
  let lines = 0;
  for (;;) {
    const page = await store.listEvents({
      afterSeq,
      limit: PAGE,
      ...(filter.tenant !== undefined ? { tenant: filter.tenant } : {}),
      ...(filter.envelopeId !== undefined ? { envelopeId: filter.envelopeId } : {}),
    });
    if (page.length === 0) return lines;
    afterSeq = page[page.length - 1]!.seq;
    let chunk = '';
    for (const e of page) {
      if (filter.sinceMs !== undefined && e.at < filter.sinceMs) continue;
      chunk += eventLine(e);
      lines++;
    }
    if (chunk) await write(chunk);
    progress?.(lines);
    if (page.length < PAGE) return lines;
  }
}

/**
 * A job's event log after `afterSeq` as a JSON Lines HTTP answer (`GET /v1/tasks/{id}/history?format=jsonl`):
 * read a page per pull, so the client's pace bounds what is held, and one page is the work of each read.
 */
export function jsonLines(
  store: EnvelopeStore,
  tenant: string,
  envelopeId: string,
  afterSeq: number,
): Response {
  const enc = new TextEncoder();
  let after = afterSeq;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const page = await store.listEvents({ afterSeq: after, tenant, envelopeId, limit: PAGE });
      if (page.length > 0) {
        after = page[page.length - 1]!.seq;
        controller.enqueue(enc.encode(page.map(eventLine).join('')));
      }
      if (page.length < PAGE) controller.close();
    },
  });
  return new Response(body, { headers: { 'content-type': 'application/jsonl; charset=utf-8' } });
}

/**
 * The plane's export before purge: each batch's events are appended to `<dir>/purged-<YYYY-MM-DD>.jsonl`
 * (the UTC day of the purge) and fsynced before the batch may be deleted. A crash between the fsync and
 * the delete exports the batch again in the next round: readers deduplicate on `seq`.
 */
export function exportBeforePurge(dir: string, clock: Clock): BeforePurge {
  try {
    mkdirSync(dir, { recursive: true });
  } catch (err) {
    // Refused at start, not at the first purge a month later.
    throw new TaskplaneError(
      'config',
      `exportBeforePurge: cannot create ${dir} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      { field: 'exportBeforePurge' },
    );
  }
  return async (batch, store) => {
    const day = new Date(clock.now()).toISOString().slice(0, 10);
    const file = await open(join(dir, `purged-${day}.jsonl`), 'a', 0o600);
    try {
      for (const e of batch)
        await exportEvents(store, { envelopeId: e.id }, async (chunk) => {
          await file.write(chunk);
        });
      await file.sync();
    } finally {
      await file.close();
    }
  };
}
