// The dispatcher on its own (contract §3.1 envelopes): which tools a profile
// answers, a contract refusal passing through with its fixed texts, and an
// unexpected throw becoming internal_error with nothing of its text, while the
// failure observer (the operator's log) is still told of both. Over a real
// SQLite data root; the served paths are covered by the stdio and HTTP tests.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AipcsError } from '../../../src/aipcs/contract/error-codes.js';
import { AIPCS_TOOLS, STATELESS_TOOLS } from '../../../src/aipcs/contract/tool-catalogue.js';
import type { OperatorStoragePorts } from '../../../src/aipcs/core/application.js';
import { createDispatcher } from '../../../src/aipcs/mcp/dispatch.js';
import { openSqliteStorage } from '../../../src/aipcs/storage/sqlite/index.js';
import type { JsonObject } from '../../../src/common/json.js';
import { appOver } from '../../conformance/harness.js';

const UNSUPPORTED = { ok: false, result: null, error: { code: 'unsupported_operation', message: 'The requested MCP tool is unavailable.', issues: [], retryable: false } };
const INTERNAL = { ok: false, result: null, error: { code: 'internal_error', message: 'The request could not be completed safely.', issues: [], retryable: false } };

describe('the tool dispatcher', () => {
  let base: string;
  let storage: OperatorStoragePorts;

  beforeEach(async () => {
    base = mkdtempSync(join(tmpdir(), 'aipcs-dispatch-'));
    storage = await openSqliteStorage({ dataRoot: join(base, 'data'), busyTimeoutMs: 5000, defaultRoot: false });
  });

  afterEach(async () => {
    await storage.close();
    rmSync(base, { recursive: true, force: true });
  });

  it('answers only the tools it was built with: even server_info is unsupported when not listed', async () => {
    const stateless = createDispatcher(null, STATELESS_TOOLS);
    const info = await stateless('aipcs_server_info', {});
    expect([info.ok, ((info.result as JsonObject)['features'] as JsonObject)['record_runtime']]).toEqual([true, false]);
    expect(await stateless('aipcs_service_list', {})).toEqual(UNSUPPORTED);
    expect(await createDispatcher(null, [])('aipcs_server_info', {})).toEqual(UNSUPPORTED);
  });

  it('turns an unexpected throw into internal_error without its text, and tells the observer the tool and the error', async () => {
    const told: [string, unknown][] = [];
    // A persistent tool without an application is a wiring bug: run() throws a plain Error.
    const dispatch = createDispatcher(null, AIPCS_TOOLS, (tool, error) => told.push([tool, error]));
    const envelope = await dispatch('aipcs_service_list', {});
    expect(envelope).toEqual(INTERNAL);
    expect(JSON.stringify(envelope)).not.toContain('stateless profile');
    expect(told).toHaveLength(1);
    expect(told[0]![0]).toBe('aipcs_service_list');
    expect(told[0]![1]).toBeInstanceOf(Error);
    expect((told[0]![1] as Error).message).toContain('stateless profile');
  });

  it('passes a contract refusal through with its fixed texts and tells the observer; a success tells it nothing', async () => {
    const told: [string, unknown][] = [];
    const dispatch = createDispatcher(appOver(storage), AIPCS_TOOLS, (tool, error) => told.push([tool, error]));
    const listed = await dispatch('aipcs_service_list', {});
    expect(listed).toEqual({ ok: true, result: { services: [] }, error: null });
    expect(told).toEqual([]);
    const missing = await dispatch('aipcs_service_inspect', { service_id: '0190a4a4-0000-7000-8000-000000000001' });
    expect(missing).toEqual({ ok: false, result: null, error: { code: 'not_found', message: 'The requested service was not found.', issues: [], retryable: false } });
    expect(told.map(([tool, error]) => [tool, error instanceof AipcsError ? error.code : error])).toEqual([['aipcs_service_inspect', 'not_found']]);
    const info = await dispatch('aipcs_server_info', {});
    expect(((info.result as JsonObject)['features'] as JsonObject)['record_runtime']).toBe(true);
  });
});
