import type { Envelope } from '../../core/envelope.ts';
import * as rows from '../sql-rows.ts';
import type { AgentScope, AgentTaskRecord } from '../store.ts';
import type { SqlConn } from './statement-cache.ts';

// Reads the write ops share with the store: each runs on whichever connection it is given.

export function readTask(c: SqlConn, id: string): AgentTaskRecord | undefined {
  const row = c.q('SELECT * FROM agent_tasks WHERE id = ?').get(id);
  return row === undefined ? undefined : rows.toAgentTask(row as rows.AgentTaskRow);
}

export function taskIdForMessage(c: SqlConn, scope: AgentScope, messageId: string): string | undefined {
  const row = c
    .q('SELECT task_id FROM agent_task_messages WHERE owner = ? AND tenant = ? AND message_id = ?')
    .get(scope.owner, scope.tenant, messageId);
  return (row as { task_id: string } | undefined)?.task_id;
}

export function directReplyText(c: SqlConn, scope: AgentScope, messageId: string): string | undefined {
  const row = c
    .q('SELECT reply FROM agent_direct_replies WHERE owner = ? AND tenant = ? AND message_id = ?')
    .get(scope.owner, scope.tenant, messageId);
  return (row as { reply: string } | undefined)?.reply;
}

export function findEnvelopeByKey(c: SqlConn, tenant: string, key: string): Envelope | undefined {
  const row = c
    .q('SELECT doc, version FROM envelopes WHERE tenant = ? AND idempotency_key = ?')
    .get(tenant, key);
  return row === undefined ? undefined : rows.toEnvelope(row as rows.EnvelopeRow);
}
