// Readers take record files in batches whose size follows what the last
// batch read: up to 32 small files at once, fewer while they are large (a
// valid 1 MiB record dense with extra members parses into a tree tens of
// times its size; 32 in hand at once took a reader to 1.2-2.8 GB).
import { describe, expect, it } from 'vitest';
import { ReadBatchSize } from '../../src/aigpt/storage/memory-store.js';

const files = (count: number, bytes: number) => Array.from({ length: count }, () => ({ ok: true as const, bytes, value: null, text: undefined, shapeProblem: undefined }));

describe('ReadBatchSize', () => {
  it('starts at 8 and doubles up to 32 while batches are small', () => {
    const sizes = new ReadBatchSize();
    const seen = [sizes.next];
    for (let i = 0; i < 4; i++) {
      sizes.after(files(sizes.next, 1000));
      seen.push(sizes.next);
    }
    expect(seen).toEqual([8, 16, 32, 32, 32]);
  });

  it('reads large files a few at a time, one at a time at the 1 MiB record bound, and never none', () => {
    const sizes = new ReadBatchSize();
    sizes.after(files(8, 1024 * 1024));
    expect(sizes.next).toBe(1);
    sizes.after(files(1, 4 * 1024 * 1024));
    expect(sizes.next).toBe(1);
    sizes.after(files(1, 300 * 1024));
    expect(sizes.next).toBe(2);
    // Files that could not be read add nothing.
    sizes.after([{ ok: false, stage: 'read', cause: 'not a regular file' }]);
    expect(sizes.next).toBe(4);
  });
});
