// Files that must not outlive an interrupted command. A temp file or spool
// that a command removes in `finally` on every error would stay behind on
// Ctrl-C (SIGINT) or a polite kill (SIGTERM, SIGHUP), whose default action
// ends the process without unwinding it. While any path is registered, those
// signals first remove every registered path, then are raised again with
// their default action, so the process still ends as the signal says.

import { rmSync } from 'node:fs';

const SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
const registered = new Set<string>();

function onSignal(signal: NodeJS.Signals): void {
  for (const path of registered) {
    try {
      rmSync(path, { recursive: true, force: true });
    } catch {
      // Best effort: the process is ending either way.
    }
  }
  registered.clear();
  for (const name of SIGNALS) process.off(name, onSignal);
  process.kill(process.pid, signal);
}

/**
 * Removes `path` (a file, or a folder with its contents) if the process is
 * interrupted before the returned release is called; call it once the
 * command has removed or published the path itself.
 */
export function removeOnInterrupt(path: string): () => void {
  if (registered.size === 0) for (const name of SIGNALS) process.on(name, onSignal);
  registered.add(path);
  return () => {
    if (!registered.delete(path) || registered.size > 0) return;
    for (const name of SIGNALS) process.off(name, onSignal);
  };
}
