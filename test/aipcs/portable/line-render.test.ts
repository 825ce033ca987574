// The export renders record and history lines straight from the member
// (line-render.ts) instead of canonicalJson over the frame object
// payload-codec builds: the two must give the same bytes for every member,
// and refuse the same members with the same defect (lone surrogates,
// non-finite numbers, times outside Timestamp27).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeCanonical } from '../../../src/aipcs/portable/canonical-json.js';
import type { BundleHistoryEvent, BundleRecord, FieldSet } from '../../../src/aipcs/portable/content.js';
import { BundleInvalidError } from '../../../src/aipcs/portable/errors.js';
import { renderHistoryCovered, renderRecordCovered } from '../../../src/aipcs/portable/line-render.js';
import { encodeHistory, encodeRecord } from '../../../src/aipcs/portable/payload-codec.js';
import { MAX_TIMESTAMP27_MICROS, MIN_TIMESTAMP27_MICROS } from '../../../src/aipcs/portable/timestamp27.js';

// Any UTF-16 text: lone surrogates, controls, quotes, backslashes, U+2028, U+007F.
const anyText = fc.oneof(fc.string({ unit: 'binary', maxLength: 12 }), fc.string({ unit: 'binary-ascii', maxLength: 12 }), fc.constantFrom('\u2028', '\u007f', '\ud800', 'a\udc00', '😀', '"\\\n\b\f\r\t\u0001\u001f'));
const micros = fc.oneof(fc.bigInt({ min: MIN_TIMESTAMP27_MICROS, max: MAX_TIMESTAMP27_MICROS }), fc.constantFrom(MIN_TIMESTAMP27_MICROS - 1n, MAX_TIMESTAMP27_MICROS + 1n));
const value = fc.oneof(
  fc.constant(null),
  fc.constant(undefined),
  anyText,
  fc.boolean(),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }),
  fc.double(),
  fc.constantFrom(0, -0, 1, 1e21, 1e-7, 1e20, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53 + 2),
  fc.array(fc.oneof(anyText, fc.constant(null)), { maxLength: 3 }),
);
// Keys in any order (the renderer must sort them like canonicalJson does).
const fields = fc.dictionary(fc.oneof(fc.constantFrom('title', 'a', 'B', 'z_1', '__proto__', 'é'), anyText), value, { maxKeys: 5 }).map((set) => set as unknown as FieldSet);

const record = fc.record({
  entityName: anyText,
  recordId: fc.oneof(fc.uuid(), anyText),
  recordVersion: fc.bigInt({ min: -5n, max: 2n ** 64n }),
  createdAt: micros,
  updatedAt: micros,
  createdVia: anyText,
  fields,
}) as fc.Arbitrary<BundleRecord>;

const event = fc.record({
  entityName: anyText,
  recordId: fc.oneof(fc.uuid(), anyText),
  recordVersion: fc.bigInt({ min: 1n, max: 2n ** 63n }),
  kind: fc.constantFrom('create', 'update', 'delete', 'primary_assign'),
  occurredAt: micros,
  before: fc.oneof(fc.constant(null), fields),
  after: fc.oneof(fc.constant(null), fields),
}) as fc.Arbitrary<BundleHistoryEvent>;

/** The rendering's text, or the defect it refused with. */
function outcome(render: () => string): string {
  try {
    return `text:${render()}`;
  } catch (error) {
    if (error instanceof BundleInvalidError) return `defect:${error.reason}`;
    throw error;
  }
}

describe('direct rendering of record and history lines', () => {
  it('equals canonicalJson of the frame object for any record', () => {
    fc.assert(
      fc.property(record, fc.nat({ max: 999_999 }), (member, ordinal) => {
        const general = outcome(() => encodeCanonical({ kind: 'record', ordinal: BigInt(ordinal), payload: encodeRecord(member) }));
        expect(outcome(() => renderRecordCovered(ordinal, member))).toBe(general);
      }),
      { numRuns: 3000 },
    );
  });

  it('equals canonicalJson of the frame object for any history event', () => {
    fc.assert(
      fc.property(event, fc.nat({ max: 999_999 }), (member, ordinal) => {
        const general = outcome(() => encodeCanonical({ kind: 'history', ordinal: BigInt(ordinal), payload: encodeHistory(member) }));
        expect(outcome(() => renderHistoryCovered(ordinal, member))).toBe(general);
      }),
      { numRuns: 3000 },
    );
  });

  it('stays equal to the general rendering over runs of members whose key lists repeat, reorder and outnumber the plans it keeps', () => {
    // The renderer keeps the sorted, quoted keys of the key lists it saw
    // last: same keys in another order, one key more or less, a different key
    // at one position, and more distinct lists than it keeps, interleaved.
    const pool = ['title', 'detail', 'status', 'a', 'B', 'é', '__proto__', 'z_1', 'tags', '\u2028', 'x"y'];
    const keyed = fc
      .tuple(fc.shuffledSubarray(pool, { minLength: 0, maxLength: 6 }), fc.array(value, { minLength: 6, maxLength: 6 }))
      .map(([keys, values]) => {
        const set: Record<string, unknown> = {};
        keys.forEach((name, i) => Object.defineProperty(set, name, { value: values[i], enumerable: true, writable: true, configurable: true }));
        return set as unknown as FieldSet;
      });
    const member = fc.oneof(
      fc.record({ entityName: fc.constantFrom('note', 'project'), recordId: fc.uuid(), recordVersion: fc.constant(1n), createdAt: fc.constant(0n), updatedAt: fc.constant(1n), createdVia: fc.constantFrom('mcp', 'cli'), fields: keyed }),
      fc.record({ entityName: fc.constantFrom('note', 'project'), recordId: fc.uuid(), recordVersion: fc.constant(2n), kind: fc.constantFrom('create', 'update'), occurredAt: fc.constant(5n), before: fc.oneof(fc.constant(null), keyed), after: keyed }),
    );
    fc.assert(
      fc.property(fc.array(member, { minLength: 20, maxLength: 80 }), (members) => {
        members.forEach((item, ordinal) => {
          if ('fields' in item) {
            const general = outcome(() => encodeCanonical({ kind: 'record', ordinal: BigInt(ordinal), payload: encodeRecord(item as BundleRecord) }));
            expect(outcome(() => renderRecordCovered(ordinal, item as BundleRecord))).toBe(general);
          } else {
            const general = outcome(() => encodeCanonical({ kind: 'history', ordinal: BigInt(ordinal), payload: encodeHistory(item as BundleHistoryEvent) }));
            expect(outcome(() => renderHistoryCovered(ordinal, item as BundleHistoryEvent))).toBe(general);
          }
        });
      }),
      { numRuns: 300 },
    );
  });

  it('refuses what canonical JSON cannot write, as the general rendering does', () => {
    const base: BundleRecord = { entityName: 'note', recordId: '11111111-2222-4333-8444-555555555555', recordVersion: 1n, createdAt: 0n, updatedAt: 0n, createdVia: 'mcp', fields: { title: 'x' } };
    for (const member of [
      { ...base, fields: { title: '\ud800' } },
      { ...base, createdVia: 'a\udfff' },
      { ...base, fields: { confidence: Number.NaN } },
      { ...base, fields: { ['\udc00']: 'x' } },
      { ...base, createdAt: MAX_TIMESTAMP27_MICROS + 1n },
    ]) {
      expect(outcome(() => renderRecordCovered(7, member))).toBe('defect:unrepresentable_value');
    }
  });
});
