import { fileURLToPath } from 'node:url';
import * as protoLoader from '@grpc/proto-loader';
import { A2AError, invalidParams } from '../errors.ts';
import type { JsonObject, JsonValue } from '../types.ts';
import { type Obj } from '../../../core/json-object.ts';

/**
 * The A2A 1.0 proto (a2a.proto beside this file, package `lf.a2a.v1`) loaded with @grpc/proto-loader,
 * and the conversion between the objects proto-loader reads and writes and the ProtoJSON shapes the
 * rest of the protocol layer speaks (types.ts), so the gRPC binding runs the same decoders and the same
 * handler as the JSON bindings.
 *
 * proto-loader already gives camelCase field names, enums by name, `bytes` as base64 and 64-bit
 * integers as strings, which are the ProtoJSON spellings. What it leaves as messages are the well-known
 * types ProtoJSON writes differently: `google.protobuf.Struct`/`Value`/`ListValue` (JSON values) and
 * `google.protobuf.Timestamp` (an RFC 3339 string). Those are converted here, guided by the proto's own
 * descriptors, so a field is converted because of its type, never because of its name.
 */

export const A2A_PACKAGE = 'lf.a2a.v1';
export const A2A_SERVICE = `${A2A_PACKAGE}.A2AService`;

const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: String,
  enums: String,
  bytes: String,
  defaults: false,
  oneofs: false,
};

const PROTO_FILES = ['a2a.proto', 'status.proto'].map((f) =>
  fileURLToPath(new URL(`./${f}`, import.meta.url)),
);

/** Loaded once per process: every server and client in it shares the definitions. */
let loaded: protoLoader.PackageDefinition | undefined;

export function a2aPackageDefinition(): protoLoader.PackageDefinition {
  return (loaded ??= protoLoader.loadSync(PROTO_FILES, LOADER_OPTIONS));
}

/** What a message field holds, as far as conversion cares. */
type FieldKind =
  | { kind: 'struct' | 'value' | 'list' | 'timestamp' }
  | { kind: 'message'; type: string }
  | { kind: 'map'; value: string | null };

interface DescriptorField {
  name: string;
  type: string;
  typeName: string;
}
interface DescriptorType {
  field: DescriptorField[];
  nestedType?: { name: string; field: DescriptorField[]; options?: { mapEntry?: boolean } | null }[];
}

const WELL_KNOWN: Record<string, FieldKind> = {
  'google.protobuf.Struct': { kind: 'struct' },
  'google.protobuf.Value': { kind: 'value' },
  'google.protobuf.ListValue': { kind: 'list' },
  'google.protobuf.Timestamp': { kind: 'timestamp' },
};

/** Message full name → field (camelCase) → kind; only fields that are messages appear. */
let schema: Map<string, Map<string, FieldKind>> | undefined;

function messageKind(typeName: string, pkg: string): FieldKind {
  const name = typeName.replace(/^\./, '');
  const known = WELL_KNOWN[name];
  if (known) return known;
  return { kind: 'message', type: name.includes('.') ? name : `${pkg}.${name}` };
}

function buildSchema(): Map<string, Map<string, FieldKind>> {
  const out = new Map<string, Map<string, FieldKind>>();
  for (const [full, def] of Object.entries(a2aPackageDefinition())) {
    if (!('format' in def) || def.format !== 'Protocol Buffer 3 DescriptorProto') continue;
    const type = def.type as DescriptorType;
    const pkg = full.slice(0, full.lastIndexOf('.'));
    const fields = new Map<string, FieldKind>();
    for (const f of type.field) {
      if (f.type !== 'TYPE_MESSAGE') continue;
      const entry = type.nestedType?.find((n) => n.options?.mapEntry && n.name === f.typeName);
      if (entry) {
        const value = entry.field.find((e) => e.name === 'value');
        const kind = value && value.type === 'TYPE_MESSAGE' ? messageKind(value.typeName, pkg) : null;
        fields.set(f.name, { kind: 'map', value: kind && kind.kind === 'message' ? kind.type : null });
      } else {
        fields.set(f.name, messageKind(f.typeName, pkg));
      }
    }
    out.set(full, fields);
  }
  return out;
}

function fieldsOf(type: string): Map<string, FieldKind> {
  schema ??= buildSchema();
  const fields = schema.get(type);
  if (!fields) throw new Error(`no message ${type} in the A2A proto`);
  return fields;
}

/** Levels of JSON inside a Struct a request may have, as the JSON bindings allow. */
const MAX_DEPTH = 64;

// --- reading: proto-loader object → ProtoJSON ---------------------------------------------------

/** A decoded request message of `type` in ProtoJSON shape; too deep a Struct is an invalid request. */
export function fromWire(type: string, message: unknown): Obj {
  return readMessage(type, message, 0);
}

function readMessage(type: string, message: unknown, depth: number): Obj {
  if (depth > MAX_DEPTH) throw tooDeep();
  const fields = fieldsOf(type);
  const out: Obj = {};
  for (const [key, v] of Object.entries(message as Obj)) {
    if (v === undefined || v === null) continue;
    const kind = fields.get(key);
    out[key] = kind ? readField(kind, v, depth + 1) : v;
  }
  return out;
}

function readField(kind: FieldKind, v: unknown, depth: number): unknown {
  switch (kind.kind) {
    case 'struct':
      return readStruct(v, depth);
    case 'value':
      return readValue(v, depth);
    case 'list':
      return readList(v, depth);
    case 'timestamp':
      return readTimestamp(v);
    case 'message':
      return Array.isArray(v)
        ? v.map((m) => readMessage(kind.type, m, depth))
        : readMessage(kind.type, v, depth);
    case 'map': {
      const out: Obj = {};
      for (const [k, m] of Object.entries(v as Obj))
        out[k] = kind.value ? readMessage(kind.value, m, depth) : m;
      return out;
    }
  }
}

function readStruct(v: unknown, depth: number): JsonObject {
  if (depth > MAX_DEPTH) throw tooDeep();
  const out: JsonObject = {};
  const fields = (v as { fields?: Obj }).fields ?? {};
  for (const [k, value] of Object.entries(fields)) out[k] = readValue(value, depth + 1);
  return out;
}

function readList(v: unknown, depth: number): JsonValue[] {
  if (depth > MAX_DEPTH) throw tooDeep();
  return ((v as { values?: unknown[] }).values ?? []).map((x) => readValue(x, depth + 1));
}

function readValue(v: unknown, depth: number): JsonValue {
  const o = v as Obj;
  if (typeof o.stringValue === 'string') return o.stringValue;
  if (typeof o.numberValue === 'number') return o.numberValue;
  if (typeof o.boolValue === 'boolean') return o.boolValue;
  if (o.structValue !== undefined) return readStruct(o.structValue, depth);
  if (o.listValue !== undefined) return readList(o.listValue, depth);
  return null;
}

function readTimestamp(v: unknown): string {
  const { seconds, nanos } = v as { seconds?: string | number; nanos?: number };
  const ms = Number(seconds ?? 0) * 1000 + Math.floor((nanos ?? 0) / 1e6);
  const date = new Date(ms);
  if (Number.isNaN(date.getTime())) throw invalidParams('timestamp', 'out of range');
  return date.toISOString();
}

function tooDeep(): A2AError {
  return new A2AError('InvalidRequestError', `request nested deeper than ${MAX_DEPTH} levels`);
}

// --- writing: ProtoJSON → proto-loader object ---------------------------------------------------

/** A ProtoJSON object of message `type` as proto-loader serializes it. */
export function toWire(type: string, value: object): Obj {
  return writeMessage(type, value);
}

function writeMessage(type: string, value: unknown): Obj {
  const fields = fieldsOf(type);
  const out: Obj = {};
  for (const [key, v] of Object.entries(value as Obj)) {
    if (v === undefined) continue;
    const kind = fields.get(key);
    out[key] = kind ? writeField(kind, v) : v;
  }
  return out;
}

function writeField(kind: FieldKind, v: unknown): unknown {
  switch (kind.kind) {
    case 'struct':
      return writeStruct(v as JsonObject);
    case 'value':
      return writeValue(v as JsonValue);
    case 'list':
      return { values: (v as JsonValue[]).map(writeValue) };
    case 'timestamp':
      return writeTimestamp(v as string);
    case 'message':
      return Array.isArray(v) ? v.map((m) => writeMessage(kind.type, m)) : writeMessage(kind.type, v);
    case 'map': {
      const out: Obj = {};
      for (const [k, m] of Object.entries(v as Obj)) out[k] = kind.value ? writeMessage(kind.value, m) : m;
      return out;
    }
  }
}

function writeStruct(o: JsonObject): Obj {
  const fields: Obj = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) fields[k] = writeValue(v);
  return { fields };
}

function writeValue(v: JsonValue): Obj {
  if (v === null) return { nullValue: 'NULL_VALUE' };
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'number') return { numberValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  if (Array.isArray(v)) return { listValue: { values: v.map(writeValue) } };
  return { structValue: writeStruct(v) };
}

function writeTimestamp(iso: string): Obj {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return {};
  const seconds = Math.floor(ms / 1000);
  return { seconds: String(seconds), nanos: (ms - seconds * 1000) * 1e6 };
}
