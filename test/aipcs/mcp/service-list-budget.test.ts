// aipcs_service_list carries every listed service's whole manifest, and the
// contract bounds a manifest only by its parts (a few MB each within every
// §10 bound), so 100 services made lines of gigabytes: 32 such services gave
// a 571 MB line after two minutes and 3.4 GB of server memory. The list keeps
// the leading services (first always) whose projections fit the page budget;
// the operator's `aipcs service list` (no client line limit) lists them all.

import { describe, expect, it } from 'vitest';
import { PAGE_TEXT_BUDGET } from '../../../src/aipcs/core/records.js';
import { renderContractJson } from '../../../src/aipcs/contract/envelope.js';
import type { JsonValue } from '../../../src/common/json.js';
import { aipcsAsync, rootArgs } from '../../support/aipcs-admin.js';
import { freshDataRoot, sqliteArgs, startAipcs } from '../../support/aipcs-client.js';
import { serverManaged } from '../../support/manifests.js';
import { toPlainJson } from '../../../src/common/json.js';
import { openSqliteStorage } from '../../../src/aipcs/storage/sqlite/index.js';

/** About 1 MiB of contract text: 6 entities of 58 fields, each described by 500 CJK characters (six characters each as text). */
function largeManifest(): Record<string, unknown> {
  const managed = toPlainJson(serverManaged()) as unknown[];
  return {
    manifest_version: 2,
    schema_version: 1,
    entities: Array.from({ length: 6 }, (_, e) => ({
      name: `e${e}`,
      attributes: [...managed, ...Array.from({ length: 58 }, (_, a) => ({ name: `f${a}`, type: 'string', description: '記'.repeat(500) }))],
    })),
  };
}

describe('aipcs_service_list stays within the page budget', () => {
  it('lists the leading services that fit, the first always, in the contract order', { timeout: 120_000 }, async () => {
    const dataRoot = freshDataRoot();
    const client = await startAipcs(sqliteArgs(dataRoot));
    try {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const seeded = await client.call('aipcs_service_seed', { domain_name: `big_${i}`, domain_class: 'k', intent_description: 'i', idempotency_key: `s${i}` });
        const serviceId = seeded.result?.['service_id'] as string;
        ids.push(serviceId);
        const designed = await client.call('aipcs_service_design', { service_id: serviceId, schema: largeManifest(), idempotency_key: `d${i}` });
        expect(designed.ok, JSON.stringify(designed.error)).toBe(true);
      }
      const small = await client.call('aipcs_service_seed', { domain_name: 'small', domain_class: 'k', intent_description: 'i', idempotency_key: 'small' });
      expect(small.ok).toBe(true);

      const list = await client.call('aipcs_service_list', {});
      expect(list.ok, JSON.stringify(list.error)).toBe(true);
      const services = list.result?.['services'] as Record<string, unknown>[];
      expect(services.length).toBeGreaterThanOrEqual(1);
      expect(services.length).toBeLessThan(5);
      expect(services.map((service) => service['service_id'])).toEqual(ids.slice(0, services.length));
      expect(renderContractJson(services as JsonValue).length).toBeLessThanOrEqual(PAGE_TEXT_BUDGET + 2);

      // limit 1 is the first service whatever its size; ordinary lists are whole.
      const one = await client.call('aipcs_service_list', { limit: 1 });
      expect((one.result?.['services'] as Record<string, unknown>[]).map((service) => service['service_id'])).toEqual([ids[0]]);
      expect((await client.call('aipcs_server_info')).ok).toBe(true);

      const admin = await aipcsAsync(['service', 'list', ...rootArgs(dataRoot)]);
      expect(admin.status, admin.stderr).toBe(0);
      expect((admin.envelope.result?.['services'] as Record<string, unknown>[]).map((service) => service['service_id'])).toEqual([...ids, small.result?.['service_id']]);
    } finally {
      await client.close();
    }
  });

  it('lists the first service even when its projection alone is above the budget', { timeout: 120_000 }, async () => {
    // Design now refuses a manifest over 1,040,384 canonical bytes, which keeps
    // one projection under the budget; a service designed before that bound
    // keeps its larger manifest (decisions-aipcs-contract.md "Page byte budget").
    // Such a registry row is written here behind the server's back: 20 entities
    // of the manifest above, about 3.5 MiB of contract text.
    const dataRoot = freshDataRoot();
    let client = await startAipcs(sqliteArgs(dataRoot));
    let serviceId: string;
    try {
      serviceId = (await client.call('aipcs_service_seed', { domain_name: 'huge', domain_class: 'k', intent_description: 'i', idempotency_key: 's' })).result?.['service_id'] as string;
      const designed = await client.call('aipcs_service_design', { service_id: serviceId, schema: largeManifest(), idempotency_key: 'd' });
      expect(designed.ok, JSON.stringify(designed.error)).toBe(true);
      expect((await client.call('aipcs_service_seed', { domain_name: 'small', domain_class: 'k', intent_description: 'i', idempotency_key: 'small' })).ok).toBe(true);
    } finally {
      await client.close();
    }
    const storage = await openSqliteStorage({ dataRoot, busyTimeoutMs: 5000, defaultRoot: false });
    try {
      await storage.registry.write(async (tx) => {
        const row = await tx.getService('local-agent', serviceId);
        const stored = row?.manifest as { entities: Record<string, unknown>[] } | undefined;
        if (!row || !stored) throw new Error('setup failed');
        const entities = Array.from({ length: 20 }, (_, e) => ({ ...stored.entities[e % stored.entities.length], name: `e${e}` }));
        if (!(await tx.updateService({ ...row, manifest: { ...stored, entities } as JsonValue }, row.serviceRevision))) throw new Error('setup failed');
      });
    } finally {
      await storage.close();
    }

    client = await startAipcs(sqliteArgs(dataRoot));
    try {
      const list = await client.call('aipcs_service_list', {});
      expect(list.ok, JSON.stringify(list.error)).toBe(true);
      const services = list.result?.['services'] as Record<string, unknown>[];
      expect(services.map((service) => service['service_id'])).toEqual([serviceId]);
      expect(renderContractJson(services[0] as JsonValue).length).toBeGreaterThan(PAGE_TEXT_BUDGET);
      expect((await client.call('aipcs_server_info')).ok).toBe(true);
    } finally {
      await client.close();
    }
  });
});
