// A black-box walk of the aigpt spec: statements a test writer
// reading only the spec text would check literally, run against the built bin.

import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTempHome, runAigpt, type TempHome, writeConfig } from './support.js';

describe('aigpt server: initialize as the spec describes it (5.2)', () => {
  let home: TempHome;

  beforeEach(async () => {
    home = makeTempHome();
    await writeConfig(home, { path: join(home.root, 'content'), memory: 3 });
  });

  afterEach(() => home.cleanup());

  it('answers initialize whatever its params hold (the reference ignores them), negotiating only a string protocolVersion', async () => {
    const saved = await runAigpt(['save-memory', 'fact one'], home.childEnv);
    expect(saved.code).toBe(0);
    const requests = [
      { jsonrpc: '2.0', id: 1, method: 'initialize' },
      { jsonrpc: '2.0', id: 2, method: 'initialize', params: {} },
      { jsonrpc: '2.0', id: 3, method: 'initialize', params: { protocolVersion: '2024-11-05' } },
      { jsonrpc: '2.0', id: 4, method: 'initialize', params: { capabilities: {} } },
      { jsonrpc: '2.0', id: 5, method: 'initialize', params: { protocolVersion: 2025, capabilities: 5, clientInfo: 'x' } },
      { jsonrpc: '2.0', id: 6, method: 'initialize', params: { protocolVersion: '1999-01-01', capabilities: {}, clientInfo: { name: 't', version: '1' } } },
    ];
    const run = await runAigpt(['server'], home.childEnv, { input: requests.map((request) => `${JSON.stringify(request)}\n`).join('') });
    expect(run.code).toBe(0);
    const answers = run.stdout.trimEnd().split('\n').map((line) => JSON.parse(line) as { id: number; result?: Record<string, unknown> });
    expect(answers.map((answer) => answer.id)).toEqual([1, 2, 3, 4, 5, 6]);
    const versions = answers.map((answer) => answer.result?.['protocolVersion']);
    const latest = versions[0];
    expect(typeof latest).toBe('string');
    expect(versions).toEqual([latest, latest, '2024-11-05', latest, latest, latest]);
    for (const answer of answers) {
      expect(answer.result?.['serverInfo']).toMatchObject({ name: 'aigpt' });
      expect(answer.result?.['instructions']).toBe('fact one\n\n[aigpt] memory records: 1/3');
    }
  });
});
