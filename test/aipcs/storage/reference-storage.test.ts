// The reference implementation's storage conformance cases
// (tests/storage_contracts/data_conformance.py, portable_conformance.py and
// the SQLite/PostgreSQL tests that bind them, of randallcmark/aipcs-mcp),
// replayed against our application and operator use cases on SQLite and on
// every PostgreSQL cluster of the test setup. Only what a client or operator
// can observe is compared: results and error codes, artefact bytes, import
// refusals, what a transfer leaves behind. Facts only; the code is ours.

import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createApplication, type Application, type Operator, type OperatorStoragePorts } from '../../../src/aipcs/core/application.js';
import { TRANSFER_CODEC } from '../../../src/aipcs/compose.js';
import { doctorReport } from '../../../src/aipcs/core/admin-reports.js';
import { openPostgresStorage, openPostgresStorageForAdmin } from '../../../src/aipcs/storage/postgres/index.js';
import { openSqliteStorage } from '../../../src/aipcs/storage/sqlite/index.js';
import { storeLayoutOf } from '../../../src/aipcs/core/layout.js';
import { SqliteServiceStores } from '../../../src/aipcs/storage/sqlite/service-store.js';
import { writeBundle, parseTimestamp27, type BundleContent, type BundleService } from '../../../src/aipcs/portable/index.js';
import { encodeFrame } from '../../../src/aipcs/portable/bundle-writer.js';
import { parseCanonicalLine } from '../../../src/aipcs/portable/canonical-json.js';
import { canonicalJson, type JsonObject } from '../../../src/common/json.js';
import { manifestToJson } from '../../../src/aipcs/contract/manifest/validate-manifest.js';
import { manifest, materialisedNotes, materialisedNotesStore } from '../../conformance/harness.js';
import { notesManifestV2, serverManaged } from '../../support/manifests.js';
import { testApplication, testOperator } from '../../support/operator.js';
import type { ClusterInfo } from '../../support/postgres-cluster.js';
import { createTestDatabase, expectClustersUnderCi, postgresClusters, queryRows, type TestDatabase } from '../../support/postgres.js';

const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');
const OP = (n: number): string => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;

interface Location {
  readonly backend: 'sqlite' | 'postgresql';
  open(): Promise<OperatorStoragePorts>;
  /** Removes the registry (and nothing else) while no storage is open. */
  dropRegistry(): Promise<void>;
}

function operatorOver(storage: OperatorStoragePorts, principalId: string): Operator {
  return testOperator(storage, { principalId, stepMicros: 7n });
}

function mcpOver(storage: OperatorStoragePorts, principalId: string): Application {
  return testApplication(storage, { principalId, startMicros: 1_790_000_000_000_000n });
}

async function rejects(promise: Promise<unknown>, code: string): Promise<void> {
  await expect(promise).rejects.toMatchObject({ code });
}

async function exportBytes(operator: Operator, serviceId: string, revision: bigint, operationId: string): Promise<{ bytes: Buffer; result: JsonObject }> {
  const chunks: Uint8Array[] = [];
  const result = await (operator.transfer as NonNullable<Operator['transfer']>).export({ serviceId, expectedServiceRevision: revision, operationId }, (chunk) => {
    chunks.push(Buffer.from(chunk));
  });
  return { bytes: Buffer.concat(chunks), result };
}

async function importBytes(operator: Operator, bytes: Buffer, operationId: string): Promise<JsonObject> {
  const artefact = await TRANSFER_CODEC.read(async function* () {
    yield bytes;
  });
  return (operator.transfer as NonNullable<Operator['transfer']>).import(operationId, artefact);
}

async function dryRun(bytes: Buffer): Promise<unknown> {
  return TRANSFER_CODEC.read(async function* () {
    yield bytes;
  });
}

const t = (text: string): bigint => {
  const micros = parseTimestamp27(text);
  if (micros === undefined) throw new Error(text);
  return micros;
};

// ---------------------------------------------------------------- the reference's logical fixture

/** uuid5-like, but ours: a stable v4-shaped id per (service, name). */
function derivedId(serviceId: string, name: string): string {
  const h = sha256(`${serviceId}/${name}`);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${((parseInt(h[16] as string, 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

const AT = t('2026-07-24T12:00:00.000000Z');
const LATER = t('2026-07-24T12:01:00.000000Z');

function fixtureManifest(): JsonObject {
  return {
    manifest_version: 2n,
    schema_version: 1n,
    entities: [
      {
        name: 'memory',
        attributes: [
          ...serverManaged(),
          { name: 'title', type: 'string', required: true },
          { name: 'rank', type: 'integer', required: true },
          { name: 'weight', type: 'number', required: true },
          { name: 'confirmed', type: 'boolean', required: true },
          { name: 'observed_at', type: 'datetime', required: true },
          { name: 'authority_id', type: 'uuid', required: true },
          { name: 'tags', type: 'string_list', required: true },
        ],
      },
    ],
    relationships: [],
    indices: [],
    query_patterns: ['Find memory by title and tags.'],
    discovery_facets: [{ entity: 'memory', field: 'title' }],
    migration_history: [],
    retrieval_guidance: 'Prefer confirmed memories with explicit authority.',
  };
}

/** The reference's portable fixture: an updated record, a deleted one (history only), a parent and a child branch, a primary and a related membership. */
function fixtureContent(serviceId: string, domainName: string, sourceBackend: 'sqlite' | 'postgresql'): BundleContent {
  const current = derivedId(serviceId, 'current');
  const deleted = derivedId(serviceId, 'deleted');
  const authority = derivedId(serviceId, 'authority');
  const parent = derivedId(serviceId, 'parent-branch');
  const child = derivedId(serviceId, 'child-branch');
  const created = { title: 'Initial memory', rank: 1n, weight: 1.25, confirmed: false, observed_at: '2026-07-24T12:00:00Z', authority_id: authority, tags: ['portable', 'initial'] };
  const now = { title: 'Portable memory', rank: 2n, weight: 2.5, confirmed: true, observed_at: '2026-07-24T12:01:00Z', authority_id: authority, tags: ['portable', 'verified'] };
  const retired = { title: 'Retired memory', rank: 3n, weight: 3.75, confirmed: true, observed_at: '2026-07-24T11:00:00Z', authority_id: authority, tags: ['retired'] };
  const history = [
    { entityName: 'memory', recordId: current, recordVersion: 1n, kind: 'create' as const, occurredAt: AT, before: null, after: created },
    { entityName: 'memory', recordId: current, recordVersion: 2n, kind: 'update' as const, occurredAt: LATER, before: created, after: now },
    { entityName: 'memory', recordId: deleted, recordVersion: 1n, kind: 'create' as const, occurredAt: AT, before: null, after: retired },
    { entityName: 'memory', recordId: deleted, recordVersion: 2n, kind: 'delete' as const, occurredAt: LATER, before: retired, after: null },
  ].sort((a, b) => (a.recordId < b.recordId ? -1 : a.recordId > b.recordId ? 1 : Number(a.recordVersion - b.recordVersion)));
  const branches = [
    { branchId: parent, slug: 'research', title: 'Research', intent: 'Durable research memory', branchType: 'topic', parentBranchId: null, status: 'active' as const, retrievalSummary: 'Portable research', createdAt: AT, updatedAt: LATER, branchRevision: 2n },
    { branchId: child, slug: 'portable', title: 'Portable', intent: 'Cross-backend memory', branchType: 'topic', parentBranchId: parent, status: 'active' as const, retrievalSummary: 'Backend-neutral state', createdAt: AT, updatedAt: LATER, branchRevision: 1n },
  ].sort((a, b) => (a.branchId < b.branchId ? -1 : 1));
  const memberships = [
    { branchId: child, entityName: 'memory', recordId: current, role: 'primary' as const },
    { branchId: parent, entityName: 'memory', recordId: current, role: 'related' as const },
  ].sort((a, b) => (a.branchId < b.branchId ? -1 : 1));
  const service: BundleService = {
    serviceId,
    domainName,
    domainClass: 'project',
    intentDescription: 'Cross-backend portable fixture',
    designState: 'materialised',
    operationalStatus: 'suspended',
    // As a store exports it: the normalised echo of the manifest.
    manifest: manifestToJson(manifest(fixtureManifest())),
    schemaVersion: 1,
    serviceRevision: 5n,
    createdAt: AT,
    updatedAt: LATER,
    lastActivityAt: LATER,
    materialisedAt: AT,
    exportFence: { generation: 7n, state: 'closed' },
  };
  return {
    header: { producerPackageVersion: '0.0.0-test', producerMcpContract: '1.2.0', createdAt: LATER, sourceBackend },
    service,
    records: [{ entityName: 'memory', recordId: current, recordVersion: 2n, createdAt: AT, updatedAt: LATER, createdVia: 'portable-fixture', fields: now }],
    history,
    branches,
    memberships,
  };
}

async function fixtureBytes(serviceId: string, domainName: string, sourceBackend: 'sqlite' | 'postgresql' = 'sqlite'): Promise<Buffer> {
  const chunks: Buffer[] = [];
  await writeBundle(fixtureContent(serviceId, domainName, sourceBackend), (chunk) => {
    chunks.push(Buffer.from(chunk));
  });
  return Buffer.concat(chunks);
}

const linesOf = (bytes: Buffer): string[] => bytes.toString('utf8').split('\n').slice(0, -1);

/** The member lines and the service line's payload: everything but the header (export time, backend) and the trailer. */
function logical(bytes: Buffer): string[] {
  return linesOf(bytes)
    .slice(1, -1)
    .map((line) => canonicalJson((parseCanonicalLine(line) as JsonObject)['payload']));
}

/** Rebuilds an artefact with one payload of `kind` changed and every digest recomputed (a canonical, digest-valid hostile artefact). */
function rewritePayload(bytes: Buffer, kind: string, update: JsonObject): Buffer {
  const lines = linesOf(bytes).slice(0, -1);
  let changed = false;
  const out: string[] = [];
  const sections = new Map<string, { count: number; text: string }>();
  for (const kindName of ['header', 'service', 'record', 'history', 'branch', 'branch_membership', 'audit']) sections.set(kindName, { count: 0, text: '' });
  for (const line of lines) {
    const frame = parseCanonicalLine(line) as JsonObject;
    let payload = frame['payload'] as JsonObject;
    if (!changed && frame['kind'] === kind) {
      payload = { ...payload, ...update };
      changed = true;
    }
    const text = `${encodeFrame(frame['kind'] as 'record', Number(frame['ordinal']), payload).text}\n`;
    out.push(text);
    const section = sections.get(frame['kind'] as string) as { count: number; text: string };
    section.count++;
    section.text += text;
  }
  expect(changed).toBe(true);
  const pre = out.join('');
  const trailer = {
    kind: 'trailer',
    ordinal: BigInt(out.length),
    payload: {
      pre_trailer_byte_count: BigInt(Buffer.byteLength(pre, 'utf8')),
      root_sha256: sha256(pre),
      sections: [...sections.entries()].map(([name, section]) => ({ count: BigInt(section.count), kind: name, sha256: sha256(section.text) })),
    },
  };
  return Buffer.from(`${pre}${canonicalJson(trailer)}\n`, 'utf8');
}

// ---------------------------------------------------------------- data parity (data_conformance.py)

function parityManifest(): JsonObject {
  return {
    manifest_version: 2n,
    schema_version: 1n,
    entities: [
      {
        name: 'note',
        attributes: [
          ...serverManaged(),
          { name: 'title', type: 'string', required: true },
          { name: 'rank', type: 'integer' },
          { name: 'tags', type: 'string_list', retrieval_mode: 'membership' },
          { name: 'parent_id', type: 'uuid' },
        ],
      },
    ],
    relationships: [{ name: 'note_parent_fk', from: { entity: 'note', field: 'parent_id' }, to: { entity: 'note', field: 'id' }, on_delete: 'restrict' }],
    indices: [{ name: 'note_title_idx', entity: 'note', fields: ['title'] }],
    query_patterns: ['Find notes by title or tag.'],
    discovery_facets: [
      { entity: 'note', field: 'title' },
      { entity: 'note', field: 'tags' },
    ],
    retrieval_guidance: 'Use exact title and membership tag filters.',
    migration_history: [],
  };
}

async function parityService(app: ReturnType<typeof mcpOver>): Promise<string> {
  const serviceId = (await app.lifecycle.seed({ domainName: 'parity', domainClass: 'test', intentDescription: 'Parity.', idempotencyKey: 'seed' }))['service_id'] as string;
  await app.lifecycle.design({ serviceId, manifest: manifest(parityManifest()), idempotencyKey: 'design' });
  await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'materialise' });
  return serviceId;
}

function dataParity(fresh: () => Promise<Location>): void {
  describe('data parity (reference data_conformance)', () => {
    it('CRUD, history, replay and changed requests, compare-and-set, principal isolation', async () => {
      const location = await fresh();
      const storage = await location.open();
      try {
        const app = mcpOver(storage, 'parity-principal');
        const other = mcpOver(storage, 'other-parity-principal');
        const serviceId = await parityService(app);
        const create = { serviceId, entityName: 'note', record: { title: 'first', rank: 1n, tags: ['alpha', 'shared'] }, idempotencyKey: 'create-first' };
        const created = (await app.records.create(create))['record'] as JsonObject;
        expect(created).toMatchObject({ record_version: 1n, fields: { title: 'first' } });
        expect((await app.records.create(create))['record']).toEqual(created);
        await rejects(app.records.create({ ...create, record: { title: 'changed' } }), 'changed_fingerprint');
        await rejects(other.records.get(serviceId, 'note', created['id'] as string), 'not_found');
        const id = created['id'] as string;
        const update = { serviceId, entityName: 'note', recordId: id, updates: { title: 'updated', rank: 2n }, expectedRecordVersion: 1n, idempotencyKey: 'update-first' };
        const updated = (await app.records.update(update))['record'] as JsonObject;
        expect(updated).toMatchObject({ record_version: 2n, fields: { title: 'updated' } });
        await rejects(app.records.update({ ...update, updates: { rank: 3n }, idempotencyKey: 'stale' }), 'stale_record_version');
        expect((await app.records.update(update))['record']).toEqual(updated);
        const del = { serviceId, entityName: 'note', recordId: id, expectedRecordVersion: 2n, idempotencyKey: 'delete-first' };
        expect(await app.records.delete(del)).toEqual({ id, record_version: 3n, replayed: false });
        expect(await app.records.delete(del)).toMatchObject({ record_version: 3n, replayed: true });
        const history = (await app.records.history({ serviceId, entityName: 'note', recordId: id, limit: 50, cursor: null }))['events'] as JsonObject[];
        expect(history.map((event) => [event['record_version'], event['event_kind'] ?? event['kind']])).toEqual([
          [1n, 'create'],
          [2n, 'update'],
          [3n, 'delete'],
        ]);
      } finally {
        await storage.close();
      }
    });

    it('ordering, scalar and membership filters, query-bound cursors, RESTRICT', async () => {
      const location = await fresh();
      const storage = await location.open();
      try {
        const app = mcpOver(storage, 'parity-principal');
        const serviceId = await parityService(app);
        const make = async (title: string, extra: JsonObject) => ((await app.records.create({ serviceId, entityName: 'note', record: { title, ...extra }, idempotencyKey: title }))['record'] as JsonObject)['id'] as string;
        // Ids are sequential here, so id order is creation order as in the reference's fixture.
        const parent = await make('a', { rank: 1n, tags: ['shared'] });
        const child = await make('b', { rank: 2n, tags: ['shared', 'b'], parent_id: parent });
        await make('c', { rank: 3n, tags: ['c'] });
        const first = await app.records.list({ serviceId, entityName: 'note', limit: 2, cursor: null, branch: null });
        const titles = (page: JsonObject) => (page['records'] as JsonObject[]).map((record) => (record['fields'] as JsonObject)['title']);
        expect(titles(first)).toEqual(['a', 'b']);
        expect((first['records'] as JsonObject[])[0]?.['fields']).toEqual({ parent_id: null, rank: 1n, tags: ['shared'], title: 'a' });
        const cursor = first['next_cursor'] as string;
        expect(typeof cursor).toBe('string');
        expect(titles(await app.records.list({ serviceId, entityName: 'note', limit: 2, cursor, branch: null }))).toEqual(['c']);
        expect(titles(await app.records.list({ serviceId, entityName: 'note', limit: 50, cursor: null, branch: null, filters: { tags: 'shared' } }))).toEqual(['a', 'b']);
        expect(titles(await app.records.list({ serviceId, entityName: 'note', limit: 50, cursor: null, branch: null, filters: { rank: 2n } }))).toEqual(['b']);
        // A list cursor does not continue a search.
        await rejects(app.records.list({ serviceId, entityName: 'note', limit: 2, cursor, branch: null, filters: { tags: 'shared' } }), 'validation_failed');
        await rejects(app.records.delete({ serviceId, entityName: 'note', recordId: parent, expectedRecordVersion: 1n, idempotencyKey: 'blocked-delete' }), 'constraint_violation');
        expect(await app.records.delete({ serviceId, entityName: 'note', recordId: child, expectedRecordVersion: 1n, idempotencyKey: 'delete-child' })).toEqual({ id: child, record_version: 2n, replayed: false });
        // A refused mutation keeps no claim on its key: the same request succeeds once the reference is gone.
        expect(await app.records.delete({ serviceId, entityName: 'note', recordId: parent, expectedRecordVersion: 1n, idempotencyKey: 'blocked-delete' })).toEqual({ id: parent, record_version: 2n, replayed: false });
        await rejects(app.records.create({ serviceId, entityName: 'note', record: { title: 'orphan', parent_id: '00000000-0000-4000-8000-0000000003e7' }, idempotencyKey: 'orphan' }), 'constraint_violation');
      } finally {
        await storage.close();
      }
    });

    it('branch compare-and-set and assignment, summary facets and samples, maintenance', async () => {
      const location = await fresh();
      const storage = await location.open();
      try {
        const app = mcpOver(storage, 'parity-principal');
        const serviceId = await parityService(app);
        const first = ((await app.records.create({ serviceId, entityName: 'note', record: { title: 'first', tags: ['shared'] }, idempotencyKey: 'first' }))['record'] as JsonObject)['id'] as string;
        const second = ((await app.records.create({ serviceId, entityName: 'note', record: { title: 'second', tags: ['shared'] }, idempotencyKey: 'second' }))['record'] as JsonObject)['id'] as string;
        const branchCommand = { serviceId, slug: 'main', title: 'Main', intent: 'Primary retrieval branch.', branchType: 'topic', parentBranchId: null, retrievalSummary: null, idempotencyKey: 'branch-main' };
        const branch = (await app.branches.create(branchCommand))['branch'] as JsonObject;
        expect((await app.branches.create(branchCommand))['branch']).toEqual(branch);
        const page = await app.branches.list({ serviceId, status: null, branchType: null, parentBranchId: null, limit: 1, cursor: null });
        expect((page['branches'] as JsonObject[]).map((value) => value['slug'])).toEqual(['main']);
        await rejects(app.branches.update({ serviceId, branchId: branch['id'] as string, expectedBranchRevision: 2n, updates: { title: 'stale' }, idempotencyKey: 'stale-branch' } as never), 'stale_branch_revision');
        const assign = { serviceId, branchId: branch['id'] as string, role: 'primary' as const, operation: 'assign' as const, records: [{ entityName: 'note', recordId: first, expectedRecordVersion: 1n }], idempotencyKey: 'assign-first' };
        const assigned = await app.branches.assign(assign);
        expect((assigned['records'] as JsonObject[])[0]).toMatchObject({ record_version: 2n });
        expect(await app.branches.assign(assign)).toMatchObject({ replayed: true });
        // test_data_store_records: a primary assignment is one history event whose before equals its after; assigning again changes nothing.
        const events = async () => (await app.records.history({ serviceId, entityName: 'note', recordId: first, limit: 50, cursor: null }))['events'] as JsonObject[];
        const afterAssign = await events();
        expect(afterAssign.map((event) => [event['record_version'], event['event_kind'] ?? event['kind']])).toEqual([
          [1n, 'create'],
          [2n, 'primary_assign'],
        ]);
        expect(afterAssign[1]?.['before']).toEqual(afterAssign[1]?.['after']);
        const again = await app.branches.assign({ ...assign, records: [{ entityName: 'note', recordId: first, expectedRecordVersion: 2n }], idempotencyKey: 'assign-first-no-op' });
        expect((again['records'] as JsonObject[])[0]).toMatchObject({ record_version: 2n });
        expect(await events()).toEqual(afterAssign);
        // An update that changes nothing keeps the branch revision.
        const noOp = { serviceId, branchId: branch['id'] as string, expectedBranchRevision: 1n, updates: { branchType: 'topic' }, suppliedUpdates: { branch_type: 'topic' }, idempotencyKey: 'branch-no-op' };
        expect((await app.branches.update(noOp as never))['branch']).toMatchObject({ branch_revision: 1n });
        expect(await app.branches.update(noOp as never)).toMatchObject({ replayed: true, branch: { branch_revision: 1n } });
        const summary = await app.discovery.summary({ serviceId, sample: 1 });
        expect(summary['record_counts']).toEqual([{ entity_name: 'note', count: 2n }]);
        expect(summary['unbranched_record_count']).toBe(1n);
        const facets = (summary['facets'] as JsonObject[]).map((facet) => [facet['field_name'], (facet['values'] as JsonObject[]).map((value) => value['value'])]);
        expect(facets).toEqual([
          ['tags', ['shared']],
          ['title', ['first', 'second']],
        ]);
        const scan = await app.maintenance.scan({ serviceId, entityName: null, branchId: null, scanTypes: ['unbranched'], staleAfterDays: 90, lowConfidenceBelow: 0.5, limit: 10 });
        expect((scan['candidates'] as JsonObject[]).map((candidate) => [candidate['scan_type'], (candidate['record'] as JsonObject)['id']])).toEqual([['unbranched', second]]);
      } finally {
        await storage.close();
      }
    });
  });
}

// ---------------------------------------------------------------- discovery (test_discovery_read_model.py)

const DAY = 86_400_000_000n;
const DISCOVERY_NOW = t('2026-07-23T12:00:00.000000Z');

function discoveryManifest(): JsonObject {
  return {
    manifest_version: 2n,
    schema_version: 1n,
    entities: [
      {
        name: 'memory',
        attributes: [
          ...serverManaged(),
          { name: 'title', type: 'string', required: true },
          { name: 'tags', type: 'string_list', retrieval_mode: 'membership' },
          { name: 'valid_until', type: 'datetime' },
          { name: 'confidence', type: 'number' },
          { name: 'status', type: 'string' },
          { name: 'source_ref', type: 'string' },
          { name: 'provenance_source', type: 'string' },
          { name: 'superseded_by', type: 'uuid' },
          { name: 'annotation', type: 'string', retrieval_mode: 'annotation' },
        ],
      },
      { name: 'plain', attributes: [...serverManaged(), { name: 'title', type: 'string', required: true }] },
    ],
    relationships: [],
    indices: [
      { name: 'memory_owner_idx', entity: 'memory', fields: ['owner_id'] },
      { name: 'plain_owner_idx', entity: 'plain', fields: ['owner_id'] },
    ],
    query_patterns: ['Find memory by status or tag.'],
    discovery_facets: [
      { entity: 'memory', field: 'owner_id' },
      { entity: 'memory', field: 'status' },
      { entity: 'memory', field: 'tags' },
    ],
    retrieval_guidance: 'Use declared facets before bounded samples.',
    migration_history: [],
  };
}

function discoveryCases(fresh: () => Promise<Location>): void {
  describe('discovery and maintenance (reference test_discovery_read_model)', () => {
    it('summarises and scans the reference fixture the same way', async () => {
      const location = await fresh();
      const storage = await location.open();
      try {
        let now = DISCOVERY_NOW - 200n * DAY;
        let counter = 0;
        const app = createApplication(storage, {
          principalId: 'discovery-principal',
          createdVia: 'mcp',
          nowMicros: () => now,
          // Increasing ids, so creation order is id order as in the fixture.
          uuid: () => `00000000-0000-4000-8000-${(++counter).toString(16).padStart(12, '0')}`,
          sha256,
        });
        const serviceId = (await app.lifecycle.seed({ domainName: 'discovery', domainClass: 'test', intentDescription: 'Discovery.', idempotencyKey: 'seed' }))['service_id'] as string;
        await app.lifecycle.design({ serviceId, manifest: manifest(discoveryManifest()), idempotencyKey: 'design' });
        await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'materialise' });
        const iso = (micros: bigint) => new Date(Number(micros / 1000n)).toISOString();
        const create = async (entityName: string, record: JsonObject, key: string) => ((await app.records.create({ serviceId, entityName, record, idempotencyKey: key }))['record'] as JsonObject)['id'] as string;
        now = DISCOVERY_NOW - 120n * DAY;
        const first = await create('memory', {
          title: 'first',
          tags: ['alpha', 'shared'],
          valid_until: iso(DISCOVERY_NOW - DAY),
          confidence: 0.1,
          status: 'superseded',
          source_ref: 'duplicate-source',
          superseded_by: '00000000-0000-4000-8000-0000000000ff',
          annotation: 'private-body-' + 'x'.repeat(1100),
        }, 'first');
        const plain = await create('plain', { title: 'plain' }, 'plain');
        // Assigning bumps a record's version and change time: the related
        // membership of `first` is made while it is still 120 days old.
        const branch = ((await app.branches.create({ serviceId, slug: 'current', title: 'Current', intent: 'Current decisions', branchType: 'topic', parentBranchId: null, retrievalSummary: 'Current branch', idempotencyKey: 'branch' }))['branch'] as JsonObject)['id'] as string;
        await app.branches.assign({ serviceId, branchId: branch, role: 'related', operation: 'assign', records: [{ entityName: 'memory', recordId: first, expectedRecordVersion: 1n }], idempotencyKey: 'related' });
        now = DISCOVERY_NOW - DAY;
        const second = await create('memory', { title: 'second', tags: ['beta', 'shared'], valid_until: iso(DISCOVERY_NOW + 30n * DAY), confidence: 0.9, status: 'active', source_ref: 'duplicate-source', annotation: 'short' }, 'second');
        const third = await create('memory', { title: 'third', tags: [] }, 'third');
        await app.branches.assign({ serviceId, branchId: branch, role: 'primary', operation: 'assign', records: [{ entityName: 'memory', recordId: second, expectedRecordVersion: 1n }], idempotencyKey: 'primary' });
        now = DISCOVERY_NOW;

        const summary = await app.discovery.summary({ serviceId, sample: 2 });
        expect(await app.discovery.summary({ serviceId, sample: 2 })).toEqual(summary);
        expect(summary['data_status']).toBe('ready');
        expect(summary['record_counts']).toEqual([
          { entity_name: 'memory', count: 3n },
          { entity_name: 'plain', count: 1n },
        ]);
        expect(summary['unbranched_record_count']).toBe(3n);
        expect((summary['facets'] as JsonObject[]).map((facet) => [facet['field_name'], (facet['values'] as JsonObject[]).map((value) => [value['value'], value['count']])])).toEqual([
          ['status', [['active', 1n], ['superseded', 1n]]],
          ['tags', [['shared', 2n], ['alpha', 1n], ['beta', 1n]]],
        ]);
        const cards = summary['branches'] as JsonObject[];
        expect(cards).toHaveLength(1);
        expect(cards[0]).toMatchObject({ branch: { id: branch }, primary_record_count: 1n, related_record_count: 1n });
        const samples = Object.fromEntries((summary['samples'] as JsonObject[]).map((entry) => [entry['entity_name'], (entry['records'] as JsonObject[]).map((record) => record['id'])]));
        expect(samples).toEqual({ memory: [first, second], plain: [plain] });
        expect(JSON.stringify(summary, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))).not.toContain('owner_id');

        const ALL = ['expired', 'stale', 'low_confidence', 'superseded', 'missing_authority', 'unbranched', 'duplicate_authority', 'blob_candidate'] as const;
        const scan = async (entityName: string, options: { limit?: number; branchId?: string | null } = {}) =>
          app.maintenance.scan({ serviceId, entityName, branchId: options.branchId ?? null, scanTypes: [...ALL], staleAfterDays: 90, lowConfidenceBelow: 0.5, limit: options.limit ?? 50 });
        const pairs = (result: JsonObject) => (result['candidates'] as JsonObject[]).map((candidate) => [candidate['scan_type'], (candidate['record'] as JsonObject)['id']]);
        const memory = await scan('memory');
        expect(pairs(memory)).toEqual([
          ['blob_candidate', first],
          ['duplicate_authority', first],
          ['duplicate_authority', second],
          ['expired', first],
          ['low_confidence', first],
          ['missing_authority', third],
          ['stale', first],
          ['superseded', first],
          ['unbranched', first],
          ['unbranched', third],
        ]);
        expect(memory['unavailable_scan_types']).toEqual([]);
        const rendered = JSON.stringify(memory, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
        expect(rendered).not.toContain('private-body');
        expect(rendered).not.toContain('duplicate-source');
        expect(pairs(await scan('memory', { limit: 4 }))).toEqual([
          ['blob_candidate', first],
          ['duplicate_authority', first],
          ['duplicate_authority', second],
          ['expired', first],
        ]);
        const scoped = pairs(await scan('memory', { branchId: branch }));
        expect(scoped.every(([, id]) => id === first || id === second)).toBe(true);
        const unavailable = await scan('plain');
        expect(unavailable['unavailable_scan_types']).toEqual(['blob_candidate', 'duplicate_authority', 'expired', 'low_confidence', 'missing_authority', 'superseded']);
        expect(pairs(unavailable)).toEqual([
          ['stale', plain],
          ['unbranched', plain],
        ]);
      } finally {
        await storage.close();
      }
    });
  });
}

// ---------------------------------------------------------------- transfer (portable_conformance.py)

function transferCases(fresh: () => Promise<Location>, other: () => Promise<Location>): void {
  describe('transfer (reference portable_conformance)', () => {
    it('imports the reference fixture, re-exports it member for member, and moves it on to the other backend and back', async () => {
      const serviceId = '71000000-0000-4000-8000-000000000001';
      const original = await fixtureBytes(serviceId, 'round_trip');
      const source = await fresh();
      const destination = await other();
      const sourceStorage = await source.open();
      const destinationStorage = await destination.open();
      try {
        const sourceOperator = operatorOver(sourceStorage, 'source-owner');
        const imported = await importBytes(sourceOperator, original, OP(1));
        expect(imported).toMatchObject({ operation: 'import', service: { service_id: serviceId, operational_status: 'suspended', service_revision: 5n, design_state: 'materialised', schema_version: 1n } });
        const exported = await exportBytes(sourceOperator, serviceId, 5n, OP(2));
        expect(logical(exported.bytes)).toEqual(logical(original));
        const text = exported.bytes.toString('utf8');
        expect(text).not.toContain('source-owner');
        expect(text).not.toContain('"principal');
        expect(text).not.toContain('svc_');
        expect(text).toContain(`"source_backend":"${source.backend}"`);

        const destinationOperator = operatorOver(destinationStorage, 'destination-owner');
        const moved = await importBytes(destinationOperator, exported.bytes, OP(3));
        expect(moved['service']).toMatchObject({ service_id: serviceId, storage: { backend: destination.backend, namespace: `svc_${serviceId.replaceAll('-', '')}` } });
        const back = await exportBytes(destinationOperator, serviceId, 5n, OP(4));
        expect(logical(back.bytes)).toEqual(logical(original));
        // The source is untouched by the move.
        expect(logical((await exportBytes(sourceOperator, serviceId, 5n, OP(2))).bytes)).toEqual(logical(original));
        // What MCP then reads on the destination: the record, the deleted record's history, both branches.
        await destinationOperator.operations.transition({ kind: 'resume', serviceId, expectedServiceRevision: 5n, operationId: OP(5) });
        const app = mcpOver(destinationStorage, 'destination-owner');
        const current = derivedId(serviceId, 'current');
        expect(await app.records.get(serviceId, 'memory', current)).toMatchObject({
          id: current,
          record_version: 2n,
          created_via: 'portable-fixture',
          // Contract §5.1: a whole second renders without the fraction.
          created_at: '2026-07-24T12:00:00Z',
          updated_at: '2026-07-24T12:01:00Z',
          fields: { title: 'Portable memory', rank: 2n, weight: 2.5, confirmed: true, observed_at: '2026-07-24T12:01:00Z', tags: ['portable', 'verified'] },
        });
        await rejects(app.records.get(serviceId, 'memory', derivedId(serviceId, 'deleted')), 'not_found');
        const history = (await app.records.history({ serviceId, entityName: 'memory', recordId: derivedId(serviceId, 'deleted'), limit: 10, cursor: null }))['events'] as JsonObject[];
        expect(history.map((event) => event['record_version'])).toEqual([1n, 2n]);
      } finally {
        await sourceStorage.close();
        await destinationStorage.close();
      }
    });

    it('a dry run and hostile closed payloads write nothing', async () => {
      const serviceId = '72000000-0000-4000-8000-000000000001';
      const original = await fixtureBytes(serviceId, 'validation');
      const location = await fresh();
      const storage = await location.open();
      try {
        const operator = operatorOver(storage, 'destination-owner');
        await expect(dryRun(original)).resolves.toBeDefined();
        await rejects(dryRun(rewritePayload(original, 'service', { principal_id: 'hostile' })), 'validation_failed');
        await rejects(dryRun(rewritePayload(original, 'header', { export_format_version: 2n })), 'validation_failed');
        await rejects(dryRun(rewritePayload(original, 'header', { producer_package: 'aipcs-mcp' })), 'validation_failed');
        await rejects(dryRun(rewritePayload(original, 'service', { unexpected: true })), 'validation_failed');
        await rejects(operator.application.lifecycle.inspect(serviceId), 'not_found');
        expect(await storage.stores.isAbsent({ backend: location.backend, namespace: `svc_${serviceId.replaceAll('-', '')}` })).toBe(true);
      } finally {
        await storage.close();
      }
    });

    it('refuses domain and service-id collisions with already_exists before staging', async () => {
      const serviceId = '73000000-0000-4000-8000-000000000001';
      const original = await fixtureBytes(serviceId, 'collision');
      const location = await fresh();
      const storage = await location.open();
      try {
        const operator = operatorOver(storage, 'destination-owner');
        // Same domain, another service id.
        await importBytes(operator, await fixtureBytes('73000000-0000-4000-8000-000000000002', 'collision'), OP(1));
        await rejects(importBytes(operator, original, OP(2)), 'already_exists');
        // Same service id, another domain.
        await rejects(importBytes(operator, await fixtureBytes('73000000-0000-4000-8000-000000000002', 'other_domain'), OP(3)), 'already_exists');
        expect(await storage.stores.isAbsent({ backend: location.backend, namespace: `svc_${serviceId.replaceAll('-', '')}` })).toBe(true);
      } finally {
        await storage.close();
      }
    });

    it('walks the operational matrix, purges with the receipt, and refuses the purged id on import', async () => {
      const serviceId = '74000000-0000-4000-8000-000000000001';
      const location = await fresh();
      const storage = await location.open();
      try {
        const operator = operatorOver(storage, 'owner');
        await importBytes(operator, await fixtureBytes(serviceId, 'lifecycle'), OP(1));
        const steps = [
          ['resume', 5n],
          ['suspend', 6n],
          ['archive', 7n],
          ['restore', 8n],
          ['archive', 9n],
        ] as const;
        for (const [index, [kind, revision]] of steps.entries()) {
          await operator.operations.transition({ kind, serviceId, expectedServiceRevision: revision, operationId: OP(10 + index) });
        }
        expect(await operator.application.lifecycle.inspect(serviceId)).toMatchObject({ operational_status: 'archived', service_revision: 10n });
        const { bytes, result } = await exportBytes(operator, serviceId, 10n, OP(20));
        const receiptId = (result['receipt'] as JsonObject)['receipt_id'] as string;
        const purged = await operator.operations.purge({ serviceId, expectedServiceRevision: 10n, operationId: OP(21), authority: { kind: 'verified_receipt', receiptId } });
        expect(purged).toMatchObject({ operation: 'purge', tombstone: { service_id: serviceId, authority: 'verified_receipt', receipt_id: receiptId } });
        await rejects(operator.application.lifecycle.inspect(serviceId), 'not_found');
        expect(await storage.stores.isAbsent({ backend: location.backend, namespace: `svc_${serviceId.replaceAll('-', '')}` })).toBe(true);
        await rejects(importBytes(operator, bytes, OP(22)), 'already_exists');
      } finally {
        await storage.close();
      }
    });

    it('an import meeting a store it did not stage adopts it when it holds the artefact exactly, and is recovery_required when it differs', async () => {
      // The registry is lost (its schema dropped, its file removed) while the
      // service store stays: the state a crash of the reference's import
      // between staging and publication leaves, as its fake store models it.
      const serviceId = '76000000-0000-4000-8000-000000000001';
      const bytes = await fixtureBytes(serviceId, 'leftover');
      const changed = rewritePayload(bytes, 'record', { created_via: 'someone-else' });
      for (const [artefact, outcome] of [
        [bytes, 'completed'],
        [changed, 'recovery_required'],
      ] as const) {
        const location = await fresh();
        let storage = await location.open();
        await importBytes(operatorOver(storage, 'owner'), bytes, OP(1));
        await storage.close();
        await location.dropRegistry();
        storage = await location.open();
        try {
          const operator = operatorOver(storage, 'owner');
          if (outcome === 'completed') {
            expect(await importBytes(operator, artefact, OP(2))).toMatchObject({ operation: 'import', service: { service_id: serviceId } });
            expect(logical((await exportBytes(operator, serviceId, 5n, OP(3))).bytes)).toEqual(logical(bytes));
          } else {
            await rejects(importBytes(operator, artefact, OP(2)), 'recovery_required');
            await rejects(importBytes(operator, artefact, OP(2)), 'recovery_required');
            await rejects(operator.application.lifecycle.inspect(serviceId), 'not_found');
          }
        } finally {
          await storage.close();
        }
      }
    });

    it('an explicit override purges without an export receipt', async () => {
      const serviceId = '75000000-0000-4000-8000-000000000001';
      const location = await fresh();
      const storage = await location.open();
      try {
        const operator = operatorOver(storage, 'owner');
        const bytes = rewritePayload(await fixtureBytes(serviceId, 'override_purge'), 'service', { operational_status: 'archived' });
        await importBytes(operator, bytes, OP(1));
        const purged = await operator.operations.purge({ serviceId, expectedServiceRevision: 5n, operationId: OP(2), authority: { kind: 'explicit_override' } });
        expect(purged).toMatchObject({ tombstone: { service_id: serviceId, authority: 'explicit_override', receipt_id: null } });
        expect(await storage.stores.isAbsent({ backend: location.backend, namespace: `svc_${serviceId.replaceAll('-', '')}` })).toBe(true);
      } finally {
        await storage.close();
      }
    });
  });
}

const bases: string[] = [];
afterAll(() => {
  for (const base of bases) rmSync(base, { recursive: true, force: true });
});

// ---------------------------------------------------------------- SQLite store drift (test_domain_schema_drift.py)

/**
 * What `aipcs doctor --service` reports for a store changed behind the
 * product's back, and that reporting leaves the file as it was. The
 * reference refuses views and triggers as a store foundation that is not
 * ready, and an extra or missing table or index, a changed column, SQLite's
 * statistics tables (ANALYZE) and rows whose references dangle (written
 * with foreign keys off) as an incompatible domain layout.
 */
/**
 * Edits an object's stored CREATE text in place, as a hand edit of a store
 * would (the file is opened in unsafe mode for it): changes such as a
 * collation or a CHECK that no pragma lists.
 */
function rewriteSchema(name: string, from: string, to: string): string[] {
  const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;
  return ['PRAGMA writable_schema = ON', `UPDATE sqlite_schema SET sql = replace(sql, ${quote(from)}, ${quote(to)}) WHERE name = ${quote(name)}`, 'PRAGMA writable_schema = OFF'];
}

const SQLITE_DRIFT: readonly [string, readonly string[], 'foundation' | 'layout'][] = [
  ['an extra table', ['CREATE TABLE "unrelated" ("id" TEXT PRIMARY KEY NOT NULL) STRICT'], 'layout'],
  // Only "sqlite_" names are SQLite's own; the reference names its intruders so on purpose.
  ['an extra table named sqlite… without the underscore', ['CREATE TABLE "sqliteevil" ("id" TEXT PRIMARY KEY NOT NULL) STRICT'], 'layout'],
  ['an extra index', ['CREATE INDEX "project_owner_extra_idx" ON "project" ("owner_id")'], 'layout'],
  // A unique index refuses rows whatever its name: never ignored as a left-behind equality index is.
  ['a unique index named like an equality index', ['CREATE UNIQUE INDEX "__aipcs_eq_project.extra" ON "project" ("code")'], 'layout'],
  ['a missing table', ['DROP TABLE "note"'], 'layout'],
  ['an added column', ['ALTER TABLE "project" ADD COLUMN "unexpected" TEXT'], 'layout'],
  ['statistics from ANALYZE', ['ANALYZE'], 'layout'],
  [
    'a row whose reference dangles',
    [
      'PRAGMA foreign_keys = OFF',
      `INSERT INTO "note" ("id", "owner_id", "created_at", "updated_at", "created_via", "record_version", "title", "project_id") VALUES ('11111111-1111-4111-8111-111111111111', 'agent-a', '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z', 'mcp', 1, 'Orphan', '22222222-2222-4222-8222-222222222222')`,
    ],
    'layout',
  ],
  ['a collation on a domain column', rewriteSchema('project', '"name" TEXT NOT NULL', '"name" TEXT NOT NULL COLLATE NOCASE'), 'layout'],
  ['a CHECK on a domain column', rewriteSchema('project', '"code" TEXT', `"code" TEXT CHECK ("code" <> 'x')`), 'layout'],
  // A CHECK spelled in our words only.
  ['a CHECK of our words on a domain column', rewriteSchema('project', '"code" TEXT', '"code" TEXT CHECK ("code" NOT NULL)'), 'layout'],
  ['a default on a domain column', rewriteSchema('project', '"code" TEXT', `"code" TEXT DEFAULT 'x'`), 'layout'],
  ['a domain table no longer STRICT', rewriteSchema('project', ') STRICT', ')'), 'layout'],
  // Each of these leaves only our words in the table's text: the column and reference lists must see them.
  ['a NOT NULL dropped from a domain column', rewriteSchema('project', '"name" TEXT NOT NULL', '"name" TEXT'), 'layout'],
  ['a reference dropped from a domain table', rewriteSchema('note', ',\n  CONSTRAINT "note_project_fk" FOREIGN KEY ("project_id") REFERENCES "project" ("id") ON DELETE RESTRICT ON UPDATE RESTRICT', ''), 'layout'],
  ["a reference's update action dropped", rewriteSchema('note', ' ON UPDATE RESTRICT', ''), 'layout'],
  ['a CHECK dropped from a bookkeeping table', rewriteSchema('__aipcs_write_fence', ` CHECK (state IN ('open', 'closed'))`, ''), 'foundation'],
  ['a bookkeeping index dropped', ['DROP INDEX "__aipcs_record_history_record"'], 'foundation'],
  ["a bookkeeping partial index's condition changed", rewriteSchema('__aipcs_record_branch_one_primary', `role = 'primary'`, `role = 'related'`), 'foundation'],
  ['a view', ['CREATE VIEW "project_view" AS SELECT "id" FROM "project"'], 'foundation'],
  ['a trigger', ['CREATE TRIGGER "project_trigger" AFTER INSERT ON "project" BEGIN SELECT 1; END'], 'foundation'],
  ['a trigger named sqlite… without the underscore', ['CREATE TRIGGER "sqliteevil" AFTER INSERT ON "project" BEGIN SELECT 1; END'], 'foundation'],
];

describe('SQLite store drift (reference test_domain_schema_drift)', () => {
  it.each(SQLITE_DRIFT)('%s is reported by doctor and left as it is', async (_name, statements, level) => {
    const dataRoot = join(mkdtempSync(join(tmpdir(), 'aipcs-drift-')), 'data');
    bases.push(dirname(dataRoot));
    const open = () => openSqliteStorage({ dataRoot, busyTimeoutMs: 5000, defaultRoot: false });
    let storage = await open();
    const { serviceId, namespace, app } = await materialisedNotes(storage);
    await app.records.create({ serviceId, entityName: 'project', record: { name: 'P' }, idempotencyKey: 'p1' });
    const doctor = async () => {
      const report = await doctorReport(
        { profile: 'sqlite', backend: 'sqlite', registry: { status: 'ready', appliedRevision: 4n, targetRevision: 4n, reason: null }, storage, lifecycle: app.lifecycle, principalId: 'agent-a' },
        serviceId,
      );
      return Object.fromEntries((report['checks'] as JsonObject[]).map((check) => [check['check_id'], [check['status'], check['issue_code']]]));
    };
    expect(await doctor()).toMatchObject({ service_store_migration: ['pass', null], domain_schema: ['pass', null] });
    await storage.close();

    const file = join(dataRoot, 'service-stores', `${namespace}.sqlite`);
    const db = new Database(file);
    db.unsafeMode(true);
    for (const statement of statements) db.exec(statement);
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
    const before = sha256(readFileSync(file).toString('base64'));

    storage = await open();
    try {
      const checks = await doctor();
      if (level === 'foundation') {
        expect(checks).toMatchObject({ service_store_migration: ['fail', 'storage_incompatible'], domain_schema: ['warning', 'domain_schema_not_inspectable'] });
        // Its meta row still names our revision, which the state keeps, as the reference's does.
        expect(await storage.stores.inspect({ backend: 'sqlite', namespace })).toMatchObject({ status: 'incompatible', appliedRevision: 1n });
      } else expect(checks).toMatchObject({ service_store_migration: ['pass', null], domain_schema: ['fail', 'domain_schema_incompatible'] });
    } finally {
      await storage.close();
    }
    expect(sha256(readFileSync(file).toString('base64'))).toBe(before);
  });
});

// Ops spec §3.2.6: the namespace binds a store file to its locator, and a copy under another name never reports ready.
describe("a copy of another service's SQLite store", () => {
  /** Two materialised stores, the second replaced by a copy of the first's file (its fence closed first when asked), reopened. */
  async function copiedStore(closeFirstFence: boolean) {
    const dataRoot = join(mkdtempSync(join(tmpdir(), 'aipcs-copied-store-')), 'data');
    bases.push(dirname(dataRoot));
    const open = () => openSqliteStorage({ dataRoot, busyTimeoutMs: 5000, defaultRoot: false });
    const before = await open();
    const first = await materialisedNotesStore(before, 'first');
    const second = await materialisedNotesStore(before, 'second');
    if (closeFirstFence) expect(await before.stores.changeFence(first.locator, { generation: 1n, state: 'open' }, 'closed')).toEqual({ generation: 2n, state: 'closed' });
    await before.close();
    const file = (namespace: string) => join(dataRoot, 'service-stores', `${namespace}.sqlite`);
    for (const end of ['', '-wal', '-shm']) rmSync(file(second.locator.namespace) + end, { force: true });
    copyFileSync(file(first.locator.namespace), file(second.locator.namespace));
    return { storage: await open(), first, second };
  }

  it('is observed incompatible, a materialise over it refuses, and the original stays ready', async () => {
    const { storage, first, second } = await copiedStore(false);
    try {
      expect(await storage.stores.observe(second.locator, second.layout)).toEqual({ state: 'incompatible' });
      await expect(storage.stores.materialise(second.locator, second.layout)).rejects.toMatchObject({ kind: 'incompatible' });
      expect(await storage.stores.observe(first.locator, first.layout)).toEqual({ state: 'ready' });
    } finally {
      await storage.close();
    }
  });

  it('is not removed, even with its fence closed', async () => {
    const { storage, second } = await copiedStore(true);
    try {
      await expect(storage.stores.remove(second.locator, second.layout)).rejects.toMatchObject({ kind: 'incompatible' });
      expect(await storage.stores.isAbsent(second.locator)).toBe(false);
    } finally {
      await storage.close();
    }
  });
});

// A row whose reference dangles can only come from outside: the store is no longer the layout an evolve starts from.
describe('a SQLite store holding a dangling reference', () => {
  it('is not evolved, and keeps its layout', async () => {
    const dataRoot = join(mkdtempSync(join(tmpdir(), 'aipcs-dangling-evolve-')), 'data');
    bases.push(dirname(dataRoot));
    const open = () => openSqliteStorage({ dataRoot, busyTimeoutMs: 5000, defaultRoot: false });
    let storage = await open();
    const { locator, layout } = await materialisedNotesStore(storage);
    await storage.close();
    const db = new Database(join(dataRoot, 'service-stores', `${locator.namespace}.sqlite`));
    db.pragma('foreign_keys = OFF');
    db.exec(`INSERT INTO "note" ("id", "owner_id", "created_at", "updated_at", "created_via", "record_version", "title", "project_id") VALUES ('11111111-1111-4111-8111-111111111111', 'agent-a', '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z', 'mcp', 1, 'Orphan', '22222222-2222-4222-8222-222222222222')`);
    db.close();
    storage = await open();
    try {
      await expect(storage.stores.evolve(locator, layout, storeLayoutOf(manifest(notesManifestV2())))).rejects.toMatchObject({ kind: 'incompatible' });
      expect(await storage.stores.observe(locator, layout)).toEqual({ state: 'incompatible' });
    } finally {
      await storage.close();
    }
    const after = new Database(join(dataRoot, 'service-stores', `${locator.namespace}.sqlite`), { readonly: true });
    try {
      expect(after.prepare(`SELECT count(*) FROM sqlite_schema WHERE name = 'person'`).pluck().get()).toBe(0);
    } finally {
      after.close();
    }
  });
});

// An operator's read-only inspection opens stores as they are: it must classify, not repair.
describe('SQLite stores inspected read-only', () => {
  it('reports a store moved out of WAL incompatible and an empty store file uninitialised', async () => {
    const dataRoot = join(mkdtempSync(join(tmpdir(), 'aipcs-inspect-readonly-')), 'data');
    bases.push(dirname(dataRoot));
    const storage = await openSqliteStorage({ dataRoot, busyTimeoutMs: 5000, defaultRoot: false });
    const { locator } = await materialisedNotesStore(storage);
    await storage.close();
    const db = new Database(join(dataRoot, 'service-stores', `${locator.namespace}.sqlite`));
    db.pragma('journal_mode = DELETE');
    db.close();
    const empty = { backend: 'sqlite' as const, namespace: `svc_${'0'.repeat(32)}` };
    writeFileSync(join(dataRoot, 'service-stores', `${empty.namespace}.sqlite`), '', { mode: 0o600 });
    const stores = new SqliteServiceStores({ dataRoot, busyTimeoutMs: 5000, readonly: true });
    try {
      expect(await stores.inspect(locator)).toMatchObject({ status: 'incompatible', appliedRevision: 1n });
      expect(await stores.inspect(empty)).toMatchObject({ status: 'uninitialised', appliedRevision: 0n });
    } finally {
      await stores.close();
    }
  });

  it('never removes a store, even one whose fence is closed', async () => {
    const dataRoot = join(mkdtempSync(join(tmpdir(), 'aipcs-remove-readonly-')), 'data');
    bases.push(dirname(dataRoot));
    const storage = await openSqliteStorage({ dataRoot, busyTimeoutMs: 5000, defaultRoot: false });
    const { locator } = await materialisedNotesStore(storage);
    expect(await storage.stores.changeFence(locator, { generation: 1n, state: 'open' }, 'closed')).toEqual({ generation: 2n, state: 'closed' });
    await storage.close();
    const stores = new SqliteServiceStores({ dataRoot, busyTimeoutMs: 5000, readonly: true });
    try {
      await expect(stores.remove(locator)).rejects.toMatchObject({ kind: 'unavailable' });
      expect(await stores.isAbsent(locator)).toBe(false);
      expect(await stores.inspect(locator)).toMatchObject({ status: 'ready' });
    } finally {
      await stores.close();
    }
  });
});

// ---------------------------------------------------------------- WAL sidecars (test_wal_sidecar_security.py)

describe('SQLite WAL files beside a database that is not in WAL mode (reference test_wal_sidecar_security)', () => {
  const privateFile = (path: string, text: string) => {
    writeFileSync(path, text);
    chmodSync(path, 0o600);
  };
  const rollbackDatabase = (path: string) => {
    const db = new Database(path);
    db.pragma('journal_mode = DELETE');
    db.exec('CREATE TABLE x (a)');
    db.close();
    chmodSync(path, 0o600);
  };
  const cases = (['empty', 'rollback'] as const).flatMap((database) => (['-wal', '-shm'] as const).map((suffix) => [database, suffix] as const));

  it.each(cases)('a registry (%s database) with an untrusted %s is refused and the file left alone', async (database, suffix) => {
    const base = mkdtempSync(join(tmpdir(), 'aipcs-sidecar-'));
    bases.push(base);
    const dataRoot = join(base, 'data');
    mkdirSync(dataRoot, { mode: 0o700 });
    const file = join(dataRoot, 'registry.sqlite');
    if (database === 'empty') privateFile(file, '');
    else rollbackDatabase(file);
    privateFile(file + suffix, 'untrusted sidecar');
    await expect(openSqliteStorage({ dataRoot, busyTimeoutMs: 1000, defaultRoot: false })).rejects.toThrow();
    expect(readFileSync(file + suffix, 'utf8')).toBe('untrusted sidecar');
  });

  it.each(cases)('a service store (%s database) with an untrusted %s is unavailable to inspection and data tools, and left alone', async (database, suffix) => {
    const base = mkdtempSync(join(tmpdir(), 'aipcs-sidecar-'));
    bases.push(base);
    const dataRoot = join(base, 'data');
    const open = () => openSqliteStorage({ dataRoot, busyTimeoutMs: 1000, defaultRoot: false });
    let storage = await open();
    const { serviceId, namespace } = await materialisedNotes(storage);
    await storage.close();
    const file = join(dataRoot, 'service-stores', `${namespace}.sqlite`);
    for (const end of ['', '-wal', '-shm']) rmSync(file + end, { force: true });
    if (database === 'empty') privateFile(file, '');
    else rollbackDatabase(file);
    privateFile(file + suffix, 'untrusted sidecar');
    storage = await open();
    try {
      expect(await storage.stores.inspect({ backend: 'sqlite', namespace })).toMatchObject({ status: 'unavailable' });
      const app = createApplication(storage, { principalId: 'agent-a', createdVia: 'mcp', nowMicros: () => 1_800_000_000_000_000n, uuid: () => OP(77), sha256 });
      await rejects(app.records.list({ serviceId, entityName: 'note', limit: 5, cursor: null, branch: null }), 'storage_unavailable');
      await rejects(app.records.create({ serviceId, entityName: 'note', record: { title: 'x' }, idempotencyKey: 'x' }), 'storage_unavailable');
    } finally {
      await storage.close();
    }
    expect(readFileSync(file + suffix, 'utf8')).toBe('untrusted sidecar');
  });
});

// ---------------------------------------------------------------- backends

function sqliteLocation(): Promise<Location> {
  const base = mkdtempSync(join(tmpdir(), 'aipcs-'));
  bases.push(base);
  const dataRoot = join(base, 'data');
  return Promise.resolve({
    backend: 'sqlite',
    open: () => openSqliteStorage({ dataRoot, busyTimeoutMs: 5000, defaultRoot: false }),
    dropRegistry: async () => {
      for (const suffix of ['', '-wal', '-shm']) rmSync(join(dataRoot, `registry.sqlite${suffix}`), { force: true });
    },
  });
}

expectClustersUnderCi();
const clusters = postgresClusters();

function postgresLocations(cluster: ClusterInfo): { fresh: () => Promise<Location>; dispose: () => Promise<void> } {
  const databases: TestDatabase[] = [];
  return {
    async fresh() {
      const database = await createTestDatabase(cluster);
      databases.push(database);
      return {
        backend: 'postgresql',
        open: () => openPostgresStorage({ dsn: database.url, connectTimeoutSeconds: 10, lockTimeoutMs: 5000, statementTimeoutMs: 30000 }),
        dropRegistry: async () => {
          await queryRows(database.url, 'DROP SCHEMA "aipcs_registry" CASCADE');
        },
      };
    },
    async dispose() {
      for (const database of databases) await database.drop();
    },
  };
}

describe('SQLite', () => {
  dataParity(sqliteLocation);
  discoveryCases(sqliteLocation);
  transferCases(sqliteLocation, sqliteLocation);
});

describe.each(clusters.map((cluster) => [cluster.version, cluster] as const))('PostgreSQL %s', (_version, cluster: ClusterInfo) => {
  const pg = postgresLocations(cluster);
  afterAll(() => pg.dispose());
  dataParity(pg.fresh);
  discoveryCases(pg.fresh);
  transferCases(pg.fresh, pg.fresh);
  it('never adopts an existing empty registry schema: inspection says incompatible at revision 0 and a start refuses it (reference test_registry_integration)', async () => {
    const database = await createTestDatabase(cluster);
    try {
      await queryRows(database.url, 'CREATE SCHEMA "aipcs_registry" AUTHORIZATION CURRENT_USER');
      await queryRows(database.url, 'REVOKE ALL PRIVILEGES ON SCHEMA "aipcs_registry" FROM PUBLIC');
      const options = { dsn: database.url, connectTimeoutSeconds: 10, lockTimeoutMs: 5000, statementTimeoutMs: 30000 };
      const inspected = await openPostgresStorageForAdmin(options, { writable: false });
      expect(inspected.registry).toMatchObject({ status: 'incompatible', appliedRevision: 0n });
      expect(inspected.ports).toBeNull();
      await expect(openPostgresStorage(options)).rejects.toMatchObject({ kind: 'unavailable' });
      expect((await openPostgresStorageForAdmin(options, { writable: false })).registry).toMatchObject({ status: 'incompatible' });
    } finally {
      await database.drop();
    }
  });
  // A registry of ours whose structure drifted keeps the revision its meta row names, as the
  // reference's state does; one that others may use is not read (its revision is not ours to name).
  it.each([
    ['a CHECK constraint replaced by CHECK (true)', 'check', 1n],
    ['an index rebuilt on other columns', 'index', 1n],
    ['USAGE granted to PUBLIC', 'grant', null],
  ])('reports a registry with %s incompatible (reference test_registry_integration)', async (_name, change, appliedRevision) => {
    const database = await createTestDatabase(cluster);
    try {
      const options = { dsn: database.url, connectTimeoutSeconds: 10, lockTimeoutMs: 5000, statementTimeoutMs: 30000 };
      await (await openPostgresStorage(options)).close();
      if (change === 'check') {
        const [found] = await queryRows<{ conname: string; relname: string }>(
          database.url,
          `SELECT con.conname, c.relname FROM pg_constraint con JOIN pg_class c ON c.oid = con.conrelid WHERE c.relnamespace = 'aipcs_registry'::regnamespace AND con.contype = 'c' ORDER BY 2, 1 LIMIT 1`,
        );
        if (!found) throw new Error('no CHECK constraint in the registry');
        await queryRows(database.url, `ALTER TABLE "aipcs_registry"."${found.relname}" DROP CONSTRAINT "${found.conname}"`);
        await queryRows(database.url, `ALTER TABLE "aipcs_registry"."${found.relname}" ADD CONSTRAINT "${found.conname}" CHECK (true)`);
      } else if (change === 'index') {
        const [found] = await queryRows<{ index: string; relname: string }>(
          database.url,
          `SELECT i.relname AS index, t.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid WHERE t.relnamespace = 'aipcs_registry'::regnamespace AND NOT x.indisprimary AND NOT x.indisunique ORDER BY 1 LIMIT 1`,
        );
        if (!found) throw new Error('no plain index in the registry');
        await queryRows(database.url, `DROP INDEX "aipcs_registry"."${found.index}"`);
        await queryRows(database.url, `CREATE INDEX "${found.index}" ON "aipcs_registry"."${found.relname}" ((1))`);
      } else {
        await queryRows(database.url, 'GRANT USAGE ON SCHEMA "aipcs_registry" TO PUBLIC');
      }
      expect((await openPostgresStorageForAdmin(options, { writable: false })).registry).toMatchObject({ status: 'incompatible', appliedRevision });
      await expect(openPostgresStorage(options)).rejects.toMatchObject({ kind: 'unavailable' });
    } finally {
      await database.drop();
    }
  });
  describe('across backends', () => {
    transferCases(pg.fresh, sqliteLocation);
    transferCases(sqliteLocation, pg.fresh);
  });
});
