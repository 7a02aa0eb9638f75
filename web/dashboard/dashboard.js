// taskplane dashboard: tasks with state, target, age and pending input, live over SSE (/v1/events),
// filtered by state, target and a search (id, idempotency key, input) and paged; the lifecycle signals;
// one task's input, output, acceptance and event timeline (each event with how the plane learned it),
// and buttons to answer input and to cancel (with a confirmation).
// Plain JS, no build step. The API key comes from the URL fragment `#key=…` (printed by `taskplane
// serve` at first start), which is removed from the address bar at once; it is kept in sessionStorage
// (this tab only, gone when it closes) and sent as a bearer header. EventSource cannot send headers, so
// the live view asks for a short-lived stream ticket (POST /v1/stream-tickets) and puts that, never the
// key, in its URL.

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'expired', 'lost']);
const tasks = new Map();
let selected = null;
let key = null;
/** SSE event names to listen for, from the API description (see loadEventTypes). */
let eventTypes = [];

const $ = (sel) => document.querySelector(sel);
const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
};

const KEY_ITEM = 'taskplane.key';

function readKey() {
  // Older dashboards kept the key in localStorage, where it outlived the tab: take it away.
  localStorage.removeItem(KEY_ITEM);
  const m = /key=([^&]+)/.exec(location.hash);
  if (m) {
    sessionStorage.setItem(KEY_ITEM, decodeURIComponent(m[1]));
    history.replaceState(null, '', location.pathname + location.search);
  }
  return sessionStorage.getItem(KEY_ITEM);
}

async function api(method, path, body) {
  const res = await fetch(path, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = await res.json().catch(() => null);
  if (res.status === 401) askForKey();
  if (!res.ok) throw new Error(json?.error?.message ?? res.statusText);
  return json;
}

function askForKey() {
  $('#key-form').hidden = false;
  $('#live').textContent = 'API key needed';
  $('#live').dataset.state = 'error';
}

function age(ms) {
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

/** The requests still waiting for an answer: each keyed one (MCP), else the single one. */
function openRequests(p) {
  if (!p) return [];
  if (p.requests) return p.requests.filter((r) => !r.answeredAt);
  return p.answeredAt ? [] : [p];
}

function pendingText(t) {
  const open = openRequests(t.pendingInput);
  if (open.length === 0) return '';
  const first = open[0].prompt || open[0].requestId;
  return open.length > 1 ? `${first} (+${open.length - 1})` : first;
}

/**
 * What the answer box sends: JSON when it parses to an object, else the text. For a request whose
 * schema has one property (an MCP form), the text is that property's value.
 */
function answerValue(req, text) {
  try {
    const v = JSON.parse(text);
    if (v && typeof v === 'object' && !Array.isArray(v)) return v;
  } catch {
    /* plain text */
  }
  const props = Object.keys(req.schema?.properties ?? {});
  if (props.length === 1) {
    const type = req.schema.properties[props[0]]?.type;
    const n = Number(text);
    const value =
      type === 'boolean'
        ? /^(true|yes|y|1)$/i.test(text)
        : (type === 'integer' || type === 'number') && text !== '' && Number.isFinite(n)
          ? n
          : text;
    return { [props[0]]: value };
  }
  return text;
}

function renderRow(t) {
  const row = el(
    'tr',
    { 'data-id': t.id, onclick: () => select(t.id) },
    el('td', {}, el('code', {}, t.id.slice(0, 18) + '…')),
    el('td', {}, el('span', { class: 'state', 'data-state': t.state }, t.state)),
    el('td', {}, t.target),
    el('td', { class: 'kind' }, t.connector),
    el('td', { class: 'age', 'data-created': String(t.createdAt) }, age(t.createdAt)),
    el('td', { class: 'pending' }, pendingText(t)),
    el('td', {}, t.acceptance ? t.acceptance.status : ''),
  );
  if (t.id === selected) row.classList.add('selected');
  return row;
}

const STATES = [
  'accepted',
  'running',
  'waiting_for_input',
  'cancel_requested',
  'succeeded',
  'failed',
  'cancelled',
  'expired',
  'unknown',
  'lost',
];
const PAGE_SIZE = 25;
const filters = { state: '', target: '', text: '' };
let page = 0;

/** What the search box matches: the id, the idempotency key, the workflow id and the input. */
function matches(t) {
  if (filters.state === 'active' ? TERMINAL.has(t.state) : filters.state && t.state !== filters.state)
    return false;
  if (filters.target && t.target !== filters.target) return false;
  const q = filters.text.trim().toLowerCase();
  if (!q) return true;
  const input = typeof t.input === 'string' ? t.input : JSON.stringify(t.input ?? '');
  return [t.id, t.idempotencyKey ?? '', t.workflowId ?? '', input].some((s) => s.toLowerCase().includes(q));
}

/** The target filter lists every target seen, keeping the choice made. */
function renderTargetOptions() {
  const select = $('#filter-target');
  const names = [...new Set([...tasks.values()].map((t) => t.target))].sort();
  if (names.join('\n') === select.dataset.names) return;
  select.dataset.names = names.join('\n');
  select.replaceChildren(
    el('option', { value: '' }, 'all'),
    ...names.map((n) => el('option', { value: n }, n)),
  );
  select.value = names.includes(filters.target) ? filters.target : '';
}

function renderTasks() {
  const body = $('#tasks tbody');
  renderTargetOptions();
  const shown = [...tasks.values()].filter(matches).sort((a, b) => b.createdAt - a.createdAt);
  const pages = Math.max(1, Math.ceil(shown.length / PAGE_SIZE));
  page = Math.min(page, pages - 1);
  const rows = shown.slice(page * PAGE_SIZE, (page + 1) * PAGE_SIZE);
  body.replaceChildren(...rows.map(renderRow));
  $('#page-info').textContent = shown.length
    ? `${page * PAGE_SIZE + 1}–${page * PAGE_SIZE + rows.length} of ${shown.length}`
    : 'no tasks match';
  $('#page-prev').disabled = page === 0;
  $('#page-next').disabled = page >= pages - 1;
}

function setUpFilters() {
  $('#filter-state').append(...STATES.map((s) => el('option', { value: s }, s.replaceAll('_', ' '))));
  const apply = () => {
    filters.state = $('#filter-state').value;
    filters.target = $('#filter-target').value;
    filters.text = $('#filter-text').value;
    page = 0;
    renderTasks();
  };
  $('#filters').addEventListener('input', apply);
  $('#filters').addEventListener('submit', (ev) => ev.preventDefault());
  $('#page-prev').addEventListener('click', () => (page--, renderTasks()));
  $('#page-next').addEventListener('click', () => (page++, renderTasks()));
}

const SIGNALS = [
  ['orphans', (s) => s.orphans, 'orphans'],
  ['input', (s) => Object.values(s.inputRequiredByAge).reduce((a, b) => a + b, 0), 'waiting for input'],
  ['input-old', (s) => s.inputRequiredByAge.under15m + s.inputRequiredByAge.over15m, 'input waiting > 5 min'],
  ['dups', (s) => s.duplicatesAbsorbed.webhook + s.duplicatesAbsorbed.observation, 'duplicates absorbed'],
  ['reused', (s) => s.reusedMessageIds, 'reused messageIds'],
  ['notfound', (s) => s.taskNotFoundOwn, 'TaskNotFound on own tasks'],
  ['rpt', (s) => (s.requests.perTask ?? 0).toFixed(2), 'requests per task'],
  ['push', (s) => s.observationDelay.push?.p50Ms ?? '–', 'push delay p50 ms'],
  ['stream', (s) => s.observationDelay.stream?.p50Ms ?? '–', 'stream delay p50 ms'],
];

async function refreshSignals() {
  try {
    const s = await api('GET', '/v1/signals');
    $('#signals').replaceChildren(
      ...SIGNALS.map(([id, f, label]) =>
        el('div', { class: 'signal', 'data-signal': id }, el('b', {}, f(s)), el('span', {}, label)),
      ),
    );
  } catch {
    /* shown by the live badge */
  }
}

async function refreshTask(id) {
  const t = await api('GET', `/v1/tasks/${id}`);
  tasks.set(id, t);
  renderTasks();
  if (id === selected) renderDetail(t);
}

// The current state comes from the API, not from replaying the event log: the list answer carries
// `eventSeq`, the latest event seq read before listing, and the live view tails from there.
async function loadTasks() {
  const page = await api('GET', '/v1/tasks?limit=200');
  for (const t of page.tasks) tasks.set(t.id, t);
  renderTasks();
  return page.eventSeq ?? 0;
}

/** A value as a short phrase: text as is, anything else as compact JSON, both cut to `max` characters. */
function short(v, max = 100) {
  const text = typeof v === 'string' ? v : JSON.stringify(v);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** An event as a person reads it: what happened, in words; any other fields as `name: value`. */
function describe(e) {
  const d = e.data ?? {};
  if (e.type === 'state_changed') return `${d.from} → ${d.to}`;
  if (e.type === 'input_requested') return `asked: ${d.prompt || d.requestId}`;
  if (e.type === 'input_answered')
    return `answered ${d.requestId}${d.value !== undefined ? `: ${short(d.value, 60)}` : ''}`;
  if (e.type === 'created') return `created for ${d.target ?? 'its target'}`;
  if (e.type === 'artifact') return `output ${d.artifactId}${d.name ? ` (${d.name})` : ''}`;
  const fields = Object.entries(d)
    .filter(([k]) => k !== 'source')
    .map(([k, v]) => `${k}: ${short(v, 60)}`);
  return `${e.type.replaceAll('_', ' ')}${fields.length ? ` — ${fields.join(', ')}` : ''}`;
}

function timelineItem(e) {
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

/**
 * What was typed into the answer boxes of the task shown, by request key, and which box had focus. A
 * task waiting on several keyed requests (Claude tool calls) is re-rendered on every event about it,
 * including the answer to one of them: without this, the answers typed for the others were lost.
 */
function typedAnswers(id) {
  const typed = new Map();
  let focused = null;
  if ($('#detail-actions').dataset.task !== id) return { typed, focused };
  for (const box of document.querySelectorAll('#detail-actions .answer')) {
    const input = box.querySelector('input');
    if (input.value) typed.set(box.dataset.request, input.value);
    if (input === document.activeElement) focused = box.dataset.request;
  }
  return { typed, focused };
}

function renderDetail(t) {
  $('#detail').hidden = false;
  $('#detail-id').textContent = `${t.id} · ${t.state}${t.nativeState ? ` (${t.nativeState})` : ''}`;
  const { typed, focused } = typedAnswers(t.id);
  const actions = [];
  let focus = null;
  const open = TERMINAL.has(t.state) ? [] : openRequests(t.pendingInput);
  open.forEach((req, i) => {
    const suffix = i === 0 ? '' : `-${i}`;
    const input = el('input', { id: `answer-input${suffix}`, placeholder: req.prompt || 'answer' });
    input.value = typed.get(req.requestId) ?? '';
    if (focused === req.requestId) focus = input;
    const send = async () => {
      try {
        await api('POST', `/v1/tasks/${t.id}/input`, {
          requestId: req.requestId,
          value: answerValue(req, input.value),
        });
        await refreshTask(t.id);
      } catch (err) {
        alert(err.message);
      }
    };
    actions.push(
      el(
        'div',
        { class: 'answer', 'data-request': req.requestId },
        el('span', {}, req.method ? `${req.prompt} (${req.requestId})` : req.prompt),
        input,
        el('button', { id: `answer-button${suffix}`, onclick: send }, 'Answer'),
      ),
    );
  });
  if (!TERMINAL.has(t.state) && t.state !== 'cancel_requested') {
    // Cancelling asks the agent to stop work: a second, explicit click, never a stray one.
    const cancel = el('div', { class: 'cancel' });
    const ask = () =>
      cancel.replaceChildren(
        el('span', {}, 'Cancel this task? The agent is asked to stop.'),
        el(
          'button',
          {
            id: 'cancel-confirm',
            class: 'danger',
            onclick: async () => {
              await api('POST', `/v1/tasks/${t.id}/cancel`, {}).catch((err) => alert(err.message));
              await refreshTask(t.id);
            },
          },
          'Yes, cancel',
        ),
        el('button', { id: 'cancel-keep', onclick: () => cancel.replaceChildren(button) }, 'Keep it'),
      );
    const button = el('button', { id: 'cancel-button', onclick: ask }, 'Cancel task…');
    cancel.append(button);
    actions.push(cancel);
  }
  $('#detail-actions').dataset.task = t.id;
  $('#detail-actions').replaceChildren(...actions);
  focus?.focus();
  $('#detail-output').replaceChildren(...usageBlock(t), ...acceptanceBlock(t), ...outputBlock(t));
}

// Acceptance apart from the state: the verdict, who decided when a person did, and each check run with
// its verdict and reasons (docs/plane.md "Acceptance").
function acceptanceBlock(t) {
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
function usageBlock(t) {
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
function outputBlock(t) {
  const out = [el('p', { class: 'input' }, el('b', {}, 'input '), short(t.input ?? '', 200))];
  if (t.acceptance) {
    const a = t.acceptance;
    out.push(
      el(
        'p',
        { class: 'acceptance', 'data-status': a.status },
        el('b', {}, 'acceptance '),
        `${a.status}${a.reasons?.length ? `: ${a.reasons.join('; ')}` : ''}`,
      ),
    );
  }
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

// A task's timeline is fetched when it is opened (GET …/history), never kept for every task.
async function select(id) {
  selected = id;
  renderTasks();
  const t = tasks.get(id);
  if (t) renderDetail(t);
  $('#timeline').replaceChildren();
  const { events } = await api('GET', `/v1/tasks/${id}/history`);
  if (selected !== id) return;
  // Live events that arrived while the history was loading are kept when they are newer than it.
  const last = events.length ? events[events.length - 1].seq : 0;
  const live = [...$('#timeline').children].filter((li) => Number(li.dataset.seq) > last);
  $('#timeline').replaceChildren(...events.map(timelineItem), ...live);
}

async function connectLive(afterSeq) {
  // `after` only matters for a new connection: on its own reconnects EventSource sends Last-Event-ID,
  // which the server prefers, so nothing is missed or replayed across a drop either. Once its ticket
  // has expired a reconnect is refused and the source closes: then a new ticket, resuming after the
  // last event seen.
  let lastSeq = afterSeq;
  const { ticket } = await api('POST', '/v1/stream-tickets');
  const source = new EventSource(`/v1/events?ticket=${encodeURIComponent(ticket)}&after=${afterSeq}`);
  const pending = new Set();
  let timer = null;
  source.onopen = () => {
    $('#live').textContent = 'live';
    $('#live').dataset.state = 'live';
  };
  source.onerror = () => {
    $('#live').textContent = 'reconnecting…';
    $('#live').dataset.state = 'connecting';
    if (source.readyState !== EventSource.CLOSED) return;
    setTimeout(() => connectLive(lastSeq).catch(() => {}), 1000);
  };
  source.onmessage = null;
  const onEvent = (msg) => {
    const e = JSON.parse(msg.data);
    lastSeq = Math.max(lastSeq, e.seq);
    if (e.envelopeId === selected) $('#timeline').append(timelineItem(e));
    pending.add(e.envelopeId);
    // Coalesce bursts (a replay, a busy agent): one refresh per task per 200 ms.
    timer ??= setTimeout(async () => {
      timer = null;
      const ids = [...pending];
      pending.clear();
      for (const id of ids) await refreshTask(id).catch(() => {});
      await refreshSignals();
    }, 200);
  };
  for (const type of eventTypes) source.addEventListener(type, onEvent);
}

/**
 * The event types to subscribe to, as the server's API description lists them: SSE delivers a named
 * event only to a listener for that name, so a list kept here would miss every type added later.
 */
async function loadEventTypes() {
  const doc = await api('GET', '/v1/openapi.json');
  const types = doc?.components?.schemas?.Event?.properties?.type?.enum;
  if (!Array.isArray(types) || types.length === 0)
    throw new Error('the API description lists no event types');
  return types;
}

async function main() {
  key = readKey();
  $('#key-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(KEY_ITEM, $('#key-input').value.trim());
    location.reload();
  });
  if (!key) return askForKey();
  setUpFilters();
  eventTypes = await loadEventTypes();
  const seq = await loadTasks();
  await refreshSignals();
  await connectLive(seq);
  setInterval(() => {
    for (const cell of document.querySelectorAll('td.age'))
      cell.textContent = age(Number(cell.dataset.created));
  }, 1000);
  setInterval(refreshSignals, 5000);
}

main().catch((err) => {
  $('#live').textContent = `error: ${err.message}`;
});
