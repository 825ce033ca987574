// `aipcs export --output FILE` with a relative FILE, run from a working
// directory that has been deleted: the path names no folder, which is
// `storage_unavailable` (exit 6) like a missing parent folder, not an
// `internal_error` (process.cwd() threw ENOENT inside path resolution).
// Nothing is claimed: the same operation id then exports from a folder that exists.
// The error names --output (never the path, §2.9): "Storage is unavailable."
// alone sent the operator to the database for a folder that is not there.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { aipcs, createNote, freshDataRoot, materialisedService, rootArgs, serveOn } from '../../support/aipcs-admin.js';
import { aipcsBin } from '../../support/bins.js';

const OP = (n: number): string => `00000000-0000-4000-8000-0000000072${n.toString().padStart(2, '0')}`;

describe('aipcs in a deleted working directory', () => {
  it('export to a relative file is storage_unavailable and claims nothing', async () => {
    const dataRoot = freshDataRoot();
    const client = await serveOn(dataRoot);
    let serviceId: string;
    try {
      serviceId = await materialisedService(client, 'gone');
      await createNote(client, serviceId, { title: 'One' });
    } finally {
      await client.close();
    }
    expect(aipcs(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', OP(1), '--yes', ...rootArgs(dataRoot)]).status).toBe(0);

    const exportArgs = ['export', serviceId, '--output', 'relative.jsonl', '--expected-revision', '4', '--operation-id', OP(2), '--yes', ...rootArgs(dataRoot)];
    const parent = mkdtempSync(join(tmpdir(), 'aipcs-gone-'));
    const run = spawnSync('/bin/sh', ['-c', '/bin/mkdir gone && cd gone && /bin/rmdir ../gone && exec "$@"', 'sh', process.execPath, aipcsBin(), ...exportArgs], {
      cwd: parent,
      encoding: 'utf8',
      env: { PATH: process.env['PATH'] ?? '' },
      timeout: 60_000,
    });
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      '{"ok":false,"result":null,"error":{"code":"storage_unavailable","message":"Storage is unavailable.","issues":[{"code":"output_unavailable","path":"--output",' +
        '"message":"The output file cannot be created or written: its folder is missing or not writable, or its file system failed, is full or has no hard links.",' +
        '"remediation":"Name a new file in an existing, writable folder with room for the artifact, on a file system with hard links."}],"retryable":false}}\n',
    );
    expect(run.status).toBe(6);

    const again = aipcs(exportArgs, { cwd: parent });
    expect(again.status, again.stderr).toBe(0);
    expect(statSync(join(parent, 'relative.jsonl')).mode & 0o777).toBe(0o600);
  });
});
