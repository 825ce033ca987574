// An export that cannot read its service's store (a damaged page) fails with
// storage_unavailable (exit 6) and leaves nothing behind: no output file and
// no prepared claim. A kept claim froze the suspended service (pending,
// resume refused as operation_in_progress) until the same operation id
// succeeded, which a damaged store never lets it: the operator could not
// even roll back (ops spec §8: resume the suspended source).

import { readdirSync, openSync, writeSync, closeSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { aipcs, createNote, freshDataRoot, materialisedService, rootArgs, serveOn } from '../../support/aipcs-admin.js';

const OP = (n: number): string => `00000000-0000-4000-8000-${n.toString().padStart(12, '0')}`;

/** Overwrites the page holding the `note` table's root with bytes no b-tree page has. */
function damageNoteTable(storePath: string): void {
  const db = new Database(storePath, { readonly: true });
  const { rootpage } = db.prepare("SELECT rootpage FROM sqlite_schema WHERE name = 'note'").get() as { rootpage: number };
  const { page_size: pageSize } = db.prepare('PRAGMA page_size').get() as { page_size: number };
  db.close();
  const fd = openSync(storePath, 'r+');
  writeSync(fd, Buffer.alloc(pageSize, 0xff), 0, pageSize, (rootpage - 1) * pageSize);
  closeSync(fd);
}

describe('export of a service whose store is damaged', () => {
  it('fails with storage_unavailable, keeps no claim, and the service can still be resumed', async () => {
    const dataRoot = freshDataRoot();
    const args = rootArgs(dataRoot);
    const client = await serveOn(dataRoot);
    const serviceId = await materialisedService(client, 'damaged');
    await createNote(client, serviceId, { title: 'One' });
    await client.close();
    expect(aipcs(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', OP(1), ...args]).status).toBe(0);
    const stores = join(dataRoot, 'service-stores');
    damageNoteTable(join(stores, `svc_${serviceId.replaceAll('-', '')}.sqlite`));

    const output = join(dataRoot, '..', `export-${process.pid}.jsonl`);
    for (let attempt = 0; attempt < 2; attempt++) {
      const exported = aipcs(['export', serviceId, '--output', output, '--expected-revision', '4', '--operation-id', OP(2), ...args]);
      expect(exported.status, `attempt ${attempt}`).toBe(6);
      expect(exported.envelope.error).toMatchObject({ code: 'storage_unavailable' });
    }
    expect(existsSync(output)).toBe(false);
    expect(readdirSync(join(dataRoot, '..')).filter((name) => name.startsWith('.aipcs-export-'))).toEqual([]);

    const inspected = aipcs(['service', 'inspect', serviceId, ...args]);
    expect(inspected.envelope.result).toMatchObject({ recovery_state: 'clear', operational_status: 'suspended', service_revision: 4 });
    const resumed = aipcs(['service', 'resume', serviceId, '--expected-revision', '4', '--operation-id', OP(3), ...args]);
    expect(resumed.status).toBe(0);
    expect(resumed.envelope.result).toMatchObject({ operation: 'resume', service: { operational_status: 'active', service_revision: 5 } });
  });
});
