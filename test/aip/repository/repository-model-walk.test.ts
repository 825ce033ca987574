// Model-based walk of the local repository through the built `aip` (spec 6,
// 7.3-7.8, 9.3; docs/aip.md command reference). A small in-test model holds
// the working tree (path -> {content, executable}, with the .aipignore rules
// applied), every state's file map, HEAD, the parent chain, and which objects
// reference which. A seeded walk edits the tree (nested paths, spaces,
// non-ASCII and NFC/NFD twins, files replaced by folders and back, chmod,
// ignored files, empty folders) and drives snapshot, op on another base +
// apply, head set, checkout --into, status, log, refs, report, decide,
// verify --all and export/import; after each step the CLI's answers are
// compared with the model's.
import { createHash } from 'node:crypto';
import { chmod, lstat, mkdir, readdir, readFile, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROOT_STATE_ID } from '../../../src/aip/core/objects.js';
import { aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';
import { seededRandom } from '../../support/prng.js';

beforeAll(() => requireBuiltBin());

interface Entry {
  readonly content: Buffer;
  readonly executable: boolean;
}
type Files = Map<string, Entry>;
interface Ref {
  readonly source: string;
  readonly type: string;
  readonly version: number;
  readonly field: string;
}

/** Seeded, so the walk is the same on every run. */
const prng = seededRandom;

const IGNORE = '.git/\n*.log\nbuild/\n/top only\n';
// 'build' is tracked as a file but ignored as a folder; 'top only' is ignored only at the root.
// U+FF61 and U+1F600 sort one way in UTF-16 and the other way in UTF-8 bytes (status and effects are bytewise).
const NAMES = ['a', 'b c', 'é', 'e\u0301', 'ñandú', '日本', 'build', 'top only', 'x.log', 'deep', '-dash', 'Z', 'tab\there', '\uff61', '\u{1f600}'];

/** The .aipignore above, as the model reads it (spec 7.7). */
function ignored(path: string): boolean {
  const parts = path.split('/');
  if (parts[0] === 'top only') return true;
  if (parts.some((p) => p.endsWith('.log'))) return true;
  return parts.slice(0, -1).includes('build');
}

const bytewise = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

function diff(from: Files, to: Files): { path: string; change: string }[] {
  const paths = [...new Set([...from.keys(), ...to.keys()])].sort(bytewise);
  const changes: { path: string; change: string }[] = [];
  for (const path of paths) {
    const a = from.get(path);
    const b = to.get(path);
    if (!a) changes.push({ path, change: 'A' });
    else if (!b) changes.push({ path, change: 'D' });
    else if (!a.content.equals(b.content)) changes.push({ path, change: 'M' });
    else if (a.executable !== b.executable) changes.push({ path, change: 'X' });
  }
  return changes;
}

async function readTree(root: string, skipAip: boolean): Promise<Files> {
  const files: Files = new Map();
  const walk = async (dir: string, prefix: string): Promise<void> => {
    for (const name of await readdir(dir)) {
      if (skipAip && prefix === '' && name === '.aip') continue;
      const full = join(dir, name);
      const info = await lstat(full);
      if (info.isDirectory()) await walk(full, `${prefix}${name}/`);
      else files.set(`${prefix}${name}`, { content: await readFile(full), executable: (info.mode & 0o100) !== 0 });
    }
  };
  await walk(root, '');
  return files;
}

function plain(files: Files): Record<string, { content: string; executable: boolean }> {
  const out: Record<string, { content: string; executable: boolean }> = {};
  for (const path of [...files.keys()].sort(bytewise)) {
    const e = files.get(path);
    if (e) out[path] = { content: e.content.toString('hex'), executable: e.executable };
  }
  return out;
}

class Walk {
  readonly disk: Files = new Map(); // every regular file on disk (ignored ones too), outside .aip
  readonly states = new Map<string, Files>([[ROOT_STATE_ID, new Map()]]);
  readonly parent = new Map<string, { parent: string; operation: string; intent: string }>();
  readonly intents = new Map<string, string>(); // id -> title
  readonly operations = new Map<string, { base: string; intent: string; effects: number }>();
  readonly evidence = new Map<string, { state: string; kind: string; result: string }>();
  readonly refs = new Map<string, Ref[]>(); // target -> references (non-artifact targets)
  head = ROOT_STATE_ID;
  private clock = 0;
  private checkouts = 0;
  readonly next: () => number;

  constructor(
    readonly dir: string,
    seed: number,
  ) {
    this.next = prng(seed);
  }

  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(items: readonly T[]): T {
    const item = items[this.int(items.length)];
    if (item === undefined) throw new Error('pick from nothing');
    return item;
  }
  time(): string {
    this.clock += 1;
    return `2026-01-01T00:00:00.${String(this.clock).padStart(9, '0')}Z`;
  }

  tracked(): Files {
    return new Map([...this.disk].filter(([path]) => !ignored(path)));
  }

  addRef(target: string, ref: Ref): void {
    const list = this.refs.get(target) ?? [];
    if (!list.some((r) => r.source === ref.source && r.field === ref.field)) list.push(ref);
    this.refs.set(target, list);
  }

  async run(args: string[], expectCode = 0, cwd = this.dir): Promise<{ text: string; stderr: string }> {
    const result = await aip(args, { cwd });
    expect(result.code, `aip ${args.join(' ')}: ${result.stderr}`).toBe(expectCode);
    return { text: result.text, stderr: result.stderr };
  }
  async json<T>(args: string[]): Promise<T> {
    return JSON.parse((await this.run(['--format', 'json', ...args])).text) as T;
  }

  // ---- working tree edits (no CLI) ----

  randomPath(): string {
    const existing = [...this.disk.keys()].filter((p) => p !== '.aipignore');
    if (existing.length > 0 && this.int(2) === 0) {
      // go under or beside an existing path: makes files-become-folders and the reverse likely
      const base = this.pick(existing).split('/');
      return [...base.slice(0, this.int(base.length) + 1), this.pick(NAMES)].join('/');
    }
    return Array.from({ length: 1 + this.int(3) }, () => this.pick(NAMES)).join('/');
  }

  content(): Buffer {
    switch (this.int(4)) {
      case 0:
        return Buffer.alloc(0);
      case 1:
        return Buffer.from([0xff, 0x00, 0xc3, this.int(256)]); // not UTF-8
      case 2:
        return Buffer.from('shared\n'); // equal contents share one artifact
      default:
        return Buffer.from(`line ${this.int(1000)}\n`);
    }
  }

  async writeFileAt(path: string, entry: Entry): Promise<void> {
    const parts = path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const ancestor = parts.slice(0, i).join('/');
      const info = await lstat(join(this.dir, ancestor)).catch(() => undefined);
      if (info && !info.isDirectory()) {
        await unlink(join(this.dir, ancestor)); // a file becomes a folder
        this.disk.delete(ancestor);
      }
    }
    const full = join(this.dir, path);
    const info = await lstat(full).catch(() => undefined);
    if (info?.isDirectory()) {
      await rm(full, { recursive: true }); // a folder becomes a file
      for (const p of [...this.disk.keys()]) if (p.startsWith(`${path}/`)) this.disk.delete(p);
    }
    await mkdir(join(this.dir, ...parts.slice(0, -1)), { recursive: true });
    await writeFile(full, entry.content);
    await chmod(full, entry.executable ? 0o755 : 0o644);
    this.disk.set(path, entry);
  }

  async edit(): Promise<void> {
    const existing = [...this.disk.keys()].filter((p) => p !== '.aipignore');
    const kind = existing.length === 0 ? 0 : this.int(7);
    if (kind <= 2) {
      await this.writeFileAt(this.randomPath(), { content: this.content(), executable: this.int(4) === 0 });
    } else if (kind === 3) {
      const path = this.pick(existing);
      const old = this.disk.get(path);
      await this.writeFileAt(path, { content: this.content(), executable: old?.executable ?? false });
    } else if (kind === 4) {
      const path = this.pick(existing);
      await unlink(join(this.dir, path)); // its folders stay behind, empty: they leave no trace
      this.disk.delete(path);
    } else if (kind === 5) {
      const path = this.pick(existing);
      const old = this.disk.get(path);
      if (!old) return;
      await chmod(join(this.dir, path), old.executable ? 0o644 : 0o755);
      this.disk.set(path, { content: old.content, executable: !old.executable });
    } else {
      const path = this.randomPath();
      if (!(await lstat(join(this.dir, path)).catch(() => undefined)) && ![...this.disk.keys()].some((p) => path.startsWith(`${p}/`))) {
        await mkdir(join(this.dir, path), { recursive: true }); // an empty folder
      }
    }
  }

  // ---- CLI steps, each checked against the model ----

  async checkStatus(): Promise<void> {
    const expected = diff(this.states.get(this.head) ?? new Map(), this.tracked());
    // from a folder inside the tree, the repository is found upwards and paths stay root-relative
    const folders = [...this.tracked().keys()].filter((p) => p.includes('/')).map((p) => p.slice(0, p.lastIndexOf('/')));
    const cwd = folders.length > 0 && this.int(2) === 0 ? join(this.dir, this.pick(folders)) : this.dir;
    const text = (await this.run(['status'], 0, cwd)).text;
    // a tab in a path is shown escaped, so a line holds one change (D42)
    expect(text).toBe(expected.map((c) => `${c.change} ${c.path.replaceAll('\t', '\\t')}\n`).join(''));
  }

  async snapshot(): Promise<void> {
    const tree = this.tracked();
    const base = this.head;
    const effects = diff(this.states.get(base) ?? new Map(), tree).length;
    const title = `snapshot ${this.clock + 1} é`;
    const args = ['snapshot', '--title', title, '--goal', 'walk', '--created-at', this.time()];
    const parentIntent = this.intents.size > 0 && this.int(2) === 0 ? this.pick([...this.intents.keys()]) : undefined;
    const context = this.int(2) === 0 ? this.pick([...this.states.keys()]) : undefined;
    if (parentIntent) args.push('--parent', parentIntent);
    if (context) args.push('--context', context);
    if (effects === 0) args.push('--allow-empty');
    const made = await this.json<{ intent: string; operation: string; state: string }>(args);
    this.intents.set(made.intent, title);
    if (parentIntent) this.addRef(parentIntent, { source: made.intent, type: 'intent', version: 1, field: 'parents' });
    if (context) this.addRef(context, { source: made.intent, type: 'intent', version: 1, field: 'context' });
    this.recordOperation(made.operation, base, made.intent, effects);
    this.recordState(made.state, made.operation, tree);
    this.head = made.state;
  }

  recordOperation(id: string, base: string, intent: string, effects: number): void {
    this.operations.set(id, { base, intent, effects });
    this.addRef(base, { source: id, type: 'operation', version: 1, field: 'base_state' });
    this.addRef(intent, { source: id, type: 'operation', version: 1, field: 'intent' });
  }

  recordState(id: string, operation: string, files: Files): void {
    const op = this.operations.get(operation);
    if (!op) throw new Error('unknown operation');
    this.states.set(id, files);
    this.parent.set(id, { parent: op.base, operation, intent: op.intent });
    this.addRef(op.base, { source: id, type: 'state', version: 1, field: 'parents' });
    this.addRef(operation, { source: id, type: 'state', version: 1, field: 'operations' });
    this.addRef(op.intent, { source: id, type: 'state', version: 1, field: 'intents' });
  }

  /** `aip op` against HEAD or another state, then `aip apply`. */
  async opAndApply(onHead: boolean): Promise<void> {
    const tree = this.tracked();
    const base = onHead ? this.head : this.pick([...this.states.keys()].filter((s) => s !== this.head));
    const effects = diff(this.states.get(base) ?? new Map(), tree).length;
    let intent: string;
    if (this.intents.size > 0 && this.int(2) === 0) intent = this.pick([...this.intents.keys()]);
    else {
      const title = `op ${this.clock + 1}`;
      intent = (await this.json<{ id: string }>(['intent', '--title', title, '--goal', 'g', '--constraint', ' spaced ', '--created-at', this.time()])).id;
      this.intents.set(intent, title);
    }
    const opArgs = ['op', '--intent', intent, '--base', base.slice(0, 10)];
    if (effects === 0) opArgs.push('--allow-empty');
    const op = await this.json<{ id: string; data: { base_state: string; effects: unknown[] } }>(opArgs);
    expect(op.data.base_state).toBe(base);
    expect(op.data.effects).toHaveLength(effects);
    this.recordOperation(op.id, base, intent, effects);
    const applied = await this.run(['apply', op.id]);
    const state = applied.text.trim();
    this.recordState(state, op.id, tree);
    if (base === this.head) {
      expect(applied.stderr).toBe('');
      this.head = state;
    } else {
      expect(applied.stderr).toBe(
        `aip: warning: HEAD stays at ${this.head}: the operation's base is ${base}; to move it: aip head ${state}\n`,
      );
    }
  }

  async headSet(): Promise<void> {
    const target = this.pick([...this.states.keys()]);
    expect((await this.json<{ head: string }>(['head', target.slice(0, 8)])).head).toBe(target);
    this.head = target;
  }

  async checkout(): Promise<void> {
    const state = this.pick([...this.states.keys()]);
    const into = join(await tempDir('aip-walk-co-'), 'deep er', 'ü');
    const files = this.states.get(state) ?? new Map();
    const how = (2 + this.checkouts++) % 3; // refused-then-filled, new, empty, in turn
    if (how === 1) await mkdir(into, { recursive: true }); // an empty folder is filled
    if (how === 2) {
      await mkdir(into, { recursive: true }); // a folder with a file is refused and left as it was
      await writeFile(join(into, 'mine'), 'mine');
      await this.run(['checkout', state, '--into', into], 2);
      expect(plain(await readTree(into, false))).toEqual(plain(new Map([['mine', { content: Buffer.from('mine'), executable: false }]])));
      await unlink(join(into, 'mine'));
    }
    const made = await this.json<{ path: string; files: number }>(['checkout', state, '--into', into]);
    expect(made).toEqual({ path: into, files: files.size });
    if (files.size === 0) expect((await stat(into)).isDirectory()).toBe(true);
    expect(plain(await readTree(into, false))).toEqual(plain(files));
  }

  /** `aip show` of a state lists the model's paths and bits; `cat` gives the bytes named by the ID and an artifact's content. */
  async checkShowAndCat(): Promise<void> {
    const state = this.pick([...this.states.keys()]);
    const files = this.states.get(state) ?? new Map<string, Entry>();
    const shown = JSON.parse((await this.run(['show', state])).text) as { data: { files: Record<string, { artifact: string; executable: boolean }> } };
    const paths = Object.keys(shown.data.files);
    // the presentation keeps the canonical key order: shorter UTF-8 first, then bytewise (spec 2.2)
    const canonical = (a: string, b: string): number => Buffer.byteLength(a) - Buffer.byteLength(b) || bytewise(a, b);
    expect(paths).toEqual([...files.keys()].sort(canonical));
    for (const path of paths) expect(shown.data.files[path]?.executable, path).toBe(files.get(path)?.executable);
    const bytes = await aip(['cat', state], { cwd: this.dir });
    expect(createHash('sha256').update(bytes.stdout).digest('hex')).toBe(state);
    if (paths.length === 0) return;
    const path = this.pick(paths);
    const content = await aip(['cat', '--content', shown.data.files[path]?.artifact ?? ''], { cwd: this.dir });
    expect(content.stdout.equals(files.get(path)?.content ?? Buffer.alloc(1)), path).toBe(true);
  }

  async report(): Promise<void> {
    const state = this.pick([...this.states.keys()]);
    const result = this.pick(['pass', 'fail', 'unknown']);
    const kind = this.pick(['test', 'review', 'lint ü']);
    const ev = await this.json<{ id: string; data: { operations: string[] } }>([
      'report', '--state', state, '--kind', kind, '--command', 'npm test', '--result', result,
      '--reporter', 'walk', '--platform', 'linux/x64', '--recorded-at', this.time(),
    ]);
    const producing = this.parent.get(state)?.operation;
    expect(ev.data.operations).toEqual(producing ? [producing] : []);
    this.evidence.set(ev.id, { state, kind, result });
    this.addRef(state, { source: ev.id, type: 'evidence', version: 1, field: 'state' });
    if (producing) this.addRef(producing, { source: ev.id, type: 'evidence', version: 1, field: 'operations' });
  }

  async decide(): Promise<void> {
    const known = [...this.states.keys(), ...this.operations.keys(), ...this.intents.keys(), ...this.evidence.keys()];
    const related = [...new Set([this.pick(known), this.pick(known)])];
    const args = ['decide', '--question', 'keep?', '--decision', 'yes', '--rationale', 'walk', '--created-at', this.time()];
    for (const id of related) args.push('--related', id);
    const made = await this.json<{ id: string }>(args);
    for (const id of related) this.addRef(id, { source: made.id, type: 'decision', version: 1, field: 'related' });
  }

  expectedLog(from: string): unknown {
    const states: unknown[] = [];
    for (let state: string | undefined = from; state !== undefined; state = this.parent.get(state)?.parent) {
      const evidence = [...this.evidence]
        .filter(([, e]) => e.state === state)
        .map(([id, e]) => ({ id, kind: e.kind, result: e.result, provenance: 'reported' }))
        .sort((a, b) => bytewise(a.id, b.id));
      const link = this.parent.get(state);
      if (!link) {
        states.push({ state, root: true, evidence });
        break;
      }
      const op = this.operations.get(link.operation);
      states.push({
        state,
        root: false,
        operation: link.operation,
        intent: { id: link.intent, title: this.intents.get(link.intent) },
        effects: op?.effects,
        evidence,
      });
    }
    return { states };
  }

  async checkLog(): Promise<void> {
    expect(await this.json(['log'])).toEqual(this.expectedLog(this.head));
  }

  async checkLogAndRefs(): Promise<void> {
    await this.checkLog();
    await this.checkRefs(this.pick([...this.states.keys(), ...this.operations.keys(), ...this.intents.keys()]));
  }

  async checkRefs(target: string): Promise<void> {
    const expected = [...(this.refs.get(target) ?? [])].sort((a, b) => bytewise(a.source, b.source) || bytewise(a.field, b.field));
    expect(await this.json(['refs', target]), `refs ${target}`).toEqual({ refs: expected });
  }

  objectCount(): number {
    const contents = new Set<string>();
    for (const files of this.states.values()) for (const e of files.values()) contents.add(e.content.toString('hex'));
    return this.states.size + this.operations.size + this.intents.size + this.evidence.size + contents.size + this.decisions();
  }
  decisions(): number {
    const ids = new Set<string>();
    for (const list of this.refs.values()) for (const r of list) if (r.type === 'decision') ids.add(r.source);
    return ids.size;
  }

  async checkVerify(): Promise<void> {
    const verified = await this.json<{ valid: string[]; invalid: unknown[] }>(['verify', '--all']);
    expect(verified.invalid).toEqual([]);
    expect(verified.valid).toHaveLength(this.objectCount());
    for (const id of [...this.states.keys(), ...this.operations.keys(), ...this.intents.keys()]) expect(verified.valid).toContain(id);
  }
}

describe('a seeded walk of tree edits and repository commands agrees with a model of the repository', () => {
  it('snapshot, op on another base + apply, head, checkout, status, log, refs, report, decide, verify, export/import', async () => {
    const dir = await tempDir('aip-walk-');
    const walk = new Walk(dir, 8);
    expect(await walk.json(['init'])).toEqual({ repository: join(dir, '.aip'), head: ROOT_STATE_ID });
    await writeFile(join(dir, '.aipignore'), IGNORE);
    walk.disk.set('.aipignore', { content: Buffer.from(IGNORE), executable: false });
    await mkdir(join(dir, '.git'));
    await writeFile(join(dir, '.git', 'config'), 'ignored\n');

    const file = (content: string, executable = false): Entry => ({ content: Buffer.from(content), executable });
    // Each aip call is a process start, so the walk is short and every step adds one check in turn.
    const checks = [() => walk.report(), () => walk.checkout(), () => walk.checkShowAndCat(), () => walk.decide(), () => walk.checkLogAndRefs()];
    for (let step = 0; step < 8; step++) {
      if (step === 0) {
        // NFC and NFD twins are two paths; 'build' as a file and 'top only' below the root are tracked
        for (const path of ['é', 'e\u0301', 'build', 'deep/top only', 'deep/b c/日本', '\uff61', '\u{1f600}/x']) await walk.writeFileAt(path, file(path, path === 'build'));
      }
      if (step === 4) {
        await walk.writeFileAt('build/inside', file('now an ignored folder')); // a tracked file becomes an ignored folder
        await walk.writeFileAt('deep', file('a folder becomes a file', true));
        await walk.writeFileAt('é/x', file('a file becomes a folder'));
      }
      for (let i = 2 + walk.int(4); i > 0; i--) await walk.edit();
      await walk.checkStatus();
      // the first steps cover each action once (op on another base, then on HEAD); the rest are random
      const action = ['snapshot', 'op', 'head', 'op on HEAD', 'snapshot'][step] ?? walk.pick(['snapshot', 'op', 'head']);
      if (action === 'snapshot') await walk.snapshot();
      else if (action === 'head') await walk.headSet();
      else await walk.opAndApply(action === 'op on HEAD');
      await checks[step % checks.length]?.();
    }
    await walk.checkStatus();
    await walk.checkLog();
    await walk.checkRefs(ROOT_STATE_ID);
    await walk.checkVerify();
    expect((await walk.run(['head'])).text).toBe(`${walk.head}\n`);

    // The whole history moves to another project unchanged; HEAD there stays at its root.
    const bundle = join(await tempDir('aip-walk-bundle-'), 'all.aipb');
    await walk.run(['export', '-o', bundle]);
    const other = new Walk(await tempDir('aip-walk-import-'), 1);
    await other.run(['init']);
    expect(await other.json(['import', bundle])).toEqual({ imported: walk.objectCount(), new: walk.objectCount() - 1 });
    expect(await other.json(['head'])).toEqual({ head: ROOT_STATE_ID });
    expect(await other.json(['log', walk.head])).toEqual(walk.expectedLog(walk.head));
  }, 120_000);
});
