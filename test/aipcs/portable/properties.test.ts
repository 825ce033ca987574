// Property tests (fast-check, bounded runs): random valid services round-trip
// exactly and re-export byte-identically; random damage to their artefacts
// never crashes the reader and is either refused or (when the bytes did not
// really change) decodes to exactly the original.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hasLoneSurrogate } from '../../../src/aipcs/contract/schema-check.js';
import {
  BundleInvalidError,
  type BundleBranch,
  type BundleHistoryEvent,
  type BundleMembership,
  type BundleRecord,
  type FieldSet,
  type HistoryKind,
} from '../../../src/aipcs/portable/index.js';
import { MAX_TIMESTAMP27_MICROS, MIN_TIMESTAMP27_MICROS } from '../../../src/aipcs/portable/timestamp27.js';
import { HEADER, materialisedService, readAll, writeToBytes, type ReadBack } from './fixtures.js';

const text = (maxLength: number) =>
  fc.string({ unit: 'binary', minLength: 1, maxLength }).filter((value) => !value.includes('\u0000') && !hasLoneSurrogate(value));
const micros = fc.bigInt({ min: MIN_TIMESTAMP27_MICROS, max: MAX_TIMESTAMP27_MICROS });
const span = fc.tuple(micros, micros).map(([a, b]): [bigint, bigint] => (a <= b ? [a, b] : [b, a]));
// A binary64 that canonical JSON can write and read back: not -0, and not an
// integral value whose plain decimal form would not fit in 64 bits.
const float = fc
  .double({ noNaN: true, noDefaultInfinity: true })
  .filter((value) => !Object.is(value, -0) && !(Number.isInteger(value) && Math.abs(value) >= 2 ** 63 && Math.abs(value) < 1e21));

type Optional = Record<string, fc.Arbitrary<FieldSet[string]>>;
const optionalFields: Optional = {
  status: fc.constantFrom(null, 'open', 'done', 'superseded'),
  tags: fc.uniqueArray(text(12), { maxLength: 4 }),
  detail: fc.oneof(fc.constant(null), text(40)),
  confidence: fc.oneof(fc.constant(null), float),
  count: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
  done: fc.boolean(),
  due: fc.constantFrom('2026-05-01T00:00:00Z', '2026-05-01 00:00:00+00:00', '20260501T000000Z', '2024-02-29T23:59:59.123456789Z'),
  ref: fc.uuid(),
};

const noteFields: fc.Arbitrary<FieldSet> = fc
  .record({ title: text(30), ...optionalFields }, { requiredKeys: ['title'] })
  .map((fields) => fields as FieldSet);
const personFields: fc.Arbitrary<FieldSet> = text(20).map((name) => ({ name }));

interface RecordSeed {
  readonly entity: 'note' | 'person';
  readonly id: string;
  readonly snapshots: readonly FieldSet[];
  readonly kinds: readonly HistoryKind[];
  readonly deleted: boolean;
  readonly created: bigint;
  readonly updated: bigint;
}

const recordSeed: fc.Arbitrary<RecordSeed> = fc.constantFrom<'note' | 'person'>('note', 'person').chain((entity) =>
  fc.record({
    entity: fc.constant(entity),
    id: fc.uuid(),
    snapshots: fc.array(entity === 'note' ? noteFields : personFields, { minLength: 1, maxLength: 3 }),
    kinds: fc.array(fc.constantFrom<HistoryKind>('update', 'primary_assign', 'primary_move', 'primary_unassign', 'related_assign', 'related_unassign'), { minLength: 2, maxLength: 2 }),
    deleted: fc.boolean(),
    created: micros,
    updated: micros,
  }),
);

interface Generated {
  readonly records: BundleRecord[];
  readonly history: BundleHistoryEvent[];
  readonly branches: BundleBranch[];
  readonly memberships: BundleMembership[];
}

const branchSeed = fc.record({
  id: fc.uuid(),
  slug: fc.stringMatching(/^[a-z][a-z0-9-]{1,10}[a-z0-9]$/),
  title: text(20),
  intent: text(30),
  type: fc.option(fc.stringMatching(/^[a-z][a-z0-9_-]{0,8}$/), { nil: null }),
  parentPick: fc.option(fc.nat(), { nil: null }),
  status: fc.constantFrom<BundleBranch['status']>('active', 'archived', 'superseded'),
  summary: fc.option(text(20), { nil: null }),
  times: span,
  revision: fc.bigInt({ min: 1n, max: 2n ** 63n - 1n }),
});

const content: fc.Arbitrary<Generated> = fc
  .record({
    seeds: fc.uniqueArray(recordSeed, { maxLength: 8, selector: (seed) => seed.id }),
    // Ids and slugs both unique, as a service's branches are (the writer refuses a repeated slug).
    branchSeeds: fc.uniqueArray(branchSeed, { maxLength: 5, selector: (seed) => seed.id }).map((seeds) => seeds.filter((seed, i) => seeds.findIndex((other) => other.slug === seed.slug) === i)),
    picks: fc.array(fc.tuple(fc.nat(), fc.nat(), fc.boolean()), { maxLength: 12 }),
  })
  .map(({ seeds, branchSeeds, picks }) => {
    const sorted = [...seeds].sort((a, b) => (a.entity + a.id < b.entity + b.id ? -1 : 1));
    const records: BundleRecord[] = [];
    const history: BundleHistoryEvent[] = [];
    for (const seed of sorted) {
      const [created, updated] = seed.created <= seed.updated ? [seed.created, seed.updated] : [seed.updated, seed.created];
      let version = 0n;
      let last: FieldSet | null = null;
      for (const [i, snapshot] of seed.snapshots.entries()) {
        version++;
        const kind = i === 0 ? 'create' : (seed.kinds[i - 1] as HistoryKind);
        // Only create and update change the fields; a membership event keeps them.
        const after: FieldSet = kind === 'create' || kind === 'update' || last === null ? snapshot : last;
        history.push({ entityName: seed.entity, recordId: seed.id, recordVersion: version, kind, occurredAt: created, before: last, after });
        last = after;
      }
      if (last === null) throw new Error('a record has at least its create');
      if (seed.deleted) {
        history.push({ entityName: seed.entity, recordId: seed.id, recordVersion: version + 1n, kind: 'delete', occurredAt: updated, before: last, after: null });
      } else {
        records.push({ entityName: seed.entity, recordId: seed.id, recordVersion: version, createdAt: created, updatedAt: updated, createdVia: 'mcp', fields: last });
      }
    }
    // Parents only point at branches generated earlier, so the forest is acyclic.
    const branches: BundleBranch[] = branchSeeds.map((seed, i) => ({
      branchId: seed.id,
      slug: seed.slug,
      title: seed.title,
      intent: seed.intent,
      branchType: seed.type,
      parentBranchId: seed.parentPick === null || i === 0 ? null : (branchSeeds[seed.parentPick % i]?.id ?? null),
      status: seed.status,
      retrievalSummary: seed.summary,
      createdAt: seed.times[0],
      updatedAt: seed.times[1],
      branchRevision: seed.revision,
    }));
    branches.sort((a, b) => (a.branchId < b.branchId ? -1 : 1));
    const memberships = new Map<string, BundleMembership>();
    const primaries = new Set<string>();
    if (branches.length > 0 && records.length > 0) {
      for (const [branchPick, recordPick, primary] of picks) {
        const branch = branches[branchPick % branches.length] as BundleBranch;
        const record = records[recordPick % records.length] as BundleRecord;
        const pair = `${branch.branchId} ${record.entityName} ${record.recordId}`;
        const role = primary && !primaries.has(record.recordId) ? 'primary' : 'related';
        if (memberships.has(pair)) continue;
        if (role === 'primary') primaries.add(record.recordId);
        memberships.set(pair, { branchId: branch.branchId, entityName: record.entityName, recordId: record.recordId, role });
      }
    }
    return { records, history, branches, memberships: [...memberships.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, value]) => value) };
  });

function asContent(generated: Generated) {
  return { header: HEADER, service: materialisedService(), ...generated };
}

function expectSame(read: ReadBack, generated: Generated): void {
  expect(read.records).toEqual(generated.records);
  expect(read.history).toEqual(generated.history);
  expect(read.branches).toEqual(generated.branches);
  expect(read.memberships).toEqual(generated.memberships);
}

type Mutation =
  | { readonly kind: 'flip'; readonly at: number; readonly mask: number }
  | { readonly kind: 'set'; readonly at: number; readonly value: number }
  | { readonly kind: 'insert'; readonly at: number; readonly value: number }
  | { readonly kind: 'delete'; readonly at: number; readonly length: number }
  | { readonly kind: 'truncate'; readonly at: number }
  | { readonly kind: 'repeat'; readonly at: number; readonly length: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), mask: fc.integer({ min: 1, max: 255 }) }),
  fc.record({ kind: fc.constant('set' as const), at: fc.nat(), value: fc.constantFrom(0x0a, 0x0d, 0x22, 0x2c, 0x30, 0x31, 0x5c, 0x7b, 0x7d, 0xc3, 0xff) }),
  fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), length: fc.integer({ min: 1, max: 80 }) }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('repeat' as const), at: fc.nat(), length: fc.integer({ min: 1, max: 400 }) }),
);

function mutate(bytes: Buffer, change: Mutation): Buffer {
  const at = change.at % bytes.length;
  switch (change.kind) {
    case 'flip': {
      const out = Buffer.from(bytes);
      out[at] = (out[at] as number) ^ change.mask;
      return out;
    }
    case 'set': {
      const out = Buffer.from(bytes);
      out[at] = change.value;
      return out;
    }
    case 'insert':
      return Buffer.concat([bytes.subarray(0, at), Buffer.from([change.value]), bytes.subarray(at)]);
    case 'delete':
      return Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + change.length)]);
    case 'truncate':
      return bytes.subarray(0, at);
    case 'repeat':
      return Buffer.concat([bytes.subarray(0, at + change.length), bytes.subarray(at)]);
  }
}

describe('properties', () => {
  it('random valid content round-trips exactly and re-exports byte-identically', async () => {
    await fc.assert(
      fc.asyncProperty(content, fc.integer({ min: 1, max: 512 }), async (generated, chunkSize) => {
        const { bytes, summary } = await writeToBytes(asContent(generated));
        const read = await readAll(bytes, chunkSize);
        expectSame(read, generated);
        expect(read.summary).toEqual(summary);
        const again = await writeToBytes(asContent({ records: read.records, history: read.history, branches: read.branches, memberships: read.memberships }));
        expect(again.bytes.equals(bytes)).toBe(true);
      }),
      { numRuns: 60 },
    );
  });

  it('random damage never crashes the reader and is refused or harmless', async () => {
    await fc.assert(
      fc.asyncProperty(content, fc.array(mutation, { minLength: 1, maxLength: 3 }), async (generated, changes) => {
        const { bytes } = await writeToBytes(asContent(generated));
        const damaged = changes.reduce((current, change) => (current.length === 0 ? current : mutate(current, change)), bytes);
        let read: ReadBack;
        try {
          read = await readAll(damaged, 97);
        } catch (error) {
          if (error instanceof BundleInvalidError) return;
          throw error;
        }
        expect(damaged.equals(bytes)).toBe(true);
        expectSame(read, generated);
      }),
      { numRuns: 300 },
    );
  });
});
