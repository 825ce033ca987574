// Conformance: branch rules of contract §7 over any adapter — create, list,
// update with revisions and no-op updates, parent cycles, the replay ledger,
// and record assignment with its membership deltas, versions and history.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StoragePorts } from '../../src/aipcs/core/application.js';
import type { AssignRecordsCommand, CreateBranchCommand, UpdateBranchCommand } from '../../src/aipcs/core/branches.js';
import type { JsonObject } from '../../src/common/json.js';
import { notesManifest, notesManifestV2 } from '../support/manifests.js';
import { appOver, manifest, type StorageHarness, type StorageLocation, type TestApp } from './harness.js';

async function rejects(promise: Promise<unknown>, code: string): Promise<void> {
  await expect(promise).rejects.toMatchObject({ code });
}

const MISSING = '99999999-9999-4999-8999-999999999999';

export function branchesSuite(harness: StorageHarness): void {
  describe(`branches conformance (${harness.name})`, () => {
    let location: StorageLocation;
    let storage: StoragePorts;
    let app: TestApp;
    let serviceId: string;
    let keyCounter = 0;
    const key = () => `bkey-${++keyCounter}`;

    beforeEach(async () => {
      location = await harness.create();
      storage = await location.open();
      app = appOver(storage);
      const seeded = await app.lifecycle.seed({ domainName: 'notes', domainClass: 'knowledge', intentDescription: 'Notes.', idempotencyKey: 's' });
      serviceId = seeded['service_id'] as string;
      await app.lifecycle.design({ serviceId, manifest: manifest(notesManifest()), idempotencyKey: 'd' });
      await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'm' });
    });

    afterEach(async () => {
      await storage.close();
      await location.destroy();
    });

    const createCommand = (slug: string, extra: Partial<CreateBranchCommand> = {}): CreateBranchCommand => ({
      serviceId,
      slug,
      title: `Title of ${slug}`,
      intent: `Why ${slug} exists.`,
      branchType: null,
      parentBranchId: null,
      retrievalSummary: null,
      idempotencyKey: key(),
      ...extra,
    });
    const createBranch = async (slug: string, extra: Partial<CreateBranchCommand> = {}) => (await app.branches.create(createCommand(slug, extra)))['branch'] as JsonObject;
    const createNote = async (title: string, entityName = 'note') =>
      (await app.records.create({ serviceId, entityName, record: entityName === 'note' ? { title } : { name: title }, idempotencyKey: key() }))['record'] as JsonObject;
    const assign = (branchId: string, role: 'primary' | 'related', operation: 'assign' | 'unassign', records: JsonObject[], idempotencyKey = key()) =>
      app.branches.assign({
        serviceId,
        branchId,
        role,
        operation,
        records: records.map((record) => ({ entityName: record['entity_name'] as string, recordId: record['id'] as string, expectedRecordVersion: record['record_version'] as bigint })),
        idempotencyKey,
      });
    const fresh = async (record: JsonObject) => app.records.get(serviceId, record['entity_name'] as string, record['id'] as string);
    const historyKinds = async (record: JsonObject) =>
      ((await app.records.history({ serviceId, entityName: record['entity_name'] as string, recordId: record['id'] as string, limit: 100, cursor: null }))['events'] as JsonObject[]).map(
        (event) => event['kind'],
      );
    const memberTitles = async (branchId: string, role: 'primary' | 'related') =>
      ((await app.records.list({ serviceId, entityName: 'note', limit: 100, cursor: null, branch: { branchId, role } }))['records'] as JsonObject[]).map(
        (record) => (record['fields'] as JsonObject)['title'],
      );

    describe('create', () => {
      it('creates an active branch at revision 1 with the contract document', async () => {
        const parent = await createBranch('parent-topic');
        const result = await app.branches.create(createCommand('child-topic', { branchType: 'thread', parentBranchId: parent['id'] as string, retrievalSummary: 'Summary.' }));
        expect(result['replayed']).toBe(false);
        const branch = result['branch'] as JsonObject;
        expect(Object.keys(branch)).toEqual(['id', 'slug', 'title', 'intent', 'type', 'parent_id', 'status', 'retrieval_summary', 'created_at', 'updated_at', 'branch_revision']);
        expect(branch).toMatchObject({ slug: 'child-topic', type: 'thread', parent_id: parent['id'], status: 'active', retrieval_summary: 'Summary.', branch_revision: 1n });
        expect(branch['created_at']).toBe(branch['updated_at']);
        expect(branch['id']).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
        expect(parent).toMatchObject({ type: null, parent_id: null, retrieval_summary: null });
      });

      it('refuses a used slug, a missing parent, and consumes no key on failure', async () => {
        await createBranch('topic-one');
        await rejects(app.branches.create(createCommand('topic-one')), 'already_exists');
        await rejects(app.branches.create(createCommand('topic-two', { parentBranchId: MISSING, idempotencyKey: 'k-fail' })), 'not_found');
        // The parent is checked before the slug.
        await rejects(app.branches.create(createCommand('topic-one', { parentBranchId: MISSING })), 'not_found');
        const ok = await app.branches.create(createCommand('topic-two', { idempotencyKey: 'k-fail' }));
        expect(ok['replayed']).toBe(false);
      });

      it('accepts any parent status', async () => {
        const parent = await createBranch('old-topic');
        await app.branches.update({ serviceId, branchId: parent['id'] as string, expectedBranchRevision: 1n, updates: { status: 'archived' }, idempotencyKey: key() });
        const child = await createBranch('new-topic', { parentBranchId: parent['id'] as string });
        expect(child['parent_id']).toBe(parent['id']);
      });

      it('replays an exact retry and refuses a changed request under the same key, sharing the record ledger', async () => {
        const command = createCommand('replayed-topic', { idempotencyKey: 'same-key' });
        const first = await app.branches.create(command);
        const again = await app.branches.create(command);
        expect(again).toEqual({ ...first, replayed: true });
        await rejects(app.branches.create({ ...command, title: 'Other' }), 'changed_fingerprint');
        await rejects(app.branches.create({ ...command, retrievalSummary: 'now set' }), 'changed_fingerprint');
        await rejects(app.branches.create({ ...command, branchType: 'thread' }), 'changed_fingerprint');
        await rejects(app.branches.create({ ...command, parentBranchId: (first['branch'] as JsonObject)['id'] as string }), 'changed_fingerprint');
        await rejects(app.records.create({ serviceId, entityName: 'note', record: { title: 'x' }, idempotencyKey: 'same-key' }), 'changed_fingerprint');
        const listed = await app.branches.list({ serviceId, status: null, branchType: null, parentBranchId: null, limit: 50, cursor: null });
        expect((listed['branches'] as JsonObject[]).length).toBe(1);
      });

      it('refuses branch tools on unknown or unmaterialised services', async () => {
        await rejects(app.branches.create({ ...createCommand('x-topic'), serviceId: MISSING }), 'not_found');
        const seeded = await app.lifecycle.seed({ domainName: 'other', domainClass: 'k', intentDescription: 'i', idempotencyKey: 's2' });
        await rejects(app.branches.create({ ...createCommand('x-topic'), serviceId: seeded['service_id'] as string }), 'storage_unavailable');
        await rejects(app.branches.list({ serviceId: seeded['service_id'] as string, status: null, branchType: null, parentBranchId: null, limit: 50, cursor: null }), 'storage_unavailable');
      });
    });

    describe('list', () => {
      it('lists by ascending id with exact ANDed filters; a parent filter lists direct children only', async () => {
        const root = await createBranch('root-topic', { branchType: 'area' });
        const child = await createBranch('child-topic', { parentBranchId: root['id'] as string, branchType: 'thread' });
        const grandchild = await createBranch('grandchild-topic', { parentBranchId: child['id'] as string, branchType: 'thread' });
        await app.branches.update({ serviceId, branchId: grandchild['id'] as string, expectedBranchRevision: 1n, updates: { status: 'superseded' }, idempotencyKey: key() });
        const list = async (filters: { status?: 'active' | 'archived' | 'superseded'; branchType?: string; parentBranchId?: string }) =>
          ((await app.branches.list({ serviceId, status: filters.status ?? null, branchType: filters.branchType ?? null, parentBranchId: filters.parentBranchId ?? null, limit: 50, cursor: null }))['branches'] as JsonObject[]).map(
            (branch) => branch['slug'],
          );
        const all = await list({});
        expect(all).toHaveLength(3);
        const ids = ((await app.branches.list({ serviceId, status: null, branchType: null, parentBranchId: null, limit: 50, cursor: null }))['branches'] as JsonObject[]).map((b) => b['id'] as string);
        expect([...ids].sort()).toEqual(ids);
        expect(await list({ parentBranchId: root['id'] as string })).toEqual(['child-topic']);
        expect(await list({ branchType: 'thread' })).toHaveLength(2);
        expect(await list({ branchType: 'thread', status: 'active' })).toEqual(['child-topic']);
        expect(await list({ status: 'superseded' })).toEqual(['grandchild-topic']);
        expect(await list({ parentBranchId: MISSING })).toEqual([]);
      });

      it('pages with query-bound cursors', async () => {
        for (let i = 0; i < 5; i++) await createBranch(`topic-${i}`, { branchType: 'thread' });
        await createBranch('other-kind', { branchType: 'area' });
        const seen: string[] = [];
        let cursor: string | null = null;
        do {
          const page: JsonObject = await app.branches.list({ serviceId, status: null, branchType: 'thread', parentBranchId: null, limit: 2, cursor });
          seen.push(...(page['branches'] as JsonObject[]).map((branch) => branch['id'] as string));
          cursor = page['next_cursor'] as string | null;
          if (cursor !== null) expect(cursor).toMatch(/^[A-Za-z0-9_-]{1,1024}$/);
        } while (cursor !== null);
        expect(seen).toHaveLength(5);
        expect(new Set(seen).size).toBe(5);
        const first = await app.branches.list({ serviceId, status: null, branchType: 'thread', parentBranchId: null, limit: 1, cursor: null });
        const next = first['next_cursor'] as string;
        await rejects(app.branches.list({ serviceId, status: null, branchType: 'area', parentBranchId: null, limit: 1, cursor: next }), 'validation_failed');
        await rejects(app.branches.list({ serviceId, status: 'active', branchType: 'thread', parentBranchId: null, limit: 1, cursor: next }), 'validation_failed');
        await rejects(app.records.list({ serviceId, entityName: 'note', limit: 1, cursor: next, branch: null }), 'validation_failed');
        // Another parent is another query too.
        const parent = (await createBranch('parent-topic', { branchType: 'thread' }))['id'] as string;
        for (const slug of ['child-one', 'child-two']) await createBranch(slug, { branchType: 'thread', parentBranchId: parent });
        const children = await app.branches.list({ serviceId, status: null, branchType: 'thread', parentBranchId: parent, limit: 1, cursor: null });
        const childCursor = children['next_cursor'] as string;
        expect((await app.branches.list({ serviceId, status: null, branchType: 'thread', parentBranchId: parent, limit: 1, cursor: childCursor }))['branches']).toHaveLength(1);
        await rejects(app.branches.list({ serviceId, status: null, branchType: 'thread', parentBranchId: null, limit: 1, cursor: childCursor }), 'validation_failed');
        await rejects(app.branches.list({ serviceId, status: null, branchType: 'thread', parentBranchId: null, limit: 1, cursor: 'garbage' }), 'validation_failed');
        await app.lifecycle.evolve({ serviceId, expectedServiceRevision: 3n, expectedSchemaVersion: 1n, manifest: manifest(notesManifestV2()), idempotencyKey: 'e' });
        await rejects(app.branches.list({ serviceId, status: null, branchType: 'thread', parentBranchId: null, limit: 1, cursor: next }), 'validation_failed');
      });
      it('gives no cursor for a page that ends the list exactly, and caps a page at 100 branches', async () => {
        for (let i = 0; i < 4; i++) await createBranch(`topic-${i}`);
        const list = (limit: number, cursor: string | null = null) => app.branches.list({ serviceId, status: null, branchType: null, parentBranchId: null, limit, cursor });
        const first = await list(2);
        expect(first['branches']).toHaveLength(2);
        expect(first['next_cursor']).not.toBeNull();
        const second = await list(2, first['next_cursor'] as string);
        expect(second['branches']).toHaveLength(2);
        expect(second['next_cursor']).toBeNull();
        expect(await list(4)).toMatchObject({ next_cursor: null });
        for (let i = 4; i < 101; i++) await createBranch(`topic-${i}`);
        const full = await list(100);
        expect(full['branches']).toHaveLength(100);
        const rest = await list(100, full['next_cursor'] as string);
        expect(rest['branches']).toHaveLength(1);
        expect(rest['next_cursor']).toBeNull();
      });
    });

    describe('update', () => {
      it('advances the revision and updated_at on a change; absent keys keep, null clears', async () => {
        const parent = await createBranch('parent-topic');
        const branch = await createBranch('some-topic', { branchType: 'thread', retrievalSummary: 'sum', parentBranchId: parent['id'] as string });
        app.clock.advance(1_000_000n);
        const result = await app.branches.update({ serviceId, branchId: branch['id'] as string, expectedBranchRevision: 1n, updates: { title: 'New title', branchType: null }, idempotencyKey: key() });
        const updated = result['branch'] as JsonObject;
        expect(result['replayed']).toBe(false);
        expect(updated).toMatchObject({ title: 'New title', type: null, retrieval_summary: 'sum', parent_id: parent['id'], slug: 'some-topic', branch_revision: 2n, created_at: branch['created_at'] });
        expect(updated['updated_at']).not.toBe(branch['updated_at']);
        const rooted = (await app.branches.update({ serviceId, branchId: branch['id'] as string, expectedBranchRevision: 2n, updates: { parentBranchId: null, retrievalSummary: null, status: 'archived', intent: 'New intent' }, idempotencyKey: key() }))['branch'] as JsonObject;
        expect(rooted).toMatchObject({ parent_id: null, retrieval_summary: null, status: 'archived', intent: 'New intent', branch_revision: 3n });
        const back = (await app.branches.update({ serviceId, branchId: branch['id'] as string, expectedBranchRevision: 3n, updates: { status: 'active' }, idempotencyKey: key() }))['branch'] as JsonObject;
        expect(back['status']).toBe('active');
      });

      it('refuses an update that supplies no field (validation_failed) without consuming the key', async () => {
        const branch = await createBranch('some-topic');
        const command = { serviceId, branchId: branch['id'] as string, expectedBranchRevision: 1n, updates: {}, idempotencyKey: 'empty' };
        await rejects(app.branches.update(command), 'validation_failed');
        expect(await app.branches.update({ ...command, updates: { title: 'Renamed' } })).toMatchObject({ branch: { title: 'Renamed', branch_revision: 2n }, replayed: false });
      });

      it('a change of the retrieval summary alone, or of the type alone, is a change: the revision advances', async () => {
        const branch = await createBranch('some-topic', { branchType: 'thread', retrievalSummary: 'sum' });
        const update = (expectedBranchRevision: bigint, updates: UpdateBranchCommand['updates']) =>
          app.branches.update({ serviceId, branchId: branch['id'] as string, expectedBranchRevision, updates, idempotencyKey: key() });
        expect(await update(1n, { retrievalSummary: 'other' })).toMatchObject({ branch: { retrieval_summary: 'other', branch_revision: 2n } });
        expect(await update(2n, { retrievalSummary: null })).toMatchObject({ branch: { retrieval_summary: null, branch_revision: 3n } });
        expect(await update(3n, { branchType: 'area' })).toMatchObject({ branch: { type: 'area', branch_revision: 4n } });
        expect(await update(4n, { branchType: null })).toMatchObject({ branch: { type: null, branch_revision: 5n } });
      });

      it('refuses a stale revision and a missing branch', async () => {
        const branch = await createBranch('some-topic');
        await rejects(app.branches.update({ serviceId, branchId: branch['id'] as string, expectedBranchRevision: 2n, updates: { title: 'x' }, idempotencyKey: key() }), 'stale_branch_revision');
        await rejects(app.branches.update({ serviceId, branchId: MISSING, expectedBranchRevision: 1n, updates: { title: 'x' }, idempotencyKey: key() }), 'not_found');
        // 2^63-1 is inside the documented range (contract §7.4): merely stale, not invalid.
        await rejects(app.branches.update({ serviceId, branchId: branch['id'] as string, expectedBranchRevision: 2n ** 63n - 1n, updates: { title: 'x' }, idempotencyKey: key() }), 'stale_branch_revision');
        // An expectation behind the branch is stale too.
        await app.branches.update({ serviceId, branchId: branch['id'] as string, expectedBranchRevision: 1n, updates: { title: 'y' }, idempotencyKey: key() });
        await rejects(app.branches.update({ serviceId, branchId: branch['id'] as string, expectedBranchRevision: 1n, updates: { title: 'x' }, idempotencyKey: key() }), 'stale_branch_revision');
      });

      it('rejects self-parenting and cycles, and a missing new parent', async () => {
        const a = await createBranch('topic-a');
        const b = await createBranch('topic-b', { parentBranchId: a['id'] as string });
        const c = await createBranch('topic-c', { parentBranchId: b['id'] as string });
        const update = (branch: JsonObject, parentBranchId: string) =>
          app.branches.update({ serviceId, branchId: branch['id'] as string, expectedBranchRevision: 1n, updates: { parentBranchId }, idempotencyKey: key() });
        await rejects(update(a, a['id'] as string), 'constraint_violation');
        await rejects(update(a, c['id'] as string), 'constraint_violation');
        await rejects(update(a, b['id'] as string), 'constraint_violation');
        await rejects(update(a, MISSING), 'not_found');
        const moved = (await update(c, a['id'] as string))['branch'] as JsonObject;
        expect(moved['parent_id']).toBe(a['id']);
        // A deep chain: the top cannot go under its deepest descendant, a branch beside the chain can.
        let leaf = b;
        for (let depth = 0; depth < 60; depth++) leaf = await createBranch(`deep-${depth}`, { parentBranchId: leaf['id'] as string });
        await rejects(update(a, leaf['id'] as string), 'constraint_violation');
        const beside = await createBranch('beside');
        expect(((await update(beside, leaf['id'] as string))['branch'] as JsonObject)['parent_id']).toBe(leaf['id']);
      });

      it('completes a no-op without advancing the revision, still consuming the key', async () => {
        const branch = await createBranch('some-topic', { branchType: 'thread' });
        const command = { serviceId, branchId: branch['id'] as string, expectedBranchRevision: 1n, updates: { title: branch['title'] as string, branchType: 'thread' }, idempotencyKey: 'noop' };
        app.clock.advance(5_000_000n);
        const result = await app.branches.update(command);
        expect(result).toEqual({ branch, replayed: false });
        expect(await app.branches.update(command)).toEqual({ branch, replayed: true });
        await rejects(app.branches.update({ ...command, updates: { title: 'Changed' } }), 'changed_fingerprint');
        await rejects(app.branches.update({ ...command, expectedBranchRevision: 2n }), 'changed_fingerprint');
        // Absent and null are different requests under the same key.
        const nullType = { ...command, updates: { title: branch['title'] as string, branchType: null }, idempotencyKey: 'absent-vs-null' };
        await app.branches.update({ ...nullType, expectedBranchRevision: 1n });
        await rejects(app.branches.update({ ...nullType, updates: { title: branch['title'] as string } }), 'changed_fingerprint');
      });

      it('replays an update after the branch changed again', async () => {
        const branch = await createBranch('some-topic');
        const command = { serviceId, branchId: branch['id'] as string, expectedBranchRevision: 1n, updates: { title: 'Second' }, idempotencyKey: 'upd' };
        const first = await app.branches.update(command);
        await app.branches.update({ ...command, expectedBranchRevision: 2n, updates: { title: 'Third' }, idempotencyKey: key() });
        expect(await app.branches.update(command)).toEqual({ ...first, replayed: true });
      });
    });

    describe('assign records', () => {
      it('binds a branch-scoped record cursor to its branch and role', async () => {
        const one = (await createBranch('scope-one'))['id'] as string;
        const two = (await createBranch('scope-two'))['id'] as string;
        await assign(one, 'related', 'assign', [await createNote('a'), await createNote('b')]);
        const list = (cursor: string | null, branch: { branchId: string; role: 'primary' | 'related' } | null) => app.records.list({ serviceId, entityName: 'note', limit: 1, cursor, branch });
        const cursor = (await list(null, { branchId: one, role: 'related' }))['next_cursor'] as string;
        expect(((await list(cursor, { branchId: one, role: 'related' }))['records'] as JsonObject[]).length).toBe(1);
        await rejects(list(cursor, { branchId: one, role: 'primary' }), 'validation_failed');
        await rejects(list(cursor, { branchId: two, role: 'related' }), 'validation_failed');
        await rejects(list(cursor, null), 'validation_failed');
      });

      it('applies the membership delta table with versions, updated_at and history', async () => {
        const one = await createBranch('branch-one');
        const two = await createBranch('branch-two');
        const oneId = one['id'] as string;
        const twoId = two['id'] as string;
        const note = await createNote('n');

        // related assign: none -> related
        let result = await assign(oneId, 'related', 'assign', [note]);
        expect(result).toEqual({ records: [{ entity_name: 'note', id: note['id'], record_version: 2n }], replayed: false });
        let current = await fresh(note);
        expect(current['record_version']).toBe(2n);
        expect(current['updated_at']).not.toBe(note['updated_at']);
        expect(await memberTitles(oneId, 'related')).toEqual(['n']);
        // related again: no-op
        result = await assign(oneId, 'related', 'assign', [current]);
        expect((result['records'] as JsonObject[])[0]?.['record_version']).toBe(2n);
        // primary here replaces related here
        result = await assign(oneId, 'primary', 'assign', [current]);
        current = await fresh(note);
        expect(current['record_version']).toBe(3n);
        expect(await memberTitles(oneId, 'primary')).toEqual(['n']);
        expect(await memberTitles(oneId, 'related')).toEqual([]);
        // related assign where primary: no-op; primary again: no-op
        await assign(oneId, 'related', 'assign', [current]);
        await assign(oneId, 'primary', 'assign', [current]);
        expect((await fresh(note))['record_version']).toBe(3n);
        // primary elsewhere: move
        await assign(twoId, 'primary', 'assign', [current]);
        current = await fresh(note);
        expect(current['record_version']).toBe(4n);
        expect(await memberTitles(oneId, 'primary')).toEqual([]);
        expect(await memberTitles(twoId, 'primary')).toEqual(['n']);
        // unassign with the wrong role: no-op; then unassign primary
        await assign(twoId, 'related', 'unassign', [current]);
        expect((await fresh(note))['record_version']).toBe(4n);
        await assign(twoId, 'primary', 'unassign', [current]);
        current = await fresh(note);
        expect(current['record_version']).toBe(5n);
        await assign(oneId, 'related', 'assign', [current]);
        current = await fresh(note);
        await assign(oneId, 'related', 'unassign', [current]);
        current = await fresh(note);
        expect(current['record_version']).toBe(7n);
        expect(await memberTitles(oneId, 'related')).toEqual([]);
        expect(await historyKinds(note)).toEqual(['create', 'related_assign', 'primary_assign', 'primary_move', 'primary_unassign', 'related_assign', 'related_unassign']);

        const events = (await app.records.history({ serviceId, entityName: 'note', recordId: note['id'] as string, limit: 100, cursor: null }))['events'] as JsonObject[];
        const moved = events[3] as JsonObject;
        expect(moved['record_version']).toBe(4n);
        expect(moved['before']).toEqual(moved['after']);
        expect(moved['before']).toEqual({ fields: note['fields'] });
      });

      it('keeps at most one primary per record across branches and any number of related', async () => {
        const branches = [await createBranch('b-one'), await createBranch('b-two'), await createBranch('b-three')];
        let note = await createNote('n');
        for (const branch of branches) {
          await assign(branch['id'] as string, 'related', 'assign', [note]);
          note = await fresh(note);
        }
        for (const branch of branches) expect(await memberTitles(branch['id'] as string, 'related')).toEqual(['n']);
        await assign(branches[0]?.['id'] as string, 'primary', 'assign', [note]);
        note = await fresh(note);
        await assign(branches[1]?.['id'] as string, 'primary', 'assign', [note]);
        const primaries = await Promise.all(branches.map((branch) => memberTitles(branch['id'] as string, 'primary')));
        expect(primaries).toEqual([[], ['n'], []]);
        // The related membership in the first branch was replaced by the primary and is not restored by the move.
        expect(await memberTitles(branches[0]?.['id'] as string, 'related')).toEqual([]);
        expect(await memberTitles(branches[2]?.['id'] as string, 'related')).toEqual(['n']);
      });

      it('is all-or-nothing and reports the first failing target', async () => {
        const branch = await createBranch('b-one');
        const a = await createNote('a');
        const b = await createNote('b');
        await rejects(assign(branch['id'] as string, 'related', 'assign', [a, { ...b, record_version: 7n }]), 'stale_record_version');
        // 2^63-1 is inside the documented range (contract §7.5): merely stale, not invalid.
        await rejects(assign(branch['id'] as string, 'related', 'assign', [a, { ...b, record_version: 2n ** 63n - 1n }]), 'stale_record_version');
        await rejects(assign(branch['id'] as string, 'related', 'assign', [a, { ...b, id: MISSING }]), 'not_found');
        await rejects(assign(branch['id'] as string, 'related', 'assign', [a, { ...b, entity_name: 'project' }]), 'not_found');
        await rejects(assign(branch['id'] as string, 'related', 'assign', [a, { ...b, entity_name: 'nothing' }]), 'validation_failed');
        expect((await fresh(a))['record_version']).toBe(1n);
        expect(await memberTitles(branch['id'] as string, 'related')).toEqual([]);
        await rejects(assign(MISSING, 'related', 'assign', [a]), 'not_found');
      });

      it('returns results in request order across entities', async () => {
        const branch = await createBranch('b-one');
        const notes = [await createNote('z'), await createNote('a'), await createNote('m')];
        const project = await createNote('P', 'project');
        const targets = [notes[2], project, notes[0], notes[1]] as JsonObject[];
        const result = await assign(branch['id'] as string, 'primary', 'assign', targets);
        expect(result['records']).toEqual(targets.map((target) => ({ entity_name: target['entity_name'], id: target['id'], record_version: 2n })));
        const projects = await app.records.list({ serviceId, entityName: 'project', limit: 10, cursor: null, branch: { branchId: branch['id'] as string, role: 'primary' } });
        expect((projects['records'] as JsonObject[]).map((record) => record['id'])).toEqual([project['id']]);
      });

      it('takes exactly 100 targets in one request and refuses 101 or none (validation_failed)', async () => {
        const branch = await createBranch('bulk-topic');
        const notes: JsonObject[] = [];
        for (let i = 0; i < 101; i++) notes.push(await createNote(`note ${i}`));
        await rejects(assign(branch['id'] as string, 'primary', 'assign', notes), 'validation_failed');
        await rejects(assign(branch['id'] as string, 'primary', 'assign', []), 'validation_failed');
        const result = await assign(branch['id'] as string, 'primary', 'assign', notes.slice(0, 100));
        expect(result['records']).toHaveLength(100);
        expect(await memberTitles(branch['id'] as string, 'primary')).toHaveLength(100);
      });

      it('refuses assign to a non-active branch but allows unassign', async () => {
        const branch = await createBranch('b-one');
        const note = await createNote('n');
        await assign(branch['id'] as string, 'related', 'assign', [note]);
        for (const status of ['archived', 'superseded'] as const) {
          const current = (await app.branches.list({ serviceId, status: null, branchType: null, parentBranchId: null, limit: 1, cursor: null }))['branches'] as JsonObject[];
          await app.branches.update({ serviceId, branchId: branch['id'] as string, expectedBranchRevision: current[0]?.['branch_revision'] as bigint, updates: { status }, idempotencyKey: key() });
          await rejects(assign(branch['id'] as string, 'primary', 'assign', [await fresh(note)]), 'constraint_violation');
        }
        const result = await assign(branch['id'] as string, 'related', 'unassign', [await fresh(note)]);
        expect((result['records'] as JsonObject[])[0]?.['record_version']).toBe(3n);
      });

      it('replays by key without writing again, refuses a changed request, and does not consume a key on failure', async () => {
        const branch = await createBranch('b-one');
        const note = await createNote('n');
        const command: AssignRecordsCommand = {
          serviceId,
          branchId: branch['id'] as string,
          role: 'related',
          operation: 'assign',
          records: [{ entityName: 'note', recordId: note['id'] as string, expectedRecordVersion: 1n }],
          idempotencyKey: 'assign-once',
        };
        await rejects(app.branches.assign({ ...command, records: [{ entityName: 'note', recordId: note['id'] as string, expectedRecordVersion: 5n }] }), 'stale_record_version');
        const first = await app.branches.assign(command);
        expect(first['replayed']).toBe(false);
        await app.records.update({ serviceId, entityName: 'note', recordId: note['id'] as string, updates: { title: 'changed' }, expectedRecordVersion: 2n, idempotencyKey: key() });
        expect(await app.branches.assign(command)).toEqual({ ...first, replayed: true });
        expect((await fresh(note))['record_version']).toBe(3n);
        await rejects(app.branches.assign({ ...command, role: 'primary' }), 'changed_fingerprint');
        await rejects(app.branches.assign({ ...command, operation: 'unassign' }), 'changed_fingerprint');
        await rejects(app.branches.assign({ ...command, records: [{ entityName: 'note', recordId: note['id'] as string, expectedRecordVersion: 3n }] }), 'changed_fingerprint');
      });

      it('serialises concurrent assignments of one record version', async () => {
        const branches = [await createBranch('b-one'), await createBranch('b-two'), await createBranch('b-three')];
        const note = await createNote('n');
        const outcomes = await Promise.allSettled(branches.map((branch) => assign(branch['id'] as string, 'primary', 'assign', [note])));
        expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
        for (const outcome of outcomes) if (outcome.status === 'rejected') expect((outcome.reason as { code: string }).code).toBe('stale_record_version');
        const primaries = (await Promise.all(branches.map((branch) => memberTitles(branch['id'] as string, 'primary')))).flat();
        expect(primaries).toEqual(['n']);
      });

      it('drops the memberships of a deleted record', async () => {
        const branch = await createBranch('b-one');
        const note = await createNote('n');
        await assign(branch['id'] as string, 'primary', 'assign', [note]);
        await app.records.delete({ serviceId, entityName: 'note', recordId: note['id'] as string, expectedRecordVersion: 2n, idempotencyKey: key() });
        expect(await memberTitles(branch['id'] as string, 'primary')).toEqual([]);
        const summary = await app.discovery.summary({ serviceId, sample: 0 });
        const card = (summary['branches'] as JsonObject[])[0] as JsonObject;
        expect(card['primary_record_count']).toBe(0n);
      });
    });

    describe('data port', () => {
      // Every shared statement scopes by the principal, so a store holding
      // one principal's rows shows another principal none of them and lets it
      // change none of them.
      it('scopes branches, memberships, replays and record lookups to the principal', async () => {
        const branch = await createBranch('mine');
        const note = await createNote('n');
        await assign(branch['id'] as string, 'primary', 'assign', [note], 'assign-key');
        const locator = (await app.lifecycle.admitData(serviceId)).service.storage;
        if (!locator) throw new Error('no storage locator');
        const branchId = branch['id'] as string;
        const noteId = note['id'] as string;
        const seenBy = (principal: string) =>
          storage.data.read(locator, principal, async (tx) => ({
            byId: await tx.getBranch(branchId),
            bySlug: await tx.findBranchBySlug('mine'),
            listed: (await tx.listBranches({ status: null, branchType: null, parentId: null, afterId: null, limit: 10 })).map((row) => row.id),
            role: await tx.getMembership('note', noteId, branchId),
            primary: await tx.getPrimaryBranch('note', noteId),
            cards: (await tx.branchCards(10)).map((card) => card.branch.id),
          }));
        const mine = await seenBy('agent-a');
        expect(mine).toMatchObject({ bySlug: mine.byId, listed: [branchId], role: 'primary', primary: branchId, cards: [branchId] });
        const stored = mine.byId;
        if (!stored) throw new Error('no branch');
        expect(await seenBy('agent-b')).toEqual({ byId: undefined, bySlug: undefined, listed: [], role: undefined, primary: undefined, cards: [] });
        await expect(storage.data.write(locator, 'agent-b', (tx) => tx.updateBranch({ ...stored, title: 'Theirs', branchRevision: stored.branchRevision + 1n }))).rejects.toThrow();
        const lookups = (principal: string) =>
          storage.data.write(locator, principal, async (tx) => ({ replay: (await tx.getReplay('assign-key'))?.kind, exists: await tx.recordExists('note', noteId) }));
        expect(await lookups('agent-b')).toEqual({ replay: undefined, exists: false });
        await storage.data.write(locator, 'agent-b', (tx) => tx.removeMembership('note', noteId, branchId));
        expect(await seenBy('agent-a')).toEqual(mine);
        expect(await lookups('agent-a')).toEqual({ replay: expect.any(String), exists: true });
      });

      it('orders branch cards by updated_at descending, ties by id ascending', async () => {
        const locator = (await app.lifecycle.admitData(serviceId)).service.storage;
        if (!locator) throw new Error('no storage locator');
        const at = 1_800_000_000_000_000n;
        const stored = (id: string, updatedAt: bigint) => ({
          id, slug: `s-${id.slice(-2)}`, title: 'T', intent: 'I', branchType: null, parentId: null, status: 'active' as const, retrievalSummary: null, createdAt: at, updatedAt, branchRevision: 1n,
        });
        const id = (n: number) => `00000000-0000-4000-8000-0000000000${n.toString().padStart(2, '0')}`;
        // Inserted out of order: the newest first by id, then three tied.
        await storage.data.write(locator, 'agent-a', async (tx) => {
          for (const branch of [stored(id(3), at), stored(id(9), at + 5n), stored(id(1), at), stored(id(2), at)]) await tx.insertBranch(branch);
        });
        const cards = await storage.data.read(locator, 'agent-a', (tx) => tx.branchCards(3));
        expect(cards.map((card) => card.branch.id)).toEqual([id(9), id(1), id(2)]);
      });
    });
  });
}
