// The administration commands never serve, so they start without the MCP
// edge (the SDK, its schema library, the HTTP server): loading those took
// about half of a short command's start-up and 0.15 s of every export and
// import. A module hook refuses to resolve those packages, as if they were
// missing; `serve` must then fail (the hook works), every admin command
// must run as before.

import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AipcsClient } from '../../support/aipcs-client.js';
import { aipcs, freshDataRoot, rootArgs, seedService, serveOn } from '../../support/aipcs-admin.js';
import { envWithoutPackages } from '../../support/refuse-modules.js';

const EDGE_PACKAGES = ['@modelcontextprotocol/', 'zod', 'hono', '@hono/', 'ajv'];

let withoutEdge: Record<string, string>;
let folder: string;
let dataRoot: string;
let serviceId: string;
let client: AipcsClient | null = null;

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'aipcs-no-edge-'));
  withoutEdge = envWithoutPackages(EDGE_PACKAGES);
  dataRoot = freshDataRoot();
  client = await serveOn(dataRoot);
  serviceId = await seedService(client, 'startup_modules');
  await client.close();
  client = null;
}, 60_000);

afterAll(async () => {
  await client?.close();
});

describe('administration commands', () => {
  it('run without the MCP edge loaded, which serve needs', () => {
    const serve = aipcs(['serve', ...rootArgs(freshDataRoot())], { env: withoutEdge });
    expect(serve.status).not.toBe(0);
    expect(serve.envelope.ok).toBe(false);

    const status = aipcs(['status', ...rootArgs(dataRoot)], { env: withoutEdge });
    expect(status.status, status.stderr).toBe(0);

    const artefact = join(folder, 'service.aipcs.jsonl');
    const exported = aipcs(['export', serviceId, '--output', artefact, '--expected-revision', '1', '--operation-id', randomUUID(), ...rootArgs(dataRoot)], { env: withoutEdge });
    expect(exported.status, exported.stderr).toBe(0);
    expect(exported.envelope.result?.['operation']).toBe('export');

    const dryRun = aipcs(['import', '--input', artefact, '--dry-run', ...rootArgs(freshDataRoot())], { env: withoutEdge });
    expect(dryRun.status, dryRun.stderr).toBe(0);
    expect(dryRun.envelope.result?.['operation']).toBe('import_dry_run');
  });
});
