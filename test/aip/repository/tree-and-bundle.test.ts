// Working-tree snapshots, workflows (status, op, snapshot, apply) and bundles
// on real temp folders (spec 7.7, 7.8, 9.3).
import { PassThrough, Readable, Writable } from 'node:stream';
import { chmod, mkdir, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { artifactId, makeArtifact, maxArtifactContent, mustEncode } from '../../../src/aip/core/codec.js';
import { NO_IGNORE_RULES } from '../../../src/aip/core/ignore-rules.js';
import { failure } from '../../../src/aip/core/errors.js';
import { ROOT_STATE_ID, type FileMap, type IntentV1 } from '../../../src/aip/core/objects.js';
import { exportBundle, importBundle } from '../../../src/aip/repository/bundle.js';
import { Repository } from '../../../src/aip/repository/repository.js';
import { checkout, materialize, snapshotTree } from '../../../src/aip/repository/tree.js';
import { commitSnapshot, deriveState, recordOperation, workingTreeChanges } from '../../../src/aip/repository/workflows.js';
import { tempDir, writeTree } from '../support/temp.js';
import { ID, OBJECTS, VECTOR_ORDER } from '../support/vectors.js';

const intent: IntentV1 = {
  type: 'intent',
  version: 1,
  data: { goal: 'Test', title: 'Test', context: [], parents: [], created_at: '2026-01-01T00:00:00.000000000Z', constraints: [] },
};

async function bytesOf(write: (out: PassThrough) => Promise<unknown>): Promise<Buffer> {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (c: Buffer) => chunks.push(c));
  await write(out);
  out.end();
  return Buffer.concat(chunks);
}

describe('snapshots', () => {
  it('maps regular files to artifacts and executability, skipping .aip and empty folders', async () => {
    const root = await tempDir();
    await writeTree(root, { 'a.txt': 'A', 'bin/run': '#!/bin/sh\n', 'deep/x/y.txt': '' }, ['bin/run']);
    await mkdir(join(root, 'empty', 'nested'), { recursive: true });
    await mkdir(join(root, '.aip', 'objects'), { recursive: true });
    await writeFile(join(root, '.aip', 'objects', 'junk'), 'j');
    const snap = await snapshotTree(root, { rules: NO_IGNORE_RULES, maxObjectBytes: 1 << 20 });
    if (!snap.ok) throw snap.error;
    expect(Object.fromEntries(snap.value)).toEqual({
      'a.txt': { artifact: artifactId(Buffer.from('A')), executable: false },
      'bin/run': { artifact: artifactId(Buffer.from('#!/bin/sh\n')), executable: true },
      'deep/x/y.txt': { artifact: ID.V3, executable: false },
    });
  });

  it('takes executability from the owner-execute bit alone, and skips only the top-level .aip', async () => {
    const root = await tempDir();
    await writeTree(root, { 'group-x': 'g', 'owner-x': 'o', 'sub/.aip/kept': 'k' });
    await chmod(join(root, 'group-x'), 0o655);
    await chmod(join(root, 'owner-x'), 0o744);
    const snap = await snapshotTree(root, { rules: NO_IGNORE_RULES, maxObjectBytes: 1 << 20 });
    if (!snap.ok) throw snap.error;
    expect(Object.fromEntries(snap.value)).toEqual({
      'group-x': { artifact: artifactId(Buffer.from('g')), executable: false },
      'owner-x': { artifact: artifactId(Buffer.from('o')), executable: true },
      'sub/.aip/kept': { artifact: artifactId(Buffer.from('k')), executable: false },
    });
  });

  it('stops at the first file outside the state paths it is given, reading none of the others', async () => {
    // aip run's inspection asks only whether the tree is still its state: a
    // command that made a million files had each read and kept (4.5 GB).
    const root = await tempDir();
    const made: Record<string, string> = { 'kept.txt': 'k' };
    for (let i = 0; i < 50; i++) made[`made/${i}.txt`] = String(i);
    await writeTree(root, made);
    const read: string[] = [];
    const onContent = async (id: string): Promise<void> => void read.push(id);
    const whole = await snapshotTree(root, { rules: NO_IGNORE_RULES, maxObjectBytes: 1 << 20, onContent });
    expect(whole.ok && whole.value.size).toBe(51);
    read.length = 0;
    const stopped = await snapshotTree(root, { rules: NO_IGNORE_RULES, maxObjectBytes: 1 << 20, onContent, statePaths: new Set(['kept.txt']) });
    expect(stopped.ok || [stopped.error.code, /^made\/[0-9]+\.txt is not in the state$/.test(stopped.error.message)]).toEqual(['snapshot.invalid', true]);
    expect(read.length).toBeLessThanOrEqual(1);
    const same = await snapshotTree(root, { rules: NO_IGNORE_RULES, maxObjectBytes: 1 << 20, statePaths: new Set(Object.keys(made)) });
    expect(same.ok && same.value.size).toBe(51);
  });

  it('takes a file that fills an artifact of max_object_bytes exactly, and refuses one byte more', async () => {
    const fits = maxArtifactContent(2000);
    const root = await tempDir();
    await writeFile(join(root, 'edge'), Buffer.alloc(fits));
    expect((await snapshotTree(root, { rules: NO_IGNORE_RULES, maxObjectBytes: 2000 })).ok).toBe(true);
    await writeFile(join(root, 'edge'), Buffer.alloc(fits + 1));
    const over = await snapshotTree(root, { rules: NO_IGNORE_RULES, maxObjectBytes: 2000 });
    expect(over.ok || over.error.code).toBe('snapshot.invalid');
  });

  it('refuses links, bad names and files too large for an artifact', async () => {
    const withLink = await tempDir();
    await symlink('/etc/hostname', join(withLink, 'link'));
    const link = await snapshotTree(withLink, { rules: NO_IGNORE_RULES, maxObjectBytes: 1 << 20 });
    expect(link.ok || [link.error.code, link.error.message.includes('link')]).toEqual(['snapshot.invalid', true]);
    // Said for what it is before its name is judged: a link is refused whatever it is called.
    await rm(join(withLink, 'link'));
    await symlink('/etc/hostname', join(withLink, 'a\\b'));
    const named = await snapshotTree(withLink, { rules: NO_IGNORE_RULES, maxObjectBytes: 1 << 20 });
    expect(named.ok || named.error.message).toBe('a\\b is a symbolic link; a state holds regular files only (ignore it in .aipignore)');

    const badName = await tempDir();
    await writeFile(Buffer.concat([Buffer.from(`${badName}/bad-`), Buffer.from([0xff])]), 'x');
    const bad = await snapshotTree(badName, { rules: NO_IGNORE_RULES, maxObjectBytes: 1 << 20 });
    expect(bad.ok || bad.error.code).toBe('snapshot.invalid');

    const backslash = await tempDir();
    await writeFile(join(backslash, 'a\\b'), '');
    const slash = await snapshotTree(backslash, { rules: NO_IGNORE_RULES, maxObjectBytes: 1 << 20 });
    expect(slash.ok || slash.error.code).toBe('snapshot.invalid');

    const big = await tempDir();
    await writeFile(join(big, 'big'), Buffer.alloc(2000));
    const tooBig = await snapshotTree(big, { rules: NO_IGNORE_RULES, maxObjectBytes: 2000 });
    expect(tooBig.ok || tooBig.error.code).toBe('snapshot.invalid');
  });

  it('walks a folder named .aipignore as a folder, and fails on a root that is gone even when skipping vanished entries', async () => {
    const repo = await Repository.init(await tempDir());
    await rm(join(repo.root, '.aipignore'));
    await writeTree(repo.root, { '.aipignore/inner.txt': 'i', 'keep.txt': 'k' });
    const changes = await workingTreeChanges(repo, ROOT_STATE_ID);
    expect(changes.ok && changes.value).toEqual([{ path: '.aipignore/inner.txt', change: 'A' }, { path: 'keep.txt', change: 'A' }]);
    const gone = join(await tempDir(), 'gone');
    const walked = await snapshotTree(gone, { rules: NO_IGNORE_RULES, maxObjectBytes: 1 << 20, skipVanished: true });
    expect(walked.ok || walked.error).toMatchObject({ code: 'io', message: 'cannot read folder .: ENOENT' });
  });

  it('skips what .aipignore names, including links under ignored folders', async () => {
    const repo = await Repository.init(await tempDir());
    await writeTree(repo.root, { '.aipignore': '.git/\n*.log\n/out\n', 'keep.txt': 'k', 'x.log': 'l', 'sub/y.log': 'l', 'out/z': 'z' });
    await mkdir(join(repo.root, '.git'));
    await symlink('/etc/hostname', join(repo.root, '.git', 'link'));
    const changes = await workingTreeChanges(repo, ROOT_STATE_ID);
    expect(changes.ok && changes.value).toEqual([{ path: '.aipignore', change: 'A' }, { path: 'keep.txt', change: 'A' }]);
  });
});

describe('the working tree .aipignore', () => {
  it('is read as strictly as a state\'s own: invalid UTF-8 is refused, a BOM dropped', async () => {
    const repo = await Repository.init(await tempDir());
    await writeFile(join(repo.root, '.aipignore'), Buffer.from([0x2a, 0x2e, 0x6c, 0xff, 0x0a]));
    const refused = await workingTreeChanges(repo, ROOT_STATE_ID);
    expect(refused.ok ? undefined : refused.error).toMatchObject({ code: 'snapshot.invalid', message: '.aipignore is not valid UTF-8' });
    await writeFile(join(repo.root, '.aipignore'), '\ufeff*.log\n');
    await writeFile(join(repo.root, 'x.log'), 'l');
    const changes = await workingTreeChanges(repo, ROOT_STATE_ID);
    expect(changes.ok && changes.value).toEqual([{ path: '.aipignore', change: 'A' }]);
  });
});

describe('the working tree .aipignore, bounded', () => {
  it('is refused before it is read when larger than an artifact, even when it ignores itself (D50)', async () => {
    const root = await tempDir();
    await Repository.init(root);
    await writeFile(join(root, '.aip', 'config.json'), '{"format":"aip-repository","version":1,"max_object_bytes":1048576}\n');
    const repo = await Repository.open(root);
    const limit = maxArtifactContent(1048576);
    const tooLarge = `.aipignore\n${'#'.repeat(limit - 11)}\n`; // one byte more than an artifact holds
    await writeFile(join(root, '.aipignore'), tooLarge);
    const refused = await workingTreeChanges(repo, ROOT_STATE_ID);
    expect(refused.ok ? undefined : refused.error).toMatchObject({ code: 'snapshot.invalid', message: `.aipignore: ${limit + 1} bytes do not fit in an artifact (max_object_bytes)` });
    await writeFile(join(root, '.aipignore'), `.aipignore\n${'#'.repeat(limit - 12)}\n`);
    const changes = await workingTreeChanges(repo, ROOT_STATE_ID);
    expect(changes.ok && changes.value).toEqual([]);
  });
});

describe('workflows', () => {
  it('records intent + operation + state, reports status letters, and moves HEAD', async () => {
    const repo = await Repository.init(await tempDir());
    await writeTree(repo.root, { 'a.txt': 'one', 'b.sh': 'echo', 'c.txt': 'gone' });
    const first = await commitSnapshot(repo, { create: intent }, false);
    if (!first.ok) throw first.error;
    expect(await repo.readHead()).toBe(first.value.state);
    expect(await repo.statesProducedBy(first.value.operation)).toEqual([first.value.state]);

    await writeFile(join(repo.root, 'a.txt'), 'two');
    await chmod(join(repo.root, 'b.sh'), 0o755);
    await rm(join(repo.root, 'c.txt'));
    await writeFile(join(repo.root, 'd.txt'), 'new');
    const status = await workingTreeChanges(repo, first.value.state);
    expect(status.ok && status.value).toEqual([
      { path: 'a.txt', change: 'M' },
      { path: 'b.sh', change: 'X' },
      { path: 'c.txt', change: 'D' },
      { path: 'd.txt', change: 'A' },
    ]);

    const op = await recordOperation(repo, first.value.intent, first.value.state, false);
    if (!op.ok) throw op.error;
    expect(op.value.operation.data.inputs).toEqual([artifactId(Buffer.from('echo')), artifactId(Buffer.from('gone')), artifactId(Buffer.from('one'))].sort());
    const state = await deriveState(repo, op.value.id);
    if (!state.ok) throw state.error;
    expect(state.value.state.data.parents).toEqual([first.value.state]);
    expect((await repo.verify()).invalid).toEqual([]);
  });

  it('stores a tree of many files, written several at a time, with every artifact and index line in place', async () => {
    const repo = await Repository.init(await tempDir());
    // 400 files over 40 contents: writes in flight together, repeated contents stored once.
    const files = Object.fromEntries([...Array(400).keys()].map((n) => [`d${n % 7}/f${n}.txt`, `content ${n % 40}\n`]));
    await writeTree(repo.root, files);
    const made = await commitSnapshot(repo, { create: intent }, false);
    if (!made.ok) throw made.error;
    const state = await repo.getTyped(made.value.state, 'state');
    expect(state.data.files.size).toBe(401); // and .aipignore
    const artifacts = new Set([...state.data.files.values()].map((entry) => entry.artifact));
    expect(artifacts.size).toBe(41);
    for (const artifact of artifacts) {
      expect((await repo.artifactContent(artifact)).ok).toBe(true);
      // The operation's `inputs`/effects and the state's files each give a line.
      const sources = new Set((await repo.reverse(artifact)).map((ref) => ref.source));
      expect(sources).toEqual(new Set([made.value.operation, made.value.state]));
    }
    expect((await repo.verify()).invalid).toEqual([]);
  });

  it('a snapshot whose artifact cannot be written fails with that error and moves nothing', async () => {
    const repo = await Repository.init(await tempDir());
    await writeTree(repo.root, Object.fromEntries([...Array(60).keys()].map((n) => [`f${n}.txt`, `content ${n}\n`])));
    const objects = join(repo.aipDir, 'objects');
    const fanouts = await readdir(objects);
    // Every fan-out folder an artifact could need is a file: each of the writes in flight fails.
    for (let n = 0; n < 256; n++) {
      const name = n.toString(16).padStart(2, '0');
      if (!fanouts.includes(name)) await writeFile(join(objects, name), '');
    }
    const head = await repo.readHead();
    // A file where a folder must be: mkdir's own EEXIST (the CLI shows it as io, exit 6).
    await expect(commitSnapshot(repo, { create: intent }, false)).rejects.toMatchObject({ code: 'EEXIST' });
    expect(await repo.readHead()).toBe(head);
  });

  it('refuses an empty operation unless allowed', async () => {
    const repo = await Repository.init(await tempDir());
    const put = await repo.putObject(intent);
    if (!put.ok) throw put.error;
    await rm(join(repo.root, '.aipignore'));
    const refused = await recordOperation(repo, put.value.id, ROOT_STATE_ID, false);
    expect(refused.ok || refused.error.code).toBe('operation.empty');
    const allowed = await commitSnapshot(repo, { existing: put.value.id }, true);
    expect(allowed.ok).toBe(true);
  });

  it('a snapshot with nothing to record, or a tree a state cannot hold, stores no new intent', async () => {
    const repo = await Repository.init(await tempDir());
    await rm(join(repo.root, '.aipignore'));
    const before = await repo.store.list();
    const fresh: IntentV1 = { ...intent, data: { ...intent.data, title: 'Never stored' } };
    const empty = await commitSnapshot(repo, { create: fresh }, false);
    expect(empty.ok || empty.error.code).toBe('operation.empty');
    await symlink('/etc/hostname', join(repo.root, 'link'));
    const invalid = await commitSnapshot(repo, { create: fresh }, false);
    expect(invalid.ok || invalid.error.code).toBe('snapshot.invalid');
    expect(await repo.store.list()).toEqual(before);
  });

  it('fails with head.moved when HEAD changes under a snapshot', async () => {
    const repo = await Repository.init(await tempDir());
    await writeTree(repo.root, { 'a.txt': 'one' });
    const other = await Repository.open(repo.root);
    const first = await commitSnapshot(other, { create: intent }, false);
    if (!first.ok) throw first.error;
    // A stale writer that read HEAD before the other one moved it.
    await expect(repo.moveHead(ROOT_STATE_ID, first.value.state)).rejects.toMatchObject({ code: 'head.moved' });
  });

  /** A repository holding every conformance vector, and the vectors' state V12. */
  const vectorRepository = async () => {
    const repo = await Repository.init(await tempDir());
    for (const name of VECTOR_ORDER) await repo.putObject(OBJECTS[name]);
    return { repo, state: await repo.getTyped(ID.V12, 'state') };
  };

  it('materialises a state with its modes', async () => {
    const { repo, state } = await vectorRepository();
    const dir = await tempDir();
    const written = await materialize(dir, state.data.files, (id) => repo.artifactContent(id));
    expect(written).toEqual({ ok: true, value: 2 });
    expect(await readFile(join(dir, 'hello.txt'), 'utf8')).toBe('hello\n');
    // Spec 8: mode 0755 if executable else 0644, whatever the umask.
    for (const [path, entry] of state.data.files) expect((await stat(join(dir, path))).mode & 0o777, path).toBe(entry.executable ? 0o755 : 0o644);
    expect([...state.data.files.values()].some((entry) => entry.executable)).toBe(true);
    const snap = await snapshotTree(dir, { rules: NO_IGNORE_RULES, maxObjectBytes: 1 << 20 });
    expect(snap.ok && Object.fromEntries(snap.value)).toEqual(Object.fromEntries(state.data.files));
  });

  it('never writes through a name that something else took meanwhile', async () => {
    const { repo, state } = await vectorRepository();
    const dir = await tempDir();
    const outside = join(await tempDir(), 'outside');
    await writeFile(outside, 'not aip\'s');
    const first = [...state.data.files.keys()].sort()[0] as string;
    // A link appears under the first file's name just before it is written.
    const written = await materialize(dir, state.data.files, async (id) => {
      await symlink(outside, join(dir, first)).catch(() => undefined);
      return repo.artifactContent(id);
    });
    expect(written.ok || written.error).toMatchObject({ code: 'io', message: expect.stringContaining('EEXIST') });
    expect(await readFile(outside, 'utf8')).toBe('not aip\'s');
  });

  it('materialises the exact modes under a narrow umask, and a checkout within it', async () => {
    const { repo, state } = await vectorRepository();
    const exact = await tempDir();
    const checkedOut = join(await tempDir(), 'out');
    const previous = process.umask(0o077);
    try {
      expect(await materialize(exact, state.data.files, (id) => repo.artifactContent(id))).toEqual({ ok: true, value: 2 });
      expect(await checkout(checkedOut, state.data.files, (id) => repo.artifactContent(id))).toEqual({ ok: true, value: 2 });
    } finally {
      process.umask(previous);
    }
    for (const [path, entry] of state.data.files) {
      expect((await stat(join(exact, path))).mode & 0o777, path).toBe(entry.executable ? 0o755 : 0o644);
      expect((await stat(join(checkedOut, path))).mode & 0o777, path).toBe(entry.executable ? 0o700 : 0o600);
    }
  });

  it('stops materialising and walking at the next file once its signal is aborted (aip run cancelled on a large state)', async () => {
    const repo = await Repository.init(await tempDir());
    await writeTree(repo.root, { 'a.txt': 'a', 'b.txt': 'b', 'c.txt': 'c' });
    const made = await commitSnapshot(repo, { create: intent }, false);
    if (!made.ok) throw made.error;
    const state = await repo.getTyped(made.value.state, 'state');
    const dir = await tempDir();
    const cancel = new AbortController();
    let served = 0;
    const written = await materialize(dir, state.data.files, (id) => {
      if (++served === 2) cancel.abort('SIGINT');
      return repo.artifactContent(id);
    }, 'exact', cancel.signal);
    expect(written).toEqual({ ok: true, value: 2 });
    expect((await readdir(dir)).sort()).toEqual(['.aipignore', 'a.txt']);

    const whole = await tempDir();
    expect(await materialize(whole, state.data.files, (id) => repo.artifactContent(id))).toEqual({ ok: true, value: 4 });
    const walk = new AbortController();
    const snap = await snapshotTree(whole, { rules: NO_IGNORE_RULES, maxObjectBytes: 1 << 20, signal: walk.signal, onContent: async () => walk.abort('SIGINT') });
    expect(snap.ok && snap.value.size).toBe(1);
  });

  it('sees an abort while it walks a large folder with nothing to await (its system calls are synchronous)', async () => {
    const dir = await tempDir();
    await writeTree(dir, Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`f${i}.txt`, String(i)])));
    const walk = new AbortController();
    setImmediate(() => walk.abort('SIGINT'));
    const snap = await snapshotTree(dir, { rules: NO_IGNORE_RULES, maxObjectBytes: 1 << 20, signal: walk.signal });
    expect(snap.ok).toBe(true);
    expect(snap.ok && snap.value.size).toBeLessThan(1000);
  });
});

describe('checkout', () => {
  async function stateFiles(): Promise<{ repo: Repository; files: FileMap }> {
    const repo = await Repository.init(await tempDir());
    await writeTree(repo.root, { 'a.txt': 'a', 'd/b.txt': 'b', 'd/e/c.txt': 'c' }, ['d/b.txt']);
    const made = await commitSnapshot(repo, { create: intent }, false);
    if (!made.ok) throw made.error;
    return { repo, files: (await repo.getTyped(made.value.state, 'state')).data.files };
  }

  /** Serves artifacts until the `failAt`-th, which fails. */
  function failingAt(repo: Repository, failAt: number) {
    let served = 0;
    return (id: string) => (++served === failAt ? Promise.resolve(failure<Uint8Array>('io', 'refused by the test')) : repo.artifactContent(id));
  }

  it('a failure removes the parents it made and no folder that was there before', async () => {
    const { repo, files } = await stateFiles();
    const mine = await tempDir();
    const failed = await checkout(join(mine, 'p', 'q', 'out'), files, failingAt(repo, 3));
    expect(failed.ok || failed.error.message).toBe('refused by the test');
    // `mine` was there before the checkout (empty): it stays.
    expect(await readdir(mine)).toEqual([]);
    const done = await checkout(join(mine, 'p', 'q', 'out'), files, (id) => repo.artifactContent(id));
    expect(done).toEqual({ ok: true, value: 4 });
    expect(await readFile(join(mine, 'p', 'q', 'out', 'd', 'b.txt'), 'utf8')).toBe('b');
    expect(await readdir(join(mine, 'p', 'q'))).toEqual(['out']);
  });

  it('a failure into an empty folder the user has leaves it empty', async () => {
    const { repo, files } = await stateFiles();
    const dir = await tempDir();
    const failed = await checkout(dir, files, failingAt(repo, 4));
    expect(failed.ok || failed.error.code).toBe('io');
    expect(await readdir(dir)).toEqual([]);
  });

  it('refuses a folder it cannot inspect instead of taking it for absent', async () => {
    const { repo, files } = await stateFiles();
    const file = join(await tempDir(), 'file');
    await writeFile(file, 'x');
    const refused = await checkout(join(file, 'out'), files, (id) => repo.artifactContent(id));
    expect(refused.ok || refused.error.message).toMatch(/^cannot inspect .*: ENOTDIR$/);
  });
});

describe('bundles (10.4)', () => {
  it('exports an object with more references than a call can take as arguments (an operation of 130 000 effects)', async () => {
    const source = await Repository.init(await tempDir());
    const content = await source.putObject({ type: 'artifact', version: 1, data: { kind: 'file', content: Buffer.from('same') } });
    const goal = await source.putObject(intent);
    if (!content.ok || !goal.ok) throw new Error('not stored');
    const paths = [...Array(130_000).keys()].map((n) => `f/${n.toString(36)}`).sort();
    const effects = paths.map((path) => ({ path, before: null, after: { artifact: content.value.id, executable: false } }));
    const operation = await source.putObject({ type: 'operation', version: 1, data: { inputs: [], intent: goal.value.id, effects, base_state: ROOT_STATE_ID } });
    expect(operation.ok ? 'stored' : operation.error).toBe('stored');
    const bundle = await bytesOf((out) => exportBundle(source, undefined, out));
    const target = await Repository.init(await tempDir());
    expect(await importBundle(target, Readable.from([bundle]))).toEqual({ ok: true, value: { objects: 4, stored: 3 } });
  });

  it('exports V1..V13 in dependency order with ties by ID, and imports them once', async () => {
    const source = await Repository.init(await tempDir());
    for (const name of VECTOR_ORDER) await source.putObject(OBJECTS[name]);
    const bundle = await bytesOf((out) => exportBundle(source, undefined, out));
    const again = await bytesOf((out) => exportBundle(source, undefined, out));
    expect(bundle.equals(again)).toBe(true);

    // Walk the items: each object only after everything it references.
    const target = await Repository.init(await tempDir());
    const first = await importBundle(target, Readable.from([bundle]));
    expect(first).toEqual({ ok: true, value: { objects: 13, stored: 12 } }); // the root state came with init
    const second = await importBundle(target, Readable.from([bundle]));
    expect(second).toEqual({ ok: true, value: { objects: 13, stored: 0 } });
    expect(await target.readHead()).toBe(ROOT_STATE_ID);
    expect((await target.verify()).invalid).toEqual([]);

    const fresh = await Repository.init(await tempDir());
    const oneByteAtATime = Readable.from([...bundle].map((b) => Buffer.from([b])));
    expect(await importBundle(fresh, oneByteAtATime)).toEqual({ ok: true, value: { objects: 13, stored: 12 } });
  });

  it('rejects with the first write error instead of losing it or waiting for a drain that never comes', async () => {
    const source = await Repository.init(await tempDir());
    for (const name of VECTOR_ORDER) await source.putObject(OBJECTS[name]);
    const failing = (after: number): Writable => {
      let writes = 0;
      // The default highWaterMark: every write of this small bundle returns true, so nothing waits for 'drain'.
      return new Writable({
        write(_chunk: Buffer, _encoding, callback): void {
          const n = ++writes;
          setImmediate(() => callback(n > after ? Object.assign(new Error('no space'), { code: 'ENOSPC' }) : null));
        },
      }).on('error', () => undefined);
    };
    for (const after of [0, 5]) {
      await expect(exportBundle(source, undefined, failing(after))).rejects.toMatchObject({ code: 'ENOSPC' });
    }
    // A failure of the very last write still fails the export.
    const all = await bytesOf((out) => exportBundle(source, undefined, out));
    let chunks = 0;
    await exportBundle(source, undefined, new Writable({ write: (c: Buffer, _e, cb) => { if (c.length > 0) chunks++; cb(); } }));
    expect(all.length).toBeGreaterThan(0);
    await expect(exportBundle(source, undefined, failing(chunks - 1))).rejects.toMatchObject({ code: 'ENOSPC' });
  });

  it('rejects instead of waiting for ever when its output is destroyed, while it waits for a drain or before it writes', { timeout: 5_000 }, async () => {
    const source = await Repository.init(await tempDir());
    for (const name of VECTOR_ORDER) await source.putObject(OBJECTS[name]);
    // A reader gone while the export waits for a drain (a one-byte buffer is full at once).
    const waiting = new Writable({
      highWaterMark: 1,
      write(): void {
        setImmediate(() => this.destroy());
      },
    });
    await expect(exportBundle(source, undefined, waiting)).rejects.toMatchObject({ code: 'ERR_STREAM_DESTROYED' });
    // A reader gone between two writes, none of them waiting.
    const between = new Writable({
      write(_chunk: Buffer, _encoding, callback): void {
        callback();
        this.destroy();
      },
    });
    await expect(exportBundle(source, undefined, between)).rejects.toMatchObject({ code: 'ERR_STREAM_DESTROYED' });
  });

  it('orders the closure of chosen roots', async () => {
    const source = await Repository.init(await tempDir());
    for (const name of VECTOR_ORDER) await source.putObject(OBJECTS[name]);
    const bundle = await bytesOf((out) => exportBundle(source, [ID.V7], out));
    const ids: string[] = [];
    let offset = 0;
    const { decodeBundleHeader, decodeItemHeader } = await import('../../../src/aip/core/bundle-format.js');
    const { sha256Hex } = await import('../../../src/aip/core/codec.js');
    const header = decodeBundleHeader(bundle);
    if (!header.ok) throw header.error;
    offset = header.value.length;
    for (let i = 0; i < header.value.objects; i++) {
      const item = decodeItemHeader(bundle.subarray(offset));
      if (!item.ok) throw item.error;
      offset += item.value.headerLength;
      ids.push(sha256Hex(bundle.subarray(offset, offset + item.value.length)));
      offset += item.value.length;
    }
    expect(offset).toBe(bundle.length);
    // Closure of V7: V6, V5, V4, V2, V1; V1, V2, V4 have no references, so they come first by ID.
    expect(ids).toEqual([ID.V2, ID.V4, ID.V1, ID.V5, ID.V6, ID.V7]);
  });

  it('a reference of a chosen root that is not stored is graph.missing, not an unknown ID', async () => {
    const source = await Repository.init(await tempDir());
    for (const name of VECTOR_ORDER) await source.putObject(OBJECTS[name]);
    await rm(source.store.pathOf(ID.V2)); // the content of V6's hello.txt
    // Not store.not_found (exit 3, "no such ID"): the user's ID exists, one it references does not.
    await expect(exportBundle(source, [ID.V7], new PassThrough())).rejects.toMatchObject({
      code: 'graph.missing',
      message: `${ID.V5}: data.effects[0].after.artifact: ${ID.V2} is not stored`,
    });
  });

  it('counts as stored only what it stored, also when another writer stored an object since it looked', async () => {
    const source = await Repository.init(await tempDir());
    for (const name of ['V2', 'V4'] as const) await source.putObject(OBJECTS[name]);
    const bundle = await bytesOf((out) => exportBundle(source, undefined, out));
    // Every object is stored, but each lookup answers as if it had not been yet (another import got there first).
    source.store.has = () => Promise.resolve(false);
    expect(await importBundle(source, Readable.from([bundle]))).toEqual({ ok: true, value: { objects: 3, stored: 0 } });
  });

  it('stops at the first bad item, keeping the objects before it', async () => {
    const source = await Repository.init(await tempDir());
    for (const name of ['V2', 'V4'] as const) await source.putObject(OBJECTS[name]);
    const bundle = await bytesOf((out) => exportBundle(source, undefined, out));
    const tampered = Buffer.from(bundle);
    tampered[tampered.length - 30] = (tampered[tampered.length - 30] ?? 0) ^ 0x01; // inside the last item (V1: no references, highest ID)
    const target = await Repository.init(await tempDir());
    const result = await importBundle(target, Readable.from([tampered]));
    expect(result.ok).toBe(false);
    expect(!result.ok && result.error.message).toMatch(/^item 4 \(object 3 of 3\)/);
    expect(await target.store.has(ID.V2)).toBe(true);

    const trailing = await importBundle(await Repository.init(await tempDir()), Readable.from([Buffer.concat([bundle, Buffer.from([0])])]));
    expect(trailing.ok || [trailing.error.code, trailing.error.message]).toEqual(['bundle.format', 'item 5: bytes after the 3 objects the header announced']);
    const short = await importBundle(await Repository.init(await tempDir()), Readable.from([bundle.subarray(0, bundle.length - 1)]));
    expect(short.ok || [short.error.code, short.error.message]).toEqual(['cbor.truncated', 'item 4 (object 3 of 3): the bundle ends inside the item']);
    const notBundle = await importBundle(await Repository.init(await tempDir()), Readable.from([Buffer.from('hello')]));
    expect(notBundle.ok || notBundle.error.code).toBe('bundle.format');
  });

  it('imports a bundle of many artifacts, written several at a time, and the objects that reference them after them', async () => {
    const source = await Repository.init(await tempDir());
    await writeTree(source.root, Object.fromEntries([...Array(150).keys()].map((n) => [`f${n}.txt`, `file ${n}\n`])));
    const made = await commitSnapshot(source, { create: intent }, false);
    if (!made.ok) throw made.error;
    const bundle = await bytesOf((out) => exportBundle(source, undefined, out));
    const target = await Repository.init(await tempDir());
    const result = await importBundle(target, Readable.from([bundle]));
    expect(result).toEqual({ ok: true, value: { objects: 155, stored: 154 } }); // the root state was there
    expect((await target.getTyped(made.value.state, 'state')).data.files.size).toBe(151);
    expect((await target.verify()).invalid).toEqual([]);
  });

  it('an object whose references are missing is refused after the artifacts before it are stored', async () => {
    const { encodeBundleHeader, bundleItemHeader } = await import('../../../src/aip/core/bundle-format.js');
    const artifacts = [...Array(40).keys()].map((n) => mustEncode(makeArtifact(Buffer.from(`artifact ${n}`))));
    const state = mustEncode(OBJECTS.V12); // its files, operations and intents are in no bundle item
    const items = [...artifacts, state].flatMap((encoded) => [Buffer.from(bundleItemHeader(encoded.bytes.length)), Buffer.from(encoded.bytes)]);
    const target = await Repository.init(await tempDir());
    const result = await importBundle(target, Readable.from([Buffer.concat([Buffer.from(encodeBundleHeader(41)), ...items])]));
    expect(result.ok || result.error.code).toBe('graph.missing');
    expect(!result.ok && result.error.message).toMatch(new RegExp(`^item 42 \\(object 41 of 41\\) \\(${ID.V12}\\): `));
    for (const artifact of artifacts) expect(await target.store.has(artifact.id)).toBe(true);
    expect(await target.store.has(ID.V12)).toBe(false);
  });

  it('checks an item length against max_object_bytes before reading it', async () => {
    const { encodeBundleHeader } = await import('../../../src/aip/core/bundle-format.js');
    const huge = Buffer.concat([Buffer.from(encodeBundleHeader(1)), Buffer.from([0x5b, 0, 0, 0, 1, 0, 0, 0, 0])]);
    const result = await importBundle(await Repository.init(await tempDir()), Readable.from([huge]));
    expect(result.ok || result.error.code).toBe('cbor.too_large');
  });
});
