// The composition root of aigpt: first-run initialisation (spec 2.5) that
// every command shares, and the config as it is now (read again for every
// operation, spec 2.4), wired with clock, TIDs, write order and fault hooks
// into a MemoryStore. Holds no logic of its own beyond that wiring.

import { writeSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { type AigptConfig, type Environment, ensureConfigFile, loadConfig } from './config/config.js';
import { AigptError, errnoCode } from './core/errors.js';
import { type FaultHook, removeStaleTemps } from './storage/fs-atomic.js';
import { LOCK_TIMEOUT_MS } from './core/limits.js';
import { Mutex } from '../common/mutex.js';
import { MemoryStore, type RecoveryReport } from './storage/memory-store.js';
import { TidGenerator } from './core/tid.js';

/** How long a server's start waits for a lock a live writer holds before leaving recovery to the next write. */
const SERVER_START_LOCK_WAIT_MS = 1000;

export interface AppOptions {
  readonly environment: Environment;
  readonly clock?: () => Date;
  readonly tids?: TidGenerator;
  readonly fault?: FaultHook;
}

export interface LoadedApp {
  readonly config: AigptConfig;
  readonly store: MemoryStore;
}

export interface OpenedApp extends LoadedApp {
  readonly recovery: RecoveryReport | undefined;
}

/**
 * One aigpt process. The TID generator and the write queue outlive every
 * config reload, so TIDs and writes keep their order even when the config
 * names another tree between two operations.
 */
export class AigptApp {
  private readonly tids: TidGenerator;
  private readonly writes = new Mutex();
  private readonly loads = new Mutex();

  constructor(private readonly options: AppOptions) {
    this.tids = options.tids ?? new TidGenerator();
  }

  /**
   * First-run initialisation: creates the config, the core record and the
   * memory folder when missing. A writer (`recover`) also finishes an
   * interrupted write under the lock (spec 7.5); readers never lock (7.3).
   * With `recoveredByWrite` the memory folder's recovery is left to the
   * write that follows (saveMemory recovers under its own lock, from its
   * own pass over the folder), and only the config folder's is done here.
   */
  async open({ recover, recoveredByWrite = false, busyHolderDefers = false }: { readonly recover: boolean; readonly recoveredByWrite?: boolean; readonly busyHolderDefers?: boolean }): Promise<OpenedApp> {
    const configFile = await ensureConfigFile(this.options.environment);
    const { config, store } = await this.current();
    await store.ensureRecordTree();
    let recovery = recover && !recoveredByWrite ? await this.recoverAtOpen(store, busyHolderDefers) : undefined;
    if (recover) {
      // A first run killed while writing the config left its temp file. The
      // config folder has no lock, so only one too old to be a live write goes.
      const removed = await removeStaleTemps(dirname(configFile), basename(configFile), 2 * LOCK_TIMEOUT_MS);
      if (removed.length > 0) recovery = mergeRecovery(recovery, { rolledForward: false, problems: [], removedTemps: removed });
    }
    return { config, store, recovery };
  }

  /**
   * Spec 7.5's recovery at open. With `busyHolderDefers` (server start) a
   * lock a live process holds past a short wait is not waited for: what
   * looked interrupted is most likely that process's write in progress (a
   * long compress), and a second agent's server then failed to start after
   * the whole lock timeout. Every write recovers first anyway (7.5), so the
   * server starts and says so.
   */
  private async recoverAtOpen(store: MemoryStore, busyHolderDefers: boolean): Promise<RecoveryReport | undefined> {
    if (!busyHolderDefers) return store.recoverIfInterrupted();
    try {
      return await store.recoverIfInterrupted({ waitMs: SERVER_START_LOCK_WAIT_MS });
    } catch (error) {
      if (!(error instanceof AigptError && error.code === 'lock_timeout')) throw error;
      return { rolledForward: false, removedTemps: [], problems: [`another process is writing the memory folder (${error.message}); recovery, if any is needed, is left to the next write`] };
    }
  }

  /**
   * The config as it is on disk now and a store for the tree it names.
   * Writes nothing. Calls resolve in call order, so operations that start
   * a write right after it still enter the write queue in call order.
   */
  current(): Promise<LoadedApp> {
    return this.loads.run(() => this.load());
  }

  private async load(): Promise<LoadedApp> {
    const { clock, fault, environment } = this.options;
    let config: AigptConfig;
    let firstRun = false;
    try {
      config = await loadConfig(environment);
    } catch (error) {
      if (!(error instanceof Error) || errnoCode(error.cause) !== 'ENOENT') throw error;
      // A config deleted under a running server: a missing file is a first run
      // (spec 2.4), here as at the next CLI command; the reference would
      // quietly use the defaults without writing them.
      await ensureConfigFile(environment);
      config = await loadConfig(environment);
      firstRun = true;
    }
    const store = new MemoryStore({
      did: config.did,
      handle: config.handle,
      tree: config.tree,
      memoryLimit: config.memory,
      tids: this.tids,
      writes: this.writes,
      ...(clock === undefined ? {} : { clock }),
      ...(fault === undefined ? {} : { fault }),
    });
    if (firstRun) await store.ensureRecordTree();
    return { config, store };
  }
}

/** Two recoveries' reports as one (a memory folder's and a config folder's); undefined when neither ran. */
export function mergeRecovery(first: RecoveryReport | undefined, second: RecoveryReport | undefined): RecoveryReport | undefined {
  if (first === undefined || second === undefined) return first ?? second;
  return {
    rolledForward: first.rolledForward || second.rolledForward,
    removedTemps: [...first.removedTemps, ...second.removedTemps],
    problems: [...first.problems, ...second.problems],
  };
}

export function describeRecovery(report: RecoveryReport | undefined): string[] {
  if (report === undefined) return [];
  const lines: string[] = [];
  // A roll-forward's problems are staged records it could not restore.
  if (report.rolledForward) lines.push(report.problems.length === 0 ? 'finished an interrupted compress (the new memory set is complete)' : 'finished an interrupted compress, but the new memory set is incomplete:');
  if (report.removedTemps.length > 0) lines.push(`removed ${report.removedTemps.length} leftover temporary file(s) of interrupted writes`);
  lines.push(...report.problems);
  return lines;
}

/** Name of the test-only variable that freezes the process at one fault point (see docs/aigpt.md). */
export const FAULT_PAUSE_ENV = 'AIGPT_TEST_FAULT_PAUSE';
/** Name of the test-only variable that makes the process signal itself at one fault point (see docs/aigpt.md). */
export const FAULT_SIGNAL_ENV = 'AIGPT_TEST_FAULT_SIGNAL';

/** `{label}#{n}` (n defaults to 1; `*` in the label matches any text): whether this occurrence of `point` is the one named. */
function faultPointMatcher(spec: string): (point: string) => boolean {
  const hash = spec.lastIndexOf('#');
  const label = hash > 0 ? spec.slice(0, hash) : spec;
  const wanted = hash > 0 ? Number(spec.slice(hash + 1)) : 1;
  const pattern = new RegExp(`^${label.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
  let seen = 0;
  return (point) => pattern.test(point) && ++seen === wanted;
}

/**
 * Test-only: with `AIGPT_TEST_FAULT_PAUSE={label}#{n}` the process announces
 * `aigpt: paused at {label}#{n}` on stderr when it reaches the n-th (1-based)
 * occurrence of that fault point and then blocks its only thread, so a test
 * can `kill -9` it at exactly that point. With
 * `AIGPT_TEST_FAULT_SIGNAL={SIGNAL}@{label}#{n}` it sends itself that signal
 * there instead (and goes on), so a test can see what a Ctrl-C or a polite
 * kill at exactly that point leaves. Inert when the variables are unset.
 */
export function faultHookFromEnv(env: Readonly<Record<string, string | undefined>>): FaultHook | undefined {
  const pause = env[FAULT_PAUSE_ENV];
  const signal = env[FAULT_SIGNAL_ENV];
  const hooks: FaultHook[] = [];
  if (pause !== undefined && pause !== '') {
    const matches = faultPointMatcher(pause);
    hooks.push((point) => {
      if (!matches(point)) return;
      // Synchronous writes: the line must be out before the thread blocks.
      writeSync(2, `aigpt: paused at ${pause.lastIndexOf('#') > 0 ? pause : `${pause}#1`}\n`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
    });
  }
  const at = signal?.indexOf('@') ?? -1;
  if (signal !== undefined && at > 0) {
    const name = signal.slice(0, at) as NodeJS.Signals;
    const matches = faultPointMatcher(signal.slice(at + 1));
    hooks.push((point) => {
      if (matches(point)) process.kill(process.pid, name);
    });
  }
  if (hooks.length === 0) return undefined;
  return (point) => {
    for (const hook of hooks) hook(point);
  };
}
