// One task's detail as a person reads it: its timeline events in words, its input, output, usage and
// acceptance, and the two actions that need a second step: cancel (with a confirmation) and a person's
// acceptance verdict (with a reason).

import { el, api, short } from './dom.js';

export const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'expired', 'lost']);

/** An event as a person reads it: what happened, in words; any other fields as `name: value`. */
export function describe(e) {
  const d = e.data ?? {};
  if (e.type === 'state_changed') return `${d.from} → ${d.to}`;
  if (e.type === 'input_requested') return `asked: ${d.prompt || d.requestId}`;
  if (e.type === 'input_answered') {
    const value =
      'value' in d ? `: ${short(d.value, 80)}` : d.valueChars ? ` (${d.valueChars} characters)` : '';
    return `answered ${d.requestId}${value}${d.actor ? ` by ${d.actor}` : ''}`;
  }
  if (e.type === 'created') return `created for ${d.target ?? 'its target'}`;
  if (e.type === 'artifact') return `output ${d.artifactId}${d.name ? ` (${d.name})` : ''}`;
  const fields = Object.entries(d)
    .filter(([k]) => k !== 'source')
    .map(([k, v]) => `${k}: ${short(v, 60)}`);
  return `${e.type.replaceAll('_', ' ')}${fields.length ? ` — ${fields.join(', ')}` : ''}`;
}

export function timelineItem(e) {
  const source = e.data?.source;
  return el(
    'li',
    { 'data-type': e.type, 'data-seq': String(e.seq) },
    el('time', { title: new Date(e.at).toLocaleString() }, new Date(e.at).toLocaleTimeString()),
    el('span', { class: 'what' }, describe(e)),
    source
      ? el('span', { class: 'source', 'data-source': source, title: 'how the plane learned it' }, source)
      : '',
  );
}

/** Cancelling asks the agent to stop work: a second, explicit click, never a stray one. */
export function cancelBox(t, { refresh, showError }) {
  const cancel = el('div', { class: 'cancel' });
  const button = el('button', { id: 'cancel-button', onclick: () => ask() }, 'Cancel task…');
  const ask = () =>
    cancel.replaceChildren(
      el('span', {}, 'Cancel this task? The agent is asked to stop.'),
      el(
        'button',
        {
          id: 'cancel-confirm',
          class: 'danger',
          onclick: async () => {
            await api('POST', `/v1/tasks/${t.id}/cancel`, {}).catch((err) => showError(err));
            await refresh(t.id);
          },
        },
        'Yes, cancel',
      ),
      el('button', { id: 'cancel-keep', onclick: () => cancel.replaceChildren(button) }, 'Keep it'),
    );
  cancel.append(button);
  return cancel;
}

/**
 * A person's verdict on a finished task's output (POST /v1/tasks/{id}/acceptance): Accept or Reject,
 * then a reason, which the API requires and the acceptance record keeps.
 */
export function acceptanceBox(t, { refresh }) {
  const box = el('div', { class: 'decide' });
  const start = (decision) => {
    const reason = el('input', {
      id: 'acceptance-reason',
      placeholder: decision === 'accepted' ? 'why it is good' : 'what is wrong',
      'aria-label': 'reason',
      'aria-required': 'true',
    });
    const error = el('p', { class: 'answer-error', role: 'alert' });
    const form = el(
      'form',
      { class: 'acceptance-form', 'data-decision': decision, novalidate: true },
      el('span', {}, decision === 'accepted' ? 'Accept the output:' : 'Reject the output:'),
      reason,
      el(
        'button',
        { id: 'acceptance-confirm', type: 'submit', class: decision === 'rejected' ? 'danger' : '' },
        decision === 'accepted' ? 'Accept' : 'Reject',
      ),
      el(
        'button',
        { id: 'acceptance-back', type: 'button', onclick: () => box.replaceChildren(...buttons()) },
        'Back',
      ),
      error,
    );
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      if (!reason.value.trim()) {
        error.textContent = 'reason: required';
        return;
      }
      try {
        await api('POST', `/v1/tasks/${t.id}/acceptance`, { decision, reason: reason.value.trim() });
        // Decided: the buttons come back (a person may change the verdict; the log keeps both).
        box.replaceChildren(...buttons());
        await refresh(t.id);
      } catch (err) {
        error.textContent = err.message;
      }
    });
    box.replaceChildren(form);
    reason.focus();
  };
  const buttons = () => [
    el('button', { id: 'accept-button', onclick: () => start('accepted') }, 'Accept…'),
    el('button', { id: 'reject-button', onclick: () => start('rejected') }, 'Reject…'),
  ];
  box.append(...buttons());
  return box;
}

// Acceptance apart from the state: the verdict, who decided when a person did, and each check run with
// its verdict and reasons (docs/plane.md "Acceptance").
export function acceptanceBlock(t) {
  const a = t.acceptance;
  if (!a) return [];
  const by = a.decidedBy ? ` by ${a.decidedBy.actor || a.decidedBy.keyId || 'anonymous'}` : '';
  const receipt = a.receiptId ? ` · receipt ${a.receiptId}` : '';
  const checks = (a.checks || []).map((c) =>
    el(
      'li',
      { 'data-check': c.check, 'data-verdict': c.verdict },
      `${c.check}: ${c.verdict}${c.reasons.length ? ` — ${c.reasons.join('; ')}` : ''}`,
    ),
  );
  if (!checks.length && a.reasons.length) checks.push(el('li', {}, a.reasons.join('; ')));
  return [
    el(
      'div',
      { class: 'acceptance', 'data-status': a.status },
      `acceptance: ${a.status}${by}${receipt}`,
      el('ul', {}, ...checks),
    ),
  ];
}

// Tokens and cost as the remote reported them (`usage`): keys ending in `_tokens` are token counts,
// any other key is a cost in that unit (the target's price table, e.g. usd_micros), against the budget.
export function usageBlock(t) {
  const u = t.usage;
  if (!u || typeof u !== 'object') return [];
  const tokens = ['input_tokens', 'output_tokens', 'total_tokens']
    .filter((k) => typeof u[k] === 'number')
    .map((k) => `${k.replace('_tokens', '')} ${u[k]}`);
  const costs = Object.keys(u)
    .filter((k) => !k.endsWith('_tokens') && typeof u[k] === 'number')
    .map((k) => `${u[k]} ${k}${t.budget && t.budget.unit === k ? ` of ${t.budget.limit}` : ''}`);
  const parts = [];
  if (tokens.length) parts.push(`tokens: ${tokens.join(' · ')}`);
  if (costs.length) parts.push(`cost: ${costs.join(' · ')}`);
  return parts.length ? [el('p', { class: 'usage', 'data-usage': '' }, parts.join(' — '))] : [];
}

// What the task produced and why it failed: the API's output summary, not the artifacts themselves.
export function outputBlock(t) {
  const out = [el('p', { class: 'input' }, el('b', {}, 'input '), short(t.input ?? '', 200))];
  if (t.error) out.push(el('p', { class: 'failure' }, `${t.error.code}: ${t.error.message}`));
  else if (t.statusMessage && TERMINAL.has(t.state)) out.push(el('p', { class: 'message' }, t.statusMessage));
  // A start or cancel that cannot reach the agent: say so, instead of a silent `accepted`.
  if (t.lastError && !TERMINAL.has(t.state)) {
    const retry = t.nextRetryAt ? `; next try ${new Date(t.nextRetryAt).toLocaleTimeString()}` : '';
    out.push(
      el(
        'p',
        { class: 'failure' },
        `${t.lastError.during} failed (${t.startAttempts ?? 0} start calls${retry}): ${t.lastError.code}: ${t.lastError.message}`,
      ),
    );
  }
  const o = t.output;
  if (!o) return out;
  if (o.text !== null) out.push(el('pre', { class: 'output' }, o.text));
  for (const d of o.data) out.push(el('pre', { class: 'output' }, JSON.stringify(d, null, 2)));
  for (const f of o.files)
    out.push(
      el(
        'p',
        { class: 'file' },
        [f.name ?? f.artifactId, f.mediaType, f.size !== null ? `${f.size} bytes` : null]
          .filter(Boolean)
          .join(' · '),
      ),
    );
  if (o.truncated || o.remoteOnly.length)
    out.push(el('p', { class: 'more' }, `more: taskplane tasks result ${t.id}`));
  return out;
}
