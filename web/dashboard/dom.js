// Small helpers the dashboard's modules share: element building, the API call with the tab's key, and
// how times and values read to a person.

export const $ = (sel) => document.querySelector(sel);

/** An element: attributes (`on…` ones are listeners), then children (nodes or text). */
export const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === '') continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
};

const SVG = 'http://www.w3.org/2000/svg';
/** An SVG element (charts); attributes only, no listeners. */
export const svg = (tag, attrs = {}, ...children) => {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
};

let key = null;
let onUnauthenticated = () => {};

export function useKey(k, whenRefused) {
  key = k;
  onUnauthenticated = whenRefused;
}

export async function api(method, path, body) {
  const res = await fetch(path, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = await res.json().catch(() => null);
  if (res.status === 401) onUnauthenticated();
  if (!res.ok) throw new Error(json?.error?.message ?? res.statusText);
  return json;
}

/** How long ago, in the largest two units: "42s", "3m 5s", "2h 10m". */
export function age(ms, now = Date.now()) {
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

/** A value as a short phrase: text as is, anything else as compact JSON, both cut to `max` characters. */
export function short(v, max = 100) {
  const text = typeof v === 'string' ? v : JSON.stringify(v);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** A delay in ms as a person reads it. */
export function duration(ms) {
  if (ms === null || ms === undefined) return '–';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${(ms / 60_000).toFixed(1)} min`;
}

/**
 * Cost per accepted completion (GET /v1/costs, /v1/workflows/{id}): everything spent, per unit, over the
 * tasks whose output was accepted; null until one was.
 */
export function costText(cost, accepted) {
  if (!cost || !Object.keys(cost).length)
    return accepted ? `${accepted} accepted, no usage reported` : 'no accepted completion yet';
  const per = Object.entries(cost)
    .map(([unit, n]) => `${Math.round(n * 100) / 100} ${unit}`)
    .join(' · ');
  return `${per} per accepted completion (${accepted} accepted)`;
}
