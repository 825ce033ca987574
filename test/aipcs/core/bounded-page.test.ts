// boundedPage, the shape of every records and history page: at most `limit`
// rows, cut before the first that would pass PAGE_TEXT_BUDGET, never empty,
// and `more` whenever rows beyond the page exist. No record or event within
// the contract's bounds reaches the budget alone, so the never-empty rule is
// checked here on documents larger than any the services make.

import { describe, expect, it } from 'vitest';
import { boundedPage, PAGE_TEXT_BUDGET } from '../../../src/aipcs/core/records.js';

const sized = (characters: number) => ({ text: 'x'.repeat(characters) });

describe('boundedPage', () => {
  it('keeps a first row above the budget alone, with more rows behind it', () => {
    const rows = [PAGE_TEXT_BUDGET + 10, 10, 10];
    const page = boundedPage(rows, 3, sized);
    expect(page.documents).toEqual([sized(PAGE_TEXT_BUDGET + 10)]);
    expect([page.last, page.more]).toEqual([rows[0], true]);
  });

  it('stops at the first row that does not fit, though a later one would', () => {
    const half = Math.floor(PAGE_TEXT_BUDGET / 2);
    const rows = [half, half, 10];
    const page = boundedPage(rows, 3, sized);
    expect(page.documents).toEqual([sized(half)]);
    expect([page.last, page.more]).toEqual([half, true]);
  });

  it('has more only past the limit or after a cut by storage', () => {
    expect(boundedPage([1, 2, 3], 2, sized)).toMatchObject({ last: 2, more: true });
    expect(boundedPage([1, 2], 2, sized)).toMatchObject({ last: 2, more: false });
    expect(boundedPage([1, 2], 2, sized, true)).toMatchObject({ last: 2, more: true });
    expect(boundedPage([], 2, sized)).toEqual({ documents: [], last: undefined, more: false });
  });
});
