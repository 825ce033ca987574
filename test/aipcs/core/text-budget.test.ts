// TextBudget, the share of contract text the lists of one tool result may
// take (records and history pages, the service list, summary facets and
// samples): the leading items whose rendered text, each with its separating
// comma, still fits, counted exactly at the limit.

import { describe, expect, it } from 'vitest';
import { renderContractJson } from '../../../src/aipcs/contract/envelope.js';
import { TextBudget } from '../../../src/aipcs/core/text-budget.js';

// Each renders as `"aa"`: 4 characters, 5 with its comma.
const items = ['aa', 'bb', 'cc'];

describe('TextBudget', () => {
  it('keeps the leading items whose text and commas fit, an item that ends exactly at the limit included', () => {
    expect(renderContractJson('aa')).toHaveLength(4);
    expect(new TextBudget(15).prefix(items)).toEqual(items);
    expect(new TextBudget(14).prefix(items)).toEqual(['aa', 'bb']);
    expect(new TextBudget(10).prefix(items)).toEqual(['aa', 'bb']);
    expect(new TextBudget(9).prefix(items)).toEqual(['aa']);
    expect(new TextBudget(5).prefix(items)).toEqual(['aa']);
    expect(new TextBudget(4).prefix(items)).toEqual([]);
  });

  it('keeps the first item whatever its size only when asked to', () => {
    expect(new TextBudget(4).prefix(items, true)).toEqual(['aa']);
    expect(new TextBudget(0).prefix(items, true)).toEqual(['aa']);
    expect(new TextBudget(0).prefix(items)).toEqual([]);
  });

  it('shares one budget between lists, counting a list kept on its size bound at its exact size later', () => {
    // ['x'] is kept on its bound (far above its 4 characters) without being measured.
    const exact = new TextBudget(19);
    expect(exact.prefix(['x'])).toEqual(['x']);
    expect(exact.prefix(items)).toEqual(items);
    expect(exact.prefix(['d'])).toEqual([]);
    const short = new TextBudget(18);
    expect(short.prefix(['x'])).toEqual(['x']);
    expect(short.prefix(items)).toEqual(['aa', 'bb']);
  });

  it('bounds a string by six characters per UTF-16 unit, as the ASCII-only text escapes it', () => {
    // `"\u8a18"` is 8 characters: two of them with commas do not fit in 10.
    expect(renderContractJson('記')).toHaveLength(8);
    expect(new TextBudget(18).prefix(['記', '記'])).toEqual(['記', '記']);
    expect(new TextBudget(17).prefix(['記', '記'])).toEqual(['記']);
    expect(new TextBudget(10).prefix(['記', '記'])).toEqual(['記']);
  });

  it('bounds numbers by 24 characters and containers by their brackets, separators and escaped keys', () => {
    // Each value, with its comma, takes one character more than the first
    // budget: a bound that counted it any shorter would keep it unmeasured.
    expect(renderContractJson(-1.2345678901234567e300)).toHaveLength(24);
    expect(new TextBudget(24).prefix([-1.2345678901234567e300])).toEqual([]);
    expect(new TextBudget(25).prefix([-1.2345678901234567e300])).toEqual([-1.2345678901234567e300]);
    expect(new TextBudget(2).prefix([{}])).toEqual([]);
    expect(new TextBudget(2).prefix([[]])).toEqual([]);
    expect(new TextBudget(3).prefix([{}])).toEqual([{}]);
    const pair = ['\u0001', '\u0001'];
    expect(renderContractJson(pair)).toHaveLength(19);
    expect(new TextBudget(19).prefix([pair])).toEqual([]);
    expect(new TextBudget(20).prefix([pair])).toEqual([pair]);
    const object = { 記: '記', 誰: '記' };
    expect(renderContractJson(object)).toHaveLength(37);
    expect(new TextBudget(37).prefix([object])).toEqual([]);
    expect(new TextBudget(38).prefix([object])).toEqual([object]);
  });

  it('keeps a prefix: an item after one that does not fit is left out, however small', () => {
    expect(new TextBudget(6).prefix(['aaaa', 'b'])).toEqual([]);
    expect(new TextBudget(7).prefix(['aaaa', 'b'])).toEqual(['aaaa']);
  });

  it('counts every list kept before, on its bound or measured, exactly once', () => {
    // 'x' is 3 characters, 4 with its comma, and bounded at 9 with it.
    const tight = new TextBudget(9);
    expect(tight.prefix(['x'])).toEqual(['x']);
    expect(tight.prefix(['y'])).toEqual(['y']);
    expect(tight.prefix(['z'])).toEqual([]);
    const roomy = new TextBudget(12);
    expect(roomy.prefix(['x'])).toEqual(['x']);
    expect(roomy.prefix(['y'])).toEqual(['y']);
    expect(roomy.prefix(['z'])).toEqual(['z']);
    expect(roomy.prefix(['w'])).toEqual([]);
  });
});
