// taskplane dashboard: tasks with state, target, age and pending input, live over SSE (/v1/events),
// filtered by state, target and a search (id, idempotency key, input) and paged; the lifecycle signals
// as small charts (charts.js); one task's input, output, acceptance (with accept and reject buttons)
// and event timeline (each event with how the plane learned it), with a form to answer input
// (answer-form.js) and cancel (with a confirmation); the targets view (targets.js). Keyboard: j/k or
// the arrows move in the list, Enter opens, / searches, Esc closes.
// Plain JS modules, no build step. The API key comes from the URL fragment `#key=…` (printed by
// `taskplane serve` at first start), which is removed from the address bar at once; it is kept in
// sessionStorage (this tab only, gone when it closes) and sent as a bearer header. EventSource cannot
// send headers, so the live view asks for a short-lived stream ticket (POST /v1/stream-tickets) and
// puts that, never the key, in its URL.

import { $, el, api, age, costText, short, useKey } from './dom.js';
import { answerBox, placeAnswerBox } from './answer-form.js';
import { recordSignals, renderCharts } from './charts.js';
import { closeTarget, kindName, loadTargets, targetOpen } from './targets.js';
import {
  TERMINAL,
  acceptanceBlock,
  acceptanceBox,
  cancelBox,
  outputBlock,
  timelineItem,
  usageBlock,
} from './task-detail.js';

const tasks = new Map();
let selected = null;
/** SSE event names to listen for, from the API description (see loadApiLists). */
let eventTypes = [];

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

function askForKey() {
  $('#key-form').hidden = false;
  $('#live').textContent = 'API key needed';
  $('#live').dataset.state = 'error';
}

/** The requests still waiting for an answer: each keyed one (MCP, Claude), else the single one. */
function openRequests(p) {
  if (!p) return [];
  if (p.requests) return p.requests.filter((r) => !r.answeredAt);
  return p.answeredAt ? [] : [p];
}

/** The requests answered while the job still shows them, with the answer given. */
function answeredRequests(p) {
  if (!p) return [];
  return (p.requests ?? [p]).filter((r) => r.answeredAt && r.answer);
}

function pendingText(t) {
  const open = openRequests(t.pendingInput);
  if (open.length === 0) return '';
  const first = open[0].prompt || open[0].requestId;
  return open.length > 1 ? `${first} (+${open.length - 1})` : first;
}

function renderRow(t) {
  const row = el(
    'tr',
    { 'data-id': t.id, tabindex: '-1', onclick: () => select(t.id) },
    el('td', {}, el('code', {}, t.id.slice(0, 18) + '…')),
    el('td', {}, el('span', { class: 'state', 'data-state': t.state }, t.state)),
    el('td', {}, t.target),
    el('td', { class: 'kind' }, kindName(t.connector)),
    el('td', { class: 'age', 'data-created': String(t.createdAt), 'data-ended': ended(t) }, rowAge(t)),
    el('td', { class: 'pending' }, pendingText(t)),
    el('td', {}, t.acceptance ? t.acceptance.status : ''),
  );
  if (t.id === selected) row.classList.add('selected');
  return row;
}

/** A finished task's age stops at its end. */
const ended = (t) => (TERMINAL.has(t.state) ? String(t.stateTimestamp ?? t.updatedAt) : null);
const rowAge = (t) =>
  age(t.createdAt, TERMINAL.has(t.state) ? (t.stateTimestamp ?? t.updatedAt) : Date.now());

const PAGE_SIZE = 25;
const filters = { state: '', target: '', text: '' };
let page = 0;
/** The row the keyboard is on, as an index into the rows shown. */
let cursor = -1;
let shownRows = [];

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
  shownRows = shown.slice(page * PAGE_SIZE, (page + 1) * PAGE_SIZE);
  body.replaceChildren(...shownRows.map(renderRow));
  cursor = Math.min(cursor, shownRows.length - 1);
  if (cursor >= 0) body.children[cursor].classList.add('cursor');
  $('#page-info').textContent = shown.length
    ? `${page * PAGE_SIZE + 1}–${page * PAGE_SIZE + shownRows.length} of ${shown.length}`
    : 'no tasks match';
  $('#page-prev').disabled = page === 0;
  $('#page-next').disabled = page >= pages - 1;
}

function setUpFilters(states) {
  $('#filter-state').append(...states.map((s) => el('option', { value: s }, s.replaceAll('_', ' '))));
  const apply = () => {
    filters.state = $('#filter-state').value;
    filters.target = $('#filter-target').value;
    filters.text = $('#filter-text').value;
    page = 0;
    cursor = -1;
    renderTasks();
  };
  $('#filters').addEventListener('input', apply);
  $('#filters').addEventListener('submit', (ev) => ev.preventDefault());
  $('#page-prev').addEventListener('click', () => (page--, (cursor = -1), renderTasks()));
  $('#page-next').addEventListener('click', () => (page++, (cursor = -1), renderTasks()));
}

/** Counts not charted, as numbers: each is a failure that should stay at zero. */
const COUNTS = [
  ['reused', (s) => s.reusedMessageIds, 'reused messageIds'],
  ['notfound', (s) => s.taskNotFoundOwn, 'TaskNotFound on own tasks'],
  ['drops', (s) => s.streamDrops, 'stream drops'],
  ['escalated', (s) => s.escalated, 'escalated'],
];

async function refreshSignals() {
  try {
    const s = await api('GET', '/v1/signals');
    recordSignals(s);
    renderCharts($('#charts'));
    $('#counts').replaceChildren(
      ...COUNTS.map(([id, f, label]) =>
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

/**
 * The answer boxes of the task shown, by request: kept across re-renders (every event about the task
 * re-renders it), so what was typed into them, and which field had focus, survives an event about
 * another of its requests.
 */
const boxes = new Map();

function answerBoxes(t) {
  const open = TERMINAL.has(t.state) ? [] : openRequests(t.pendingInput);
  const keep = new Set(open.map((r) => `${t.id}/${r.requestId}`));
  for (const k of boxes.keys()) if (!keep.has(k)) boxes.delete(k);
  return open.map((req, i) => {
    const k = `${t.id}/${req.requestId}`;
    if (!boxes.has(k))
      boxes.set(
        k,
        answerBox(req, async (value) => {
          await api('POST', `/v1/tasks/${t.id}/input`, { requestId: req.requestId, value });
          await refreshTask(t.id);
        }),
      );
    return placeAnswerBox(boxes.get(k), i === 0 ? '' : `-${i}`);
  });
}

function showError(err) {
  $('#detail-error').textContent = err.message;
}

function renderDetail(t) {
  $('#detail').hidden = false;
  $('#detail-id').textContent = `${t.id} · ${t.state}${t.nativeState ? ` (${t.nativeState})` : ''}`;
  const focused = document.activeElement;
  const actions = [...answerBoxes(t)];
  for (const r of answeredRequests(t.pendingInput))
    actions.push(
      el(
        'p',
        { class: 'answered', 'data-request': r.requestId },
        `answered ${r.prompt || r.requestId}: ${short(r.answer.value, 200)}`,
      ),
    );
  if (!TERMINAL.has(t.state) && t.state !== 'cancel_requested')
    actions.push(cancelBox(t, { refresh: refreshTask, showError }));
  if (TERMINAL.has(t.state)) actions.push(acceptanceBox(t, { refresh: refreshTask }));
  const keepDecision = $('#detail-actions').dataset.task === t.id && $('#detail-actions .acceptance-form');
  $('#detail-actions').dataset.task = t.id;
  if (!keepDecision) $('#detail-actions').replaceChildren(...actions);
  if (focused && focused !== document.body && document.contains(focused)) focused.focus();
  $('#detail-output').replaceChildren(
    ...usageBlock(t),
    ...workflowBlock(t),
    ...acceptanceBlock(t),
    ...outputBlock(t),
  );
}

/** Workflows read when a task of theirs is opened (GET /v1/workflows/{id}), by id. */
const workflows = new Map();

function workflowBlock(t) {
  const w = t.workflowId ? workflows.get(t.workflowId) : undefined;
  if (!w) return [];
  return [
    el(
      'p',
      { class: 'workflow-cost', 'data-workflow': w.workflowId },
      `workflow ${w.workflowId}: ${w.tasks} task${w.tasks === 1 ? '' : 's'}, ${costText(w.costPerAcceptedCompletion, w.accepted)}`,
    ),
  ];
}

// A task's timeline is fetched when it is opened (GET …/history), never kept for every task.
async function select(id) {
  selected = id;
  const i = shownRows.findIndex((t) => t.id === id);
  if (i >= 0) cursor = i;
  renderTasks();
  $('#detail-error').textContent = '';
  let t = tasks.get(id);
  if (!t) {
    t = await api('GET', `/v1/tasks/${id}`);
    tasks.set(id, t);
  }
  renderDetail(t);
  if (t.workflowId)
    void api('GET', `/v1/workflows/${encodeURIComponent(t.workflowId)}`)
      .then((w) => {
        workflows.set(t.workflowId, w);
        if (selected === id) renderDetail(tasks.get(id) ?? t);
      })
      .catch(() => {});
  $('#timeline').replaceChildren();
  const { events } = await api('GET', `/v1/tasks/${id}/history`);
  if (selected !== id) return;
  // Live events that arrived while the history was loading are kept when they are newer than it.
  const last = events.length ? events[events.length - 1].seq : 0;
  const live = [...$('#timeline').children].filter((li) => Number(li.dataset.seq) > last);
  $('#timeline').replaceChildren(...events.map(timelineItem), ...live);
}

function closeDetail() {
  selected = null;
  boxes.clear();
  $('#detail').hidden = true;
  delete $('#detail-actions').dataset.task;
  renderTasks();
  $('#tasks tbody .cursor')?.focus();
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
 * The event types to subscribe to and the task states to filter by, as the server's API description
 * lists them: SSE delivers a named event only to a listener for that name, so a list kept here would
 * miss every type (or state) added later.
 */
async function loadApiLists() {
  const doc = await api('GET', '/v1/openapi.json');
  const schemas = doc?.components?.schemas;
  const types = schemas?.Event?.properties?.type?.enum;
  const states = schemas?.Task?.properties?.state?.enum;
  if (!Array.isArray(types) || types.length === 0)
    throw new Error('the API description lists no event types');
  if (!Array.isArray(states) || states.length === 0)
    throw new Error('the API description lists no task states');
  return { types, states };
}

/** Tasks or targets, as the address says (`#targets`, `#task=<id>`), so a reload or a link keeps it. */
async function showView() {
  const m = /^#task=([\w-]+)$/.exec(location.hash);
  const view = location.hash === '#targets' ? 'targets' : 'tasks';
  $('#tasks-view').hidden = view !== 'tasks';
  $('#targets-view').hidden = view !== 'targets';
  $('#view-tasks').setAttribute('aria-current', view === 'tasks' ? 'page' : 'false');
  $('#view-targets').setAttribute('aria-current', view === 'targets' ? 'page' : 'false');
  if (view === 'targets') await loadTargets();
  if (m) await select(m[1]);
}

const typing = (node) => node && (/^(INPUT|TEXTAREA|SELECT)$/.test(node.tagName) || node.isContentEditable);

function moveCursor(step) {
  if (!shownRows.length) return;
  cursor = Math.max(0, Math.min(shownRows.length - 1, cursor + step));
  renderTasks();
  const row = $('#tasks tbody .cursor');
  row?.focus();
  row?.scrollIntoView({ block: 'nearest' });
}

function onKey(ev) {
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  if (ev.key === 'Escape') {
    if (typing(document.activeElement)) return document.activeElement.blur();
    if (!$('#targets-view').hidden) return targetOpen() && closeTarget();
    if (selected) closeDetail();
    return;
  }
  if (typing(document.activeElement)) return;
  if (ev.key === '/') {
    ev.preventDefault();
    if ($('#tasks-view').hidden) location.hash = '';
    $('#filter-text').focus();
    return;
  }
  if ($('#tasks-view').hidden) return;
  if (ev.key === 'j' || ev.key === 'ArrowDown') {
    ev.preventDefault();
    moveCursor(1);
  } else if (ev.key === 'k' || ev.key === 'ArrowUp') {
    ev.preventDefault();
    moveCursor(-1);
  } else if (ev.key === 'Enter' && cursor >= 0 && shownRows[cursor]) {
    ev.preventDefault();
    void select(shownRows[cursor].id).catch(showError);
  }
}

async function main() {
  const key = readKey();
  useKey(key, askForKey);
  $('#key-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(KEY_ITEM, $('#key-input').value.trim());
    location.reload();
  });
  if (!key) return askForKey();
  const lists = await loadApiLists();
  eventTypes = lists.types;
  setUpFilters(lists.states);
  document.addEventListener('keydown', onKey);
  $('#detail-close').addEventListener('click', closeDetail);
  window.addEventListener('hashchange', () => void showView().catch(showError));
  const seq = await loadTasks();
  await refreshSignals();
  await connectLive(seq);
  await showView();
  setInterval(() => {
    for (const cell of document.querySelectorAll('td.age'))
      if (!cell.dataset.ended) cell.textContent = age(Number(cell.dataset.created));
  }, 1000);
  setInterval(refreshSignals, 5000);
  setInterval(() => !$('#targets-view').hidden && loadTargets().catch(() => {}), 10_000);
}

main().catch((err) => {
  $('#live').textContent = `error: ${err.message}`;
});
