// The composition root of aigpt: first-run initialisation (spec 2.5) that
// every command shares, wiring config, clock, TIDs, lock and fault hooks into
// a MemoryStore. Holds no logic of its own beyond that wiring.

import { writeSync } from 'node:fs';
import { type AigptConfig, type Environment, ensureConfigFile, loadConfig } from './config.js';
import type { FaultHook } from './fs-atomic.js';
import { MemoryStore, type RecoveryReport } from './memory-store.js';
import type { TidGenerator } from './tid.js';

export interface AppOptions {
  readonly environment: Environment;
  readonly clock?: () => Date;
  readonly tids?: TidGenerator;
  readonly fault?: FaultHook;
}

export interface OpenedApp {
  readonly config: AigptConfig;
  readonly store: MemoryStore;
  readonly recovery: RecoveryReport | undefined;
}

/** Creates the config on first run, validates it, creates the core and memory folder, and recovers. */
export async function openApp(options: AppOptions): Promise<OpenedApp> {
  await ensureConfigFile(options.environment);
  const config = await loadConfig(options.environment);
  const store = new MemoryStore({
    did: config.did,
    handle: config.handle,
    tree: config.tree,
    memoryLimit: config.memory,
    ...(options.clock === undefined ? {} : { clock: options.clock }),
    ...(options.tids === undefined ? {} : { tids: options.tids }),
    ...(options.fault === undefined ? {} : { fault: options.fault }),
  });
  const recovery = await store.ensureLayout();
  return { config, store, recovery };
}

export function describeRecovery(report: RecoveryReport | undefined): string[] {
  if (report === undefined) return [];
  const lines: string[] = [];
  if (report.rolledForward) lines.push('finished an interrupted compress (the new memory set is complete)');
  if (report.removedTemps.length > 0) lines.push(`removed ${report.removedTemps.length} leftover temporary file(s) of interrupted writes`);
  lines.push(...report.problems);
  return lines;
}

/** Name of the test-only variable that freezes the process at one fault point (see docs/aigpt.md). */
export const FAULT_PAUSE_ENV = 'AIGPT_TEST_FAULT_PAUSE';

/**
 * Test-only: with `AIGPT_TEST_FAULT_PAUSE={label}#{n}` the process announces
 * `aigpt: paused at {label}#{n}` on stderr when it reaches the n-th (1-based)
 * occurrence of that fault point and then blocks its only thread, so a test
 * can `kill -9` it at exactly that point. Inert when the variable is unset.
 */
export function faultHookFromEnv(env: Readonly<Record<string, string | undefined>>): FaultHook | undefined {
  const spec = env[FAULT_PAUSE_ENV];
  if (spec === undefined || spec === '') return undefined;
  const hash = spec.lastIndexOf('#');
  const label = hash > 0 ? spec.slice(0, hash) : spec;
  const wanted = hash > 0 ? Number(spec.slice(hash + 1)) : 1;
  let seen = 0;
  return (point) => {
    if (point !== label || ++seen !== wanted) return;
    // Synchronous writes: the line must be out before the thread blocks.
    writeSync(2, `aigpt: paused at ${label}#${wanted}\n`);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
  };
}
