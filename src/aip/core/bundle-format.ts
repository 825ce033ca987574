// The bundle format of `aip export`/`aip import` (spec 7.8): the header item,
// byte-string item headers, and the dependency order of objects. Pure; the
// streaming reader and writer live in repository/bundle.ts.
import { encodeCanonical, isCborMap, scanItem, type CborValue } from './cbor-profile.js';
import { byteStringHeader } from './codec.js';
import { failure, success, type Outcome } from './errors.js';
import type { Id } from './objects.js';

export const MAX_BUNDLE_HEADER_BYTES = 256;

export function encodeBundleHeader(objects: number): Uint8Array {
  const header = new Map<string, CborValue>([['format', 'aip-bundle'], ['objects', objects], ['version', 1]]);
  const bytes = encodeCanonical(header);
  if (!bytes.ok) throw bytes.error;
  return bytes.value;
}

/** Parses the header at the start of `bytes` (at most 256 bytes are looked at; give it one byte more, if there is one, to tell a header too long from a truncated one). */
export function decodeBundleHeader(bytes: Uint8Array): Outcome<{ objects: number; length: number }> {
  const window = bytes.subarray(0, MAX_BUNDLE_HEADER_BYTES);
  const scanned = scanItem(window);
  if (!scanned.ok) {
    // Cut off by the bound rather than by the end of the input: too long, not truncated.
    if (scanned.error.code === 'cbor.truncated' && bytes.length > MAX_BUNDLE_HEADER_BYTES) return failure('bundle.format', `bundle header: longer than ${MAX_BUNDLE_HEADER_BYTES} bytes`);
    return failure('bundle.format', `bundle header: ${scanned.error.code}: ${scanned.error.message}`);
  }
  const value = scanned.value.value;
  if (!isCborMap(value) || value.size !== 3 || value.get('format') !== 'aip-bundle' || value.get('version') !== 1) {
    return failure('bundle.format', 'not an aip-bundle version 1 header');
  }
  const objects = value.get('objects');
  // The profile reads counts above 2^53-1 as bigints: unsigned, but more objects than any store holds.
  if (typeof objects === 'bigint') return failure('bundle.format', `bundle header: ${objects} objects is more than a bundle can hold`);
  if (typeof objects !== 'number') return failure('bundle.format', 'bundle header: objects must be an unsigned integer');
  return success({ objects, length: scanned.value.end });
}

export { byteStringHeader as bundleItemHeader };

/**
 * Reads a byte-string item header at the start of `bytes`: the content length and header size.
 * With `maxBytes`, a longer item is `cbor.too_large`, its length named exactly (it may exceed 2^53-1).
 */
export function decodeItemHeader(bytes: Uint8Array, maxBytes?: number): Outcome<{ length: number; headerLength: number }> {
  const initial = bytes[0];
  if (initial === undefined) return failure('cbor.truncated', 'input ends before an item');
  if (initial >> 5 !== 2) return failure('bundle.format', 'a bundle item must be a byte string');
  const info = initial & 0x1f;
  if (info === 31) return failure('cbor.indefinite', 'indefinite-length byte string');
  if (info >= 28) return failure('cbor.reserved', `reserved additional information ${info}`);
  const width = info < 24 ? 0 : 1 << (info - 24);
  if (bytes.length < 1 + width) return failure('cbor.truncated', 'input ends inside an item header');
  let length = BigInt(info);
  if (width > 0) {
    length = 0n;
    for (let i = 1; i <= width; i++) length = length * 256n + BigInt(bytes[i] as number);
    const minimum = [24n, 0x100n, 0x10000n, 0x1_0000_0000n][info - 24] as bigint;
    if (length < minimum) return failure('cbor.not_shortest', 'item length not in its shortest form');
  }
  if (maxBytes !== undefined && length > BigInt(maxBytes)) return failure('cbor.too_large', `${length} bytes exceed max_object_bytes ${maxBytes}`);
  return success({ length: Number(length), headerLength: 1 + width });
}

class MinHeap {
  private readonly items: Id[] = [];
  get size(): number {
    return this.items.length;
  }
  push(id: Id): void {
    const a = this.items;
    a.push(id);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if ((a[p] as Id) <= id) break;
      a[i] = a[p] as Id;
      i = p;
    }
    a[i] = id;
  }
  pop(): Id | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last !== undefined) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        let best = last;
        if (l < a.length && (a[l] as Id) < best) {
          m = l;
          best = a[l] as Id;
        }
        if (r < a.length && (a[r] as Id) < best) m = r;
        if (m === i) break;
        a[i] = a[m] as Id;
        i = m;
      }
      a[i] = last;
    }
    return top;
  }
}

/**
 * Dependency order: every object after the objects it references (within the
 * set), ties broken by ascending ID, so one set always gives one order.
 * References leaving the set are ignored. Throws on a cycle (a bug upstream:
 * stored objects are verified).
 */
export function dependencyOrder(references: ReadonlyMap<Id, readonly Id[]>): Id[] {
  const pending = new Map<Id, number>();
  const dependents = new Map<Id, Id[]>();
  for (const [id, targets] of references) {
    const inside = [...new Set(targets)].filter((t) => t !== id && references.has(t));
    pending.set(id, inside.length);
    for (const t of inside) {
      const list = dependents.get(t);
      if (list) list.push(id);
      else dependents.set(t, [id]);
    }
  }
  const ready = new MinHeap();
  for (const [id, count] of pending) if (count === 0) ready.push(id);
  const order: Id[] = [];
  for (let id = ready.pop(); id !== undefined; id = ready.pop()) {
    order.push(id);
    for (const d of dependents.get(id) ?? []) {
      const left = (pending.get(d) as number) - 1;
      pending.set(d, left);
      if (left === 0) ready.push(d);
    }
  }
  if (order.length !== references.size) throw new Error('reference cycle among the objects to export');
  return order;
}
