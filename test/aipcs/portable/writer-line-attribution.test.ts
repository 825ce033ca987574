// A defect the writer finds while encoding a member (not one the validator
// finds in the rendered line) must still name that member's line (ordinal),
// as the reader's defects do: the first record is line 2.

import { describe, expect, it } from 'vitest';
import { BundleInvalidError, writeBundle } from '../../../src/aipcs/portable/index.js';
import { materialisedContent } from './fixtures.js';

describe('writer defect attribution', () => {
  it('names the line of a member that cannot be encoded', async () => {
    const content = materialisedContent();
    const [first, ...rest] = content.records;
    // A time beyond Timestamp27 (year 9999) is refused by the payload encoder itself, before any line is rendered.
    const broken = { ...first!, updatedAt: 2n ** 62n };
    const error = await writeBundle({ ...content, records: [broken, ...rest] }, () => undefined).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(BundleInvalidError);
    expect((error as BundleInvalidError).reason).toBe('unrepresentable_value');
    expect((error as BundleInvalidError).line).toBe(2);
  });
});
