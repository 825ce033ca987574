// A purge removes the service's SQLite store durably before the registry
// records the tombstone (operations spec §3.2.2: purge unlinks the service
// database and sidecars, then fsyncs the directory). Without the directory
// fsync a power loss after the tombstone's commit could bring the purged
// store, with its records, back under service-stores/. Observed with strace:
// the unlinks, then an fsync of service-stores/, then the registry commit.

import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { aipcs, createNote, freshDataRoot, materialisedService, rootArgs, serveOn } from '../../support/aipcs-admin.js';
import { aipcsBin } from '../../support/bins.js';

const hasStrace = spawnSync('strace', ['-V']).status === 0;
const OP = (n: number): string => `00000000-0000-4000-8000-${n.toString().padStart(12, '0')}`;

describe('purging a SQLite service store', () => {
  it.runIf(hasStrace)('fsyncs service-stores/ after unlinking the store and before the registry commits the tombstone', async () => {
    const dataRoot = freshDataRoot();
    const client = await serveOn(dataRoot);
    const serviceId = await materialisedService(client, 'durable');
    await createNote(client, serviceId, { title: 'Gone for good' });
    await client.close();
    const args = rootArgs(dataRoot);
    expect(aipcs(['service', 'archive', serviceId, '--expected-revision', '3', '--operation-id', OP(1), '--yes', ...args]).status).toBe(0);

    const trace = join(mkdtempSync(join(tmpdir(), 'aipcs-purge-trace-')), 'trace');
    const purge = ['service', 'purge', serviceId, '--expected-revision', '4', '--operation-id', OP(2), '--override', '--confirm-service-id', serviceId, '--yes', ...args];
    const run = spawnSync('strace', ['-f', '-qq', '-y', '-o', trace, '-e', 'trace=fsync,fdatasync,unlink,unlinkat', process.execPath, aipcsBin(), ...purge], {
      encoding: 'utf8',
      env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/root' },
      timeout: 60_000,
    });
    expect(run.status, run.stderr).toBe(0);

    const calls = readFileSync(trace, 'utf8').split('\n');
    const stores = join(dataRoot, 'service-stores');
    const store = join(stores, `svc_${serviceId.replaceAll('-', '')}.sqlite`);
    const unlinked = calls.findIndex((line) => line.includes(`unlink("${store}")`) && line.endsWith('= 0'));
    expect(unlinked).toBeGreaterThanOrEqual(0);
    const after = calls.slice(unlinked + 1);
    const directorySynced = after.findIndex((line) => /fsync\(\d+</.test(line) && line.includes(`<${stores}>)`));
    const registryCommitted = after.findIndex((line) => line.includes(`<${join(dataRoot, 'registry.sqlite-wal')}>)`));
    expect(directorySynced).toBeGreaterThanOrEqual(0);
    expect(registryCommitted).toBeGreaterThan(directorySynced);
  });

  it('waits (storage_busy, nothing removed) while a reader holds a snapshot older than the archive, then purges', async () => {
    // That reader stops the checkpoint short of the archive's fence close; a
    // crash between the unlinks of the -wal and of the database then left a
    // store whose fence read open, which no retry of the purge could remove.
    const dataRoot = freshDataRoot();
    const client = await serveOn(dataRoot);
    const serviceId = await materialisedService(client, 'held');
    await createNote(client, serviceId, { title: 'Held' });
    await client.close();
    const args = rootArgs(dataRoot);
    const store = join(dataRoot, 'service-stores', `svc_${serviceId.replaceAll('-', '')}.sqlite`);
    const reader = new Database(store, { readonly: true });
    try {
      reader.exec('BEGIN');
      reader.prepare('SELECT count(*) FROM sqlite_schema').get();
      expect(aipcs(['service', 'archive', serviceId, '--expected-revision', '3', '--operation-id', OP(3), '--yes', ...args]).status).toBe(0);
      const purge = ['service', 'purge', serviceId, '--expected-revision', '4', '--operation-id', OP(4), '--override', '--confirm-service-id', serviceId, '--yes', ...args];
      const held = aipcs([...purge, '--sqlite-busy-timeout-ms', '200']);
      expect(held.envelope.error?.code, held.stderr).toBe('storage_busy');
      expect(existsSync(store) && existsSync(`${store}-wal`)).toBe(true);
      reader.exec('COMMIT');
      reader.close();
      const purged = aipcs(purge);
      expect(purged.status, purged.stderr).toBe(0);
      expect(existsSync(store)).toBe(false);
    } finally {
      if (reader.open) reader.close();
    }
  });

  it.runIf(hasStrace)('is storage_unavailable, not busy, when the checkpoint meets a full disk, and purges once it clears', async () => {
    const dataRoot = freshDataRoot();
    const client = await serveOn(dataRoot);
    const serviceId = await materialisedService(client, 'full');
    await createNote(client, serviceId, { title: 'Full' });
    await client.close();
    const args = rootArgs(dataRoot);
    const store = join(dataRoot, 'service-stores', `svc_${serviceId.replaceAll('-', '')}.sqlite`);
    // An idle connection elsewhere keeps the archive's commit in the -wal for the purge's checkpoint to copy.
    const idle = new Database(store, { readonly: true });
    idle.prepare('SELECT count(*) FROM sqlite_schema').get();
    expect(aipcs(['service', 'archive', serviceId, '--expected-revision', '3', '--operation-id', OP(5), '--yes', ...args]).status).toBe(0);
    const purge = ['service', 'purge', serviceId, '--expected-revision', '4', '--operation-id', OP(6), '--override', '--confirm-service-id', serviceId, '--yes', ...args];
    // Only the checkpoint writes the store's own file: every write to it fails as on a full disk.
    const run = spawnSync('strace', ['-f', '-qq', '-o', '/dev/null', '-P', store, '-e', 'inject=pwrite64,write:error=ENOSPC', process.execPath, aipcsBin(), ...purge], {
      encoding: 'utf8',
      env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/root' },
      timeout: 60_000,
    });
    expect(run.status, run.stderr).toBe(6);
    // The error envelope is the last line on stderr.
    expect((JSON.parse(run.stderr.trim().split('\n').at(-1) ?? '') as { error: { code: string; retryable: boolean } }).error).toMatchObject({ code: 'storage_unavailable', retryable: false });
    expect(existsSync(store)).toBe(true);
    idle.close();
    const purged = aipcs(purge);
    expect(purged.status, purged.stderr).toBe(0);
    expect(existsSync(store)).toBe(false);
  });
});
