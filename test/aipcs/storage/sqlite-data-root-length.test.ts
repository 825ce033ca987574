// A SQLite data root as long as SQLite's own path limit allows. SQLite's unix
// VFS opens a database only when its path plus `-journal` fits in 512 bytes,
// so the longest database under the root, service-stores/svc_{32 hex}.sqlite,
// fits when the root is at most 445 bytes of UTF-8. A longer root (the
// configuration accepts up to 4096 characters) used to let serve start and
// seed, then left materialise `operation_uncertain` and the service pending
// with `storage_busy` on every retry. Such a root is now refused when storage
// opens it, before anything is created.

import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { aipcs, createNote, materialisedService, rootArgs, serveOn } from '../../support/aipcs-admin.js';
import { aipcsBin } from '../../support/bins.js';

const parents: string[] = [];
afterEach(() => {
  for (const parent of parents.splice(0)) rmSync(parent, { recursive: true, force: true });
});

/** A data root path (not created) of exactly `bytes` bytes of UTF-8, under private folders; `leaf` repeats to fill. */
function rootOfLength(bytes: number, leaf = 'r'): string {
  const parent = mkdtempSync(join(tmpdir(), 'aipcs-long-'));
  parents.push(parent);
  let folder = parent;
  while (Buffer.byteLength(folder) + 1 + 200 + 1 + 50 < bytes) {
    folder = join(folder, 'd'.repeat(200));
    mkdirSync(folder, { mode: 0o700 });
  }
  let name = '';
  while (Buffer.byteLength(join(folder, name + leaf)) <= bytes) name += leaf;
  while (Buffer.byteLength(join(folder, name)) < bytes) name += 'r';
  const root = join(folder, name);
  expect(Buffer.byteLength(root)).toBe(bytes);
  return root;
}

const INIT = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n';

describe('SQLite data root length', () => {
  it('a root of 445 bytes holds a materialised service and its records', async () => {
    const dataRoot = rootOfLength(445);
    const client = await serveOn(dataRoot);
    try {
      const serviceId = await materialisedService(client, 'notes');
      const note = await createNote(client, serviceId, { title: 'kept' });
      expect(note['record_version']).toBe(1);
    } finally {
      await client.close();
    }
    const listed = aipcs(['service', 'list', ...rootArgs(dataRoot)]);
    expect(listed.status).toBe(0);
    const services = listed.envelope.result?.['services'] as Record<string, unknown>[];
    expect(services.map((service) => [service['design_state'], service['recovery_state']])).toEqual([['materialised', 'clear']]);
  });

  it('a root of 446 bytes (fewer characters) is refused before anything is created, not left pending at materialise', () => {
    const dataRoot = rootOfLength(446, 'é');
    expect(dataRoot.length).toBeLessThan(446);
    const run = spawnSync(process.execPath, [aipcsBin(), 'serve', ...rootArgs(dataRoot), '--log-level', 'info'], { input: INIT, encoding: 'utf8', timeout: 30_000 });
    expect(run.status).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('start-up refused: the data root is too long for SQLite');
    expect(run.stderr.trim().split('\n').at(-1)).toBe('{"ok":false,"result":null,"error":{"code":"internal_error","message":"Server could not be started safely.","issues":[],"retryable":false}}');
    expect(existsSync(dataRoot)).toBe(false);

    const status = aipcs(['status', ...rootArgs(dataRoot)]);
    expect(status.envelope.error?.code).toBe('storage_unavailable');
    expect(existsSync(dataRoot)).toBe(false);
  });
});
