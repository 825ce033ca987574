// `aipcs serve` under an open files limit too low to load the MCP edge
// (Node reads a module graph's files at once; the SDK's take about 150
// descriptors): before, the load's EMFILE surfaced as the generic
// `internal_error` "The request could not be completed safely." with nothing
// to say why. Now it is a start-up failure whose reason --log-level info names.

import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { aipcsBin } from '../../support/bins.js';
import { nodeCommand } from '../../support/resource-limits.js';

const STARTUP_FAILURE = '{"ok":false,"result":null,"error":{"code":"internal_error","message":"Server could not be started safely.","issues":[],"retryable":false}}\n';

describe('serve under a low open files limit', () => {
  it('refuses to start with its start-up envelope, and says why at --log-level info', () => {
    const [command, args] = nodeCommand([aipcsBin(), 'serve', '--log-level', 'info'], { openFiles: 90 });
    const run = spawnSync(command, args, { input: '', encoding: 'utf8', timeout: 30_000 });
    expect(run.status).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(`aipcs info: start-up refused: the server's modules could not be loaded: too many open files (raise the open files limit, ulimit -n)\n${STARTUP_FAILURE}`);
  });
});
