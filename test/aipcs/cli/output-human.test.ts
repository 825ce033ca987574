import { describe, expect, it } from 'vitest';
import { FloatValue } from '../../../src/common/json.js';
import { renderHumanError, renderHumanResult, type CliObject } from '../../../src/aipcs/cli/human-format.js';

function text(result: CliObject): string {
  const rendered = renderHumanResult(result);
  if (!rendered.ok) throw new Error('refused');
  return rendered.text;
}

describe('--format human (§1.3)', () => {
  it('renders key: value lines, dotted prefixes, indices, empty lists and scalar lists', () => {
    expect(
      text({
        profile: 'sqlite',
        registry: { status: 'ready', applied_revision: 4n, issue_code: null },
        checks: [
          { check_id: 'configuration', status: 'pass' },
          { check_id: 'runtime', status: 'pass' },
        ],
        candidates: [],
        unavailable_scan_types: ['stale', 'expired'],
        flags: [true, null, 1n, 0.5, new FloatValue(2)],
        truncated: false,
        ok: true,
        ratio: 0.25,
        count: 3,
        big: new FloatValue(1e16),
      }),
    ).toBe(
      [
        'profile: sqlite',
        'registry.status: ready',
        'registry.applied_revision: 4',
        'registry.issue_code: null',
        'checks[0].check_id: configuration',
        'checks[0].status: pass',
        'checks[1].check_id: runtime',
        'checks[1].status: pass',
        'candidates: []',
        'unavailable_scan_types: ["stale","expired"]',
        'flags: [true,null,1,0.5,2.0]',
        'truncated: false',
        'ok: true',
        'ratio: 0.25',
        'count: 3',
        'big: 1e+16',
      ].join('\n'),
    );
  });

  it('prints nested lists of objects with full prefixes', () => {
    expect(text({ services: [{ storage: { backend: 'sqlite' }, tags: [] }] })).toBe('services[0].storage.backend: sqlite\nservices[0].tags: []');
  });

  it('prints plain strings raw and quotes strings that would break the line or drive the terminal', () => {
    expect(text({ a: 'two words: é 😀' })).toBe('a: two words: é 😀');
    expect(text({ a: 'line\nbreak' })).toBe('a: "line\\nbreak"');
    expect(text({ a: 'esc\u001b[31m' })).toBe('a: "esc\\u001b[31m"');
    expect(text({ a: 'bidi\u202e' })).toBe('a: "bidi\\u202e"');
    // Line and paragraph separators are neither controls nor format characters, but break the line in many terminals.
    expect(text({ a: 'line\u2028sep' })).toBe('a: "line\\u2028sep"');
    expect(text({ a: 'para\u2029sep' })).toBe('a: "para\\u2029sep"');
  });

  it('quotes strings holding invisible format characters, so no text hides from the operator', () => {
    expect(text({ a: 'zero\u200bwidth' })).toBe('a: "zero\\u200bwidth"');
    expect(text({ a: 'mark\u200f' })).toBe('a: "mark\\u200f"');
    expect(text({ a: 'tag\u{e0041}' })).toBe('a: "tag\\udb40\\udc41"');
    expect(text({ a: 'soft\u00adhyphen' })).toBe('a: "soft\\u00adhyphen"');
  });

  it('an empty result renders no lines', () => {
    expect(text({})).toBe('');
  });

  it('leaves out a field whose value is undefined, as JSON does, instead of refusing the result', () => {
    expect(text({ a: 1n, b: undefined, c: { d: undefined, e: 'x' } })).toBe('a: 1\nc.e: x');
  });

  it('accepts depth 4 and refuses depth 5', () => {
    expect(text({ a: { b: { c: { d: { e: 1n } } } } })).toBe('a.b.c.d.e: 1');
    expect(renderHumanResult({ a: { b: { c: { d: { e: { f: 1n } } } } } })).toEqual({ ok: false });
    expect(text({ a: [{ b: [{ c: [{ d: [{ e: 1n }] }] }] }] })).toBe('a[0].b[0].c[0].d[0].e: 1');
    expect(renderHumanResult({ a: [{ b: [{ c: [{ d: [{ e: [{ f: 1n }] }] }] }] }] })).toEqual({ ok: false });
  });

  it('accepts 64 keys and refuses 65', () => {
    const keys = (count: number): CliObject => Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, 1n]));
    expect(text(keys(64)).split('\n')).toHaveLength(64);
    expect(renderHumanResult(keys(65))).toEqual({ ok: false });
    expect(renderHumanResult({ nested: keys(65) })).toEqual({ ok: false });
  });

  it('accepts 100 list items and refuses 101', () => {
    const items = (count: number) => Array.from({ length: count }, (_, i) => BigInt(i));
    expect(text({ list: items(100) })).toMatch(/^list: \[0,1,.*,99\]$/);
    expect(renderHumanResult({ list: items(101) })).toEqual({ ok: false });
    expect(renderHumanResult({ list: Array.from({ length: 101 }, () => ({ a: 1n })) })).toEqual({ ok: false });
  });

  it.each(['Upper', '1abc', '_x', 'a-b', 'a.b', '', 'é', 'a'.repeat(97)])('refuses the key %j', (key) => {
    expect(renderHumanResult({ [key]: 1n })).toEqual({ ok: false });
    expect(renderHumanResult({ ok: { [key]: 1n } })).toEqual({ ok: false });
  });

  it('accepts a 96-character key', () => {
    expect(text({ ['a'.repeat(96)]: 1n })).toBe(`${'a'.repeat(96)}: 1`);
  });

  it('refuses mixed lists, nested scalar lists and non-finite numbers', () => {
    expect(renderHumanResult({ list: [{ a: 1n }, 2n] })).toEqual({ ok: false });
    expect(renderHumanResult({ list: [[1n]] })).toEqual({ ok: false });
    expect(renderHumanResult({ n: Number.POSITIVE_INFINITY })).toEqual({ ok: false });
    expect(renderHumanResult({ list: [Number.NaN] })).toEqual({ ok: false });
  });

  it('renders failures with issues and remediations', () => {
    expect(
      renderHumanError({
        code: 'validation_failed',
        message: 'Request failed public contract validation.',
        issues: [
          { code: 'invalid_value', path: 'limit', message: 'The field value is invalid.', remediation: 'Use a value allowed by the public contract and retry.' },
          { code: 'unknown_field', path: 'request', message: 'The request contains an unsupported field.', remediation: null },
        ],
        retryable: false,
      }),
    ).toBe(
      [
        'error [validation_failed]: Request failed public contract validation.',
        '- limit: The field value is invalid.',
        '  Use a value allowed by the public contract and retry.',
        '- request: The request contains an unsupported field.',
      ].join('\n'),
    );
    expect(renderHumanError({ code: 'not_found', message: 'The requested service was not found.', issues: [], retryable: false })).toBe(
      'error [not_found]: The requested service was not found.',
    );
  });
});
