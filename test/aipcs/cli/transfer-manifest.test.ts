// A manifest whose number allowed_values canonical JSON cannot carry as they
// are: [1, 1.0] is written [1, 1] (duplicates once read) and 1e17 as an
// integer literal beyond 2^53 (refused on a number attribute). Export wrote
// such an artefact and issued a verified receipt (purge authority) for bytes
// that no import accepts. It now refuses before any claim, leaving the
// service usable, as for a manifest too large for one line (D21).

import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { aipcs, freshDataRoot, rootArgs } from '../../support/aipcs-admin.js';
import { rawLineSession } from '../../support/raw-stdio.js';
import { wireNotesManifest } from '../../support/wire-manifests.js';

const OP = (n: number): string => `00000000-0000-4000-8000-${n.toString().padStart(12, '0')}`;

/** A raw stdio session (a JavaScript client cannot send the float 1.0): each call resolves with the parsed envelope. */
function rawSession(args: string[]) {
  const session = rawLineSession(args, { HOME: process.env['HOME'] ?? '/root' });
  return {
    start: () => session.initialize(),
    call: async (name: string, args: string) => JSON.parse(await session.toolText(name, args)) as { ok: boolean; result: Record<string, unknown> | null },
    close: () => session.close(),
  };
}

/** The notes manifest with `allowed` (JSON text) as the allowed values of its number attribute. */
function manifestText(allowed: string): string {
  const manifest = wireNotesManifest() as { entities: { name: string; attributes: Record<string, unknown>[] }[] };
  const confidence = manifest.entities.find((entity) => entity.name === 'note')?.attributes.find((attribute) => attribute['name'] === 'confidence');
  if (!confidence) throw new Error('the notes manifest has no confidence attribute');
  confidence['allowed_values'] = 'ALLOWED';
  return JSON.stringify(manifest).replace('"ALLOWED"', allowed);
}

describe('export of a manifest whose number allowed_values canonical JSON cannot carry', () => {
  it.each([
    ['[0.5,1,1.0]', 1],
    ['[1e17]', 2],
  ])('refuses %s before any claim and leaves the service usable', async (allowed, n) => {
    const dataRoot = freshDataRoot();
    const args = rootArgs(dataRoot);
    const session = rawSession(['serve', ...args]);
    let serviceId: string;
    try {
      await session.start();
      const seeded = await session.call('aipcs_service_seed', '{"domain_name":"numbers","domain_class":"knowledge","intent_description":"Numbers.","idempotency_key":"s"}');
      serviceId = seeded.result?.['service_id'] as string;
      const designed = await session.call('aipcs_service_design', `{"service_id":"${serviceId}","schema":${manifestText(allowed)},"idempotency_key":"d"}`);
      expect(designed.ok).toBe(true);
      const materialised = await session.call('aipcs_service_materialise', `{"service_id":"${serviceId}","expected_service_revision":2,"expected_schema_version":1,"idempotency_key":"m"}`);
      expect(materialised.ok).toBe(true);
    } finally {
      session.close();
    }
    expect(aipcs(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', OP(10 * n + 1), ...args]).status).toBe(0);
    const work = mkdtempSync(join(tmpdir(), 'aipcs-manifest-'));
    const output = join(work, 'numbers.jsonl');
    const refused = aipcs(['export', serviceId, '--output', output, '--expected-revision', '4', '--operation-id', OP(10 * n + 2), ...args]);
    // Before: exit 0 with a verified receipt, and `import --dry-run` of that file exited 2.
    expect([refused.status, refused.envelope.error?.code, refused.envelope.error?.issues[0]?.path, refused.envelope.error?.issues[0]?.code]).toEqual([3, 'unsupported_transition', 'service.manifest', 'invalid_value']);
    expect(existsSync(output)).toBe(false);
    const inspected = aipcs(['service', 'inspect', serviceId, ...args]);
    expect(inspected.envelope.result).toMatchObject({ recovery_state: 'clear', operational_status: 'suspended', service_revision: 4 });
    expect(aipcs(['service', 'resume', serviceId, '--expected-revision', '4', '--operation-id', OP(10 * n + 3), ...args]).status).toBe(0);
  });
});
