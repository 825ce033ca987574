// An operator command killed after its claim was admitted leaves the service
// pending: every other operation on it is refused until that one is repeated
// with its operation id. The refusal says which kind of operation is
// unfinished (D54), never its id (operations spec §2.9: keys are never
// printed); the code, retryable flag, exit code and issues stay the contract's.

import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aipcs, freshDataRoot, materialisedService, rootArgs, serveOn } from '../../support/aipcs-admin.js';
import type { AipcsClient } from '../../support/aipcs-client.js';
import { startAipcs, sqliteArgs } from '../../support/aipcs-client.js';
import { wireNotesManifest } from '../../support/wire-manifests.js';

const OP = (n: number): string => `0f1e0000-0000-4000-8000-${n.toString().padStart(12, '0')}`;
const killedAt = (checkpoint: string): { env: Record<string, string> } => ({ env: { AIPCS_FAULT_INJECTION: checkpoint } });

describe('an operation that never finished', () => {
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

  it('is named, without its operation id, by the refusal of any other operation, and finishes when repeated', async () => {
    const serviceId = await materialisedService(client, 'killed_suspend');
    const suspendArgs = ['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', OP(1), ...args];
    const killed = aipcs(suspendArgs, killedAt('suspend:admitted'));
    expect(killed.status).toBeNull();

    const archive = aipcs(['service', 'archive', serviceId, '--expected-revision', '3', '--operation-id', OP(2), '--yes', ...args]);
    expect(archive.status).toBe(4);
    expect(archive.envelope.error).toEqual({
      code: 'operation_in_progress',
      message: 'A lifecycle operation is already in progress. A suspend of this service is unfinished or still running; to finish it, repeat that command with the operation id it was given.',
      issues: [],
      retryable: true,
    });
    expect(archive.stderr).not.toContain(OP(1));
    const human = aipcs(['service', 'archive', serviceId, '--expected-revision', '3', '--operation-id', OP(2), '--yes', '--format', 'human', ...args]);
    expect(human.stderr).toBe(`error [operation_in_progress]: ${archive.envelope.error?.message}\n`);

    const repeated = aipcs(suspendArgs);
    expect(repeated.status, repeated.stderr).toBe(0);
    expect(repeated.envelope.result).toMatchObject({ operation: 'suspend', operation_id: OP(1), service: { operational_status: 'suspended', service_revision: 4, recovery_state: 'clear' } });
    expect(aipcs(['service', 'archive', serviceId, '--expected-revision', '4', '--operation-id', OP(2), '--yes', ...args]).status).toBe(0);
  });

  it('names an unfinished export, which the same command then completes at the same path', async () => {
    const serviceId = await materialisedService(client, 'killed_export');
    expect(aipcs(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', OP(10), ...args]).status).toBe(0);
    const folder = mkdtempSync(join(tmpdir(), 'aipcs-unfinished-'));
    const exportArgs = ['export', serviceId, '--output', join(folder, 'out.jsonl'), '--expected-revision', '4', '--operation-id', OP(11), ...args];
    expect(aipcs(exportArgs, killedAt('export:admitted')).status).toBeNull();

    const other = aipcs(['export', serviceId, '--output', join(folder, 'other.jsonl'), '--expected-revision', '4', '--operation-id', OP(12), ...args]);
    expect([other.status, other.envelope.error?.code, other.envelope.error?.retryable]).toEqual([4, 'operation_in_progress', true]);
    expect(other.envelope.error?.message).toBe(
      'A lifecycle operation is already in progress. An export of this service is unfinished or still running; to finish it, repeat that command with the operation id it was given.',
    );
    expect(other.stderr).not.toContain(OP(11));
    expect(existsSync(join(folder, 'other.jsonl'))).toBe(false);

    const repeated = aipcs(exportArgs);
    expect(repeated.status, repeated.stderr).toBe(0);
    expect(repeated.envelope.result).toMatchObject({ operation: 'export', operation_id: OP(11) });
    // The killed run's temp file stays (kill -9, D34); the finished export is in place.
    expect(readdirSync(folder).filter((name) => !name.startsWith('.aipcs-export-'))).toEqual(['out.jsonl']);
  });

  it('names an unfinished import of the same service id in already_exists, and the repeated import finishes it', async () => {
    const sourceId = await materialisedService(client, 'killed_import');
    expect(aipcs(['service', 'suspend', sourceId, '--expected-revision', '3', '--operation-id', OP(20), ...args]).status).toBe(0);
    const artefact = join(mkdtempSync(join(tmpdir(), 'aipcs-unfinished-')), 'moved.jsonl');
    expect(aipcs(['export', sourceId, '--output', artefact, '--expected-revision', '4', '--operation-id', OP(21), ...args]).status).toBe(0);

    const destination = freshDataRoot();
    await (await serveOn(destination)).close();
    const destinationArgs = rootArgs(destination);
    const importArgs = ['import', '--input', artefact, '--operation-id', OP(22), '--yes', ...destinationArgs];
    expect(aipcs(importArgs, killedAt('import:admitted')).status).toBeNull();

    const again = aipcs(['import', '--input', artefact, '--operation-id', OP(23), '--yes', ...destinationArgs]);
    expect([again.status, again.envelope.error?.code, again.envelope.error?.issues]).toEqual([3, 'already_exists', []]);
    expect(again.envelope.error?.message).toBe(
      'The target already exists. An import of this service id is unfinished or still running; to finish it, repeat that command with the operation id it was given.',
    );
    expect(again.stderr).not.toContain(OP(22));
    // Another principal learns nothing of it.
    const stranger = aipcs(['import', '--input', artefact, '--operation-id', OP(24), '--yes', ...rootArgs(destination, 'other-agent')]);
    expect([stranger.status, stranger.envelope.error?.message]).toEqual([3, 'The target already exists.']);

    const repeated = aipcs(importArgs);
    expect(repeated.status, repeated.stderr).toBe(0);
    expect(repeated.envelope.result).toMatchObject({ operation: 'import', operation_id: OP(22), service: { service_id: sourceId, operational_status: 'suspended' } });
  });

  it("names an MCP client's unfinished lifecycle request, without its key", async () => {
    const seeded = await client.call('aipcs_service_seed', { domain_name: 'killed_materialise', domain_class: 'knowledge', intent_description: 'Notes.', idempotency_key: 'seed-killed-materialise' });
    const serviceId = seeded.result?.['service_id'] as string;
    await client.call('aipcs_service_design', { service_id: serviceId, schema: wireNotesManifest(), idempotency_key: 'design-killed-materialise' });
    const doomed = await startAipcs(sqliteArgs(dataRoot, 'local-agent'), { AIPCS_FAULT_INJECTION: 'materialise:admitted' });
    const agentKey = 'materialise-key-of-the-agent';
    await expect(doomed.call('aipcs_service_materialise', { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: agentKey })).rejects.toThrow();
    await doomed.close().catch(() => undefined);

    const suspend = aipcs(['service', 'suspend', serviceId, '--expected-revision', '2', '--operation-id', OP(30), ...args]);
    expect([suspend.status, suspend.envelope.error?.code]).toEqual([4, 'operation_in_progress']);
    expect(suspend.envelope.error?.message).toBe(
      "A lifecycle operation is already in progress. An MCP client's materialise of this service is unfinished or still running; it finishes when that client repeats its request.",
    );
    expect(suspend.stderr).not.toContain(agentKey);
  });
});
