// The version reported to clients is the package's own version.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { PACKAGE_VERSION } from '../../src/aipcs/version.js';
import { repoRoot } from '../support/bins.js';

it('PACKAGE_VERSION equals package.json', () => {
  const manifest = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string };
  expect(PACKAGE_VERSION).toBe(manifest.version);
});
