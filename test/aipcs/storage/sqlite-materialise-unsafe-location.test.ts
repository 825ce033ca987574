// A materialise whose store location the policy refuses (operations spec
// §3.2.2) is observed unreachable before any physical step: §4.2 defers it
// with storage_unavailable, which is not retryable, instead of a retryable
// operation_uncertain that a client would repeat until an operator mends
// the folder. The intent stays prepared; the same key completes it once
// the folder is fixed.

import { chmodSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freshDataRoot, key, seedService, serveOn } from '../../support/aipcs-admin.js';
import type { AipcsClient } from '../../support/aipcs-client.js';
import { wireNotesManifest } from '../../support/wire-manifests.js';

let client: AipcsClient | undefined;
afterEach(async () => {
  await client?.close();
  client = undefined;
});

const unsafeLocations: readonly { name: string; spoil: (stores: string, store: string) => void; mend: (stores: string, store: string) => void }[] = [
  { name: 'service-stores not mode 0700', spoil: (stores) => chmodSync(stores, 0o755), mend: (stores) => chmodSync(stores, 0o700) },
  { name: 'a -wal without its database', spoil: (_stores, store) => writeFileSync(`${store}-wal`, '', { mode: 0o600 }), mend: (_stores, store) => rmSync(`${store}-wal`) },
];

describe('materialise meeting an unsafe store location', () => {
  for (const location of unsafeLocations) {
    it(`answers storage_unavailable (not retryable) with ${location.name}, and the same key completes once it is mended`, async () => {
      const dataRoot = freshDataRoot();
      client = await serveOn(dataRoot);
      const serviceId = await seedService(client, 'unsafe');
      expect((await client.call('aipcs_service_design', { service_id: serviceId, schema: wireNotesManifest(), idempotency_key: key('design') })).ok).toBe(true);
      const stores = join(dataRoot, 'service-stores');
      mkdirSync(stores, { recursive: true, mode: 0o700 });
      const store = join(stores, `svc_${serviceId.replaceAll('-', '')}.sqlite`);
      location.spoil(stores, store);
      const materialise = { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: key('mat') };
      for (let attempt = 0; attempt < 2; attempt++) {
        const refused = await client.call('aipcs_service_materialise', materialise);
        expect(refused.error, `attempt ${attempt}`).toMatchObject({ code: 'storage_unavailable', retryable: false });
      }
      expect((await client.call('aipcs_service_inspect', { service_id: serviceId })).result).toMatchObject({ recovery_state: 'pending', design_state: 'seeded' });
      // Nothing was created beside what the test put there.
      expect(readdirSync(stores).filter((name) => !name.endsWith('-wal'))).toEqual([]);
      location.mend(stores, store);
      const completed = await client.call('aipcs_service_materialise', materialise);
      expect(completed.result).toMatchObject({ design_state: 'materialised', recovery_state: 'clear', service_revision: 3 });
    });
  }
});
