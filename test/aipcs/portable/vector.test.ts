// The conformance vector of operations spec §5.8: built from its logical
// content it must come out byte for byte, with the published digests and
// sizes; given as bytes it must validate back to that content.

import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../../src/common/json.js';
import { readBundle, summaryToJson, validateBundle } from '../../../src/aipcs/portable/index.js';
import { EMPTY, VECTOR_BYTES, VECTOR_LINES, chunked, readAll, vectorContent, writeToBytes } from './fixtures.js';

const sha = (data: string | Uint8Array): string => createHash('sha256').update(data).digest('hex');

describe('conformance vector (§5.8)', () => {
  it('is reproduced byte for byte from its logical content', async () => {
    const { bytes, summary } = await writeToBytes(vectorContent());
    expect(bytes.toString('utf8')).toBe(VECTOR_BYTES.toString('utf8'));
    expect(bytes.equals(VECTOR_BYTES)).toBe(true);
    expect(summary.totalByteCount).toBe(1898);
    expect(summary.frameCount).toBe(3);
    expect(summary.preTrailerByteCount).toBe(992);
    expect(summary.rootSha256).toBe('dcd5c9e8ceae33873739727e1a235e79aa10822821afe4d695a504cf040689cd');
    expect(summary.sections).toEqual([
      { kind: 'header', count: 1, sha256: '74d95defbed9c49c959ff736a8c7d4fd6567b321bc1ea235e0d4c42277065aa2' },
      { kind: 'service', count: 1, sha256: 'b71fe0e09a517e1411aa6e7b9fbf61a6bd2ce155281de972686cbba5822ea49a' },
      { kind: 'record', count: 0, sha256: EMPTY },
      { kind: 'history', count: 0, sha256: EMPTY },
      { kind: 'branch', count: 0, sha256: EMPTY },
      { kind: 'branch_membership', count: 0, sha256: EMPTY },
      { kind: 'audit', count: 0, sha256: EMPTY },
    ]);
  });

  it('has the published digests, recomputed independently of the codec', () => {
    const [header, service] = VECTOR_LINES as [string, string, string];
    // A line digest covers the frame without its sha256 member.
    const withoutDigest = (line: string): string => line.replace(/,"sha256":"[0-9a-f]{64}"\}$/, '}');
    expect(sha(withoutDigest(header))).toBe('77f20f1d3763f1be5d5f0ecfdcc506db9e6da19ec4c4b2e2a17c18df45f68da6');
    expect(sha(withoutDigest(service))).toBe('352bb57a665994b380cb9f49bf5feb9280125168fb7d5e07fae3beff83ee3b94');
    expect(sha(`${header}\n`)).toBe('74d95defbed9c49c959ff736a8c7d4fd6567b321bc1ea235e0d4c42277065aa2');
    expect(sha(`${service}\n`)).toBe('b71fe0e09a517e1411aa6e7b9fbf61a6bd2ce155281de972686cbba5822ea49a');
    expect(sha(`${header}\n${service}\n`)).toBe('dcd5c9e8ceae33873739727e1a235e79aa10822821afe4d695a504cf040689cd');
    expect(Buffer.byteLength(`${header}\n${service}\n`)).toBe(992);
    expect(VECTOR_BYTES.length).toBe(1898);
    expect(sha('')).toBe(EMPTY);
    // Every line is already canonical: re-encoding its parse changes nothing.
    for (const line of VECTOR_LINES) expect(canonicalJson(JSON.parse(line) as unknown)).toBe(line);
  });

  it('validates from the given bytes, in any chunking, back to the logical content', async () => {
    const expected = vectorContent();
    for (const size of [1, 2, 3, 991, 992, 993, 65536]) {
      const read = await readAll(VECTOR_BYTES, size);
      expect(read.header).toEqual(expected.header);
      expect(read.service).toEqual(expected.service);
      expect(read.records).toEqual([]);
      expect(read.summary?.rootSha256).toBe('dcd5c9e8ceae33873739727e1a235e79aa10822821afe4d695a504cf040689cd');
      expect(read.summary?.totalByteCount).toBe(1898);
    }
    const facts = await validateBundle(chunked(VECTOR_BYTES));
    expect(facts.manifest).toBeNull();
    expect(summaryToJson(facts.summary)).toEqual({
      export_format_version: 1n,
      source_backend: 'sqlite',
      root_sha256: 'dcd5c9e8ceae33873739727e1a235e79aa10822821afe4d695a504cf040689cd',
      frame_count: 3n,
      total_byte_count: 1898n,
      sections: { header: 1n, service: 1n, record: 0n, history: 0n, branch: 0n, branch_membership: 0n, audit: 0n },
    });
    expect(Object.keys(summaryToJson(facts.summary))).toEqual(['export_format_version', 'source_backend', 'root_sha256', 'frame_count', 'total_byte_count', 'sections']);
  });

  it('replays a seeded artefact with no members', async () => {
    const bundle = await readBundle(() => chunked(VECTOR_BYTES, 100));
    let calls = 0;
    const summary = await bundle.replay({ record: () => void calls++ });
    expect(calls).toBe(0);
    expect(summary.frameCount).toBe(3);
  });
});
