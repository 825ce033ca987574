// Interactive confirmation for operator commands (operations spec §1.9.1):
// prompts go through the controlling terminal (/dev/tty), never stdin or
// stdout, which stay the command's channels. No terminal is invalid_request;
// anything but an accepted answer is invalid_state with nothing admitted.

import { closeSync, openSync, read, writeSync } from 'node:fs';
import { AdminRefusal, refusal } from './admin-errors.js';

export interface ConfirmationRequest {
  /** e.g. `aipcs service suspend`. */
  readonly title: string;
  /** Label/value lines shown before the question, in order. */
  readonly fields: readonly (readonly [string, string])[];
  /** When set, the operator must type exactly this text (purge types the service id). */
  readonly typed?: string;
  /** Whether a value was generated that the operator must note (the operation id). */
  readonly generatedOperationId: boolean;
}

const MAX_ANSWER = 256;

/** One byte, or null at end of input. */
function readByte(fd: number, one: Buffer): Promise<number | null> {
  return new Promise((resolve, reject) => read(fd, one, 0, 1, null, (error, count) => (error ? reject(error) : resolve(count === 0 ? null : (one[0] as number)))));
}

/**
 * Reads the answer off the event loop's thread (a blocking read there would
 * hold off signal handling: Ctrl-C at the prompt must still end the command
 * and remove what it was about to use, such as an import's spool).
 * `endedByNewline` is false when the input ended (Ctrl-D) before a newline.
 */
async function readLine(fd: number): Promise<{ readonly text: string; readonly endedByNewline: boolean }> {
  const bytes: number[] = [];
  const one = Buffer.alloc(1);
  for (;;) {
    const byte = await readByte(fd, one);
    if (byte === null || byte === 0x0a) return { text: Buffer.from(bytes).toString('utf8'), endedByNewline: byte === 0x0a };
    if (bytes.length < MAX_ANSWER) bytes.push(byte);
  }
}

/** Asks on the controlling terminal; returns when confirmed, throws a refusal otherwise. */
export async function confirmOnTerminal(request: ConfirmationRequest): Promise<void> {
  let fd: number;
  try {
    fd = openSync('/dev/tty', 'r+');
  } catch (error) {
    throw refusal('invalid_request', [], error);
  }
  try {
    const lines = [request.title, ...request.fields.map(([label, value]) => `  ${label}: ${value}`)];
    if (request.generatedOperationId) lines.push('Record the operation_id above until the outcome is known; retry with it if the outcome is unclear.');
    lines.push(request.typed === undefined ? 'Proceed? [y/N] ' : 'Type the service id to confirm: ');
    writeSync(fd, lines.join('\n'));
    const line = await readLine(fd);
    // Ctrl-D leaves the cursor on the prompt's line; what follows starts a line of its own.
    if (!line.endedByNewline) writeSync(fd, '\n');
    const answer = line.text.trim();
    const accepted = request.typed === undefined ? /^(y|yes)$/i.test(answer) : answer === request.typed;
    if (!accepted) throw refusal('invalid_state');
  } catch (error) {
    if (error instanceof AdminRefusal) throw error;
    throw refusal('invalid_request', [], error);
  } finally {
    closeSync(fd);
  }
}
