// The answer to a pending input request, as a form built from the request's JSON Schema: one field per
// property of a flat object (strings, numbers, booleans, choices: what an MCP elicitation asks), or one
// field for a schema that is a single value; of `oneOf`/`anyOf` alternatives, the first one a form can
// draw. Checked here before anything is sent, each error naming its field. A schema this cannot draw
// (nested objects, arrays of objects) gets a JSON text area instead; a request without a schema gets
// one line of text, sent as JSON when it parses to an object.

import { el } from './dom.js';

/** The control a property gets, or null when a form cannot represent it. */
function controlFor(prop) {
  if (!prop || typeof prop !== 'object') return null;
  const choices = enumChoices(prop);
  if (choices) return { kind: 'select', choices };
  if (prop.type === 'boolean') return { kind: 'checkbox' };
  if (prop.type === 'integer' || prop.type === 'number') return { kind: 'number' };
  if (prop.type === 'string') return { kind: 'text' };
  if (prop.type === 'array' && prop.items && enumChoices(prop.items)) {
    return { kind: 'multi', choices: enumChoices(prop.items) };
  }
  return null;
}

/** `enum` (with optional `enumNames`) or `oneOf`/`anyOf` of `{const, title}`: value and label pairs. */
function enumChoices(s) {
  if (Array.isArray(s.enum))
    return s.enum.map((v, i) => ({ value: v, label: String(s.enumNames?.[i] ?? v) }));
  const list = s.oneOf ?? s.anyOf;
  if (Array.isArray(list) && list.length && list.every((o) => o && 'const' in o))
    return list.map((o) => ({ value: o.const, label: String(o.title ?? o.const) }));
  return null;
}

/** The properties a form can draw, or null when any cannot be (the JSON text area is used then). */
export function formFields(schema) {
  if (!schema || typeof schema !== 'object' || !schema.properties) return null;
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const fields = [];
  for (const [name, prop] of Object.entries(schema.properties)) {
    const control = controlFor(prop);
    if (!control) return null;
    fields.push({ name, prop, control, required: required.has(name) });
  }
  return fields.length ? fields : null;
}

/**
 * How a request's schema is answered through a form: an object of fields, or one value (a schema that is
 * a string, number, boolean or choice itself). Of `oneOf`/`anyOf` alternatives (a Claude tool confirmation:
 * `allow` or `{result, deny_message}`) the first object a form can draw is used, else the first value;
 * null when nothing can be drawn.
 */
export function formPlan(schema) {
  if (!schema || typeof schema !== 'object') return null;
  const fields = formFields(schema);
  if (fields) return { kind: 'object', fields };
  const value = (s) => {
    const control = controlFor(s);
    return control && control.kind !== 'multi'
      ? { kind: 'value', fields: [{ name: 'answer', prop: s, control, required: true }] }
      : null;
  };
  const own = value(schema);
  if (own) return own;
  const alternatives = Array.isArray(schema.oneOf)
    ? schema.oneOf
    : Array.isArray(schema.anyOf)
      ? schema.anyOf
      : [];
  for (const alt of alternatives) {
    const f = formFields(alt);
    if (f) return { kind: 'object', fields: f };
  }
  for (const alt of alternatives) {
    const v = value(alt);
    if (v) return v;
  }
  return null;
}

const fieldId = (suffix, name) => `answer-field${suffix}-${name.replace(/[^A-Za-z0-9_-]/g, '_')}`;

function drawField(f, suffix) {
  const id = fieldId(suffix, f.name);
  const p = f.prop;
  const title = p.title ?? f.name;
  const common = { id, name: f.name, 'data-field': f.name, required: f.required };
  let control;
  if (f.control.kind === 'select') {
    control = el(
      'select',
      common,
      // Nothing chosen until a person chooses: a required choice left alone is an error, not the first option.
      el('option', { value: '' }, f.required ? 'choose…' : '—'),
      ...f.control.choices.map((c, i) => el('option', { value: String(i) }, c.label)),
    );
    if (p.default !== undefined) {
      const i = f.control.choices.findIndex((c) => c.value === p.default);
      if (i >= 0) control.value = String(i);
    }
  } else if (f.control.kind === 'checkbox') {
    control = el('input', { ...common, type: 'checkbox', required: false });
    control.checked = p.default === true;
  } else if (f.control.kind === 'multi') {
    control = el(
      'span',
      { id, class: 'multi', 'data-field': f.name, role: 'group' },
      ...f.control.choices.map((c, i) =>
        el('label', {}, el('input', { type: 'checkbox', value: String(i) }), c.label),
      ),
    );
  } else {
    const type =
      f.control.kind === 'number'
        ? 'number'
        : ({ email: 'email', uri: 'url', date: 'date' }[p.format] ?? 'text');
    control = el('input', {
      ...common,
      type,
      ...(f.control.kind === 'number' ? { step: p.type === 'integer' ? '1' : 'any' } : {}),
      ...(p.minimum !== undefined ? { min: String(p.minimum) } : {}),
      ...(p.maximum !== undefined ? { max: String(p.maximum) } : {}),
      ...(p.maxLength !== undefined ? { maxlength: String(p.maxLength) } : {}),
      placeholder: p.description ?? '',
    });
    if (p.default !== undefined) control.value = String(p.default);
  }
  return el(
    'label',
    { class: `field field-${f.control.kind}`, for: id },
    el('span', { class: 'field-name' }, title, f.required ? el('abbr', { title: 'required' }, ' *') : null),
    control,
    p.description && f.control.kind !== 'text' && f.control.kind !== 'number'
      ? el('small', {}, p.description)
      : null,
  );
}

/** The value a drawn field holds, or throws an error that names the field. */
function readField(form, f) {
  const p = f.prop;
  const named = (msg) => new Error(`${f.name}: ${msg}`);
  const node = form.querySelector(`[data-field="${CSS.escape(f.name)}"]`);
  if (f.control.kind === 'checkbox') return node.checked;
  if (f.control.kind === 'multi') {
    const picked = [...node.querySelectorAll('input:checked')].map((i) => f.control.choices[i.value].value);
    if (f.required && picked.length === 0) throw named('choose at least one');
    return picked.length ? picked : undefined;
  }
  if (f.control.kind === 'select') {
    if (node.value === '') {
      if (f.required) throw named('required');
      return undefined;
    }
    return f.control.choices[Number(node.value)].value;
  }
  const text = node.value.trim();
  if (text === '') {
    if (f.required) throw named('required');
    return undefined;
  }
  if (f.control.kind === 'number') {
    const n = Number(text);
    if (!Number.isFinite(n)) throw named('must be a number');
    if (p.type === 'integer' && !Number.isInteger(n)) throw named('must be a whole number');
    if (p.minimum !== undefined && n < p.minimum) throw named(`must be at least ${p.minimum}`);
    if (p.maximum !== undefined && n > p.maximum) throw named(`must be at most ${p.maximum}`);
    return n;
  }
  if (p.minLength !== undefined && text.length < p.minLength)
    throw named(`at least ${p.minLength} characters`);
  if (p.maxLength !== undefined && text.length > p.maxLength)
    throw named(`at most ${p.maxLength} characters`);
  return text;
}

/** What a one-line answer (a request without a schema) sends: JSON when it parses to an object, else the text. */
export function lineValue(text) {
  try {
    const v = JSON.parse(text);
    if (v && typeof v === 'object' && !Array.isArray(v)) return v;
  } catch {
    /* plain text */
  }
  return text;
}

/** The skeleton a JSON answer starts from: each property with its default, or null. */
function skeleton(schema) {
  const props = schema?.properties ?? {};
  return JSON.stringify(
    Object.fromEntries(Object.entries(props).map(([k, p]) => [k, p?.default ?? null])),
    null,
    2,
  );
}

/**
 * The answer box of one request: prompt, fields (or the JSON text area, or one line), an error line,
 * and the Answer button, which calls `send(value)` with the value read and checked.
 */
/** Stands for the box's position in its ids until `placeAnswerBox` says where the box is. */
const AT = '\u0001';

/**
 * Gives a box the ids of its place among the open requests (`answer-input`, `answer-input-1`, …): a box
 * is kept across re-renders with what was typed into it, and moves up when a request before it is
 * answered.
 */
export function placeAnswerBox(box, suffix) {
  for (const node of box.querySelectorAll('[data-id-template]'))
    node.id = node.dataset.idTemplate.replace(AT, suffix);
  for (const node of box.querySelectorAll('[data-for-template]'))
    node.htmlFor = node.dataset.forTemplate.replace(AT, suffix);
  return box;
}

export function answerBox(req, send) {
  const suffix = AT;
  const error = el('p', { class: 'answer-error', role: 'alert', id: `answer-error${suffix}` });
  const plan = formPlan(req.schema);
  let read;
  let body;
  if (plan) {
    const { fields } = plan;
    body = el(
      'div',
      { class: 'fields', id: `answer-form${suffix}` },
      ...fields.map((f) => drawField(f, suffix)),
    );
    read = () => {
      if (plan.kind === 'value') return readField(body, fields[0]);
      const value = {};
      for (const f of fields) {
        const v = readField(body, f);
        if (v !== undefined) value[f.name] = v;
      }
      return value;
    };
  } else if (req.schema && typeof req.schema === 'object' && Object.keys(req.schema).length) {
    const area = el('textarea', {
      id: `answer-json${suffix}`,
      rows: '6',
      spellcheck: 'false',
      'aria-label': 'answer as JSON',
    });
    area.value = skeleton(req.schema);
    body = el('div', { class: 'fields' }, el('small', {}, 'answer as JSON, as the schema asks'), area);
    read = () => {
      try {
        return JSON.parse(area.value);
      } catch (err) {
        throw new Error(`answer: not JSON (${err.message})`);
      }
    };
  } else {
    const input = el('input', {
      id: `answer-input${suffix}`,
      placeholder: req.prompt || 'answer',
      'aria-label': 'answer',
    });
    body = input;
    read = () => lineValue(input.value);
  }
  const button = el('button', { id: `answer-button${suffix}`, type: 'submit' }, 'Answer');
  const form = el(
    'form',
    // Checked here, so each error names its field (the browser's own bubbles do not).
    { class: 'answer', 'data-request': req.requestId, novalidate: true },
    el(
      'span',
      { class: 'prompt' },
      req.method ? `${req.prompt} (${req.requestId})` : req.prompt || req.requestId,
    ),
    body,
    button,
    error,
  );
  for (const node of form.querySelectorAll('[id]')) node.dataset.idTemplate = node.id;
  for (const node of form.querySelectorAll('label[for]')) node.dataset.forTemplate = node.htmlFor;
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    let value;
    try {
      value = read();
    } catch (err) {
      error.textContent = err.message;
      return;
    }
    error.textContent = '';
    button.disabled = true;
    try {
      await send(value);
    } catch (err) {
      error.textContent = err.message;
    } finally {
      button.disabled = false;
    }
  });
  return form;
}
