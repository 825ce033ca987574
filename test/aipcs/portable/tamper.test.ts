// Damage an artefact in every small way (§5.1: digests detect accidental
// damage): truncation at each line boundary and inside lines, reordered and
// duplicated lines, a substituted value on a re-hashed line, and each byte
// flipped. Every variant must be refused, never crash, never yield `end`.

import { describe, expect, it } from 'vitest';
import { parseJson, type JsonObject } from '../../../src/common/json.js';
import { BundleInvalidError, readBundleItems } from '../../../src/aipcs/portable/index.js';
import { VECTOR_BYTES, chunked, defectOf, frameLine, joinLines, linesOf, materialisedContent, writeToBytes } from './fixtures.js';

const artefact = (await writeToBytes(materialisedContent())).bytes;

async function refused(bytes: Uint8Array): Promise<boolean> {
  return (await defectOf(bytes)) !== null;
}

describe('tampering', () => {
  it('refuses a truncation at every line boundary and inside every line', async () => {
    const boundaries: number[] = [];
    artefact.forEach((byte, offset) => {
      if (byte === 0x0a) boundaries.push(offset + 1);
    });
    expect(boundaries.at(-1)).toBe(artefact.length);
    for (const end of boundaries.slice(0, -1)) expect(await defectOf(artefact.subarray(0, end))).toBe('truncated');
    for (let end = 0; end < artefact.length; end += 7) expect(await refused(artefact.subarray(0, end))).toBe(true);
    for (let end = 0; end < VECTOR_BYTES.length; end++) expect(await refused(VECTOR_BYTES.subarray(0, end))).toBe(true);
  });

  it('refuses any two lines swapped', async () => {
    const lines = linesOf(artefact);
    for (let a = 0; a < lines.length; a++) {
      for (let b = a + 1; b < lines.length; b++) {
        const swapped = [...lines];
        [swapped[a], swapped[b]] = [lines[b] as string, lines[a] as string];
        expect(await refused(joinLines(swapped))).toBe(true);
      }
    }
  });

  it('refuses any line duplicated or dropped', async () => {
    const lines = linesOf(artefact);
    for (let i = 0; i < lines.length; i++) {
      expect(await refused(joinLines([...lines.slice(0, i + 1), ...lines.slice(i)]))).toBe(true);
      expect(await refused(joinLines([...lines.slice(0, i), ...lines.slice(i + 1)]))).toBe(true);
    }
  });

  it('catches a substituted value on a correctly re-hashed line through the trailer', async () => {
    const lines = linesOf(artefact);
    // One still-valid substitution per line kind, so only the digests can tell.
    const substitutes: Record<string, (payload: JsonObject) => void> = {
      header: (p) => void (p['producer_package_version'] = '9.9.9'),
      service: (p) => void (p['intent_description'] = 'Notes taken elsewhere.'),
      record: (p) => void (p['created_via'] = 'cli'),
      history: (p) => void (p['occurred_at'] = String(p['occurred_at']).replace('.000000Z', '.000001Z')),
      branch: (p) => void (p['title'] = 'Renamed'),
      branch_membership: (p) => void (p['entity_name'] === 'person' && (p['role'] = 'primary')),
    };
    let checked = 0;
    for (let i = 0; i < lines.length - 1; i++) {
      const original = lines[i] as string;
      const frame = parseJson(original) as JsonObject;
      const payload = frame['payload'] as JsonObject;
      substitutes[String(frame['kind'])]?.(payload);
      const rehashed = frameLine(String(frame['kind']), i, payload);
      if (rehashed === original) continue;
      const damaged = [...lines];
      damaged[i] = rehashed;
      expect(await defectOf(joinLines(damaged))).toBe('root_mismatch');
      checked++;
    }
    expect(checked).toBe(lines.length - 1 - 2);
  });

  it('refuses every single flipped byte', async () => {
    for (const bytes of [VECTOR_BYTES, artefact]) {
      for (let offset = 0; offset < bytes.length; offset++) {
        for (const mask of bytes === VECTOR_BYTES ? [0x01, 0x20, 0x80] : [0x01]) {
          const damaged = Buffer.from(bytes);
          damaged[offset] = (damaged[offset] as number) ^ mask;
          let reason: string | null;
          try {
            reason = await defectOf(damaged);
          } catch (error) {
            throw new Error(`offset ${offset} mask ${mask} crashed the reader`, { cause: error });
          }
          if (reason === null) throw new Error(`offset ${offset} mask ${mask} was accepted`);
        }
      }
    }
  });

  it('never yields the end item of a damaged artefact', async () => {
    const damaged = Buffer.from(artefact);
    damaged[damaged.length - 10] = 0x30;
    const kinds: string[] = [];
    await expect(
      (async () => {
        for await (const item of readBundleItems(chunked(damaged))) kinds.push(item.kind);
      })(),
    ).rejects.toBeInstanceOf(BundleInvalidError);
    expect(kinds).not.toContain('end');
  });
});
