// Reference test files not replayed earlier (randallcmark/aipcs-mcp:
// tests/storage_sqlite/test_topology.py and the client-visible parts of
// tests/test_legacy_v1.py), replayed against the built `aipcs serve` over
// stdio on every storage profile. Facts only; the code is ours.

import { chmodSync, closeSync, linkSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { aipcs } from '../support/aipcs-admin.js';
import { aipcsBin } from '../support/bins.js';
import { freshDataRoot, serverProfiles, sqliteArgs, startAipcs, type AipcsClient } from '../support/aipcs-client.js';
import { serverManaged } from '../support/manifests.js';

const manifest = {
  manifest_version: 2,
  schema_version: 1,
  entities: [{ name: 'project', attributes: [...serverManaged(), { name: 'title', type: 'string', required: true }] }],
};

async function materialised(server: AipcsClient): Promise<string> {
  const seeded = await server.call('aipcs_service_seed', { domain_name: 'topology', domain_class: 'project', intent_description: 'Topology.', idempotency_key: 's' });
  const sid = seeded.result?.['service_id'] as string;
  expect((await server.call('aipcs_service_design', { service_id: sid, schema: manifest, idempotency_key: 'd' })).ok).toBe(true);
  expect((await server.call('aipcs_service_materialise', { service_id: sid, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'm' })).ok).toBe(true);
  return sid;
}

for (const profile of await serverProfiles()) {
  describe(`reference branch topology scenarios (${profile.name})`, () => {
    it('pages branches, refuses a parent cycle, keeps an explicit-null patch a no-op', async () => {
      const storage = await profile.fresh();
      const server = await startAipcs(storage.args, storage.env);
      try {
        const sid = await materialised(server);
        const root = await server.call('aipcs_branch_create', { service_id: sid, slug: 'root', title: 'Root', intent: 'intent', idempotency_key: 'create-root' });
        const rootId = (root.result?.['branch'] as { id: string }).id;
        const child = await server.call('aipcs_branch_create', { service_id: sid, slug: 'child', title: 'Child', intent: 'intent', parent_branch_id: rootId, idempotency_key: 'create-child' });
        const childBranch = child.result?.['branch'] as { id: string; parent_id: string };
        expect(childBranch.parent_id).toBe(rootId);

        const first = await server.call('aipcs_branch_list', { service_id: sid, limit: 1 });
        const firstPage = first.result?.['branches'] as { slug: string }[];
        expect(firstPage).toHaveLength(1);
        expect(first.result?.['next_cursor']).toEqual(expect.any(String));
        const second = await server.call('aipcs_branch_list', { service_id: sid, limit: 1, cursor: first.result?.['next_cursor'] });
        const secondPage = second.result?.['branches'] as { slug: string }[];
        expect([...firstPage, ...secondPage].map((b) => b.slug).sort()).toEqual(['child', 'root']);

        const cycle = await server.call('aipcs_branch_update', { service_id: sid, branch_id: rootId, expected_branch_revision: 1, updates: { parent_branch_id: childBranch.id }, idempotency_key: 'cycle' });
        expect(cycle.error?.code).toBe('constraint_violation');
        const patched = await server.call('aipcs_branch_update', { service_id: sid, branch_id: rootId, expected_branch_revision: 1, updates: { branch_type: null }, idempotency_key: 'patch' });
        expect(patched.ok).toBe(true);
        expect((patched.result?.['branch'] as { branch_revision: number }).branch_revision).toBe(1);
      } finally {
        await server.close();
        await storage.drop();
      }
    });

    it('assigns atomically and idempotently, one primary and many related, each effective change one version and one event', async () => {
      const storage = await profile.fresh();
      const server = await startAipcs(storage.args, storage.env);
      try {
        const sid = await materialised(server);
        const ids: string[] = [];
        for (const title of ['one', 'two']) {
          const created = await server.call('aipcs_record_create', { service_id: sid, entity_name: 'project', record: { title }, idempotency_key: `c-${title}` });
          ids.push((created.result?.['record'] as { id: string }).id);
        }
        const [one, two] = ids as [string, string];
        const rootId = ((await server.call('aipcs_branch_create', { service_id: sid, slug: 'root', title: 'Root', intent: 'intent', idempotency_key: 'create-root' })).result?.['branch'] as { id: string }).id;
        const childId = ((await server.call('aipcs_branch_create', { service_id: sid, slug: 'child', title: 'Child', intent: 'intent', parent_branch_id: rootId, idempotency_key: 'create-child' })).result?.['branch'] as { id: string }).id;
        const assign = (branch: string, role: string, operation: string, targets: [string, number][], key: string) =>
          server.call('aipcs_branch_assign_records', {
            service_id: sid,
            branch_id: branch,
            role,
            operation,
            records: targets.map(([id, version]) => ({ entity_name: 'project', record_id: id, expected_record_version: version })),
            idempotency_key: key,
          });
        const versionOf = (envelope: Awaited<ReturnType<typeof assign>>) => (envelope.result?.['records'] as { record_version: number }[])[0]?.record_version;

        const assigned = await assign(rootId, 'primary', 'assign', [[one, 1]], 'first');
        expect(versionOf(assigned)).toBe(2);
        const replay = await assign(rootId, 'primary', 'assign', [[one, 1]], 'first');
        expect(replay.result?.['replayed']).toBe(true);
        expect(replay.result?.['records']).toEqual(assigned.result?.['records']);
        expect(versionOf(await assign(childId, 'primary', 'assign', [[one, 2]], 'move'))).toBe(3);
        expect(versionOf(await assign(rootId, 'related', 'assign', [[one, 3]], 'related'))).toBe(4);
        expect(versionOf(await assign(rootId, 'related', 'unassign', [[one, 4]], 'remove'))).toBe(5);
        expect(versionOf(await assign(rootId, 'related', 'unassign', [[one, 5]], 'remove-noop'))).toBe(5);
        const history = await server.call('aipcs_record_history', { service_id: sid, entity_name: 'project', record_id: one });
        expect((history.result?.['events'] as { kind: string }[]).map((e) => e.kind)).toEqual(['create', 'primary_assign', 'primary_move', 'related_assign', 'related_unassign']);

        const stale = await assign(rootId, 'related', 'assign', [[one, 5], [two, 99]], 'atomic');
        expect(stale.error?.code).toBe('stale_record_version');
        const related = await server.call('aipcs_record_list', { service_id: sid, entity_name: 'project', branch_id: rootId, branch_role: 'related' });
        expect(related.result?.['records']).toEqual([]);
        expect((await server.call('aipcs_record_get', { service_id: sid, entity_name: 'project', record_id: one })).result?.['record_version']).toBe(5);
      } finally {
        await server.close();
        await storage.drop();
      }
    });

    // tests/storage_sqlite/test_lifecycle_registry.py
    it('checks a bound lifecycle key before the service, and lets refused admissions leave the key free', async () => {
      const storage = await profile.fresh();
      const server = await startAipcs(storage.args, storage.env);
      try {
        const sid = await materialised(server);
        const unknown = await server.call('aipcs_service_materialise', { service_id: '00000000-0000-4000-8000-000000000999', expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'm' });
        expect(unknown.error?.code).toBe('changed_fingerprint');
        const replay = await server.call('aipcs_service_materialise', { service_id: sid, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'm' });
        expect(replay.result?.['service_revision']).toBe(3);
        const seeded = await server.call('aipcs_service_seed', { domain_name: 'second', domain_class: 'project', intent_description: 'Second.', idempotency_key: 's2' });
        const second = seeded.result?.['service_id'] as string;
        expect((await server.call('aipcs_service_design', { service_id: second, schema: manifest, idempotency_key: 'd2' })).ok).toBe(true);
        const stale = await server.call('aipcs_service_materialise', { service_id: second, expected_service_revision: 1, expected_schema_version: 1, idempotency_key: 'again' });
        expect(stale.error?.code).toBe('stale_revision');
        const missing = await server.call('aipcs_service_materialise', { service_id: '00000000-0000-4000-8000-000000000998', expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'again' });
        expect(missing.error?.code).toBe('stale_revision');
        const done = await server.call('aipcs_service_materialise', { service_id: second, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'again' });
        expect(done.ok).toBe(true);
        expect(done.result?.['service_revision']).toBe(3);
      } finally {
        await server.close();
        await storage.drop();
      }
    });

    // tests/storage_postgresql/test_concurrency_integration.py, across two server processes.
    it('converges same-key branch and record creation and keeps one winner of a branch revision race', async () => {
      const storage = await profile.fresh();
      const a = await startAipcs(storage.args, storage.env);
      const b = await startAipcs(storage.args, storage.env);
      const settled = async (client: AipcsClient, name: string, args: Record<string, unknown>) => {
        for (let attempt = 0; attempt < 50; attempt++) {
          const envelope = await client.call(name, args);
          if (envelope.ok || !envelope.error?.retryable) return envelope;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        throw new Error('the request never settled');
      };
      try {
        const sid = await materialised(a);
        const create = { service_id: sid, entity_name: 'project', record: { title: 'same' }, idempotency_key: 'create-same' };
        const records = await Promise.all([settled(a, 'aipcs_record_create', create), settled(b, 'aipcs_record_create', create)]);
        expect(records.map((e) => e.result?.['replayed']).sort()).toEqual([false, true]);
        expect(records[0]?.result?.['record']).toEqual(records[1]?.result?.['record']);

        const branch = { service_id: sid, slug: 'branch-cas', title: 'Branch CAS', intent: 'Concurrent branch update.', idempotency_key: 'branch-cas-create' };
        const branches = await Promise.all([settled(a, 'aipcs_branch_create', branch), settled(b, 'aipcs_branch_create', branch)]);
        expect(branches.map((e) => e.result?.['replayed']).sort()).toEqual([false, true]);
        expect(branches[0]?.result?.['branch']).toEqual(branches[1]?.result?.['branch']);
        const branchId = (branches[0]?.result?.['branch'] as { id: string }).id;
        const updates = await Promise.all(
          (['Left', 'Right'] as const).map((title, index) =>
            settled(index === 0 ? a : b, 'aipcs_branch_update', { service_id: sid, branch_id: branchId, expected_branch_revision: 1, updates: { title }, idempotency_key: `branch-cas-${title}` }),
          ),
        );
        expect(updates.filter((e) => e.ok)).toHaveLength(1);
        expect(updates.filter((e) => e.error?.code === 'stale_branch_revision')).toHaveLength(1);
      } finally {
        await Promise.all([a.close(), b.close()]);
        await storage.drop();
      }
    });

    it('refuses assignment to an archived branch', async () => {
      const storage = await profile.fresh();
      const server = await startAipcs(storage.args, storage.env);
      try {
        const sid = await materialised(server);
        const created = await server.call('aipcs_record_create', { service_id: sid, entity_name: 'project', record: { title: 'one' }, idempotency_key: 'c' });
        const one = (created.result?.['record'] as { id: string }).id;
        const rootId = ((await server.call('aipcs_branch_create', { service_id: sid, slug: 'root', title: 'Root', intent: 'intent', idempotency_key: 'create-root' })).result?.['branch'] as { id: string }).id;
        const archived = await server.call('aipcs_branch_update', { service_id: sid, branch_id: rootId, expected_branch_revision: 1, updates: { status: 'archived' }, idempotency_key: 'archive' });
        expect((archived.result?.['branch'] as { status: string }).status).toBe('archived');
        const outcome = await server.call('aipcs_branch_assign_records', {
          service_id: sid,
          branch_id: rootId,
          role: 'related',
          operation: 'assign',
          records: [{ entity_name: 'project', record_id: one, expected_record_version: 1 }],
          idempotency_key: 'cannot-assign',
        });
        expect(outcome.error?.code).toBe('constraint_violation');
      } finally {
        await server.close();
        await storage.drop();
      }
    });
  });
}

// tests/storage_sqlite/test_domain_schema_security_and_faults.py: a stray
// rollback journal beside a WAL-mode service store is refused, not recovered.
describe('a stray -journal beside a closed service store (sqlite)', () => {
  it('makes the data tools answer storage_unavailable and leaves the file as it was', async () => {
    const root = freshDataRoot();
    let server = await startAipcs(sqliteArgs(root));
    let sid: string;
    try {
      sid = await materialised(server);
    } finally {
      await server.close();
    }
    const stores = join(root, 'service-stores');
    const database = readdirSync(stores).find((name) => name.endsWith('.sqlite')) as string;
    const journal = join(stores, `${database}-journal`);
    const fd = openSync(journal, 'wx', 0o600);
    writeSync(fd, 'untrusted-sidecar');
    closeSync(fd);
    server = await startAipcs(sqliteArgs(root));
    try {
      expect((await server.call('aipcs_record_list', { service_id: sid, entity_name: 'project' })).error?.code).toBe('storage_unavailable');
      expect((await server.call('aipcs_record_create', { service_id: sid, entity_name: 'project', record: { title: 't' }, idempotency_key: 'c' })).error?.code).toBe('storage_unavailable');
    } finally {
      await server.close();
    }
    expect(readFileSync(journal, 'utf8')).toBe('untrusted-sidecar');
  });
});

// tests/storage_sqlite/test_location_policy.py, as an operator sees it:
// `serve` (internal_error, exit 2) and `status` (storage_unavailable, exit 6).
describe('SQLite location policy cases of the reference (operator view)', () => {
  const serve = (root: string) => aipcs(['serve', ...sqliteArgs(root)]);
  const status = (root: string) => aipcs(['status', ...sqliteArgs(root)]);

  it('refuses a hard-linked, FIFO or loosely-moded registry file', () => {
    for (const kind of ['hardlink', 'fifo', 'broad']) {
      const root = freshDataRoot();
      mkdirSync(root, { mode: 0o700 });
      const database = join(root, 'registry.sqlite');
      if (kind === 'fifo') {
        expect(aipcsMkfifo(database)).toBe(0);
      } else {
        writeFileSync(database, '', { mode: 0o600 });
        if (kind === 'hardlink') linkSync(database, join(dirname(root), 'second-link'));
        else chmodSync(database, 0o644);
      }
      const run = serve(root);
      expect([kind, run.status, run.envelope.error?.code]).toEqual([kind, 2, 'internal_error']);
    }
  });

  it('never follows or recovers an unsafe rollback journal entry beside the registry', () => {
    for (const kind of ['symlink', 'hardlink', 'broad']) {
      const root = freshDataRoot();
      expect(serve(root).status).toBe(0);
      const outside = join(dirname(root), 'outside');
      writeFileSync(outside, 'sentinel', { mode: 0o600 });
      const journal = join(root, 'registry.sqlite-journal');
      if (kind === 'symlink') symlinkSync(outside, journal);
      else if (kind === 'hardlink') linkSync(outside, journal);
      else writeFileSync(journal, 'journal', { mode: 0o644 });
      const started = serve(root);
      expect([kind, started.status, started.envelope.error?.code]).toEqual([kind, 2, 'internal_error']);
      // Inspection reports the registry unavailable (exit 0); a command needing it refuses (exit 6).
      const inspected = status(root);
      expect([kind, inspected.status, (inspected.envelope.result?.['registry'] as { issue_code?: string } | undefined)?.issue_code]).toEqual([kind, 0, 'storage_unavailable']);
      const listed = aipcs(['service', 'list', ...sqliteArgs(root)]);
      expect([kind, listed.status, listed.envelope.error?.code]).toEqual([kind, 6, 'storage_unavailable']);
      expect(readFileSync(outside, 'utf8')).toBe('sentinel');
    }
  });

  it('creates 0700/0600 under a permissive umask, and takes URI metacharacters in the root as plain path data', () => {
    const parent = dirname(freshDataRoot());
    const root = join(parent, 'percent%question?hash#');
    // umask 0 in the child only: the creation modes must not depend on it.
    const run = spawnSync('sh', ['-c', 'umask 0 && exec "$0" "$@"', process.execPath, aipcsBin(), 'serve', ...sqliteArgs(root)], { encoding: 'utf8', timeout: 60_000 });
    expect(run.status).toBe(0);
    expect(statSync(root).mode & 0o777).toBe(0o700);
    expect(statSync(join(root, 'registry.sqlite')).mode & 0o777).toBe(0o600);
    expect(readdirSync(root)).toEqual(['registry.sqlite']);
  });
});

function aipcsMkfifo(path: string): number | null {
  return spawnSync('mkfifo', ['-m', '600', path]).status;
}
