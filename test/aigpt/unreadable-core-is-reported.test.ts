// The owner edits the core record by hand (spec 1, 3.3). A JSON typo there
// (a trailing comma) makes the instructions silently leave the core out
// (spec 5.2, as in the reference), so the agent loses its identity without
// a word. The instructions keep the spec's exact text; the owner is told
// instead: `aigpt` (status) prints a warning after the records line (like the
// spec's other product warnings, 4.2) and `aigpt server` says it on stderr.

import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { aigptBin, makeTempHome, runAigpt, type TempHome, writeConfig } from './support.js';

const BROKEN_CORE = '{\n  "uri": "at://did:plc:xxx/ai.syui.gpt.core/self",\n  "value": { "content": { "text": "I am the core." }, }\n}';
const WARNING = 'warning: the core record cannot be read, so the instructions leave it out; see aigpt read-core';

describe('a core record broken by a hand edit', () => {
  let home: TempHome;
  let coreFile: string;

  beforeEach(async () => {
    home = makeTempHome();
    await writeConfig(home, { did: 'did:plc:xxx', handle: 'ai.syui.ai', path: join(home.root, 'content') });
    coreFile = join(home.root, 'content', 'did:plc:xxx', 'ai.syui.gpt.core', 'self.json');
    expect((await runAigpt(['save-memory', 'a fact'], home.childEnv)).code).toBe(0);
  });

  afterEach(() => home.cleanup());

  it('status keeps its lines and adds a warning only while the core cannot be read', async () => {
    const fine = await runAigpt([], home.childEnv);
    expect(fine.code).toBe(0);
    expect(fine.stdout).not.toContain('core record');
    expect(fine.stdout.endsWith('records: 1/100\n')).toBe(true);

    await fs.writeFile(coreFile, BROKEN_CORE);
    const broken = await runAigpt([], home.childEnv);
    expect(broken.code).toBe(0);
    expect(broken.stdout).toBe(`${fine.stdout}${WARNING}\n`);
  });

  it('the server says on stderr that the core was left out; the instructions stay the spec text', async () => {
    await fs.writeFile(coreFile, BROKEN_CORE);
    const transport = new StdioClientTransport({ command: process.execPath, args: [aigptBin(), 'server'], env: home.childEnv as Record<string, string>, cwd: home.root, stderr: 'pipe' });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(transport);
    try {
      expect(client.getInstructions()).toBe('a fact\n\n[aigpt] memory records: 1/100');
    } finally {
      await client.close();
    }
    expect(stderr).toContain(`core record left out of the instructions: Failed to parse ${coreFile}`);
  });
});
