// A cancel that arrives while the runner waits for the
// child's 'spawn' event (after its own aborted check, before it listens for
// 'abort') must still cancel the run. The abort is fired from inside spawn(),
// right after the real spawn, so the window is hit every time.
import { describe, expect, it, vi } from 'vitest';
import { execute } from '../../../src/aip/runner/execute.js';
import { tempDir } from '../support/temp.js';

const hook = vi.hoisted(() => ({ afterSpawn: undefined as (() => void) | undefined }));

vi.mock('node:child_process', async (importOriginal) => {
  const original = await importOriginal<typeof import('node:child_process')>();
  return {
    ...original,
    spawn: (...args: Parameters<typeof original.spawn>) => {
      const child = original.spawn(...args);
      const after = hook.afterSpawn;
      hook.afterSpawn = undefined;
      after?.();
      return child;
    },
  };
});

describe('aip runner: a cancel while the command starts', () => {
  it('cancels the run instead of letting the command run out and calling it capture_error', async () => {
    const controller = new AbortController();
    hook.afterSpawn = () => controller.abort('SIGINT');
    const cwd = await tempDir();
    const began = performance.now();
    const result = await execute({ argv: ['sleep', '3'], cwd, timeoutNs: 60_000_000_000n, outputLimit: 16, signal: controller.signal, graceMs: 200 });
    expect(result.termination).toBe('cancelled');
    expect(result.error).toBe('cancelled by SIGINT');
    expect(performance.now() - began).toBeLessThan(2500);
  });
});
