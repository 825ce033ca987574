// An operator reads the registry or a store with another SQLite program (the
// sqlite3 shell, Python's sqlite3 module) while `aipcs serve` runs. Older
// SQLite libraries (Debian's 3.40) close their connection by checkpointing
// and deleting the -wal when they believe they were its last user, which
// they learn from the server's SHARED lock on the database file. The server
// must keep that lock, so its WAL survives and every later call succeeds.

import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createNote, freshDataRoot, materialisedService, serveOn } from '../../support/aipcs-admin.js';

/** Reads a database with another SQLite program, as an operator would; null when this machine has none. */
function foreignReader(): ((path: string) => string) | null {
  if (spawnSync('sqlite3', ['-version']).status === 0) {
    return (path) => execFileSync('sqlite3', [path, 'SELECT count(*) FROM sqlite_schema;']).toString().trim();
  }
  const python = ['import sqlite3, sys', 'c = sqlite3.connect(sys.argv[1])', 'print(c.execute("SELECT count(*) FROM sqlite_schema").fetchone()[0])', 'c.close()'].join('\n');
  if (spawnSync('python3', ['-c', 'import sqlite3']).status === 0) {
    return (path) => execFileSync('python3', ['-c', python, path]).toString().trim();
  }
  return null;
}

const read = foreignReader();

describe.skipIf(read === null)('another SQLite program reading beside a running server', () => {
  it('leaves the registry and store WAL files in place, and the server answering', async () => {
    const dataRoot = freshDataRoot();
    const client = await serveOn(dataRoot);
    try {
      const serviceId = await materialisedService(client, 'notes');
      await createNote(client, serviceId, { title: 'before', status: 'draft' });
      const stores = join(dataRoot, 'service-stores');
      const store = readdirSync(stores).find((name) => name.endsWith('.sqlite'));
      expect(store).toBeDefined();
      for (const database of [join(dataRoot, 'registry.sqlite'), join(stores, store ?? '')]) {
        expect(Number(read?.(database))).toBeGreaterThan(0);
        expect(existsSync(`${database}-wal`)).toBe(true);
      }
      expect((await client.call('aipcs_service_list', {})).ok).toBe(true);
      await createNote(client, serviceId, { title: 'after', status: 'draft' });
      const listed = await client.call('aipcs_record_list', { service_id: serviceId, entity_name: 'note' });
      expect((listed.result?.['records'] as { fields: { title: string } }[]).map((record) => record.fields.title).sort()).toEqual(['after', 'before']);
    } finally {
      await client.close();
    }
  });
});
