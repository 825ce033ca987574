// A black-box walk of operations spec §1-4 through the built `aipcs` CLI,
// run as a child process: the places where it differed from the spec (or,
// where the spec is silent, from the reference) and statements no other
// end-to-end test pinned.

import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { aipcs, freshDataRoot, key, rootArgs, seedService, serveOn } from '../../support/aipcs-admin.js';
import { startAipcs, sqliteArgs } from '../../support/aipcs-client.js';
import { wireNotesManifest } from '../../support/wire-manifests.js';

const SID = '11111111-2222-4333-8444-555555555555';
const OP = (n: number): string => `a6a60000-0000-4000-8000-${n.toString().padStart(12, '0')}`;
const PURGE_USAGE = 'usage: aipcs service purge [options] <SERVICE_ID>';

describe('aipcs operations walk (session 6)', () => {
  it('purge without --receipt or --override is a parser error in every mode, before anything else (§1.2, §1.3)', () => {
    // The data root does not exist and must stay so: the parser refuses before configuration or storage.
    const dataRoot = freshDataRoot();
    const machine = ['service', 'purge', SID, '--expected-revision', '2', '--operation-id', OP(1), '--confirm-service-id', SID, '--yes'];
    for (const argv of [
      machine,
      // No machine flags at all: the authority is still the first complaint.
      ['service', 'purge', SID],
      // Human format (stdin is a pipe here, but argparse enforces the group whatever the mode).
      ['service', 'purge', SID, '--format', 'human'],
      // Invalid values elsewhere do not come first either: parsing precedes validation.
      ['service', 'purge', SID, '--expected-revision', '0', '--operation-id', 'nope'],
    ]) {
      const run = aipcs([...argv, ...rootArgs(dataRoot)]);
      expect(run.status, argv.join(' ')).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).not.toContain('"ok"');
      const lines = run.stderr.trimEnd().split('\n');
      expect(lines).toEqual([PURGE_USAGE, 'aipcs service purge: error: one of the arguments --receipt --override is required']);
    }
    expect(existsSync(dataRoot)).toBe(false);
    // Exactly one authority passes the parser (and then meets the usual checks).
    const receipt = aipcs(['service', 'purge', SID, '--receipt', OP(2), '--expected-revision', '2', '--operation-id', OP(3), '--confirm-service-id', SID, '--yes']);
    expect([receipt.status, receipt.envelope.error?.code]).toEqual([3, 'unsupported_operation']);
    const override = aipcs(['service', 'purge', SID, '--override', '--expected-revision', '2', '--operation-id', OP(3), '--confirm-service-id', SID]);
    expect([override.status, override.envelope.error?.code, override.envelope.error?.issues[0]?.path]).toEqual([2, 'validation_failed', '--yes']);
  });

  it('a frozen (recovery_required) service: lifecycle and export exit 5, doctor and status report it with exit 0 (§1.4, §1.8, §4.5)', async () => {
    const dataRoot = freshDataRoot();
    const args = rootArgs(dataRoot);
    const setup = await serveOn(dataRoot);
    const serviceId = await seedService(setup, 'frozen_walk');
    const designed = await setup.call('aipcs_service_design', { service_id: serviceId, schema: wireNotesManifest(), idempotency_key: key('design') });
    expect(designed.ok).toBe(true);
    await setup.close();
    // A materialise admitted and then killed leaves its intent prepared.
    const materialise = { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: key('mat') };
    const doomed = await startAipcs(sqliteArgs(dataRoot), { AIPCS_FAULT_INJECTION: 'materialise:admitted' });
    await expect(doomed.call('aipcs_service_materialise', materialise)).rejects.toThrow();
    await doomed.close().catch(() => undefined);
    // The service's revision moves under the prepared intent (edited directly:
    // no command may change a service with an active intent), so the resumed
    // materialise meets a mismatch and freezes the service (§4.2).
    const { default: Database } = await import('better-sqlite3');
    const registry = new Database(`${dataRoot}/registry.sqlite`);
    registry.prepare('UPDATE aipcs_registry_service SET service_revision = service_revision + 1 WHERE service_id = ?').run(serviceId);
    registry.close();
    const again = await serveOn(dataRoot);
    const frozen = await again.call('aipcs_service_materialise', materialise);
    await again.close();
    expect(frozen.error?.code).toBe('recovery_required');

    const revision = String(aipcs(['service', 'inspect', serviceId, ...args]).envelope.result?.['service_revision']);
    for (const argv of [
      ['service', 'suspend', serviceId, '--expected-revision', revision, '--operation-id', OP(10)],
      ['service', 'archive', serviceId, '--expected-revision', revision, '--operation-id', OP(11), '--yes'],
      ['export', serviceId, '--output', `${dataRoot}-frozen.jsonl`, '--expected-revision', revision, '--operation-id', OP(12)],
    ]) {
      const run = aipcs([...argv, ...args]);
      expect([run.status, run.envelope.error?.code, run.envelope.error?.retryable], argv[1]).toEqual([5, 'recovery_required', false]);
      expect(run.stdout).toBe('');
    }
    expect(existsSync(`${dataRoot}-frozen.jsonl`)).toBe(false);
    const doctor = aipcs(['doctor', '--service', serviceId, ...args]);
    expect(doctor.status).toBe(0);
    const checks = (doctor.envelope.result?.['checks'] as { check_id: string; status: string; issue_code: string | null }[]).map((check) => [check.check_id, check.status, check.issue_code]);
    expect(checks).toContainEqual(['admission_fence', 'fail', 'recovery_required']);
    expect(doctor.envelope.result?.['overall']).toBe('fail');
    const status = aipcs(['status', ...args]);
    expect(status.status).toBe(0);
    expect(status.envelope.result).toMatchObject({ services: { recovery: { recovery_required: 1 } }, overall: 'attention_required' });
    expect(aipcs(['service', 'inspect', serviceId, ...args]).envelope.result?.['recovery_state']).toBe('recovery_required');
  });
});
