// Value rules of the schema checker that a client sees at the edges
// (mutation review M): string sizes in UTF-8 bytes with astral characters
// taking four (§4.3), NaN refused as a number argument (§3.6), and the exact
// order of a fractional number against an integer bound.

import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../../src/common/json.js';
import { parseToolRequest } from '../../../src/aipcs/contract/requests/parse-request.js';
import { compareNumbers } from '../../../src/aipcs/contract/schema-check.js';

const SERVICE = '3fa85f64-5717-4562-b3fc-2c963f66afa6';
const create = (record: JsonObject): JsonObject => ({ idempotency_key: 'c-1', service_id: SERVICE, entity_name: 'note', record });

function issuesOf(name: string, args: JsonObject): [string, string][] {
  const result = parseToolRequest(name, args);
  if (result.ok) throw new Error('request unexpectedly accepted');
  expect(result.error.code).toBe('validation_failed');
  return result.error.issues.map((issue) => [issue.code, issue.path]);
}

describe('record string size in UTF-8 bytes (§4.3)', () => {
  it('counts an astral character as four bytes: 4096 fit in 16 KiB, 4097 do not', () => {
    expect(parseToolRequest('aipcs_record_create', create({ title: '\u{1F600}'.repeat(4096) })).ok).toBe(true);
    expect(issuesOf('aipcs_record_create', create({ title: '\u{1F600}'.repeat(4097) }))).toEqual([['invalid_length', 'record.title']]);
  });
});

describe('non-finite number arguments (§3.6)', () => {
  it('refuses NaN as low_confidence_below, which no bound comparison can catch', () => {
    expect(issuesOf('aipcs_maintenance_scan', { service_id: SERVICE, low_confidence_below: Number.NaN })).toEqual([['invalid_value', 'low_confidence_below']]);
  });
});

describe('exact number order', () => {
  it('orders a fraction against an integer whichever side it is on', () => {
    expect(compareNumbers(0.3, 1n)).toBe(-1);
    expect(compareNumbers(1n, 0.3)).toBe(1);
    expect(compareNumbers(1.5, 1n)).toBe(1);
    expect(compareNumbers(2n, 2.5)).toBe(-1);
    expect(compareNumbers(2, 2n)).toBe(0);
    expect(compareNumbers(2n, 2)).toBe(0);
  });
});
