// Write then read: the reader gives back exactly the content the writer was
// given, a re-export of what was read is byte-identical, and the two-pass
// import flow (validate, then replay from a fresh read) sees the same bytes.

import { describe, expect, it } from 'vitest';
import { BundleInvalidError, readBundle, summaryToJson, writeBundle, type BundleBranch, type BundleContent, type BundleDefect, type BundleHistoryEvent, type BundleRecord } from '../../../src/aipcs/portable/index.js';
import type { JsonObject, JsonValue } from '../../../src/common/json.js';
import { chunked, materialisedContent, materialisedFrames, noteManifestJson, rawBundle, readAll, writeToBytes } from './fixtures.js';

async function writeDefect(content: BundleContent): Promise<BundleDefect | null> {
  try {
    await writeBundle(content, () => undefined);
    return null;
  } catch (error) {
    if (error instanceof BundleInvalidError) return error.reason;
    throw error;
  }
}

describe('round trip', () => {
  it('reads back exactly what was written, in any chunking', async () => {
    const content = materialisedContent();
    const { bytes, summary } = await writeToBytes(content);
    for (const size of [1, 13, 4096, 1 << 20]) {
      const read = await readAll(bytes, size);
      expect(read.header).toEqual(content.header);
      expect(read.service).toEqual(content.service);
      expect(read.records).toEqual(content.records);
      expect(read.history).toEqual(content.history);
      expect(read.branches).toEqual(content.branches);
      expect(read.memberships).toEqual(content.memberships);
      expect(read.summary).toEqual(summary);
    }
    expect(summary.frameCount).toBe(2 + 3 + 7 + 2 + 3 + 1);
    expect(summary.totalByteCount).toBe(bytes.length);
    expect(summary.sections.map((section) => section.count)).toEqual([1, 1, 3, 7, 2, 3, 0]);
    // The source backend comes from the header: the vector's is sqlite, this one's postgresql.
    expect(summary.sourceBackend).toBe('postgresql');
    expect(summaryToJson(summary)).toMatchObject({ source_backend: 'postgresql', frame_count: 18n, total_byte_count: BigInt(bytes.length) });
  });

  it('measures texts and list items in characters: astral ones at each bound read back', async () => {
    const content = materialisedContent();
    const astral = (count: number): string => '\u{1F600}'.repeat(count);
    const fields = { title: 'Minimal', tags: [astral(256)] };
    content.records[1] = { ...(content.records[1] as BundleRecord), fields };
    content.history[5] = { ...(content.history[5] as BundleHistoryEvent), after: fields };
    content.branches[0] = { ...(content.branches[0] as BundleBranch), title: astral(160), intent: astral(1000), retrievalSummary: astral(1000) };
    const read = await readAll((await writeToBytes(content)).bytes);
    expect(read.records[1]?.fields).toEqual(fields);
    expect(read.branches[0]).toMatchObject({ title: astral(160), intent: astral(1000), retrievalSummary: astral(1000) });
  });

  it('re-exports what it read byte for byte', async () => {
    const { bytes } = await writeToBytes(materialisedContent());
    const read = await readAll(bytes);
    if (read.header === null || read.service === null) throw new Error('missing header or service');
    const again = await writeToBytes({ ...read, header: read.header, service: read.service });
    expect(again.bytes.equals(bytes)).toBe(true);
  });

  it('frames lines exactly as an independent builder does', async () => {
    const { bytes } = await writeToBytes(materialisedContent());
    expect(rawBundle(materialisedFrames()).equals(bytes)).toBe(true);
  });

  it('keeps integers exact and turns integral number-field tokens back into numbers', async () => {
    const { bytes } = await writeToBytes(materialisedContent());
    const text = bytes.toString('utf8');
    expect(text).toContain('"count":9007199254740993');
    expect(text).toContain('"confidence":1,');
    const read = await readAll(bytes);
    const note = read.records[0];
    expect(note?.fields['count']).toBe(9007199254740993n);
    expect(note?.fields['confidence']).toBe(1);
    expect(typeof note?.fields['confidence']).toBe('number');
  });

  it('refuses to write a number field whose text reads back as an integer beyond 64 bits', async () => {
    // -2^63 itself fits, but ECMAScript writes it -9223372036854776000, which no reader accepts.
    const withConfidence = (confidence: number): BundleContent => {
      const content = materialisedContent();
      const [first, ...rest] = content.records as [BundleRecord, ...BundleRecord[]];
      return { ...content, records: [{ ...first, fields: { ...first.fields, confidence } }, ...rest] };
    };
    expect(await writeDefect(withConfidence(-(2 ** 63)))).toBe('integer_out_of_range');
    const { bytes } = await writeToBytes(withConfidence(-(2 ** 63 - 1024)));
    expect((await readAll(bytes)).records[0]?.fields['confidence']).toBe(-(2 ** 63 - 1024));
  });

  it('accepts async member sources', async () => {
    const content = materialisedContent();
    async function* slowly<T>(items: readonly T[]): AsyncGenerator<T> {
      for (const item of items) {
        await Promise.resolve();
        yield item;
      }
    }
    const sync = await writeToBytes(content);
    const async = await writeToBytes({ ...content, records: slowly(content.records), history: slowly(content.history), branches: slowly(content.branches), memberships: slowly(content.memberships) });
    expect(async.bytes.equals(sync.bytes)).toBe(true);
  });
});

describe('two-pass import (§5.9)', () => {
  it('validates first, then replays every member from a fresh read', async () => {
    const content = materialisedContent();
    const { bytes, summary } = await writeToBytes(content);
    let opened = 0;
    const bundle = await readBundle(() => {
      opened++;
      return chunked(bytes, 500);
    });
    expect(opened).toBe(1);
    expect(bundle.service).toEqual(content.service);
    expect(bundle.manifest?.entities.map((entity) => entity.name)).toEqual(['note', 'person']);
    expect(bundle.summary).toEqual(summary);
    const seen: string[] = [];
    const replayed = await bundle.replay({
      record: (record) => void seen.push(`record ${record.recordId}`),
      history: async (event) => {
        await Promise.resolve();
        seen.push(`history ${event.recordId} ${event.recordVersion}`);
      },
      branch: (branch) => void seen.push(`branch ${branch.branchId}`),
      membership: (membership) => void seen.push(`membership ${membership.branchId} ${membership.recordId}`),
    });
    expect(opened).toBe(2);
    expect(replayed).toEqual(summary);
    expect(seen).toHaveLength(15);
    expect(seen[0]).toBe(`record ${content.records[0]?.recordId}`);
  });

  it('refuses a replay when the file changed between the reads', async () => {
    const first = await writeToBytes(materialisedContent());
    const changed = materialisedContent();
    const second = await writeToBytes({ ...changed, header: { ...changed.header, createdAt: changed.header.createdAt + 1n } });
    let opened = 0;
    const bundle = await readBundle(() => chunked(opened++ === 0 ? first.bytes : second.bytes));
    await expect(bundle.replay({})).rejects.toMatchObject({ reason: 'root_changed', code: 'validation_failed' });
    const truncated = await readBundle(() => chunked(opened++ === 2 ? first.bytes : first.bytes.subarray(0, 100)));
    await expect(truncated.replay({})).rejects.toMatchObject({ reason: 'truncated' });
  });

  it('passes visitor failures through untouched', async () => {
    const { bytes } = await writeToBytes(materialisedContent());
    const bundle = await readBundle(() => chunked(bytes));
    const failure = new Error('storage said no');
    await expect(bundle.replay({ branch: () => Promise.reject(failure) })).rejects.toBe(failure);
  });
});

describe('the writer refuses content that would not read back', () => {
  it.each<[string, (content: ReturnType<typeof materialisedContent>) => BundleContent, BundleDefect]>([
    ['records out of order', (c) => ({ ...c, records: [...c.records].reverse() }), 'record_order'],
    ['a record without history', (c) => ({ ...c, history: c.history.filter((event) => event.recordId !== c.records[1]?.recordId) }), 'history_record_mismatch'],
    ['an undeclared field', (c) => ({ ...c, records: c.records.map((record, i) => (i === 0 ? { ...record, fields: { ...record.fields, owner_id: 'x' } } : record)) }), 'record_fields_invalid'],
    ['a float that canonical JSON writes as an integer beyond 64 bits', (c) => ({ ...c, records: c.records.map((record, i) => (i === 0 ? { ...record, fields: { ...record.fields, confidence: 1e20 } } : record)) }), 'integer_out_of_range'],
    ['NaN', (c) => ({ ...c, records: c.records.map((record, i) => (i === 0 ? { ...record, fields: { ...record.fields, confidence: Number.NaN } } : record)) }), 'unrepresentable_value'],
    ['a time after year 9999', (c) => ({ ...c, header: { ...c.header, createdAt: 253402300800000000n } }), 'unrepresentable_value'],
    ['a lone surrogate', (c) => ({ ...c, branches: c.branches.map((branch) => ({ ...branch, title: 'x\ud800' })) }), 'unrepresentable_value'],
    ['an active materialised service', (c) => ({ ...c, service: { ...c.service, operationalStatus: 'active' } }), 'fence_invalid'],
    ['members of a seeded service', (c) => ({ ...c, service: { ...c.service, designState: 'seeded', exportFence: null, materialisedAt: null } }), 'seeded_with_members'],
    ['a membership of a deleted record', (c) => ({ ...c, memberships: [...c.memberships, { branchId: c.branches[1]?.branchId ?? '', entityName: 'note', recordId: '20000000-0000-4000-8000-000000000002', role: 'primary' }] }), 'membership_record_missing'],
  ])('%s', async (_name, mutate, reason) => {
    expect(await writeDefect(mutate(materialisedContent()))).toBe(reason);
  });

  // The manifest travels as canonical JSON too: a float item of allowed_values
  // that is integral is written as an integer token and read back as one.
  // [1, 1.0] then reads as [1, 1] (duplicates), and 1e17 as an integer literal
  // beyond 2^53 on a number attribute; both manifests are invalid as read.
  // The writer validated the object it rendered (where they are distinct
  // floats), so export published an artefact that no import accepts.
  it.each<[string, JsonValue[]]>([
    ['1 and 1.0', [1n, 1]],
    ['-0.0 and 0', [-0, 0n]],
    ['an integral float beyond 2^53', [1e17]],
  ])('a manifest whose number allowed_values read back invalid (%s)', async (_name, allowed) => {
    const manifest = noteManifestJson();
    const note = (manifest['entities'] as JsonObject[])[0] as JsonObject;
    for (const attribute of note['attributes'] as JsonObject[]) if (attribute['name'] === 'confidence') attribute['allowed_values'] = allowed;
    const content = materialisedContent();
    expect(await writeDefect({ ...content, service: { ...content.service, manifest }, records: [], history: [], memberships: [] })).toBe('manifest_invalid');
  });

  it('names the line where the content broke', async () => {
    const content = materialisedContent();
    const error = await writeBundle({ ...content, records: [...content.records].reverse() }, () => undefined).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(BundleInvalidError);
    expect((error as BundleInvalidError).line).toBe(3);
    expect((error as BundleInvalidError).message).toBe('Request failed public contract validation.');
  });
});
