// aipcs-bundle-limits-1 (operations spec §5.7): the line bound including its
// LF, the artefact bound (default, lowered, never above 1 GiB), the line
// count including the trailer, nesting and 64-bit integers.

import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  ABSOLUTE_MAX_BUNDLE_BYTES,
  BundleInvalidError,
  DEFAULT_MAX_BUNDLE_BYTES,
  EMPTY_SHA256,
  MAX_LINE_BYTES,
  MAX_LINES,
  readBundleItems,
  validateBundle,
  writeBundle,
  type BundleDefect,
} from '../../../src/aipcs/portable/index.js';
import { readWithLimits } from '../../../src/aipcs/portable/bundle-reader.js';
import { writeWithLimits } from '../../../src/aipcs/portable/bundle-writer.js';
import { DEFAULT_LIMITS, resolveLimits, type BundleLimits } from '../../../src/aipcs/portable/format.js';
import { VECTOR_BYTES, chunked, linesOf, materialisedContent, writeToBytes } from './fixtures.js';

async function defectWith(bytes: Uint8Array, limits: BundleLimits, chunkSize = 65536): Promise<BundleDefect | null> {
  try {
    for await (const _item of readWithLimits(chunked(bytes, chunkSize), limits, null)) {
      // drain
    }
    return null;
  } catch (error) {
    if (error instanceof BundleInvalidError) return error.reason;
    throw error;
  }
}

describe('limits', () => {
  it('has the profile values', () => {
    expect(MAX_LINE_BYTES).toBe(1_048_576);
    expect(DEFAULT_MAX_BUNDLE_BYTES).toBe(268_435_456);
    expect(ABSOLUTE_MAX_BUNDLE_BYTES).toBe(1_073_741_824);
    expect(MAX_LINES).toBe(1_000_000);
    expect(EMPTY_SHA256).toBe(createHash('sha256').digest('hex'));
    // What a run enforces when the caller gives no bound (the writer and the reader both resolve this way).
    const profile = { maxBundleBytes: 268_435_456, maxLineBytes: 1_048_576, maxLines: 1_000_000 };
    expect(resolveLimits(undefined)).toEqual(profile);
    expect(resolveLimits({})).toEqual(profile);
    expect(DEFAULT_LIMITS).toEqual(profile);
    expect(resolveLimits({ maxBundleBytes: 1 })).toEqual({ ...profile, maxBundleBytes: 1 });
  });

  it('bounds a line at 1 MiB including its LF, without buffering past it', async () => {
    const longest = Math.max(...linesOf(VECTOR_BYTES).map((line) => Buffer.byteLength(line) + 1));
    expect(await defectWith(VECTOR_BYTES, { ...DEFAULT_LIMITS, maxLineBytes: longest })).toBeNull();
    expect(await defectWith(VECTOR_BYTES, { ...DEFAULT_LIMITS, maxLineBytes: longest - 1 }, 1)).toBe('line_too_long');
    expect(await defectWith(VECTOR_BYTES, { ...DEFAULT_LIMITS, maxLineBytes: longest - 1 })).toBe('line_too_long');

    // A real 1 MiB line: refused once 1,048,576 bytes arrived without an LF, before the rest is read.
    let served = 0;
    async function* endless(): AsyncGenerator<Uint8Array> {
      const block = Buffer.alloc(65536, 0x20);
      for (;;) {
        served += block.length;
        yield block;
      }
    }
    await expect(validateBundle(endless())).rejects.toMatchObject({ reason: 'line_too_long' });
    expect(served).toBe(MAX_LINE_BYTES);
    const exactly = Buffer.concat([Buffer.alloc(MAX_LINE_BYTES - 1, 0x20), Buffer.from('\n')]);
    const over = Buffer.concat([Buffer.alloc(MAX_LINE_BYTES, 0x20), Buffer.from('\n')]);
    // A full-size line passes the size bound and fails later as non-canonical JSON; one byte more fails the bound.
    await expect(validateBundle(chunked(exactly))).rejects.toMatchObject({ reason: 'json_malformed' });
    await expect(validateBundle(chunked(over))).rejects.toMatchObject({ reason: 'line_too_long' });
  });

  it('bounds the artefact size, with a caller bound between 1 byte and 1 GiB', async () => {
    await expect(validateBundle(chunked(VECTOR_BYTES), { maxBundleBytes: 1898 })).resolves.toBeDefined();
    await expect(validateBundle(chunked(VECTOR_BYTES), { maxBundleBytes: 1897 })).rejects.toMatchObject({ reason: 'bundle_too_large' });
    await expect(validateBundle(chunked(VECTOR_BYTES, 1), { maxBundleBytes: 1897 })).rejects.toMatchObject({ reason: 'bundle_too_large' });
    await expect(validateBundle(chunked(VECTOR_BYTES), { maxBundleBytes: 1000 })).rejects.toMatchObject({ reason: 'bundle_too_large' });
    // 1 byte is the smallest bound a caller may give: the artefact is then too large, not the bound invalid.
    await expect(validateBundle(chunked(VECTOR_BYTES), { maxBundleBytes: 1 })).rejects.toMatchObject({ reason: 'bundle_too_large' });
    for (const bad of [0, -1, 1.5, ABSOLUTE_MAX_BUNDLE_BYTES + 1, Number.NaN]) {
      await expect(validateBundle(chunked(VECTOR_BYTES), { maxBundleBytes: bad })).rejects.toBeInstanceOf(RangeError);
      await expect(writeBundle(materialisedContent(), () => undefined, { maxBundleBytes: bad })).rejects.toBeInstanceOf(RangeError);
    }
    await expect(validateBundle(chunked(VECTOR_BYTES), { maxBundleBytes: ABSOLUTE_MAX_BUNDLE_BYTES })).resolves.toBeDefined();
    const { bytes } = await writeToBytes(materialisedContent());
    await expect(writeBundle(materialisedContent(), () => undefined, { maxBundleBytes: bytes.length })).resolves.toMatchObject({ totalByteCount: bytes.length });
    await expect(writeBundle(materialisedContent(), () => undefined, { maxBundleBytes: bytes.length - 1 })).rejects.toMatchObject({ reason: 'bundle_too_large' });
  });

  it('bounds the number of lines, trailer included', async () => {
    const { bytes } = await writeToBytes(materialisedContent());
    const count = linesOf(bytes).length;
    expect(await defectWith(bytes, { ...DEFAULT_LIMITS, maxLines: count })).toBeNull();
    expect(await defectWith(bytes, { ...DEFAULT_LIMITS, maxLines: count - 1 })).toBe('too_many_lines');
    const write = (maxLines: number) => writeWithLimits(materialisedContent(), () => undefined, { ...DEFAULT_LIMITS, maxLines });
    await expect(write(count)).resolves.toMatchObject({ frameCount: count });
    await expect(write(count - 1)).rejects.toMatchObject({ reason: 'too_many_lines' });
    // The refusal names the last member, which leaves no line for the trailer.
    const read = async (): Promise<void> => {
      for await (const _item of readWithLimits(chunked(bytes), { ...DEFAULT_LIMITS, maxLines: count - 1 }, null)) {
        // drain
      }
    };
    await expect(read()).rejects.toMatchObject({ reason: 'too_many_lines', line: count - 2 });
    await expect(write(count - 1)).rejects.toMatchObject({ reason: 'too_many_lines', line: count - 2 });
  });

  it('refuses a line nested deeper than 64 levels and integers beyond 64 bits', async () => {
    const deep = Buffer.from(`{"kind":"header","ordinal":0,"payload":${'['.repeat(64)}${']'.repeat(64)}}\n`);
    await expect(validateBundle(chunked(deep))).rejects.toMatchObject({ reason: 'json_too_deep' });
    const shallower = Buffer.from(`{"kind":"header","ordinal":0,"payload":${'['.repeat(63)}${']'.repeat(63)}}\n`);
    await expect(validateBundle(chunked(shallower))).rejects.toMatchObject({ reason: 'frame_shape' });
    const wide = Buffer.from('{"kind":"header","ordinal":9223372036854775808,"payload":{}}\n');
    await expect(validateBundle(chunked(wide))).rejects.toMatchObject({ reason: 'integer_out_of_range', line: 0 });
  });

  it('reports defects as validation_failed with a line and no content', async () => {
    const error = await (async () => {
      for await (const _item of readBundleItems(chunked(Buffer.from(`${linesOf(VECTOR_BYTES)[0]}\n{"secret":"value"}\n`)))) {
        // drain
      }
    })().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(BundleInvalidError);
    const invalid = error as BundleInvalidError;
    expect(invalid.code).toBe('validation_failed');
    expect(invalid.retryable).toBe(false);
    expect(invalid.line).toBe(1);
    expect(invalid.reason).toBe('frame_shape');
    expect(`${invalid.message} ${invalid.stack ?? ''}`).not.toContain('secret');
  });
});
