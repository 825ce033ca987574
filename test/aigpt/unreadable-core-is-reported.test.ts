// The owner edits the core record by hand (spec 1, 3.3). A JSON typo there
// (a trailing comma) makes the instructions silently leave the core out
// (spec 5.2, as in the reference), so the agent loses its identity without
// a word. The instructions keep the spec's exact text; the owner is told
// instead: `aigpt` (status) prints a warning after the records line (like the
// spec's other product warnings, 4.2) and `aigpt server` says it on stderr.
// So does the server for a memory folder it cannot list, whose status line
// would otherwise count no memories without a word.

import { spawn } from 'node:child_process';
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

  it('the server says on stderr that the memories were left out when their folder cannot be listed', async () => {
    const memoryDir = join(home.root, 'content', 'did:plc:xxx', 'ai.syui.gpt.memory');
    const server = spawn(process.execPath, [aigptBin(), 'server'], { env: home.childEnv, cwd: home.root, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    server.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    server.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const answer = async (id: number): Promise<Record<string, unknown>> => {
      for (;;) {
        const line = stdout.split('\n').find((text) => text.includes(`"id":${id}`));
        if (line !== undefined) return JSON.parse(line) as Record<string, unknown>;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    };
    try {
      // Started with its folder in place; replaced by a file while it runs.
      server.stdin.write('{"jsonrpc":"2.0","id":1,"method":"ping"}\n');
      await answer(1);
      await fs.rm(memoryDir, { recursive: true });
      await fs.writeFile(memoryDir, 'not a folder');
      server.stdin.write('{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n');
      const initialized = await answer(2);
      expect((initialized['result'] as { instructions: string }).instructions).toContain('[aigpt] memory records: 0/100');
    } finally {
      server.stdin.end();
      await new Promise((resolve) => server.once('close', resolve));
    }
    expect(stderr).toContain('memories left out of the instructions:');
  });
});
