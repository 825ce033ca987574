// The README's quick start must work as pasted: run examples/quickstart.mjs
// against a fresh data root and check what it prints; a second run replays
// every step under the same idempotency keys.

import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freshDataRoot } from '../support/aipcs-client.js';
import { repoRoot } from '../support/bins.js';

describe('examples/quickstart.mjs', () => {
  it('reaches a persisted, searchable record with history, and replays on a second run', () => {
    const dataRoot = freshDataRoot();
    const run = () => execFileSync(process.execPath, [join(repoRoot, 'examples', 'quickstart.mjs'), dataRoot], { encoding: 'utf8' });
    const first = run();
    expect(first).toContain('aipcs_service_materialise: ok');
    expect(first).toContain('search found 1 note(s): Ship the release on Friday');
    expect(first).toContain('history: create@v1 -> update@v2');
    expect(run()).toBe(first);
  });
});
