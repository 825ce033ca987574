// Operations spec §1.9.3 and §1.9.5: the `service` member of a lifecycle or
// import result is the service re-inspected after the operation, also when
// the command replays a completed operation (§4.1) after later changes.

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aipcs, freshDataRoot, materialisedService, rootArgs, seedService, serveOn } from '../../support/aipcs-admin.js';
import type { AipcsClient } from '../../support/aipcs-client.js';

const OP = (n: number): string => `0a5e0000-0000-4000-8000-${n.toString().padStart(12, '0')}`;

describe('operator results show the service as it is now', () => {
  let dataRoot: string;
  let client: AipcsClient;
  let args: string[];

  beforeAll(async () => {
    dataRoot = freshDataRoot();
    client = await serveOn(dataRoot);
    args = rootArgs(dataRoot);
  });

  afterAll(async () => {
    await client.close();
  });

  it('a replayed suspend re-inspects the service after a later resume', async () => {
    const serviceId = await seedService(client, 'replayed_suspend');
    const suspend = ['service', 'suspend', serviceId, '--expected-revision', '1', '--operation-id', OP(1), ...args];
    const first = aipcs(suspend);
    expect(first.status, first.stderr).toBe(0);
    expect(first.envelope.result).toMatchObject({ operation: 'suspend', operation_id: OP(1), service: { operational_status: 'suspended', service_revision: 2 } });
    expect(aipcs(['service', 'resume', serviceId, '--expected-revision', '2', '--operation-id', OP(2), ...args]).status).toBe(0);

    const replay = aipcs(suspend);
    expect(replay.status, replay.stderr).toBe(0);
    expect(Object.keys(replay.envelope.result ?? {})).toEqual(['operation', 'operation_id', 'service']);
    expect(replay.envelope.result).toMatchObject({ operation: 'suspend', operation_id: OP(1), service: { service_id: serviceId, operational_status: 'active', service_revision: 3 } });
    const inspect = aipcs(['service', 'inspect', serviceId, ...args]);
    expect(replay.envelope.result?.['service']).toEqual(inspect.envelope.result);
  });

  it('a replayed import re-inspects the imported service after a later resume', async () => {
    const sourceId = await materialisedService(client, 'replayed_import');
    expect(aipcs(['service', 'suspend', sourceId, '--expected-revision', '3', '--operation-id', OP(10), ...args]).status).toBe(0);
    const artefact = join(mkdtempSync(join(tmpdir(), 'aipcs-audit5-')), 'moved.jsonl');
    const exported = aipcs(['export', sourceId, '--output', artefact, '--expected-revision', '4', '--operation-id', OP(11), ...args]);
    expect(exported.status, exported.stderr).toBe(0);

    const destination = freshDataRoot();
    const server = await serveOn(destination, 'other-agent');
    await server.close();
    const destinationArgs = rootArgs(destination, 'other-agent');
    const importArgs = ['import', '--input', artefact, '--operation-id', OP(12), '--yes', ...destinationArgs];
    const imported = aipcs(importArgs);
    expect(imported.status, imported.stderr).toBe(0);
    expect(imported.envelope.result).toMatchObject({ operation: 'import', service: { operational_status: 'suspended', service_revision: 4 } });
    expect(aipcs(['service', 'resume', sourceId, '--expected-revision', '4', '--operation-id', OP(13), ...destinationArgs]).status).toBe(0);

    const replay = aipcs(importArgs);
    expect(replay.status, replay.stderr).toBe(0);
    expect(Object.keys(replay.envelope.result ?? {})).toEqual(['operation', 'operation_id', 'summary', 'service']);
    expect(replay.envelope.result?.['summary']).toEqual(imported.envelope.result?.['summary']);
    expect(replay.envelope.result).toMatchObject({ operation: 'import', operation_id: OP(12), service: { service_id: sourceId, operational_status: 'active', service_revision: 5 } });
    const inspect = aipcs(['service', 'inspect', sourceId, ...destinationArgs]);
    expect(replay.envelope.result?.['service']).toEqual(inspect.envelope.result);
  });
});
