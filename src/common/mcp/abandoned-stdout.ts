// Answers a stdio session gave up on. A client that ends its input but never
// reads the answers it is owed (its end of our stdout stays open and full)
// gets them for ANSWER_WAIT_MS, then the session closes; but the answers
// already handed to process.stdout stay queued on the pipe, and a queued
// write keeps Node's process alive for as long as the client holds the pipe
// open: for good. Those writes cannot be cancelled (process.stdout never
// closes its descriptor), so the command ends the process itself once its
// own cleanup (storage closed) is done. Kept free of the MCP SDK: the bins
// import it on every command.

import { exitOnceReleased } from '../interrupt-cleanup.js';

let abandoned = false;

/** Notes that process.stdout holds answers a stdio session gave up on (nobody will read them). */
export function abandonStdoutAnswers(): void {
  abandoned = true;
}

/**
 * Ends the process with `code` if a session gave up on answers still queued
 * on process.stdout (at once, or as soon as a write under a lock that a call
 * still running holds has finished); otherwise returns, and the process ends
 * once its output has drained. Call it last, after every cleanup.
 */
export function endIfStdoutAbandoned(code: number): void {
  if (abandoned && process.stdout.writableLength > 0) exitOnceReleased(code);
}
