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

it('ships the Apache-2.0 licence text that package.json declares', () => {
  const manifest = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { license: string };
  expect(manifest.license).toBe('Apache-2.0');
  const licence = readFileSync(join(repoRoot, 'LICENSE'), 'utf8');
  expect(licence).toContain('Apache License');
  expect(licence).toContain('Version 2.0, January 2004');
});
