// Real temporary folders for repository, runner and CLI tests, under the
// system temp directory (never the source tree), removed after each file.
import { mkdtemp, rm, mkdir, writeFile, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll } from 'vitest';

const created: string[] = [];

afterAll(async () => {
  await Promise.all(created.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

export async function tempDir(prefix = 'aip-test-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  created.push(dir);
  return dir;
}

/** Writes a tree from literals: path -> content (string or bytes), optional executable bit via a leading '+x ' key marker. */
export async function writeTree(root: string, files: Record<string, string | Uint8Array>, executable: readonly string[] = []): Promise<void> {
  for (const [path, content] of Object.entries(files)) {
    const target = join(root, path);
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, content);
    await chmod(target, executable.includes(path) ? 0o755 : 0o644);
  }
}
