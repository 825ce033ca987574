// Two server processes over one SQLite data root, the second one's wall
// clock an hour behind the first's (or one clock stepped back by NTP). The
// timestamps a user reads must still tell the story in order: a record or
// service is never updated before it was created, a later change never
// carries an earlier time than the one before it, and history events of a
// record never go back in time.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createOperator, type OperatorStoragePorts } from '../../../src/aipcs/core/application.js';
import { openSqliteStorage } from '../../../src/aipcs/storage/sqlite/index.js';
import { manualClock, sequentialIds } from '../../../src/common/clock.js';
import type { JsonObject } from '../../../src/common/json.js';
import { notesManifest } from '../../support/manifests.js';
import { appOver, manifest, sha256, type TestApp } from '../../conformance/harness.js';

const HOUR = 3_600_000_000n;
const BASE = 1_800_000_000_000_000n;

/** A server timestamp as microseconds (the fraction is omitted when zero). */
function micros(text: unknown): bigint {
  const match = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{6}))?Z$/.exec(String(text));
  if (!match) throw new Error(`not a server timestamp: ${String(text)}`);
  return BigInt(Date.parse(`${match[1]}Z`)) * 1000n + BigInt(match[2] ?? '0');
}

describe('timestamps written by processes whose clocks disagree', () => {
  let base: string;
  let storages: OperatorStoragePorts[];
  let behindStorage: OperatorStoragePorts;
  let ahead: TestApp;
  let behind: TestApp;

  beforeEach(async () => {
    base = mkdtempSync(join(tmpdir(), 'aipcs-clock-'));
    const dataRoot = join(base, 'data');
    storages = [];
    const open = async (): Promise<OperatorStoragePorts> => {
      const storage = await openSqliteStorage({ dataRoot, busyTimeoutMs: 5000, defaultRoot: false });
      storages.push(storage);
      return storage;
    };
    ahead = appOver(await open(), { clock: manualClock(BASE + HOUR) });
    behindStorage = await open();
    behind = appOver(behindStorage, { clock: manualClock(BASE) });
  });

  afterEach(async () => {
    for (const storage of storages) await storage.close();
    rmSync(base, { recursive: true, force: true });
  });

  async function materialisedService(): Promise<string> {
    const seeded = await ahead.lifecycle.seed({ domainName: 'notes', domainClass: 'knowledge', intentDescription: 'Notes.', idempotencyKey: 's' });
    const serviceId = seeded['service_id'] as string;
    await ahead.lifecycle.design({ serviceId, manifest: manifest(notesManifest()), idempotencyKey: 'd' });
    await ahead.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'm' });
    return serviceId;
  }

  it('a record updated and deleted by the process behind: updated_at and history occurred_at never go back', async () => {
    const serviceId = await materialisedService();
    const created = (await ahead.records.create({ serviceId, entityName: 'note', record: { title: 'a' }, idempotencyKey: 'c1' }))['record'] as JsonObject;
    const id = created['id'] as string;
    const updated = (await behind.records.update({ serviceId, entityName: 'note', recordId: id, updates: { title: 'b' }, expectedRecordVersion: 1n, idempotencyKey: 'u1' }))['record'] as JsonObject;
    expect(micros(updated['updated_at'])).toBeGreaterThan(micros(created['updated_at']));
    expect(micros(updated['created_at'])).toBe(micros(created['created_at']));
    const again = (await behind.records.update({ serviceId, entityName: 'note', recordId: id, updates: { title: 'c' }, expectedRecordVersion: 2n, idempotencyKey: 'u2' }))['record'] as JsonObject;
    expect(micros(again['updated_at'])).toBeGreaterThan(micros(updated['updated_at']));
    expect(await behind.records.get(serviceId, 'note', id)).toEqual(again);
    await behind.records.delete({ serviceId, entityName: 'note', recordId: id, expectedRecordVersion: 3n, idempotencyKey: 'x1' });
    const events = (await ahead.records.history({ serviceId, entityName: 'note', recordId: id, limit: 50, cursor: null }))['events'] as JsonObject[];
    expect(events.map((event) => event['kind'])).toEqual(['create', 'update', 'update', 'delete']);
    const times = events.map((event) => micros(event['occurred_at']));
    for (let i = 1; i < times.length; i++) expect(times[i]).toBeGreaterThan(times[i - 1] as bigint);
    expect(times[1]).toBe(micros(updated['updated_at']));
  });

  it('a record stamped at the last instant a timestamp can name (as an import may carry): a later change stays readable', async () => {
    const serviceId = await materialisedService();
    // 9999-12-31T23:59:59.999999Z: one microsecond more has no Timestamp27.
    ahead.clock.set(253_402_300_799_999_999n - 1n);
    const created = (await ahead.records.create({ serviceId, entityName: 'note', record: { title: 'a' }, idempotencyKey: 'c1' }))['record'] as JsonObject;
    expect(created['updated_at']).toBe('9999-12-31T23:59:59.999999Z');
    const id = created['id'] as string;
    const updated = (await behind.records.update({ serviceId, entityName: 'note', recordId: id, updates: { title: 'b' }, expectedRecordVersion: 1n, idempotencyKey: 'u1' }))['record'] as JsonObject;
    // Never before the previous time, and still a time the store and an artefact can hold.
    expect(updated['updated_at']).toBe('9999-12-31T23:59:59.999999Z');
    expect(await behind.records.get(serviceId, 'note', id)).toEqual(updated);
    const events = (await behind.records.history({ serviceId, entityName: 'note', recordId: id, limit: 50, cursor: null }))['events'] as JsonObject[];
    expect(events.map((event) => event['occurred_at'])).toEqual(['9999-12-31T23:59:59.999999Z', '9999-12-31T23:59:59.999999Z']);
  });

  it('a branch updated, and a record assigned to it, by the process behind: updated_at and history occurred_at never go back', async () => {
    const serviceId = await materialisedService();
    const branch = (await ahead.branches.create({ serviceId, slug: 'topic', title: 'Topic', intent: 'Why.', branchType: null, parentBranchId: null, retrievalSummary: null, idempotencyKey: 'b1' }))['branch'] as JsonObject;
    const updated = (await behind.branches.update({ serviceId, branchId: branch['id'] as string, expectedBranchRevision: 1n, updates: { title: 'Topic 2' }, idempotencyKey: 'b2' }))['branch'] as JsonObject;
    expect(micros(updated['updated_at'])).toBeGreaterThan(micros(branch['updated_at']));
    const note = (await ahead.records.create({ serviceId, entityName: 'note', record: { title: 'a' }, idempotencyKey: 'c1' }))['record'] as JsonObject;
    const records = [{ entityName: 'note', recordId: note['id'] as string, expectedRecordVersion: 1n }];
    await behind.branches.assign({ serviceId, branchId: branch['id'] as string, role: 'primary', operation: 'assign', records, idempotencyKey: 'a1' });
    const assigned = await ahead.records.get(serviceId, 'note', note['id'] as string);
    expect(micros(assigned['updated_at'])).toBeGreaterThan(micros(note['updated_at']));
    const events = (await ahead.records.history({ serviceId, entityName: 'note', recordId: note['id'] as string, limit: 50, cursor: null }))['events'] as JsonObject[];
    expect(events.map((event) => event['kind'])).toEqual(['create', 'primary_assign']);
    expect(micros((events[1] as JsonObject)['occurred_at'])).toBe(micros(assigned['updated_at']));
  });

  it('a service designed and materialised by the process behind: updated_at, last_activity_at and materialised_at never go back', async () => {
    const seeded = await ahead.lifecycle.seed({ domainName: 'notes', domainClass: 'knowledge', intentDescription: 'Notes.', idempotencyKey: 's' });
    const serviceId = seeded['service_id'] as string;
    const designed = await behind.lifecycle.design({ serviceId, manifest: manifest(notesManifest()), idempotencyKey: 'd' });
    expect(micros(designed['updated_at'])).toBeGreaterThan(micros(seeded['updated_at']));
    expect(designed['last_activity_at']).toBe(designed['updated_at']);
    const materialised = await behind.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'm' });
    expect(micros(materialised['updated_at'])).toBeGreaterThan(micros(designed['updated_at']));
    expect(materialised['materialised_at']).toBe(materialised['updated_at']);
    expect(materialised['last_activity_at']).toBe(materialised['updated_at']);
    expect(await behind.lifecycle.inspect(serviceId)).toMatchObject({ updated_at: materialised['updated_at'], created_at: seeded['created_at'] });
  });

  it('a service suspended and resumed by an operator process behind: updated_at and last_activity_at never go back', async () => {
    const serviceId = await materialisedService();
    const before = await ahead.lifecycle.inspect(serviceId);
    const clock = manualClock(BASE);
    const ids = sequentialIds(77);
    const operator = createOperator(behindStorage, {
      principalId: 'agent-a',
      createdVia: 'cli',
      nowMicros: () => {
        clock.advance(1n);
        return clock.nowMicros();
      },
      uuid: () => ids.uuid(),
      sha256,
      producer: { packageVersion: '0.0.0-test', mcpContract: '1.2.0' },
    });
    const suspended = (await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: '00000000-0000-4000-8000-000000000001' }))['service'] as JsonObject;
    expect(micros(suspended['updated_at'])).toBeGreaterThan(micros(before['updated_at']));
    expect(suspended['last_activity_at']).toBe(suspended['updated_at']);
    const resumed = (await operator.operations.transition({ kind: 'resume', serviceId, expectedServiceRevision: 4n, operationId: '00000000-0000-4000-8000-000000000002' }))['service'] as JsonObject;
    expect(micros(resumed['updated_at'])).toBeGreaterThan(micros(suspended['updated_at']));
  });
});

// A system clock set past 9999-12-31 stamped records with `+010000-01-01T00:00…`,
// which no timestamp parser reads back: the create succeeded, then every
// read of that entity failed as storage_unavailable.
describe('a system clock outside the years a timestamp can name', () => {
  let base: string;
  let storage: OperatorStoragePorts;

  beforeEach(async () => {
    base = mkdtempSync(join(tmpdir(), 'aipcs-clock-range-'));
    storage = await openSqliteStorage({ dataRoot: join(base, 'data'), busyTimeoutMs: 5000, defaultRoot: false });
  });

  afterEach(async () => {
    await storage.close();
    rmSync(base, { recursive: true, force: true });
  });

  it.each([
    ['past 9999', 253_402_300_800_000_000n, '9999-12-31T23:59:59.999999Z'],
    ['before year 1', -62_135_596_801_000_000n, '0001-01-01T00:00:00Z'],
  ])('%s: times stay at the nearest instant one can name, and what was written reads back', async (_, start, stamped) => {
    const app = appOver(storage, { clock: manualClock(start) });
    const seeded = await app.lifecycle.seed({ domainName: 'notes', domainClass: 'knowledge', intentDescription: 'Notes.', idempotencyKey: 's' });
    const serviceId = seeded['service_id'] as string;
    expect(seeded['created_at']).toBe(stamped);
    await app.lifecycle.design({ serviceId, manifest: manifest(notesManifest()), idempotencyKey: 'd' });
    await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'm' });
    const created = (await app.records.create({ serviceId, entityName: 'note', record: { title: 'a', status: 'draft' }, idempotencyKey: 'c1' }))['record'] as JsonObject;
    expect(created['created_at']).toBe(stamped);
    const found = (await app.records.list({ serviceId, entityName: 'note', filters: { status: 'draft' }, limit: 10, cursor: null, branch: null }))['records'] as JsonObject[];
    expect(found).toEqual([created]);
    const events = (await app.records.history({ serviceId, entityName: 'note', recordId: created['id'] as string, limit: 10, cursor: null }))['events'] as JsonObject[];
    expect(events.map((event) => event['occurred_at'])).toEqual([stamped]);
  });
});
