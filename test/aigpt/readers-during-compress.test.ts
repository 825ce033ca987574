// A compress journal left in the memory folder (a compress in progress in
// another process, or one killed before recovery) means the records a reader
// sees may be a mix of the old and the new set (spec 7.4, 7.5). Readers never
// recover (7.3), so they say it: the status adds a warning line after the
// records line (like its other product warnings, 4.2) and read-memory says it
// on stderr, its stdout and exit code unchanged. A read-memory whose files
// kept vanishing between listing and reading through every retry (a compress
// replacing the set each time) says that its output is a mix too.
// (mutation review K)

import { promises as fs, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/aigpt/cli/program.js';
import { COMPRESS_PENDING, JOURNAL_FILE } from '../../src/aigpt/storage/memory-store.js';
import { GOLDEN_MEMORY, makeTempHome, runAigpt, seedOrderMemory, type TempHome, writeConfig } from './support.js';

describe('aigpt readers with a compress journal in the memory folder', () => {
  let home: TempHome;
  let memoryDir: string;
  beforeEach(async () => {
    home = makeTempHome();
    await writeConfig(home, { did: 'did:plc:xxx', path: join(home.root, 'c') });
    memoryDir = join(home.root, 'c', 'did:plc:xxx', 'ai.syui.gpt.memory');
    await fs.mkdir(memoryDir, { recursive: true });
    await fs.writeFile(join(memoryDir, '3mfyouuy62222.json'), GOLDEN_MEMORY);
    await fs.writeFile(join(memoryDir, JOURNAL_FILE), '{"half');
  });
  afterEach(() => home.cleanup());

  it('the status warns after the records line; read-memory says it on stderr and still prints the records', async () => {
    const status = await runAigpt([], home.childEnv);
    expect(status.code).toBe(0);
    expect(status.stderr).toBe('');
    expect(status.stdout.endsWith(`\nrecords: 1/100\nwarning: ${COMPRESS_PENDING}\n`)).toBe(true);

    const read = await runAigpt(['read-memory'], home.childEnv);
    expect(read).toEqual({ code: 0, stdout: `${GOLDEN_MEMORY}\n`, stderr: `aigpt: ${COMPRESS_PENDING}\n` });
    // Readers left the journal for the next write.
    expect(await fs.readdir(memoryDir)).toContain(JOURNAL_FILE);
  });

  it('says nothing of the kind without a journal', async () => {
    await fs.rm(join(memoryDir, JOURNAL_FILE));
    const status = await runAigpt([], home.childEnv);
    expect(status.stdout.endsWith('\nrecords: 1/100\n')).toBe(true);
    expect(await runAigpt(['read-memory'], home.childEnv)).toEqual({ code: 0, stdout: `${GOLDEN_MEMORY}\n`, stderr: '' });
  });
});

describe('aigpt read-memory while files keep vanishing between listing and reading', () => {
  let home: TempHome;
  beforeEach(() => {
    home = makeTempHome();
  });
  afterEach(() => home.cleanup());

  it('prints what it read, exits 0, and says on stderr that the set was being replaced', async () => {
    await writeConfig(home, { did: 'did:plc:xxx', path: join(home.root, 'c') });
    const memoryDir = join(home.root, 'c', 'did:plc:xxx', 'ai.syui.gpt.memory');
    await fs.mkdir(memoryDir, { recursive: true });
    await fs.writeFile(join(memoryDir, '3mfyouuy62222.json'), GOLDEN_MEMORY);
    const victim = (n: number): string => join(memoryDir, `zz-victim-${n}.json`);
    let listings = 0;
    writeFileSync(victim(0), seedOrderMemory('did:plc:xxx', 'v', 'vanishing'));
    let stdout = '';
    let stderr = '';
    const code = await runCli(['read-memory'], {
      environment: home.environment,
      io: { stdout: (text) => (stdout += text), stderr: (text) => (stderr += text) },
      // Each listing saw a file that is gone before it is read, and a new one appears for the next listing.
      fault: (point) => {
        if (point !== 'scan:listed') return;
        rmSync(victim(listings));
        listings++;
        writeFileSync(victim(listings), seedOrderMemory('did:plc:xxx', 'v', 'vanishing'));
      },
    });
    expect(listings).toBeGreaterThan(1);
    expect(code).toBe(0);
    expect(stdout).toBe(`${GOLDEN_MEMORY}\n`);
    expect(stderr).toBe('aigpt: 1 memory file(s) were removed while being read (a compress replacing the set); run read-memory again for the whole set\n');
  });
});
