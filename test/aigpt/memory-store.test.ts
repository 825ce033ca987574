import { existsSync, mkdirSync, promises as fs, readdirSync, rmdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AigptError } from '../../src/aigpt/core/errors.js';
import { checkCompressItems, InjectedFault, JOURNAL_FILE, MemoryStore } from '../../src/aigpt/storage/memory-store.js';
import { memoryRecordJson } from '../../src/aigpt/core/record-format.js';
import { recordTree } from '../../src/aigpt/core/record-paths.js';
import { isValidTid, MAX_TID_MICROS, TidGenerator, tidFromParts } from '../../src/aigpt/core/tid.js';
import { GOLDEN_MEMORY, listDir, makeTempHome, seedOrderMemory, snapshotMemories, type TempHome } from './support.js';
import { MAX_READ_MEMORY_BYTES } from '../../src/aigpt/core/limits.js';

/** Reads as the read_memory tool does: every file of these small folders fits its bound. */
const WHOLE_READ = { maxBytes: MAX_READ_MEMORY_BYTES };

const NOON_US = Date.parse('2026-03-01T12:00:00Z') * 1000;

interface StoreOptions {
  limit?: bigint;
  fault?: (point: string) => void;
}

function makeStore(home: TempHome, options: StoreOptions = {}): MemoryStore {
  return new MemoryStore({
    did: 'did:plc:xxx',
    handle: 'ai.syui.ai',
    tree: recordTree(join(home.root, 'content'), 'did:plc:xxx'),
    memoryLimit: options.limit ?? 100n,
    clock: () => new Date(NOON_US / 1000),
    tids: new TidGenerator({ nowMicros: () => NOON_US, clockId: 0 }),
    ...(options.fault === undefined ? {} : { fault: options.fault }),
  });
}

describe('MemoryStore', () => {
  let home: TempHome;
  let store: MemoryStore;
  beforeEach(async () => {
    home = makeTempHome();
    store = makeStore(home);
    await store.ensureLayout();
  });
  afterEach(() => home.cleanup());

  it('creates the core record and memory folder on first use', async () => {
    const core = await fs.readFile(store.tree.coreFile, 'utf8');
    expect(core).toBe(
      '{\n  "uri": "at://did:plc:xxx/ai.syui.gpt.core/self",\n  "value": {\n    "$type": "ai.syui.gpt.core",\n    "content": {\n      "$type": "ai.syui.gpt.core#markdown",\n      "text": ""\n    },\n    "createdAt": "2026-03-01T12:00:00Z",\n    "did": "did:plc:xxx",\n    "handle": "ai.syui.ai"\n  }\n}',
    );
    expect(await listDir(store.tree.memoryDir)).toEqual([]);
    // An existing core, even edited by hand, is never rewritten.
    await fs.writeFile(store.tree.coreFile, '{"value":{"content":{"text":"me"}}}');
    await store.ensureLayout();
    expect((await store.readCore()).text).toBe('me');
  });

  it('saves the golden record byte for byte for the same TID and time', async () => {
    const saved = await store.saveMemory('syuiはRustを好む');
    expect(saved).toEqual({ tid: '3mfyouuy62222', count: 1 });
    expect(await fs.readFile(join(store.tree.memoryDir, '3mfyouuy62222.json'), 'utf8')).toBe(GOLDEN_MEMORY);
    expect(await listDir(store.tree.memoryDir)).toEqual(['3mfyouuy62222.json']);
  });

  it('gives every save a new, increasing TID even on a frozen clock', async () => {
    const tids: string[] = [];
    for (let i = 0; i < 20; i++) tids.push((await store.saveMemory(`fact ${i}`)).tid);
    expect([...tids].sort()).toEqual(tids);
    expect(new Set(tids).size).toBe(20);
    const read = await store.readMemories(WHOLE_READ);
    expect(read.records.map((r) => r.text)).toEqual(tids.map((_, i) => `fact ${i}`));
  });

  it('goes past TIDs already on disk and never overwrites a file', async () => {
    // A file from the "future" (another writer whose clock runs ahead).
    const ahead = tidFromParts(NOON_US + 60_000_000, 5);
    await fs.writeFile(join(store.tree.memoryDir, `${ahead}.json`), seedOrderMemory('did:plc:xxx', ahead, 'ahead'));
    const saved = await store.saveMemory('after');
    expect(saved.tid > ahead).toBe(true);
    expect((await store.readMemories(WHOLE_READ)).records.map((r) => r.text)).toEqual(['ahead', 'after']);
  });

  it('a stem with TID syntax but bit 63 set (first character c..j), or at the last timestamp, does not block saves or compress', async () => {
    // Syntactically a TID, but no generator makes it (spec 3.6: bit 63 is 0).
    await fs.writeFile(join(store.tree.memoryDir, 'j222222222222.json'), seedOrderMemory('did:plc:xxx', 'j222222222222', 'odd'));
    // The greatest value with bit 63 clear: nothing comes after it.
    await fs.writeFile(join(store.tree.memoryDir, 'bzzzzzzzzzzzz.json'), seedOrderMemory('did:plc:xxx', 'bzzzzzzzzzzzz', 'last'));
    const saved = await store.saveMemory('after');
    expect(saved.tid.startsWith('3')).toBe(true);
    expect(await store.compress(['kept'])).toMatchObject({ count: 1 });
    expect((await store.readMemories(WHOLE_READ)).records.map((r) => r.text)).toEqual(['kept']);
  });

  it('records at the end of the TID space neither stop saves nor let compress publish over one of them', async () => {
    const dir = store.tree.memoryDir;
    // The last timestamp that has a successor, and that successor with this store's clock id.
    const nearEnd = tidFromParts(MAX_TID_MICROS - 1, 0);
    const atEnd = tidFromParts(MAX_TID_MICROS, 0);
    await fs.writeFile(join(dir, `${nearEnd}.json`), seedOrderMemory('did:plc:xxx', nearEnd, 'near end'));
    await fs.writeFile(join(dir, `${atEnd}.json`), seedOrderMemory('did:plc:xxx', atEnd, 'at end'));
    expect((await store.saveMemory('a')).tid).toBe(tidFromParts(NOON_US, 0));
    expect((await store.saveMemory('b')).tid).toBe(tidFromParts(NOON_US + 1, 0));
    expect(await fs.readFile(join(dir, `${atEnd}.json`), 'utf8')).toContain('"at end"');
    // The first new TID above the near-end record is the at-end record's name:
    // publishing it by rename replaced that record, then deleting the old set removed the new one.
    expect(await store.compress(['one', 'two'])).toMatchObject({ count: 2 });
    expect((await store.readMemories(WHOLE_READ)).records.map((r) => r.text)).toEqual(['one', 'two']);
  });

  it('a record at the last timestamp does not hide the floor the other records set', async () => {
    const dir = store.tree.memoryDir;
    const ahead = tidFromParts(NOON_US + 5, 0);
    const atEnd = tidFromParts(MAX_TID_MICROS, 0);
    await fs.writeFile(join(dir, `${ahead}.json`), seedOrderMemory('did:plc:xxx', ahead, 'ahead'));
    await fs.writeFile(join(dir, `${atEnd}.json`), seedOrderMemory('did:plc:xxx', atEnd, 'at end'));
    // The clock stands at NOON_US: the new record still comes after `ahead`.
    expect((await store.saveMemory('after')).tid).toBe(tidFromParts(NOON_US + 6, 0));
  });

  it('a reader tells an interrupted compress apart: old set only, both sets, new set only', async () => {
    await store.saveMemory('old 1');
    await store.saveMemory('old 2');
    const crashAt = (point: string, nth = 1): MemoryStore => {
      let seen = 0;
      return makeStore(home, {
        fault: (at) => {
          if (at === point && ++seen === nth) throw new InjectedFault(at);
        },
      });
    };
    let listings = 0;
    const reader = makeStore(home, { fault: (at) => void (at === 'read:listed' && listings++) });
    const read = async (): Promise<[string[], boolean, boolean, number]> => {
      listings = 0;
      const result = await reader.readMemories(WHOLE_READ);
      return [result.records.map((r) => r.text), result.compressPending, result.compressMixed, listings];
    };
    // Committed, nothing published yet: the old set, whole.
    await expect(crashAt(`replace:${JOURNAL_FILE}:renamed`).compress(['new 1', 'new 2'])).rejects.toThrow(InjectedFault);
    expect(await read()).toEqual([['old 1', 'old 2'], true, false, 1]);
    await store.recover();
    expect(await read()).toEqual([['new 1', 'new 2'], false, false, 1]);
    // Every new record published, no old one removed: both sets, read again (4 listings) before it is answered so.
    await expect(crashAt('compress:published', 2).compress(['newer 1', 'newer 2'])).rejects.toThrow(InjectedFault);
    expect(await read()).toEqual([['new 1', 'new 2', 'newer 1', 'newer 2'], true, true, 4]);
    await store.recover();
    // Switched, journal not yet removed: the new set, whole.
    await expect(crashAt('compress:switched').compress(['newest'])).rejects.toThrow(InjectedFault);
    expect(await read()).toEqual([['newest'], true, false, 1]);
  });

  it('a save finishes a compress interrupted before the old set was removed, and says so, before it writes', async () => {
    await store.saveMemory('old');
    let seen = 0;
    const crashing = makeStore(home, {
      fault: (at) => {
        if (at === 'compress:published' && ++seen === 2) throw new InjectedFault(at);
      },
    });
    await expect(crashing.compress(['new 1', 'new 2'])).rejects.toThrow(InjectedFault);
    let report;
    const saved = await makeStore(home).saveMemory('later', { recovered: (r) => (report = r) });
    expect(report).toMatchObject({ rolledForward: true });
    expect(saved.count).toBe(3);
    expect((await store.readMemories(WHOLE_READ)).records.map((r) => r.text)).toEqual(['new 1', 'new 2', 'later']);
    expect((await listDir(store.tree.memoryDir)).includes(JOURNAL_FILE)).toBe(false);
  });

  it('a compress whose second batch cannot be staged removes what the first batch staged, and changes nothing', async () => {
    const dir = store.tree.memoryDir;
    await store.saveMemory('old');
    // The 17th item's staged name (the clock stands still, so TIDs count up from the old record's).
    const taken = `.${tidFromParts(NOON_US + 17, 0)}.json.tmp-compress`;
    let synced = 0;
    const compressing = makeStore(home, {
      fault: (at) => {
        // Taken once the first batch of 16 is staged, after recovery swept temp names.
        if (at === 'compress:stage:synced' && ++synced === 16) writeFileSync(join(dir, taken), 'theirs');
      },
    });
    const items = Array.from({ length: 20 }, (_, i) => `new ${i}`);
    await expect(compressing.compress(items)).rejects.toThrow(/^Failed to write .*\.json: EEXIST/);
    expect(await listDir(dir)).toEqual([taken, '3mfyouuy62222.json']);
    expect((await store.readMemories(WHOLE_READ)).records.map((r) => r.text)).toEqual(['old']);
  });

  it('after a commit with nothing published, a missing staged record is reported by recovery, and a compress finishes the old one first', async () => {
    const dir = store.tree.memoryDir;
    await store.saveMemory('old');
    const crashAtCommit = (): MemoryStore =>
      makeStore(home, {
        fault: (at) => {
          if (at === `replace:${JOURNAL_FILE}:renamed`) throw new InjectedFault(at);
        },
      });
    await expect(crashAtCommit().compress(['new 1', 'new 2'])).rejects.toThrow(InjectedFault);
    const staged = (await listDir(dir)).filter((name) => name.endsWith('.tmp-compress'));
    expect(staged).toHaveLength(2);
    await fs.unlink(join(dir, staged[0]!));
    const report = await makeStore(home).recover();
    expect(report.problems).toEqual([`staged record ${staged[0]!.slice(1, 14)} is missing; it cannot be restored`]);
    expect((await store.readMemories(WHOLE_READ)).records.map((r) => r.text)).toEqual(['new 2']);

    await expect(crashAtCommit().compress(['newer'])).rejects.toThrow(InjectedFault);
    await makeStore(home).compress(['newest']);
    expect((await listDir(dir)).filter((name) => name.startsWith('.'))).toEqual([]);
    expect((await store.readMemories(WHOLE_READ)).records.map((r) => r.text)).toEqual(['newest']);
  });

  it('a compress whose staged record vanishes before it is published fails, naming it, instead of reporting the set whole', async () => {
    const dir = store.tree.memoryDir;
    await store.saveMemory('old');
    const compressing = makeStore(home, {
      fault: (at) => {
        // Someone outside the lock removes a staged record between staging and the commit.
        if (at === 'compress:staged') unlinkSync(join(dir, readdirSync(dir).find((name) => name.endsWith('.tmp-compress'))!));
      },
    });
    await expect(compressing.compress(['new 1', 'new 2'])).rejects.toThrow(/^Failed to write .*: staged record \w{13} is missing; it cannot be restored$/);
    // The commit stands: the new set, less the record that vanished.
    const texts = (await store.readMemories(WHOLE_READ)).records.map((r) => r.text);
    expect(texts).toHaveLength(1);
    expect(texts[0]).toMatch(/^new [12]$/);
  });

  it('compress leaves a folder named like a record alone: it is not in the journal, and later writes still work', async () => {
    const dir = store.tree.memoryDir;
    mkdirSync(join(dir, 'folder.json'));
    await store.saveMemory('one');
    await store.saveMemory('two');
    expect(await store.compress(['new'])).toMatchObject({ count: 1 });
    expect((await listDir(dir)).filter((name) => name !== 'folder.json')).toHaveLength(1);
    expect(await listDir(dir)).toContain('folder.json');
    expect(existsSync(join(dir, JOURNAL_FILE))).toBe(false);
    await store.saveMemory('after');
    expect((await store.readMemories(WHOLE_READ)).records.map((r) => r.text)).toEqual(['new', 'after']);
  });

  it('names the compress item that is not well-formed Unicode, and changes nothing', async () => {
    await store.saveMemory('kept');
    const before = await listDir(store.tree.memoryDir);
    await expect(store.compress(['ok', '\ud800'])).rejects.toThrow(/^items\[1\]: content is not well-formed Unicode \(lone surrogate\)$/);
    expect(await listDir(store.tree.memoryDir)).toEqual(before);
  });

  it('retries with a new TID when the name is taken between listing and publishing (exclusive create)', async () => {
    const dir = store.tree.memoryDir;
    const first = tidFromParts(NOON_US, 0);
    // A writer outside the lock (say the reference) creates the very name we are about to publish.
    const racer = makeStore(home, {
      fault: (point) => {
        if (point === `write:${first}.json:synced`) writeFileSync(join(dir, `${first}.json`), 'theirs');
      },
    });
    const saved = await racer.saveMemory('mine');
    expect(saved.tid).toBe(tidFromParts(NOON_US + 1, 0));
    expect(saved.count).toBe(2);
    expect(await fs.readFile(join(dir, `${first}.json`), 'utf8')).toBe('theirs');
    expect(await listDir(dir)).toEqual([`${first}.json`, `${saved.tid}.json`]);
  });

  it('reads hand-written fixtures in the reference format and skips bad files with path and reason', async () => {
    const dir = store.tree.memoryDir;
    await fs.writeFile(join(dir, '3mfyouuy62222.json'), GOLDEN_MEMORY);
    await fs.writeFile(join(dir, '3mfyouuy6222a.json'), seedOrderMemory('did:plc:xxx', '3mfyouuy6222a', 'ATProto設計に詳しい'));
    await fs.writeFile(join(dir, 'notes.json'), seedOrderMemory('did:plc:xxx', 'notes', '原神プレイヤー'));
    await fs.writeFile(join(dir, '3mfyouuy6222b.json'), '');
    await fs.writeFile(join(dir, '3mfyouuy6222c.json'), '{"value":{}}');
    await fs.writeFile(join(dir, '3mfyouuy6222d.json'), Buffer.from([0x22, 0xff, 0x22]));
    await fs.mkdir(join(dir, 'folder.json'));
    await fs.writeFile(join(dir, 'ignored.txt'), 'x');
    await fs.writeFile(join(dir, '.json'), 'x');
    const read = await store.readMemories(WHOLE_READ);
    expect(read.records.map((r) => r.text)).toEqual(['syuiはRustを好む', 'ATProto設計に詳しい', '原神プレイヤー']);
    expect(read.selected).toBe(7);
    expect(read.skipped.map((s) => [s.path.slice(dir.length + 1), s.reason.replace(dir, '{dir}')])).toEqual([
      ['3mfyouuy6222b.json', 'Failed to parse: The JSON document is malformed.'],
      ['3mfyouuy6222c.json', 'not a record: value.content.text is missing or not a string'],
      ['3mfyouuy6222d.json', 'Failed to read: stream did not contain valid UTF-8'],
      ['folder.json', 'Failed to read: not a regular file'],
    ]);
    expect(await store.countMemories()).toBe(7);
  });

  it('skips files over 1 MiB', async () => {
    const big = memoryRecordJson({ did: 'did:plc:xxx', tid: '3mfyouuy62222', text: 'x'.repeat(1024 * 1024), createdAt: '2026-03-01T12:00:00Z' });
    await fs.writeFile(join(store.tree.memoryDir, '3mfyouuy62222.json'), big);
    const read = await store.readMemories(WHOLE_READ);
    expect(read.records).toEqual([]);
    expect(read.skipped[0]?.reason).toMatch(/larger than 1048576 bytes/);
  });

  it('reads a file of exactly 1 MiB; one byte more is skipped', async () => {
    const record = memoryRecordJson({ did: 'did:plc:xxx', tid: '3mfyouuy62222', text: 'edge', createdAt: '2026-03-01T12:00:00Z' });
    // Trailing whitespace is valid JSON, so the file can be padded to the bound exactly.
    await fs.writeFile(join(store.tree.memoryDir, '3mfyouuy62222.json'), record.padEnd(1024 * 1024, ' '));
    await fs.writeFile(join(store.tree.memoryDir, '3mfyouuy6222a.json'), record.padEnd(1024 * 1024 + 1, ' '));
    const read = await store.readMemories(WHOLE_READ);
    expect(read.records.map((r) => r.name)).toEqual(['3mfyouuy62222.json']);
    expect(read.skipped.map((s) => s.reason)).toEqual(['Failed to read: larger than 1048576 bytes']);
  });

  // A pseudo-file says size 0 whatever it holds; the bound must stop the read itself (spec 8).
  it.skipIf(!existsSync('/proc/self/pagemap'))('skips a linked pseudo-file after reading at most 1 MiB of it, whatever its size says', async () => {
    await fs.writeFile(join(store.tree.memoryDir, '3mfyouuy62222.json'), GOLDEN_MEMORY);
    await fs.symlink('/proc/self/pagemap', join(store.tree.memoryDir, '3mfyouuy6222a.json'));
    const read = await store.readMemories(WHOLE_READ);
    expect(read.records.map((r) => r.name)).toEqual(['3mfyouuy62222.json']);
    expect(read.skipped.map((s) => s.reason)).toEqual(['Failed to read: larger than 1048576 bytes']);
  });

  it('reads the newest 10 000 memory files in byte order, however the folder lists them, and counts the older ones as not read (spec 8)', async () => {
    const dir = store.tree.memoryDir;
    const record = (text: string): string => `{"value":{"content":{"text":"${text}"}}}`;
    // The 50 oldest by name are TIDs from 2030, so the TID floor comes from files the read leaves out.
    const tids = Array.from({ length: 50 }, (_, i) => tidFromParts(Date.parse('2030-01-01T00:00:00Z') * 1000 + i, 0));
    const notes = Array.from({ length: 9_997 }, (_, i) => `note-${String(i).padStart(5, '0')}.json`);
    // Code point order is not UTF-16 order (U+E000 sorts below U+1F600), and
    // a name that is not UTF-8 sorts after every one that is.
    const raws = [...[...tids.map((tid) => `${tid}.json`), ...notes, 'note-\u{e000}.json', 'note-\u{1f600}.json'].map((name) => Buffer.from(name)), Buffer.from('6e6f74652dff2e6a736f6e', 'hex')];
    // Written in a seeded shuffled order, so the listing's order is not the names' order.
    const order = raws.map((_, i) => i);
    let seed = 7;
    for (let i = order.length - 1; i > 0; i--) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      const j = seed % (i + 1);
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    for (const i of order) writeFileSync(Buffer.concat([Buffer.from(`${dir}/`), raws[i]!]), record(String(i)));
    const newest = [...raws].sort(Buffer.compare).slice(-10_000);
    expect(newest[0]!.toString()).toBe('note-00000.json');

    const read = await store.readMemories(WHOLE_READ);
    expect(read.records.map((r) => Buffer.from(r.name).toString('hex'))).toEqual(newest.map((raw) => Buffer.from(raw.toString()).toString('hex')));
    expect(read.records.at(-3)?.text).toBe(String(raws.length - 3));
    expect(read.records.at(-1)?.text).toBe(String(raws.length - 1));
    expect(read).toMatchObject({ selected: 10_050, notRead: 50, skipped: [] });

    // The status's scan counts the 50; the owner's dump reads them too, oldest first.
    const counted: string[] = [];
    expect(await store.scanMemories((item) => void counted.push('record' in item ? item.record.name : 'skipped'), undefined, { readAll: false })).toMatchObject({
      selected: 10_050,
      notRead: 50,
    });
    expect(counted).toEqual(read.records.map((r) => r.name));
    const dumped: string[] = [];
    expect(await store.scanMemories((item) => void dumped.push('record' in item ? item.record.name : 'skipped'), undefined, { readAll: true })).toMatchObject({
      selected: 10_050,
      notRead: 0,
    });
    expect(dumped).toEqual([...tids.map((tid) => `${tid}.json`), ...read.records.map((r) => r.name)]);
    expect(await store.countMemories()).toBe(10_050);

    // The store's clock says 2026; the next TID still follows the newest one on disk.
    const saved = await store.saveMemory('after');
    expect(saved.tid > tids.at(-1)!).toBe(true);
    expect(saved.count).toBe(10_051);
  });

  it('a read budget keeps a record that fills it to the byte', async () => {
    const record = (text: string): string => `{"value":{"content":{"text":"${text}"}}}`;
    await fs.writeFile(join(store.tree.memoryDir, '3mfyouuy62222.json'), record('old'));
    await fs.writeFile(join(store.tree.memoryDir, '3mfyouuy6222a.json'), record('new'));
    // Each of its 8 quotes takes one more byte in the answer line.
    const both = 2 * (Buffer.byteLength(record('old')) + 8);
    expect((await store.readMemories({ maxBytes: both })).records.map((r) => r.text)).toEqual(['old', 'new']);
    const short = await store.readMemories({ maxBytes: both - 1 });
    expect(short.records.map((r) => r.text)).toEqual(['new']);
    expect(short.notRead).toBe(1);
  });

  it('a read budget counts a record at its file size when that is larger than its re-serialised form', async () => {
    const record = (text: string): string => `{"value":{"content":{"text":"${text}"}}}`;
    // Whitespace the re-serialised form drops: reading the file still holds all of it.
    await fs.writeFile(join(store.tree.memoryDir, '3mfyouuy62222.json'), `${record('old')}${' '.repeat(1000)}`);
    await fs.writeFile(join(store.tree.memoryDir, '3mfyouuy6222a.json'), record('new'));
    // The old file alone fits; with the new record (8 quotes escaped in the line) it is one byte over.
    const read = await store.readMemories({ maxBytes: Buffer.byteLength(record('old')) + 1000 + Buffer.byteLength(record('new')) + 8 - 1 });
    expect(read.records.map((r) => r.text)).toEqual(['new']);
    expect(read.notRead).toBe(1);
  });

  it('a record whose file alone outgrows the read budget is skipped as larger than the bound, not said to be so re-serialised', async () => {
    await fs.writeFile(join(store.tree.memoryDir, '3mfyouuy62222.json'), `{"value":{"content":{"text":"big"}}}${' '.repeat(3000)}`);
    const read = await store.readMemories({ maxBytes: 2500 });
    expect(read.records).toEqual([]);
    expect(read.skipped.map((skip) => skip.reason)).toEqual(['Failed to read: larger than the 2500-byte read bound']);
  });

  it('a read budget counts a record at its re-serialised size when that is larger than its file', async () => {
    // `1e15` is written back as `1000000000000000.0`: 3 MiB of such files made
    // a read_memory answer line above the 10 MiB an MCP SDK client accepts.
    const numbers = `{"value":{"content":{"text":"n"}},"n":[${Array<string>(100).fill('1e15').join(',')}]}`;
    await fs.writeFile(join(store.tree.memoryDir, '3mfyouuy62222.json'), numbers);
    await fs.writeFile(join(store.tree.memoryDir, '3mfyouuy6222a.json'), numbers);
    // Both files (about 530 bytes each) fit in 2 500 bytes; only one rendering (about 1 940) does.
    const read = await store.readMemories({ maxBytes: 2500 });
    expect(read.records.map((record) => record.name)).toEqual(['3mfyouuy6222a.json']);
    expect(read.notRead).toBe(1);
    // A newest record that alone outgrows the budget is skipped by itself; the older ones are still read.
    await fs.writeFile(join(store.tree.memoryDir, '3mfyouuy6222b.json'), `{"value":{"content":{"text":"n"}},"n":[${Array<string>(200).fill('1e15').join(',')}]}`);
    const after = await store.readMemories({ maxBytes: 2500 });
    expect(after.records.map((record) => record.name)).toEqual(['3mfyouuy6222a.json']);
    expect(after.skipped.map((skip) => skip.reason)).toEqual([
      'Failed to read: larger than the 2500-byte read bound when re-serialised',
    ]);
    expect(after.notRead).toBe(1);
  });

  it('a read budget counts the escapes a record takes in the answer line', async () => {
    // A text of quotes is stored escaped (\") and escaped once more in the
    // JSON-RPC line (\\\"): counting the file alone let a read of such
    // records make an answer line twice the budget.
    const quotes = `{"value":{"content":{"text":"${'\\"'.repeat(100)}"}}}`;
    await fs.writeFile(join(store.tree.memoryDir, '3mfyouuy62222.json'), quotes);
    await fs.writeFile(join(store.tree.memoryDir, '3mfyouuy6222a.json'), quotes);
    const file = Buffer.byteLength(quotes);
    expect(file).toBe(233);
    // Both files fit in 600 bytes; in the line each costs 233 + 8 + 200 = 441.
    const read = await store.readMemories({ maxBytes: 600 });
    expect(read.records.map((record) => record.name)).toEqual(['3mfyouuy6222a.json']);
    expect(read.notRead).toBe(1);
    expect((await store.readMemories({ maxBytes: 882 })).records).toHaveLength(2);
    expect((await store.readMemories({ maxBytes: 881 })).records).toHaveLength(1);
  });

  it('bounds memory text size and rejects lone surrogates, writing nothing', async () => {
    await expect(store.saveMemory('x'.repeat(16 * 1024 + 1))).rejects.toThrow('content exceeds 16384 bytes');
    await expect(store.saveMemory('é'.repeat(8 * 1024 + 1))).rejects.toThrow('content exceeds 16384 bytes');
    await expect(store.saveMemory('\ud800')).rejects.toThrow(/surrogate/);
    expect(await store.saveMemory('x'.repeat(16 * 1024))).toMatchObject({ count: 1 });
  });

  it('saves an explicitly empty string as the reference does', async () => {
    await store.saveMemory('');
    expect((await store.readMemories(WHOLE_READ)).records.map((r) => r.text)).toEqual(['']);
  });

  it('compress replaces the whole set with new TIDs above every old one, in order', async () => {
    for (const text of ['a', 'b', 'c']) await store.saveMemory(text);
    const before = await store.listMemoryNames();
    const result = await store.compress(['kept 1', 'kept 2', 'kept 2']);
    expect(result).toEqual({ count: 3 });
    const after = await store.listMemoryNames();
    expect(after).toHaveLength(3);
    expect(after.every((name) => name > before[before.length - 1]! && isValidTid(name.slice(0, -5)))).toBe(true);
    expect((await store.readMemories(WHOLE_READ)).records.map((r) => r.text)).toEqual(['kept 1', 'kept 2', 'kept 2']);
    expect(await listDir(store.tree.memoryDir)).toEqual(after);
  });

  it('a real I/O failure after the journal got its name keeps the staged records, and recovery completes the compress', async () => {
    for (const text of ['a', 'b']) await store.saveMemory(text);
    const failing = makeStore(home, {
      fault: (point) => {
        // As the folder's fsync failing with EIO right after the rename (not an injected crash).
        if (point === 'replace:.compress-journal:renamed') throw Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' });
      },
    });
    await expect(failing.compress(['new 1', 'new 2'])).rejects.toMatchObject({ code: 'write_failed' });
    await makeStore(home).ensureLayout();
    expect((await store.readMemories(WHOLE_READ)).records.map((r) => r.text)).toEqual(['new 1', 'new 2']);
  });

  it('a staged record that cannot be published stops the roll-forward before any old record is deleted', async () => {
    for (const text of ['a', 'b']) await store.saveMemory(text);
    const dir = store.tree.memoryDir;
    let blocked = '';
    const failing = makeStore(home, {
      fault: (point) => {
        if (point !== 'compress:staged' || blocked !== '') return;
        // A folder where the first staged record is to be published: its rename fails (EISDIR), not ENOENT.
        const staged = readdirSync(dir).filter((name) => name.endsWith('.json.tmp-compress')).sort();
        blocked = `${staged[0]!.slice(1, -'.json.tmp-compress'.length)}.json`;
        mkdirSync(join(dir, blocked));
      },
    });
    await expect(failing.compress(['new 1', 'new 2'])).rejects.toMatchObject({ code: 'write_failed' });
    expect(blocked).not.toBe('');
    // Committed but not rolled forward: the old records are all still there, the journal too.
    expect((await store.readMemories(WHOLE_READ)).records.map((r) => r.text)).toEqual(expect.arrayContaining(['a', 'b']));
    expect(existsSync(join(dir, JOURNAL_FILE))).toBe(true);
    // Once the obstacle is gone, recovery finishes the job.
    rmdirSync(join(dir, blocked));
    await makeStore(home).ensureLayout();
    expect((await store.readMemories(WHOLE_READ)).records.map((r) => r.text)).toEqual(['new 1', 'new 2']);
  });

  it('compress with [] clears memory; non-record entries stay', async () => {
    await store.saveMemory('a');
    await fs.writeFile(join(store.tree.memoryDir, 'readme.txt'), 'keep me');
    await store.compress([]);
    expect(await listDir(store.tree.memoryDir)).toEqual(['readme.txt']);
  });

  it('compress accepts exactly 10 000 items (the hard bound) and exactly the limit', () => {
    const items = (n: number): string[] => Array.from({ length: n }, () => 'x');
    expect(checkCompressItems(items(10_000), 10_000n)).toBeUndefined();
    expect(checkCompressItems(items(10_001), 20_000n)).toBe('compress got 10001 items but at most 10000 are accepted');
    // Over both, the limit is named: the bound an agent can act on.
    expect(checkCompressItems(items(10_001), 100n)).toBe('compress got 10001 items but the memory limit is 100');
    expect(checkCompressItems(items(3), 3n)).toBeUndefined();
    expect(checkCompressItems([], 0n)).toBeUndefined();
  });

  it('compress above the limit or the hard bound is rejected and changes nothing', async () => {
    const small = makeStore(home, { limit: 2n });
    await small.saveMemory('a');
    const before = await snapshotMemories(small.tree.memoryDir);
    const error = await small.compress(['1', '2', '3']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AigptError);
    expect((error as AigptError).code).toBe('over_limit');
    expect((error as AigptError).message).toBe('compress got 3 items but the memory limit is 2');
    await expect(small.compress(['ok', 'x'.repeat(16 * 1024 + 1)])).rejects.toThrow(/^content exceeds 16384 bytes$/);
    const huge = makeStore(home, { limit: 100_000n });
    await expect(huge.compress(Array.from({ length: 10_001 }, () => 'x'))).rejects.toThrow(/at most 10000/);
    expect(await snapshotMemories(small.tree.memoryDir)).toEqual(before);
  });

  it('saves above the limit are never refused', async () => {
    const tiny = makeStore(home, { limit: 0n });
    expect((await tiny.saveMemory('a')).count).toBe(1);
    expect((await tiny.saveMemory('b')).count).toBe(2);
  });

  it('recovery removes leftovers of a crashed save and an uncommitted compress', async () => {
    await store.saveMemory('a');
    const dir = store.tree.memoryDir;
    await fs.writeFile(join(dir, '.3mfyouuy6222z.json.tmp-999-abc'), '{"half');
    await fs.writeFile(join(dir, '.3mfyouuy6222y.json.tmp-compress'), 'staged');
    await fs.writeFile(join(dir, '.compress-journal.tmp-999-abc'), '{"version":1');
    const report = await makeStore(home).ensureLayout();
    expect(report?.removedTemps).toHaveLength(3);
    expect(report?.rolledForward).toBe(false);
    expect(await listDir(dir)).toEqual(['3mfyouuy62222.json']);
  });

  it('recovery keeps a record whose name looks like a temp file but ends in .json (spec 3.2, 9)', async () => {
    const dir = store.tree.memoryDir;
    const handWritten = seedOrderMemory('did:plc:xxx', 'notes', 'kept');
    await fs.writeFile(join(dir, '.notes.tmp-1.json'), handWritten);
    await fs.writeFile(join(dir, '.3mfyouuy6222z.json.tmp-999-abc'), '{"half');
    const report = await makeStore(home).ensureLayout();
    expect(report?.removedTemps).toEqual(['.3mfyouuy6222z.json.tmp-999-abc']);
    await store.saveMemory('a');
    expect(await listDir(dir)).toEqual(['.notes.tmp-1.json', '3mfyouuy62222.json']);
    expect((await store.readMemories(WHOLE_READ)).records.map((record) => record.text)).toEqual(['kept', 'a']);
  });

  it('recovery leaves a folder named like a temp file, and writes go on', async () => {
    const dir = store.tree.memoryDir;
    mkdirSync(join(dir, '.a.json.tmp-1-abc'));
    await store.recover();
    await store.saveMemory('a');
    expect(await listDir(dir)).toEqual(['.a.json.tmp-1-abc', '3mfyouuy62222.json']);
  });

  it('recovery discards a journal that does not parse, and refuses an unknown version', async () => {
    const dir = store.tree.memoryDir;
    await store.saveMemory('a');
    await fs.writeFile(join(dir, JOURNAL_FILE), '{"version":1,"create":[');
    const report = await makeStore(home).ensureLayout();
    expect(report?.problems[0]).toMatch(/discarded/);
    expect(await listDir(dir)).toEqual(['3mfyouuy62222.json']);
    await fs.writeFile(join(dir, JOURNAL_FILE), '{"version":2,"create":[],"delete":[]}');
    await expect(makeStore(home).ensureLayout()).rejects.toThrow(/unsupported journal version/);
  });

  it('a journal can never delete outside the folder', async () => {
    const dir = store.tree.memoryDir;
    await fs.writeFile(join(home.root, 'victim.json'), 'x');
    await fs.writeFile(join(dir, JOURNAL_FILE), '{"version":1,"create":[],"delete":["../../../victim.json"]}');
    await makeStore(home).ensureLayout();
    expect(await fs.readFile(join(home.root, 'victim.json'), 'utf8')).toBe('x');
  });

  it('a journal whose create list holds no TID is discarded, so it can never publish from outside the folder', async () => {
    const dir = store.tree.memoryDir;
    // Staged as `.{tid}.json.tmp-compress`: this "TID" makes that a path three levels up.
    await fs.writeFile(join(home.root, 'victim.json.tmp-compress'), 'x');
    await fs.writeFile(join(dir, JOURNAL_FILE), '{"version":1,"create":["/../../../victim"],"delete":[]}');
    const report = await makeStore(home).ensureLayout();
    expect(report?.problems[0]).toMatch(/discarded/);
    expect(await listDir(home.root)).toEqual(['content', 'victim.json.tmp-compress']);
    expect(await listDir(dir)).toEqual([]);
  });

  it('a record file whose name is not UTF-8 is read by its bytes, and compress removes it, also when recovery finishes the job', async () => {
    const dir = store.tree.memoryDir;
    // Node would name it "a\ufffd.json", which opens nothing.
    const raw = Buffer.concat([Buffer.from(`${dir}/a`), Buffer.from([0xff]), Buffer.from('.json')]);
    const content = memoryRecordJson({ did: 'did:plc:xxx', tid: '3mfyouuy62222', text: 'odd name', createdAt: '2026-03-01T12:00:00Z' });
    await fs.writeFile(raw, content);
    await store.saveMemory('plain');
    const read = await store.readMemories(WHOLE_READ);
    // Bytewise order, as the reference lists them: '3' < 'a'.
    expect(read.records.map((record) => record.text)).toEqual(['plain', 'odd name']);
    expect(read.skipped).toEqual([]);

    // A crash right after the commit: the journal names the raw name, and recovery removes it.
    const crashing = makeStore(home, {
      fault: (point) => {
        if (point === 'replace:.compress-journal:renamed') throw new InjectedFault(point);
      },
    });
    await expect(crashing.compress(['new'])).rejects.toThrow(InjectedFault);
    const journal = JSON.parse(await fs.readFile(join(dir, JOURNAL_FILE), 'utf8')) as { delete: string[]; deleteRaw: string[] };
    expect(journal.deleteRaw).toEqual([Buffer.from([0x61, 0xff, ...Buffer.from('.json')]).toString('hex')]);
    expect(journal.delete).toHaveLength(1);
    await makeStore(home).ensureLayout();
    expect((await store.readMemories(WHOLE_READ)).records.map((record) => record.text)).toEqual(['new']);
    expect(await fs.readdir(dir, { encoding: 'buffer' })).toHaveLength(1);

    // And without a crash.
    await fs.writeFile(raw, content);
    await store.compress(['newer']);
    expect((await store.readMemories(WHOLE_READ)).records.map((record) => record.text)).toEqual(['newer']);
    expect(await fs.readdir(dir, { encoding: 'buffer' })).toHaveLength(1);
  });

  it('leaves no helper files behind after normal operation', async () => {
    await store.saveMemory('a');
    await store.compress(['b']);
    await store.saveMemory('c');
    const names = await listDir(store.tree.memoryDir);
    expect(names.filter((name) => name.startsWith('.'))).toEqual([]);
  });

  it('an infrastructure failure on a write path gives the reference message with the cause', async () => {
    // A folder where the lock file should be: works even when tests run as root.
    await fs.mkdir(join(store.tree.memoryDir, '.lock'));
    const error = await store.saveMemory('x').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AigptError);
    expect((error as AigptError).message).toBe(`Failed to write ${store.tree.memoryDir}: EISDIR: illegal operation on a directory`);
    expect(await store.countMemories()).toBe(0);
  });

  it('serialises concurrent writers in one process', async () => {
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => store.saveMemory(`p${i}`)));
    expect(results.map((r) => r.count).sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    expect(new Set(results.map((r) => r.tid)).size).toBe(30);
    // Calls take effect in call order: TIDs and counts rise with the call index.
    expect(results.map((r) => r.count)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    expect(results.map((r) => r.tid)).toEqual([...results.map((r) => r.tid)].sort());
  });
});
