// Makes this package's own commands runnable with `npx <bin>` inside the
// checkout: npm links the bins of dependencies into node_modules/.bin but
// not those of the root package. Run by `prepare`, after the build.
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const binDir = join(root, 'node_modules', '.bin');
mkdirSync(binDir, { recursive: true });
for (const [name, target] of Object.entries(manifest.bin ?? {})) {
  const file = join(root, target);
  if (!existsSync(file)) throw new Error(`bin ${name} points at ${target}, which the build did not produce`);
  chmodSync(file, 0o755);
  const link = join(binDir, name);
  try {
    lstatSync(link);
    rmSync(link);
  } catch {
    // no previous link
  }
  symlinkSync(relative(binDir, file), link);
}
