// The staged-content digest must tell apart any two different members
// (import re-observation relies on it) and agree on equal ones whatever
// their key order.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { digestText } from '../../../src/aipcs/core/transfer.js';

const scalar = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.string({ maxLength: 6 }),
  fc.constantFrom('null', 'true', 'i1', 'd1', '"', '\n', 'a,b', '{"a":1}'),
  fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, -0, 1, 1n, 0n, -1),
);
const { value } = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, scalar, fc.array(tie('value'), { maxLength: 3 }), fc.dictionary(fc.string({ maxLength: 3 }), tie('value'), { maxKeys: 3 })),
}));

/** Structural identity: types distinguished (1 ≠ 1n, 0 ≠ -0), key order ignored. */
function canonical(input: unknown): string {
  if (typeof input === 'bigint') return `bigint:${input}`;
  if (typeof input === 'number') return `number:${Object.is(input, -0) ? '-0' : input}`;
  if (Array.isArray(input)) return `[${input.map(canonical).join('|')}]`;
  if (input !== null && typeof input === 'object') {
    return `{${Object.keys(input).sort().map((key) => `${JSON.stringify(key)}=${canonical((input as Record<string, unknown>)[key])}`).join('|')}}`;
  }
  return `${typeof input}:${JSON.stringify(input)}`;
}

describe('staged-content digest text', () => {
  it('is equal exactly for structurally equal members', () => {
    fc.assert(
      fc.property(fc.array(value, { minLength: 2, maxLength: 40 }), (values) => {
        const byText = new Map<string, string>();
        for (const item of values) {
          const text = digestText(item);
          const known = byText.get(text);
          if (known !== undefined) expect(known).toBe(canonical(item));
          byText.set(text, canonical(item));
          expect(text).not.toContain('\n');
        }
      }),
      { numRuns: 500 },
    );
  });

  it('ignores key order and tells apart the near misses', () => {
    expect(digestText({ b: 1n, a: ['x'] })).toBe(digestText({ a: ['x'], b: 1n }));
    const distinct = [1n, 1, -0, 0, '1', null, 'null', ['a,b'], ['a', 'b'], { a: null }, {}, { a: 'x' }, { a: 'x', b: null }, true, 'true'];
    expect(new Set(distinct.map(digestText)).size).toBe(distinct.length);
  });
});
