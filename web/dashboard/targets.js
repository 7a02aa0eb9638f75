// The targets view (GET /v1/targets): each target with its kind, what it can do, the agent card it
// published (A2A), and what this tenant's jobs met there: open jobs, last reconciliation, notification
// delay per mechanism and recent failures. Opening one shows it in full.

import { $, el, api, age, costText, duration } from './dom.js';

const KIND_NAMES = { a2a: 'A2A', mcp: 'MCP', openai: 'OpenAI', claude: 'Claude' };
const CAPABILITIES = ['stream', 'push', 'list', 'input', 'cancel', 'idempotentStart', 'streamResume'];

let targets = [];
let opened = null;
/** This tenant's usage per target (GET /v1/costs), by target name. */
let costs = new Map();

export const kindName = (kind) => KIND_NAMES[kind] ?? kind;

function delays(t) {
  const entries = Object.entries(t.notificationDelay ?? {});
  if (!entries.length) return 'no delays measured yet';
  return entries.map(([m, d]) => `${m} ${duration(d.p50Ms)} (${d.count})`).join(' · ');
}

function card(t) {
  const failing = t.recentFailures.length > 0 || t.lastError;
  return el(
    'li',
    {
      class: 'target-card',
      'data-target': t.name,
      'data-failing': failing ? 'true' : 'false',
      tabindex: '0',
      role: 'button',
      'aria-label': `target ${t.name}`,
      onclick: () => openTarget(t.name),
      onkeydown: (ev) => ev.key === 'Enter' && openTarget(t.name),
    },
    el('h3', {}, t.name, ' ', el('span', { class: 'kind-badge', 'data-kind': t.kind }, kindName(t.kind))),
    t.card?.name
      ? el('p', { class: 'card-name' }, `${t.card.name}${t.card.version ? ` ${t.card.version}` : ''}`)
      : null,
    el(
      'p',
      { class: 'target-line' },
      `${t.tasks.active} open · reconciled ${t.lastReconciledAt ? `${age(t.lastReconciledAt)} ago` : 'not yet'}`,
    ),
    el('p', { class: 'target-line' }, delays(t)),
    costLine(t.name),
    failing
      ? el(
          'p',
          { class: 'failure' },
          t.recentFailures.length > 1 ? `${t.recentFailures.length} recent failures` : 'a recent failure',
        )
      : null,
  );
}

function costLine(name) {
  const c = costs.get(name);
  return el(
    'p',
    { class: 'target-line cost', 'data-cost': name },
    c ? costText(c.costPerAcceptedCompletion, c.accepted) : 'no accepted completion yet',
  );
}

function detail(t) {
  const caps = CAPABILITIES.map((c) =>
    el(
      'li',
      { 'data-capability': c, 'data-on': t.capabilities[c] ? 'true' : 'false' },
      `${t.capabilities[c] ? '✓' : '✗'} ${c}`,
    ),
  );
  const rows = [
    ['kind', kindName(t.kind)],
    ['interface', t.revision ?? '–'],
    [
      'open jobs',
      `${t.tasks.active}${
        Object.keys(t.tasks.byState).length
          ? ` (${Object.entries(t.tasks.byState)
              .map(([s, n]) => `${n} ${s.replaceAll('_', ' ')}`)
              .join(', ')})`
          : ''
      }`,
    ],
    [
      'last reconciliation',
      t.lastReconciledAt
        ? `${new Date(t.lastReconciledAt).toLocaleTimeString()} (${age(t.lastReconciledAt)} ago)`
        : 'not yet (rounds run while this tenant has open jobs here)',
    ],
    ['notification delay', delays(t)],
    ['poll guidance', t.capabilities.pollIntervalMs ? duration(t.capabilities.pollIntervalMs) : '–'],
    [
      'not found means',
      typeof t.capabilities.notFound === 'string'
        ? t.capabilities.notFound
        : `expired after ${duration(t.capabilities.notFound.expiresAfterMs)}`,
    ],
  ];
  const out = [
    el('h2', {}, 'Target ', el('small', { id: 'target-name' }, t.name)),
    el(
      'dl',
      { class: 'facts' },
      ...rows.flatMap(([k, v]) => [el('dt', {}, k), el('dd', { 'data-fact': k }, v)]),
    ),
    el('h3', {}, 'Capabilities'),
    el('ul', { class: 'capabilities' }, ...caps),
  ];
  if (t.card) {
    out.push(
      el('h3', {}, 'Agent card'),
      el(
        'p',
        { class: 'card-name' },
        [t.card.name, t.card.version, t.card.provider].filter(Boolean).join(' · '),
      ),
      t.card.description ? el('p', {}, t.card.description) : null,
      t.card.skills.length
        ? el(
            'ul',
            { class: 'skills' },
            ...t.card.skills.map((s) =>
              el('li', {}, el('b', {}, s.name ?? s.id), s.description ? ` — ${s.description}` : ''),
            ),
          )
        : null,
    );
  }
  if (t.lastError)
    out.push(
      el(
        'p',
        { class: 'failure', 'data-error': t.lastError.during },
        `${t.lastError.during} failed ${age(t.lastError.at)} ago: ${t.lastError.code}: ${t.lastError.message}`,
      ),
    );
  out.push(el('h3', {}, 'Recent failures'));
  out.push(
    t.recentFailures.length
      ? el(
          'ul',
          { class: 'failures' },
          ...t.recentFailures.map((f) =>
            el(
              'li',
              { 'data-task': f.taskId },
              el('a', { href: `#task=${f.taskId}`, class: 'task-link' }, f.taskId.slice(0, 18) + '…'),
              ` ${f.state.replaceAll('_', ' ')} · ${f.code}: ${f.message} · ${age(f.at)} ago`,
            ),
          ),
        )
      : el('p', { class: 'muted' }, 'none'),
  );
  if (t.inputSchema)
    out.push(
      el('h3', {}, 'Input schema'),
      el('pre', { class: 'output' }, JSON.stringify(t.inputSchema, null, 2)),
    );
  return out;
}

export async function loadTargets() {
  const [list, spent] = await Promise.all([api('GET', '/v1/targets'), api('GET', '/v1/costs')]);
  targets = list.targets;
  costs = new Map(spent.targets.map((c) => [c.target, c]));
  renderTargets();
}

export function renderTargets() {
  $('#target-list').replaceChildren(...targets.map(card));
  if (!targets.length) $('#target-list').append(el('li', { class: 'muted' }, 'no targets configured'));
  const t = targets.find((x) => x.name === opened);
  $('#target-detail').hidden = !t;
  if (t) $('#target-detail').replaceChildren(...detail(t).filter(Boolean));
  for (const li of document.querySelectorAll('.target-card'))
    li.classList.toggle('selected', li.dataset.target === opened);
}

export async function openTarget(name) {
  opened = name;
  renderTargets();
  // The list may be a few seconds old: read this one fresh.
  const fresh = await api('GET', `/v1/targets/${encodeURIComponent(name)}`);
  targets = targets.map((t) => (t.name === name ? fresh : t));
  if (opened === name) renderTargets();
}

export function closeTarget() {
  opened = null;
  renderTargets();
}

export const targetOpen = () => opened !== null;
