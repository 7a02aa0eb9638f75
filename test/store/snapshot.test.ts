import { describe, expect, it } from 'vitest';
import { snapshot } from '../../src/store/snapshot.ts';

describe('snapshot (the copy every store takes of what it is given and what it gives back)', () => {
  it('copies JSON-shaped data deeply: changing the original or the copy never reaches the other', () => {
    const original = { a: 1, nested: { list: [1, { b: 'x' }], empty: {} }, keep: undefined, nil: null };
    const copy = snapshot(original);
    expect(copy).toStrictEqual(structuredClone(original));
    expect('keep' in copy).toBe(true);
    original.nested.list.push(2);
    (original.nested.list[1] as { b: string }).b = 'changed';
    copy.nested.empty = { added: true } as object;
    expect(copy.nested.list).toEqual([1, { b: 'x' }]);
    expect(original.nested.empty).toEqual({});
  });

  it('gives what structuredClone gives for values that are not plain data', () => {
    const when = new Date(1_700_000_000_000);
    const bytes = new Uint8Array([1, 2, 3]);
    const copy = snapshot({ when, bytes, map: new Map([['k', 1]]) });
    expect(copy.when).toBeInstanceOf(Date);
    expect(copy.when).not.toBe(when);
    expect(copy.when.getTime()).toBe(when.getTime());
    expect(copy.bytes).not.toBe(bytes);
    expect([...copy.bytes]).toEqual([1, 2, 3]);
    expect(copy.map.get('k')).toBe(1);
  });

  it('copies a cycle (deeper than plain nesting goes) instead of recursing for ever', () => {
    const node: Record<string, unknown> = { name: 'loop' };
    node.self = node;
    const copy = snapshot(node);
    let cur = copy;
    for (let i = 0; i < 200; i++) cur = cur.self as Record<string, unknown>;
    expect(cur.name).toBe('loop');
    expect(copy).not.toBe(node);
  });
});
