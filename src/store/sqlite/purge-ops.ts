import { TERMINAL_STATES } from '../../core/states.ts';
import type { AgentTaskPurge, ChangeNotice } from '../store.ts';
import { TERMINAL_AGENT_TASK_STATES_SQL } from '../store-query.ts';
import type { SqlConn } from './statement-cache.ts';

/**
 * The retention deletes of the SQLite Store, as write ops (write-ops.ts rules: plain data in and out,
 * safe to run twice). Each is one short BEGIN IMMEDIATE of a bounded batch, so other writers wait for
 * at most one batch's deletes. Ids travel as one JSON array (`json_each`), one statement per table.
 */

const TERMINAL_ENVELOPE_STATES = [...TERMINAL_STATES];
const IN_TERMINAL = `(${TERMINAL_ENVELOPE_STATES.map(() => '?').join(', ')})`;

export const PURGE_WRITES = {
  purgeEnvelopes(c: SqlConn, _notices: ChangeNotice[], ids: string[], now: number): string[] {
    const doomed = (
      c
        .q(
          `SELECT id FROM envelopes WHERE id IN (SELECT value FROM json_each(?))
           AND retention_until <= ? AND state IN ${IN_TERMINAL}`,
        )
        .all(JSON.stringify(ids), now, ...TERMINAL_ENVELOPE_STATES) as Array<{ id: string }>
    ).map((r) => r.id);
    if (doomed.length === 0) return [];
    const list = JSON.stringify(doomed);
    c.q('DELETE FROM envelope_events WHERE envelope_id IN (SELECT value FROM json_each(?))').run(list);
    c.q('DELETE FROM deliveries WHERE envelope_id IN (SELECT value FROM json_each(?))').run(list);
    c.q(
      `DELETE FROM leases WHERE name IN (SELECT 'watch:' || value FROM json_each(?)) AND expires_at <= ?`,
    ).run(list, now);
    c.q('DELETE FROM envelopes WHERE id IN (SELECT value FROM json_each(?))').run(list);
    return doomed;
  },

  purgeAgentTasks(
    c: SqlConn,
    _notices: ChangeNotice[],
    finishedBefore: number,
    limit: number,
  ): AgentTaskPurge {
    const tasks = (
      c
        .q(
          `SELECT id FROM agent_tasks WHERE state IN ${TERMINAL_AGENT_TASK_STATES_SQL} AND updated_at < ?
           ORDER BY updated_at LIMIT ?`,
        )
        .all(finishedBefore, Math.max(0, limit)) as Array<{ id: string }>
    ).map((r) => r.id);
    if (tasks.length > 0) {
      const list = JSON.stringify(tasks);
      // Without AUTOINCREMENT a new seq is max(seq) + 1, so the newest row of the table must stay or its
      // seq would be handed out again (sqlite-schema.ts, migration 2). When it is a purged task's, it
      // stays as a blank tombstone (no task, no payload); older tombstones go.
      c.q(
        `UPDATE agent_task_events SET task_id = '', payload = '{}'
         WHERE seq = (SELECT MAX(seq) FROM agent_task_events) AND task_id IN (SELECT value FROM json_each(?))`,
      ).run(list);
      c.q('DELETE FROM agent_task_events WHERE task_id IN (SELECT value FROM json_each(?))').run(list);
      c.q(
        `DELETE FROM agent_task_events WHERE task_id = '' AND seq < (SELECT MAX(seq) FROM agent_task_events)`,
      ).run();
      for (const table of ['outbox', 'push_configs', 'agent_task_messages', 'agent_task_acks'])
        c.q(`DELETE FROM ${table} WHERE task_id IN (SELECT value FROM json_each(?))`).run(list);
      c.q('DELETE FROM agent_tasks WHERE id IN (SELECT value FROM json_each(?))').run(list);
    }
    const directReplies = c
      .q(
        `DELETE FROM agent_direct_replies WHERE rowid IN
           (SELECT rowid FROM agent_direct_replies WHERE created_at < ? ORDER BY created_at LIMIT ?)`,
      )
      .run(finishedBefore, Math.max(0, limit)).changes;
    return { tasks, directReplies };
  },
};
