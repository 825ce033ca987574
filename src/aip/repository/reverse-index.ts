// The reverse-reference index under `.aip/index/v1` (spec 7.5): appended
// lines, tolerant queries, and a rebuild from the objects alone. A cache,
// never authoritative: deleting `index/` is always safe.
import { constants } from 'node:fs';
import { mkdir, open, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { AipObject, Id, ObjectType } from '../core/objects.js';
import { indexEntriesOf } from '../core/references.js';
import { isId } from '../core/value-rules.js';
import { errorCode } from './object-store.js';

export interface IndexLine {
  readonly source: Id;
  readonly type: ObjectType;
  readonly version: number;
  readonly field: string;
}

const TYPES: readonly string[] = ['artifact', 'intent', 'operation', 'state', 'evidence', 'decision'];

export class ReverseIndex {
  readonly indexDir: string;
  readonly refsDir: string;

  constructor(aipDir: string) {
    this.indexDir = join(aipDir, 'index');
    this.refsDir = join(this.indexDir, 'v1', 'refs');
  }

  private fileOf(target: Id): string {
    return join(this.refsDir, target.slice(0, 2), target.slice(2));
  }

  /** Appends one line per distinct (target, field) of `object`, one write each with O_APPEND. */
  async record(source: Id, object: AipObject): Promise<void> {
    for (const { target, field } of indexEntriesOf(object)) {
      const file = this.fileOf(target);
      await mkdir(join(this.refsDir, target.slice(0, 2)), { recursive: true });
      const handle = await open(file, constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND, 0o644);
      try {
        await handle.write(`${source} ${object.type} ${object.version} ${field}\n`);
      } finally {
        await handle.close();
      }
    }
  }

  /** Raw lines for `target`: parsed, duplicates removed, sorted by source. Sources are not checked here. */
  async linesFor(target: Id): Promise<IndexLine[]> {
    let text: string;
    try {
      text = await readFile(this.fileOf(target), 'utf8');
    } catch (error) {
      if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') return [];
      throw error;
    }
    const seen = new Set<string>();
    const out: IndexLine[] = [];
    for (const line of text.split('\n')) {
      // A torn last line (a crash mid-append) is simply not a line.
      const parts = line.split(' ');
      if (parts.length !== 4) continue;
      const [source, type, version, field] = parts as [string, string, string, string];
      if (!isId(source) || !TYPES.includes(type) || !/^[1-9][0-9]{0,8}$/.test(version) || field === '') continue;
      if (seen.has(line)) continue;
      seen.add(line);
      out.push({ source, type: type as ObjectType, version: Number(version), field });
    }
    return out.sort((a, b) => (a.source < b.source ? -1 : a.source > b.source ? 1 : a.field < b.field ? -1 : a.field > b.field ? 1 : 0));
  }

  /** Deletes everything under index/ (any version) and leaves an empty v1 index. */
  async reset(): Promise<void> {
    await rm(this.indexDir, { recursive: true, force: true });
    await mkdir(this.refsDir, { recursive: true });
  }
}
