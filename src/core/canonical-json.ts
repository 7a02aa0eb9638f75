import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';

/**
 * Canonical JSON after RFC 8785 (JCS) for the values JSON.parse produces: object keys sorted by UTF-16
 * code units, no whitespace, numbers in ECMAScript shortest form. `undefined` members are dropped as
 * JSON.stringify drops them. Non-finite numbers have no JSON form and are refused.
 */
export function canonicalJson(value: unknown): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError('canonicalJson: non-finite number');
      return Object.is(value, -0) ? '0' : JSON.stringify(value);
    case 'string':
      return JSON.stringify(value);
    case 'object': {
      if (Array.isArray(value)) {
        return '[' + value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',') + ']';
      }
      const obj = value as Record<string, unknown>;
      const keys = Object.keys(obj)
        .filter((k) => obj[k] !== undefined)
        .sort();
      return '{' + keys.map((k) => JSON.stringify(k) + ':' + canonicalJson(obj[k])).join(',') + '}';
    }
    default:
      throw new TypeError(`canonicalJson: cannot encode ${typeof value}`);
  }
}

/** The part of node:crypto sha256Hex uses. */
interface NodeHashes {
  createHash(algorithm: 'sha256'): { update(data: string | Uint8Array): { digest(encoding: 'hex'): string } };
}

/**
 * Node's own SHA-256 where the runtime hands it out without an import (`process.getBuiltinModule`: Node
 * 20.16+ and 22.3+), so this module still bundles for the browser lab, which gets the pure-JS one. The
 * digest is the same; Node's is several times faster on the plane's per-task hashes (input, artifacts).
 */
const nodeHashes = (
  globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }
).process?.getBuiltinModule?.('node:crypto') as NodeHashes | undefined;

export function sha256Hex(data: string | Uint8Array): string {
  if (nodeHashes) return nodeHashes.createHash('sha256').update(data).digest('hex');
  return bytesToHex(sha256(typeof data === 'string' ? utf8ToBytes(data) : data));
}

/** The immutable input hash of a request (docs/a2a-notes.md, "The task control envelope"): `sha256:<hex>`. */
export function inputHash(value: unknown): string {
  return 'sha256:' + sha256Hex(canonicalJson(value));
}
