// `aipcs service suspend|resume|archive|restore` through the built CLI:
// results, machine-mode requirements, revision preconditions, operation ids
// shared with MCP keys, what MCP clients see afterwards, and what the refusal
// says when an earlier operation (an export or import too) never finished.

import { existsSync, mkdtempSync, readdirSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aipcs, createNote, freshDataRoot, key, materialisedService, materialisedServiceThenStop, rootArgs, seedService, serveOn } from '../../support/aipcs-admin.js';
import { sqliteArgs, startAipcs, type AipcsClient } from '../../support/aipcs-client.js';
import { wireNotesManifest } from '../../support/wire-manifests.js';

const OP = (n: number): string => `00000000-0000-4000-8000-${n.toString().padStart(12, '0')}`;
const REPLAY_OP = (n: number): string => `0a5e0000-0000-4000-8000-${n.toString().padStart(12, '0')}`;
const UNFINISHED_OP = (n: number): string => `0f1e0000-0000-4000-8000-${n.toString().padStart(12, '0')}`;
/** Runs the command with AIPCS_FAULT_INJECTION killing it at `checkpoint`. */
const killedAt = (checkpoint: string): { env: Record<string, string> } => ({ env: { AIPCS_FAULT_INJECTION: checkpoint } });

describe('aipcs service lifecycle commands', () => {
  let dataRoot: string;
  let client: AipcsClient;
  let args: string[];

  beforeAll(async () => {
    dataRoot = freshDataRoot();
    client = await serveOn(dataRoot);
    args = rootArgs(dataRoot);
  });

  afterAll(async () => {
    await client.close();
  });

  it('suspends, resumes, archives and restores with revision +1 each, re-inspecting the service', async () => {
    const serviceId = await materialisedService(client, 'cycle');
    const suspend = aipcs(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', OP(1), ...args]);
    expect(suspend.status).toBe(0);
    expect(suspend.stderr).toBe('');
    expect(Object.keys(suspend.envelope.result ?? {})).toEqual(['operation', 'operation_id', 'service']);
    expect(suspend.envelope.result).toMatchObject({ operation: 'suspend', operation_id: OP(1), service: { service_id: serviceId, operational_status: 'suspended', service_revision: 4, recovery_state: 'clear' } });
    const service = suspend.envelope.result?.['service'] as Record<string, unknown>;
    expect(service['updated_at']).toBe(service['last_activity_at']);

    const resume = aipcs(['service', 'resume', serviceId, '--expected-revision', '4', '--operation-id', OP(2), ...args]);
    expect(resume.envelope.result).toMatchObject({ operation: 'resume', service: { operational_status: 'active', service_revision: 5 } });
    const archive = aipcs(['service', 'archive', serviceId, '--expected-revision', '5', '--operation-id', OP(3), '--yes', ...args]);
    expect(archive.envelope.result).toMatchObject({ operation: 'archive', service: { operational_status: 'archived', service_revision: 6 } });
    const restore = aipcs(['service', 'restore', serviceId, '--expected-revision', '6', '--operation-id', OP(4), ...args]);
    expect(restore.envelope.result).toMatchObject({ operation: 'restore', service: { operational_status: 'suspended', service_revision: 7 } });
    const inspect = aipcs(['service', 'inspect', serviceId, ...args]);
    expect(inspect.envelope.result).toMatchObject({ operational_status: 'suspended', service_revision: 7 });
  });

  it('replays an exact retry and refuses a changed one under the same operation id', async () => {
    const serviceId = await seedService(client, 'replays');
    const first = aipcs(['service', 'suspend', serviceId, '--expected-revision', '1', '--operation-id', OP(10), ...args]);
    expect(first.status).toBe(0);
    const again = aipcs(['service', 'suspend', serviceId, '--expected-revision', '1', '--operation-id', OP(10), ...args]);
    expect(again.status).toBe(0);
    expect(again.stdout).toBe(first.stdout);
    const changed = aipcs(['service', 'resume', serviceId, '--expected-revision', '2', '--operation-id', OP(10), ...args]);
    expect(changed.status).toBe(3);
    expect(changed.envelope.error?.code).toBe('changed_fingerprint');
    expect(changed.stdout).toBe('');
  });

  it('shares the ledger with MCP keys: an MCP key reused by the CLI is changed_fingerprint', async () => {
    const seedKey = '11111111-1111-4111-8111-111111111111';
    const seeded = await client.call('aipcs_service_seed', { domain_name: 'shared_keys', domain_class: 'k', intent_description: 'x', idempotency_key: seedKey });
    const serviceId = seeded.result?.['service_id'] as string;
    const run = aipcs(['service', 'suspend', serviceId, '--expected-revision', '1', '--operation-id', seedKey, ...args]);
    expect(run.status).toBe(3);
    expect(run.envelope.error?.code).toBe('changed_fingerprint');
  });

  it('refuses stale revisions, unknown services and unsupported transitions with exit 3', async () => {
    const serviceId = await seedService(client, 'refusals');
    const stale = aipcs(['service', 'suspend', serviceId, '--expected-revision', '7', '--operation-id', OP(20), ...args]);
    expect([stale.status, stale.envelope.error?.code]).toEqual([3, 'stale_revision']);
    // 2^63-1 is the largest revision the lexical rule admits (§1.5): refused as stale, not as invalid input.
    const largest = aipcs(['service', 'suspend', serviceId, '--expected-revision', '9223372036854775807', '--operation-id', OP(24), ...args]);
    expect([largest.status, largest.envelope.error?.code]).toEqual([3, 'stale_revision']);
    const unknown = aipcs(['service', 'suspend', OP(999), '--expected-revision', '1', '--operation-id', OP(21), ...args]);
    expect([unknown.status, unknown.envelope.error?.code]).toEqual([3, 'stale_revision']);
    const resumeActive = aipcs(['service', 'resume', serviceId, '--expected-revision', '1', '--operation-id', OP(22), ...args]);
    expect([resumeActive.status, resumeActive.envelope.error?.code]).toEqual([3, 'unsupported_transition']);
    const restoreActive = aipcs(['service', 'restore', serviceId, '--expected-revision', '1', '--operation-id', OP(23), ...args]);
    expect([restoreActive.status, restoreActive.envelope.error?.code]).toEqual([3, 'unsupported_transition']);
    // A refusal binds nothing: the same key works for a valid request afterwards.
    const valid = aipcs(['service', 'suspend', serviceId, '--expected-revision', '1', '--operation-id', OP(20), ...args]);
    expect(valid.status).toBe(0);
  });

  it('checks machine-mode flags and lexical rules before touching storage (exit 2)', () => {
    const missing = freshDataRoot();
    const id = OP(30);
    const cases: [string[], string][] = [
      [['service', 'suspend', id, '--operation-id', OP(31)], '--expected-revision'],
      [['service', 'suspend', id, '--expected-revision', '3'], '--operation-id'],
      [['service', 'archive', id, '--expected-revision', '3', '--operation-id', OP(31)], '--yes'],
      [['service', 'suspend', 'ABCDEF00-0000-4000-8000-000000000030', '--expected-revision', '3', '--operation-id', OP(31)], 'SERVICE_ID'],
      [['service', 'suspend', '00000000-0000-0000-0000-000000000000', '--expected-revision', '3', '--operation-id', OP(31)], 'SERVICE_ID'],
      [['service', 'suspend', id, '--expected-revision', '03', '--operation-id', OP(31)], '--expected-revision'],
      [['service', 'suspend', id, '--expected-revision', '9223372036854775808', '--operation-id', OP(31)], '--expected-revision'],
      [['service', 'suspend', id, '--expected-revision', '1', '--operation-id', 'not-a-uuid'], '--operation-id'],
      // Both invalid: the revision is named first (spec §1.9.1 order).
      [['service', 'suspend', id, '--expected-revision', '03', '--operation-id', 'not-a-uuid'], '--expected-revision'],
      // --format human without a terminal is still machine mode.
      [['service', 'resume', id, '--format', 'human'], '--expected-revision'],
    ];
    for (const [argv, path] of cases) {
      const run = aipcs([...argv, ...rootArgs(missing)]);
      expect(run.status, argv.join(' ')).toBe(2);
      if (argv.includes('human')) {
        expect(run.stderr).toContain('error [validation_failed]');
        expect(run.stderr).toContain(`- ${path}:`);
      } else {
        expect(run.envelope.error?.code).toBe('validation_failed');
        expect(run.envelope.error?.issues[0]?.path).toBe(path);
      }
    }
    // Nothing was created: flag checks come before storage.
    expect(aipcs(['storage', 'status', ...rootArgs(missing)]).envelope.result?.['status']).toBe('uninitialised');
  });

  it('refuses a retired transport variable before anything else, read-only and operator commands alike (transport_not_supported, exit 2)', () => {
    const missing = freshDataRoot();
    const env = { AIPCS_MCP_TRANSPORT: 'stdio' };
    // The suspend lacks its machine-mode flags: the preflight comes first (spec §1.5 order).
    for (const argv of [['status'], ['doctor'], ['service', 'list'], ['service', 'suspend', OP(35)]]) {
      const run = aipcs([...argv, ...rootArgs(missing)], { env });
      expect([run.status, run.envelope.error?.code], argv.join(' ')).toEqual([2, 'transport_not_supported']);
      expect(run.stdout, argv.join(' ')).toBe('');
    }
  });

  it('checks flags and mode before it resolves the configuration (spec §1.5 order)', () => {
    const missing = freshDataRoot();
    // An unknown profile from the environment (no --profile flag overrides it).
    const env = { AIPCS_PROFILE: 'bogus' };
    const root = ['--sqlite-data-root', missing];
    const cases: [string[], string][] = [
      [['service', 'suspend', OP(36)], '--expected-revision'],
      [['service', 'inspect', 'not-a-uuid'], 'SERVICE_ID'],
      [['export', OP(36), '--output', join(missing, 'out.jsonl'), '--operation-id', OP(37)], '--expected-revision'],
    ];
    for (const [argv, path] of cases) {
      const run = aipcs([...argv, ...root], { env });
      expect([run.status, run.envelope.error?.issues[0]?.path], argv.join(' ')).toEqual([2, path]);
    }
    // With its flags complete, the same command reaches the configuration and is refused there.
    const resolved = aipcs(['service', 'suspend', OP(36), '--expected-revision', '1', '--operation-id', OP(37), ...root], { env });
    expect([resolved.status, resolved.envelope.error?.issues[0]?.code, resolved.envelope.error?.issues[0]?.path]).toEqual([2, 'invalid_configuration', 'profile']);
  });

  it('requires a ready registry: a missing root needs migrating (by serve) and stays missing', () => {
    const missing = freshDataRoot();
    const run = aipcs(['service', 'suspend', OP(40), '--expected-revision', '1', '--operation-id', OP(41), ...rootArgs(missing)]);
    expect([run.status, run.envelope.error?.code]).toEqual([3, 'storage_migration_required']);
    expect(aipcs(['status', ...rootArgs(missing)]).envelope.result?.['registry']).toMatchObject({ status: 'uninitialised' });
  });

  it('is visible through MCP: operational_status and the specified refusals', async () => {
    const serviceId = await materialisedService(client, 'visible');
    const note = await createNote(client, serviceId, { title: 'Before suspend' });
    expect(aipcs(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', OP(50), ...args]).status).toBe(0);

    const inspected = await client.call('aipcs_service_inspect', { service_id: serviceId });
    expect(inspected.result).toMatchObject({ operational_status: 'suspended', service_revision: 4 });
    const get = await client.call('aipcs_record_get', { service_id: serviceId, entity_name: 'note', record_id: note['id'] });
    expect(get.error?.code).toBe('storage_unavailable');
    const create = await client.call('aipcs_record_create', { service_id: serviceId, entity_name: 'note', record: { title: 'x' }, idempotency_key: key('c') });
    expect(create.error?.code).toBe('storage_unavailable');
    const evolve = await client.call('aipcs_service_evolve', { service_id: serviceId, expected_service_revision: 4, expected_schema_version: 1, schema: { ...wireNotesManifest(), schema_version: 2, migration_history: [{ from_schema_version: 1, to_schema_version: 2, operations: ['none'] }] }, idempotency_key: key('e') });
    expect(evolve.error?.code).toBe('unsupported_transition');

    const seeded = await seedService(client, 'visible_seed');
    expect(aipcs(['service', 'archive', seeded, '--expected-revision', '1', '--operation-id', OP(51), '--yes', ...args]).status).toBe(0);
    const design = await client.call('aipcs_service_design', { service_id: seeded, schema: wireNotesManifest(), idempotency_key: key('d') });
    expect(design.error?.code).toBe('invalid_state');

    expect(aipcs(['service', 'resume', serviceId, '--expected-revision', '4', '--operation-id', OP(52), ...args]).status).toBe(0);
    const after = await client.call('aipcs_record_get', { service_id: serviceId, entity_name: 'note', record_id: note['id'] });
    expect(after.ok).toBe(true);
    const write = await client.call('aipcs_record_create', { service_id: serviceId, entity_name: 'note', record: { title: 'After resume' }, idempotency_key: key('c') });
    expect(write.ok).toBe(true);
  });

  it('prints human output in machine mode with --yes', async () => {
    const serviceId = await seedService(client, 'human_out');
    const run = aipcs(['service', 'suspend', serviceId, '--expected-revision', '1', '--operation-id', OP(60), '--format', 'human', '--yes', ...args]);
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('operation: suspend\n');
    expect(run.stdout).toContain('service.operational_status: suspended\n');
    expect(run.stdout).toContain('service.storage: null\n');
  });

  // Spec §1.9.3 and §1.9.5: the `service` of a lifecycle or import result is
  // re-inspected, also when the command replays a completed operation.
  it('a replayed suspend re-inspects the service after a later resume', async () => {
    const serviceId = await seedService(client, 'replayed_suspend');
    const suspend = ['service', 'suspend', serviceId, '--expected-revision', '1', '--operation-id', REPLAY_OP(1), ...args];
    const first = aipcs(suspend);
    expect(first.status, first.stderr).toBe(0);
    expect(first.envelope.result).toMatchObject({ operation: 'suspend', operation_id: REPLAY_OP(1), service: { operational_status: 'suspended', service_revision: 2 } });
    expect(aipcs(['service', 'resume', serviceId, '--expected-revision', '2', '--operation-id', REPLAY_OP(2), ...args]).status).toBe(0);

    const replay = aipcs(suspend);
    expect(replay.status, replay.stderr).toBe(0);
    expect(Object.keys(replay.envelope.result ?? {})).toEqual(['operation', 'operation_id', 'service']);
    expect(replay.envelope.result).toMatchObject({ operation: 'suspend', operation_id: REPLAY_OP(1), service: { service_id: serviceId, operational_status: 'active', service_revision: 3 } });
    const inspect = aipcs(['service', 'inspect', serviceId, ...args]);
    expect(replay.envelope.result?.['service']).toEqual(inspect.envelope.result);
  });

  it('a replayed import re-inspects the imported service after a later resume', async () => {
    const sourceId = await materialisedService(client, 'replayed_import');
    expect(aipcs(['service', 'suspend', sourceId, '--expected-revision', '3', '--operation-id', REPLAY_OP(10), ...args]).status).toBe(0);
    const artefact = join(mkdtempSync(join(tmpdir(), 'aipcs-')), 'moved.jsonl');
    const exported = aipcs(['export', sourceId, '--output', artefact, '--expected-revision', '4', '--operation-id', REPLAY_OP(11), ...args]);
    expect(exported.status, exported.stderr).toBe(0);

    const destination = freshDataRoot();
    const server = await serveOn(destination, 'other-agent');
    await server.close();
    const destinationArgs = rootArgs(destination, 'other-agent');
    const importArgs = ['import', '--input', artefact, '--operation-id', REPLAY_OP(12), '--yes', ...destinationArgs];
    const imported = aipcs(importArgs);
    expect(imported.status, imported.stderr).toBe(0);
    expect(imported.envelope.result).toMatchObject({ operation: 'import', service: { operational_status: 'suspended', service_revision: 4 } });
    expect(aipcs(['service', 'resume', sourceId, '--expected-revision', '4', '--operation-id', REPLAY_OP(13), ...destinationArgs]).status).toBe(0);

    const replay = aipcs(importArgs);
    expect(replay.status, replay.stderr).toBe(0);
    expect(Object.keys(replay.envelope.result ?? {})).toEqual(['operation', 'operation_id', 'summary', 'service']);
    expect(replay.envelope.result?.['summary']).toEqual(imported.envelope.result?.['summary']);
    expect(replay.envelope.result).toMatchObject({ operation: 'import', operation_id: REPLAY_OP(12), service: { service_id: sourceId, operational_status: 'active', service_revision: 5 } });
    const inspect = aipcs(['service', 'inspect', sourceId, ...destinationArgs]);
    expect(replay.envelope.result?.['service']).toEqual(inspect.envelope.result);
  });

  // Spec §4.3: once the intent is admitted, a fence change that cannot be
  // made keeps the claim prepared and answers busy or uncertain, so that
  // the operator repeats the same command (until round 17 a store that could
  // not be read answered the non-retryable storage_unavailable, exit 6,
  // while the service stayed pending).
  it('a suspend whose store cannot be read after admission is operation_uncertain and converges on retry', async () => {
    const root = freshDataRoot();
    const serviceId = await materialisedServiceThenStop(root, 'store_away');
    const storeArgs = rootArgs(root);
    const store = join(root, 'service-stores', `svc_${serviceId.replaceAll('-', '')}.sqlite`);
    const suspend = ['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', OP(900), ...storeArgs];
    renameSync(store, `${store}.away`);
    const refused = aipcs(suspend);
    expect([refused.status, refused.envelope.error?.code, refused.envelope.error?.retryable]).toEqual([4, 'operation_uncertain', true]);
    expect(aipcs(['service', 'inspect', serviceId, ...storeArgs]).envelope.result).toMatchObject({ operational_status: 'active', service_revision: 3, recovery_state: 'pending' });

    renameSync(`${store}.away`, store);
    const retried = aipcs(suspend);
    expect(retried.status, retried.stderr).toBe(0);
    expect(retried.envelope.result).toMatchObject({ service: { operational_status: 'suspended', service_revision: 4, recovery_state: 'clear' } });
  });

  // A command killed after its claim was admitted leaves the service pending:
  // every other operation on it is refused until that one is repeated with its
  // operation id. The refusal says which kind of operation is unfinished
  // (D54), never its id (operations spec §2.9: keys are never printed); the
  // code, retryable flag, exit code and issues stay the contract's.
  describe('an operation that never finished', () => {
    it('is named, without its operation id, by the refusal of any other operation, and finishes when repeated', async () => {
      const serviceId = await materialisedService(client, 'killed_suspend');
      const suspendArgs = ['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', UNFINISHED_OP(1), ...args];
      const killed = aipcs(suspendArgs, killedAt('suspend:admitted'));
      expect(killed.status).toBeNull();

      const archive = aipcs(['service', 'archive', serviceId, '--expected-revision', '3', '--operation-id', UNFINISHED_OP(2), '--yes', ...args]);
      expect(archive.status).toBe(4);
      expect(archive.envelope.error).toEqual({
        code: 'operation_in_progress',
        message: 'A lifecycle operation is already in progress. A suspend of this service is unfinished or still running; to finish it, repeat that command with the operation id it was given.',
        issues: [],
        retryable: true,
      });
      expect(archive.stderr).not.toContain(UNFINISHED_OP(1));
      const human = aipcs(['service', 'archive', serviceId, '--expected-revision', '3', '--operation-id', UNFINISHED_OP(2), '--yes', '--format', 'human', ...args]);
      expect(human.stderr).toBe(`error [operation_in_progress]: ${archive.envelope.error?.message}\n`);

      const repeated = aipcs(suspendArgs);
      expect(repeated.status, repeated.stderr).toBe(0);
      expect(repeated.envelope.result).toMatchObject({ operation: 'suspend', operation_id: UNFINISHED_OP(1), service: { operational_status: 'suspended', service_revision: 4, recovery_state: 'clear' } });
      expect(aipcs(['service', 'archive', serviceId, '--expected-revision', '4', '--operation-id', UNFINISHED_OP(2), '--yes', ...args]).status).toBe(0);
    });

    it('names an unfinished export, which the same command then completes at the same path', async () => {
      const serviceId = await materialisedService(client, 'killed_export');
      expect(aipcs(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', UNFINISHED_OP(10), ...args]).status).toBe(0);
      const folder = mkdtempSync(join(tmpdir(), 'aipcs-unfinished-'));
      const exportArgs = ['export', serviceId, '--output', join(folder, 'out.jsonl'), '--expected-revision', '4', '--operation-id', UNFINISHED_OP(11), ...args];
      expect(aipcs(exportArgs, killedAt('export:admitted')).status).toBeNull();

      const other = aipcs(['export', serviceId, '--output', join(folder, 'other.jsonl'), '--expected-revision', '4', '--operation-id', UNFINISHED_OP(12), ...args]);
      expect([other.status, other.envelope.error?.code, other.envelope.error?.retryable]).toEqual([4, 'operation_in_progress', true]);
      expect(other.envelope.error?.message).toBe(
        'A lifecycle operation is already in progress. An export of this service is unfinished or still running; to finish it, repeat that command with the operation id it was given.',
      );
      expect(other.stderr).not.toContain(UNFINISHED_OP(11));
      expect(existsSync(join(folder, 'other.jsonl'))).toBe(false);

      const repeated = aipcs(exportArgs);
      expect(repeated.status, repeated.stderr).toBe(0);
      expect(repeated.envelope.result).toMatchObject({ operation: 'export', operation_id: UNFINISHED_OP(11) });
      // The killed run's temp file stays (kill -9, D34); the finished export is in place.
      expect(readdirSync(folder).filter((name) => !name.startsWith('.aipcs-export-'))).toEqual(['out.jsonl']);
    });

    it('names an unfinished import of the same service id in already_exists, and the repeated import finishes it', async () => {
      const sourceId = await materialisedService(client, 'killed_import');
      expect(aipcs(['service', 'suspend', sourceId, '--expected-revision', '3', '--operation-id', UNFINISHED_OP(20), ...args]).status).toBe(0);
      const artefact = join(mkdtempSync(join(tmpdir(), 'aipcs-unfinished-')), 'moved.jsonl');
      expect(aipcs(['export', sourceId, '--output', artefact, '--expected-revision', '4', '--operation-id', UNFINISHED_OP(21), ...args]).status).toBe(0);

      const destination = freshDataRoot();
      await (await serveOn(destination)).close();
      const destinationArgs = rootArgs(destination);
      const importArgs = ['import', '--input', artefact, '--operation-id', UNFINISHED_OP(22), '--yes', ...destinationArgs];
      expect(aipcs(importArgs, killedAt('import:admitted')).status).toBeNull();

      const again = aipcs(['import', '--input', artefact, '--operation-id', UNFINISHED_OP(23), '--yes', ...destinationArgs]);
      expect([again.status, again.envelope.error?.code, again.envelope.error?.issues]).toEqual([3, 'already_exists', []]);
      expect(again.envelope.error?.message).toBe(
        'The target already exists. An import of this service id is unfinished or still running; to finish it, repeat that command with the operation id it was given.',
      );
      expect(again.stderr).not.toContain(UNFINISHED_OP(22));
      // Another principal learns nothing of it.
      const stranger = aipcs(['import', '--input', artefact, '--operation-id', UNFINISHED_OP(24), '--yes', ...rootArgs(destination, 'other-agent')]);
      expect([stranger.status, stranger.envelope.error?.message]).toEqual([3, 'The target already exists.']);

      const repeated = aipcs(importArgs);
      expect(repeated.status, repeated.stderr).toBe(0);
      expect(repeated.envelope.result).toMatchObject({ operation: 'import', operation_id: UNFINISHED_OP(22), service: { service_id: sourceId, operational_status: 'suspended' } });
    });

    it("names an MCP client's unfinished lifecycle request, without its key", async () => {
      const seeded = await client.call('aipcs_service_seed', { domain_name: 'killed_materialise', domain_class: 'knowledge', intent_description: 'Notes.', idempotency_key: 'seed-killed-materialise' });
      const serviceId = seeded.result?.['service_id'] as string;
      await client.call('aipcs_service_design', { service_id: serviceId, schema: wireNotesManifest(), idempotency_key: 'design-killed-materialise' });
      const doomed = await startAipcs(sqliteArgs(dataRoot, 'local-agent'), { AIPCS_FAULT_INJECTION: 'materialise:admitted' });
      const agentKey = 'materialise-key-of-the-agent';
      await expect(doomed.call('aipcs_service_materialise', { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: agentKey })).rejects.toThrow();
      await doomed.close().catch(() => undefined);

      const suspend = aipcs(['service', 'suspend', serviceId, '--expected-revision', '2', '--operation-id', UNFINISHED_OP(30), ...args]);
      expect([suspend.status, suspend.envelope.error?.code]).toEqual([4, 'operation_in_progress']);
      expect(suspend.envelope.error?.message).toBe(
        "A lifecycle operation is already in progress. An MCP client's materialise of this service is unfinished or still running; it finishes when that client repeats its request.",
      );
      expect(suspend.stderr).not.toContain(agentKey);
    });
  });
});
