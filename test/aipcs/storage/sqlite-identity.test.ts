// A running server checks, in every unit of work, that each database path
// still names the file it opened (operations spec §3.2.2: identity
// re-verified around operations). A service store or registry removed or
// replaced underneath answers storage_unavailable instead of reading and
// writing an unlinked file whose writes would silently vanish.

import { readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createNote, freshDataRoot, key, materialisedService, serveOn } from '../../support/aipcs-admin.js';
import type { AipcsClient } from '../../support/aipcs-client.js';

let client: AipcsClient | undefined;
afterEach(async () => {
  await client?.close();
  client = undefined;
});

function storeFiles(dataRoot: string): string[] {
  return readdirSync(join(dataRoot, 'service-stores')).map((name) => join(dataRoot, 'service-stores', name));
}

describe('database identity under a running server', () => {
  it('refuses data tools once the service store was deleted', async () => {
    const dataRoot = freshDataRoot();
    client = await serveOn(dataRoot);
    const serviceId = await materialisedService(client, 'vanishing');
    await createNote(client, serviceId, { title: 'Before' });
    for (const file of storeFiles(dataRoot)) rmSync(file);
    const create = await client.call('aipcs_record_create', { service_id: serviceId, entity_name: 'note', record: { title: 'Lost?' }, idempotency_key: key('c') });
    expect(create.error?.code).toBe('storage_unavailable');
    const list = await client.call('aipcs_record_list', { service_id: serviceId, entity_name: 'note' });
    expect(list.error?.code).toBe('storage_unavailable');
  });

  it('refuses once the registry was replaced by another file', async () => {
    const dataRoot = freshDataRoot();
    client = await serveOn(dataRoot);
    const serviceId = await materialisedService(client, 'replaced');
    const registry = join(dataRoot, 'registry.sqlite');
    renameSync(registry, `${registry}.moved`);
    const inspect = await client.call('aipcs_service_inspect', { service_id: serviceId });
    expect(inspect.error?.code).toBe('storage_unavailable');
  });
});
