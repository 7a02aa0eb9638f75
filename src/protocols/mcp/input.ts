import { invalidParams } from './errors.ts';
import { type Fail, type Obj, int, jsonObj, keyPath, obj, optJsonObj, own, str, strArray } from './fields.ts';
import {
  INPUT_METHODS,
  type InputMethod,
  type InputRequest,
  type InputRequests,
  type InputResponses,
} from './types.ts';

/**
 * Decoders for the server→client input exchange shared by MRTR and task `input_required`:
 * `InputRequests` (what the server asks) and `InputResponses` (what the client answers), both maps
 * keyed by the server's request keys. Checked to the depth the schema's required fields reach;
 * free-form parts (a JSON Schema for elicitation, message content) are kept as JSON objects.
 */

export function decodeInputRequests(v: unknown, path: string, fail: Fail = invalidParams): InputRequests {
  const o = obj(v, path, fail);
  const out: InputRequests = {};
  for (const key of Object.keys(o)) out[key] = decodeInputRequest(o[key], keyPath(path, key), fail);
  return out;
}

export function decodeInputRequest(v: unknown, path: string, fail: Fail = invalidParams): InputRequest {
  const o = obj(v, path, fail);
  const method = str(o, 'method', path, fail);
  if (!(INPUT_METHODS as readonly string[]).includes(method)) {
    throw fail(`${path}.method`, `expected one of ${INPUT_METHODS.join(', ')}`);
  }
  const m = method as InputMethod;
  if (m === 'roots/list') {
    const params = optJsonObj(o, 'params', path, fail);
    return params === undefined ? { method: m } : { method: m, params };
  }
  const params = jsonObj(own(o, 'params'), `${path}.params`, fail);
  if (m === 'elicitation/create') checkElicitParams(params, `${path}.params`, fail);
  else checkCreateMessageParams(params, `${path}.params`, fail);
  return { method: m, params };
}

function checkElicitParams(p: Obj, path: string, fail: Fail): void {
  str(p, 'message', path, fail);
  const mode = own(p, 'mode');
  if (mode === 'url') {
    str(p, 'url', path, fail);
    return;
  }
  if (mode !== undefined && mode !== 'form') throw fail(`${path}.mode`, 'expected "form" or "url"');
  const schema = obj(own(p, 'requestedSchema'), `${path}.requestedSchema`, fail);
  if (own(schema, 'type') !== 'object') throw fail(`${path}.requestedSchema.type`, 'expected "object"');
  const props = obj(own(schema, 'properties'), `${path}.requestedSchema.properties`, fail);
  for (const k of Object.keys(props))
    checkPrimitiveSchema(props[k], keyPath(`${path}.requestedSchema.properties`, k), fail);
  if (own(schema, 'required') !== undefined)
    strArray(schema.required, `${path}.requestedSchema.required`, fail);
}

/** Elicitation forms are flat: each property is a string, number, boolean or enum schema. */
function checkPrimitiveSchema(v: unknown, path: string, fail: Fail): void {
  const o = obj(v, path, fail);
  const t = own(o, 'type');
  if (t === 'string' || t === 'boolean') return;
  if (t === 'number' || t === 'integer') return;
  if (t === 'array') {
    obj(own(o, 'items'), `${path}.items`, fail);
    return;
  }
  throw fail(`${path}.type`, 'expected "string", "number", "integer", "boolean" or "array"');
}

function checkCreateMessageParams(p: Obj, path: string, fail: Fail): void {
  int(own(p, 'maxTokens'), `${path}.maxTokens`, Number.MIN_SAFE_INTEGER, fail);
  const messages = own(p, 'messages');
  if (!Array.isArray(messages)) throw fail(`${path}.messages`, 'expected an array');
  messages.forEach((m, i) => {
    const mo = obj(m, `${path}.messages[${i}]`, fail);
    checkRole(mo, `${path}.messages[${i}]`, fail);
    checkContent(own(mo, 'content'), `${path}.messages[${i}].content`, fail);
  });
}

function checkRole(o: Obj, path: string, fail: Fail): void {
  const role = own(o, 'role');
  if (role !== 'user' && role !== 'assistant') throw fail(`${path}.role`, 'expected "user" or "assistant"');
}

/** A content block or an array of them; each needs a string `type`, text blocks a string `text`. */
function checkContent(v: unknown, path: string, fail: Fail): void {
  const blocks = Array.isArray(v) ? v : [v];
  blocks.forEach((b, i) => {
    const at = Array.isArray(v) ? `${path}[${i}]` : path;
    const o = obj(b, at, fail);
    const type = str(o, 'type', at, fail);
    if (type === 'text') str(o, 'text', at, fail);
    else if (!['image', 'audio', 'tool_use', 'tool_result'].includes(type)) {
      throw fail(`${at}.type`, 'expected "text", "image", "audio", "tool_use" or "tool_result"');
    }
  });
}

export function decodeInputResponses(v: unknown, path: string, fail: Fail = invalidParams): InputResponses {
  const o = obj(v, path, fail);
  const out: InputResponses = {};
  for (const key of Object.keys(o)) {
    const at = keyPath(path, key);
    const r = jsonObj(o[key], at, fail);
    checkInputResponse(r, at, fail);
    out[key] = r;
  }
  return out;
}

/** ElicitResult, ListRootsResult or CreateMessageResult, told apart by their required fields. */
function checkInputResponse(r: Obj, path: string, fail: Fail): void {
  if (own(r, 'action') !== undefined) {
    const action = own(r, 'action');
    if (action !== 'accept' && action !== 'decline' && action !== 'cancel') {
      throw fail(`${path}.action`, 'expected "accept", "decline" or "cancel"');
    }
    const content = own(r, 'content');
    if (content === undefined) return;
    const c = obj(content, `${path}.content`, fail);
    for (const k of Object.keys(c)) {
      const x = c[k];
      const ok =
        typeof x === 'string' ||
        typeof x === 'boolean' ||
        (typeof x === 'number' && Number.isSafeInteger(x)) ||
        (Array.isArray(x) && x.every((s) => typeof s === 'string'));
      if (!ok)
        throw fail(keyPath(`${path}.content`, k), 'expected a string, integer, boolean or string array');
    }
    return;
  }
  if (own(r, 'roots') !== undefined) {
    const roots = own(r, 'roots');
    if (!Array.isArray(roots)) throw fail(`${path}.roots`, 'expected an array');
    roots.forEach((x, i) => str(obj(x, `${path}.roots[${i}]`, fail), 'uri', `${path}.roots[${i}]`, fail));
    return;
  }
  if (own(r, 'model') !== undefined) {
    str(r, 'model', path, fail);
    checkRole(r, path, fail);
    checkContent(own(r, 'content'), `${path}.content`, fail);
    return;
  }
  throw fail(path, 'expected an elicitation (action), roots (roots) or sampling (model) answer');
}
