// Files that must not outlive an interrupted command, and work that a signal
// must not cut in half. A temp file or spool that a command removes in
// `finally` on every error would stay behind on Ctrl-C (SIGINT) or a polite
// kill (SIGTERM, SIGHUP), whose default action ends the process without
// unwinding it; so would a lock file, or a write the lock guards.
//
// While any path is registered or any hold is active, those signals are
// handled here: outside a hold every registered path is removed and the
// signal is raised again with its default action, so the process still ends
// as the signal says; inside a hold (a held lock) that happens once the last
// hold is released. A signal that another listener handles (a server's
// graceful shutdown, `aip run`'s cancellation) is left to it: the process
// then ends its own way, and its `finally` blocks do the cleaning.

import { rmSync } from 'node:fs';

const SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
/** Registered paths, each with the check (if any) that it is still ours to remove. */
const registered = new Map<string | Buffer, (() => boolean) | undefined>();
let holds = 0;
let deferred: NodeJS.Signals | undefined;
let listening = false;

function onSignal(signal: NodeJS.Signals): void {
  if (process.listenerCount(signal) > 1) return;
  if (holds > 0) {
    deferred ??= signal;
    return;
  }
  endBy(signal);
}

/** Removes every registered path, then lets the signal take its default action. */
function endBy(signal: NodeJS.Signals): void {
  removeRegistered();
  process.kill(process.pid, signal);
}

function removeRegistered(): void {
  for (const [path, stillOurs] of registered) {
    try {
      if (stillOurs === undefined || stillOurs()) rmSync(path, { recursive: true, force: true });
    } catch {
      // Best effort: the process is ending either way.
    }
  }
  registered.clear();
  listen(false);
}

let exitWanted: number | undefined;

/**
 * Ends the process with `code` the way a signal here would, once no hold is
 * active: registered paths are removed, a write under a lock finishes
 * first. For a process that cannot end by itself (answers queued on a
 * stdout nobody reads; see mcp/abandoned-stdout.ts).
 */
export function exitOnceReleased(code: number): void {
  if (holds > 0) {
    exitWanted ??= code;
    return;
  }
  removeRegistered();
  process.exit(code);
}

function listen(wanted: boolean): void {
  if (wanted === listening) return;
  listening = wanted;
  for (const name of SIGNALS) {
    if (wanted) process.on(name, onSignal);
    else process.off(name, onSignal);
  }
}

/**
 * Removes `path` (a file, or a folder with its contents) if the process is
 * interrupted before the returned release is called; call it once the
 * command has removed or published the path itself. `stillOurs`, when given,
 * is asked first (synchronously, at the signal): a lock file another process
 * has taken over since must stay.
 */
export function removeOnInterrupt(path: string | Buffer, stillOurs?: () => boolean): () => void {
  registered.set(path, stillOurs);
  listen(true);
  return () => {
    registered.delete(path);
    listen(registered.size > 0 || holds > 0);
  };
}

/**
 * Defers SIGINT, SIGTERM and SIGHUP until the returned release is called (a
 * second call does nothing): work that must not stop half-way (a write under
 * a lock, and the lock's own release) finishes, then a signal that came
 * meanwhile ends the process as it would have. Keep holds short: the signal
 * waits for them.
 */
export function holdSignals(): () => void {
  holds++;
  listen(true);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    holds = Math.max(0, holds - 1);
    if (holds === 0 && deferred !== undefined) {
      const signal = deferred;
      deferred = undefined;
      endBy(signal);
      return;
    }
    if (holds === 0 && exitWanted !== undefined) {
      exitOnceReleased(exitWanted);
      return;
    }
    listen(registered.size > 0 || holds > 0);
  };
}
