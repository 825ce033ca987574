// Import staging gathers members into batches that are full at a count or
// at an amount of field text, whichever comes first: by count alone, 500
// records of 64 KiB made each batch tens of megabytes.
import { describe, expect, it } from 'vitest';
import { StageBatch } from '../../../src/aipcs/core/transfer.js';

describe('StageBatch', () => {
  it('is full at its count of members', () => {
    const batch = new StageBatch<number>(3, 1000);
    expect([batch.add(1, 10), batch.add(2, 10), batch.add(3, 10)]).toEqual([false, false, true]);
    expect(batch.take()).toEqual([1, 2, 3]);
    expect(batch.take()).toEqual([]);
  });

  it('is full at its amount of field text, however few the members', () => {
    const batch = new StageBatch<string>(500, 100);
    expect(batch.add('a', 60)).toBe(false);
    expect(batch.add('b', 40)).toBe(true);
    expect(batch.take()).toEqual(['a', 'b']);
    // Taking starts the count and the text over.
    expect(batch.add('c', 99)).toBe(false);
    expect(batch.add('d', 0)).toBe(false);
    expect(batch.add('e', 1)).toBe(true);
  });

  it('takes one member larger than the whole bound alone', () => {
    const batch = new StageBatch<string>(500, 100);
    expect(batch.add('big', 5000)).toBe(true);
    expect(batch.take()).toEqual(['big']);
  });
});
