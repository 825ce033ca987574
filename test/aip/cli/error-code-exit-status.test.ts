// Every error code's exit status (spec 9.2, docs/decisions-aip.md D7), checked
// code by code: the CLI tests reach only some codes, so a code moved to the
// wrong status (lock.timeout exiting 6, say) went unnoticed.
import { describe, expect, it } from 'vitest';
import { EXIT, exitCodeFor, toAipError } from '../../../src/aip/cli/support.js';
import { PRODUCT_CODES, PROTOCOL_CODES, type AipErrorCode } from '../../../src/aip/core/errors.js';

const D7: Readonly<Record<(typeof PRODUCT_CODES)[number], number>> = {
  usage: 2,
  'store.index': 1,
  'head.moved': 1,
  'lock.timeout': 1,
  'repo.exists': 1,
  'operation.empty': 1,
  'repo.not_found': 3,
  'object.id': 5,
  'bundle.format': 5,
  'snapshot.invalid': 5,
  io: 6,
  internal: 6,
  'repo.config': 6,
  'run.materialize': 6,
};

describe('aip exit status per error code (spec 9.2, D7)', () => {
  it('every product code exits with the status D7 gives it', () => {
    expect(Object.keys(D7).sort()).toEqual([...PRODUCT_CODES].sort());
    for (const code of PRODUCT_CODES) expect(exitCodeFor(code), code).toBe(D7[code]);
  });

  it('an unknown or ambiguous ID exits 3; every other protocol code is a rejected input, 5', () => {
    const notFound: readonly AipErrorCode[] = ['store.not_found', 'store.ambiguous'];
    for (const code of notFound) expect(exitCodeFor(code), code).toBe(EXIT.notFound);
    for (const code of PROTOCOL_CODES.filter((c) => !notFound.includes(c))) expect(exitCodeFor(code), code).toBe(EXIT.rejected);
  });

  it('keeps the numbers of spec 9.2', () => {
    expect(EXIT).toEqual({ ok: 0, negative: 1, usage: 2, notFound: 3, unknownResult: 4, rejected: 5, io: 6, cancelled: 130 });
  });

  it('a system error becomes io naming its code and path; anything else unexpected is internal, not io (D7)', () => {
    const system = toAipError(Object.assign(new Error('no space'), { code: 'ENOSPC', path: '/x/y' }));
    expect([system.code, system.message]).toEqual(['io', expect.stringMatching(/^ENOSPC \/x\/y/) as unknown]);
    for (const thrown of [new TypeError('x is not a function'), 'a string', Object.assign(new Error('e'), { code: 'ERR_STREAM_DESTROYED' })]) {
      const error = toAipError(thrown);
      expect([error.code, error.message], String(thrown)).toEqual(['internal', 'internal error']);
    }
  });
});
