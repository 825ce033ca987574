// Bounded memory: a large synthetic artefact (200k records, each with its
// history, plus branches and memberships) is written to a file and read back
// as a stream while the heap is sampled. Growth must stay far below the
// artefact's size: the codec keeps 16 bytes per record and per branch, never
// the members themselves.

import { mkdtemp, rm } from 'node:fs/promises';
import { createReadStream, createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, describe, expect, it } from 'vitest';
import { readBundleItems, writeBundle, type BundleBranch, type BundleHistoryEvent, type BundleMembership, type BundleRecord } from '../../../src/aipcs/portable/index.js';
import { HEADER, materialisedService } from './fixtures.js';

const RECORDS = 200_000;
const BRANCHES = 16;
const T0 = 1_767_225_600_000_000n;

// Force collections where the runtime allows it, so samples measure live data.
function findGc(): (() => void) | null {
  try {
    setFlagsFromString('--expose-gc');
    const gc: unknown = runInNewContext('gc');
    return typeof gc === 'function' ? (gc as () => void) : null;
  } catch {
    return null;
  }
}
const gc = findGc();

/** JS heap plus ArrayBuffer contents (where the codec's typed arrays live). */
function liveHeap(): number {
  gc?.();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
}

const hex = (value: number, width: number): string => value.toString(16).padStart(width, '0');
const recordId = (i: number): string => `${hex(i, 8)}-0000-4000-8000-${hex(i, 12)}`;
const branchId = (b: number): string => `f${hex(b, 7)}-0000-4000-8000-000000000000`;

function* records(): Generator<BundleRecord> {
  for (let i = 0; i < RECORDS; i++) {
    yield { entityName: 'person', recordId: recordId(i), recordVersion: 1n, createdAt: T0 + BigInt(i), updatedAt: T0 + BigInt(i), createdVia: 'mcp', fields: { name: `Person ${i}` } };
  }
}
function* history(): Generator<BundleHistoryEvent> {
  for (let i = 0; i < RECORDS; i++) {
    yield { entityName: 'person', recordId: recordId(i), recordVersion: 1n, kind: 'create', occurredAt: T0 + BigInt(i), before: null, after: { name: `Person ${i}` } };
  }
}
function* branches(): Generator<BundleBranch> {
  for (let b = 0; b < BRANCHES; b++) {
    yield { branchId: branchId(b), slug: `branch-${b}`, title: `Branch ${b}`, intent: 'Group.', branchType: null, parentBranchId: b === 0 ? null : branchId(b - 1), status: 'active', retrievalSummary: null, createdAt: T0, updatedAt: T0, branchRevision: 1n };
  }
}
function* memberships(): Generator<BundleMembership> {
  for (let b = 0; b < BRANCHES; b++) {
    for (let i = b; i < RECORDS; i += BRANCHES * 4) yield { branchId: branchId(b), entityName: 'person', recordId: recordId(i), role: 'primary' };
  }
}

const directory = await mkdtemp(join(tmpdir(), 'aipcs-portable-memory-'));
afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe('memory', () => {
  it('streams a 200k-record artefact through the writer and the reader in bounded heap', async () => {
    const path = join(directory, 'large.jsonl');
    const file = createWriteStream(path);
    const baseline = liveHeap();
    let writePeak = 0;
    let produced = 0;
    async function* sampled<T>(items: Iterable<T>): AsyncGenerator<T> {
      for (const item of items) {
        if (++produced % 50_000 === 0) writePeak = Math.max(writePeak, liveHeap() - baseline);
        yield item;
      }
    }
    const summary = await writeBundle(
      { header: HEADER, service: materialisedService(), records: sampled(records()), history: sampled(history()), branches: branches(), memberships: memberships() },
      async (chunk) => {
        if (!file.write(chunk)) await once(file, 'drain');
      },
    );
    file.end();
    await once(file, 'close');
    expect(summary.sections.map((section) => section.count)).toEqual([1, 1, RECORDS, RECORDS, BRANCHES, Math.ceil(RECORDS / 4 / BRANCHES) * BRANCHES, 0]);
    const artefactBytes = summary.totalByteCount;
    expect(artefactBytes).toBeGreaterThan(80_000_000);

    const readBaseline = liveHeap();
    let readPeak = 0;
    let items = 0;
    let end = false;
    for await (const item of readBundleItems(createReadStream(path, { highWaterMark: 64 * 1024 }))) {
      if (++items % 50_000 === 0) readPeak = Math.max(readPeak, liveHeap() - readBaseline);
      if (item.kind === 'end') {
        end = true;
        expect(item.value).toEqual(summary);
      }
    }
    expect(end).toBe(true);
    readPeak = Math.max(readPeak, liveHeap() - readBaseline);

    // 200k records need about 4 MiB of ids and bits; with forced collections
    // the heap must stay within a few tens of MiB, while the artefact is
    // several times larger. Without gc control only a looser bound is fair.
    const bound = gc ? 32 * 1024 * 1024 : 96 * 1024 * 1024;
    expect(readPeak).toBeLessThan(bound);
    expect(writePeak).toBeLessThan(bound);
    expect(readPeak * 3).toBeLessThan(artefactBytes);
  });
});
