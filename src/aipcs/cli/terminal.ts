// Interactive confirmation for operator commands (operations spec §1.9.1):
// prompts go through the controlling terminal (/dev/tty), never stdin or
// stdout, which stay the command's channels. No terminal is invalid_request;
// anything but an accepted answer is invalid_state with nothing admitted.

import { closeSync, openSync, readSync, writeSync } from 'node:fs';
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

function readLine(fd: number): string | null {
  const bytes: number[] = [];
  const one = Buffer.alloc(1);
  for (;;) {
    const read = readSync(fd, one, 0, 1, null);
    if (read === 0) return bytes.length === 0 ? null : Buffer.from(bytes).toString('utf8');
    const byte = one[0] as number;
    if (byte === 0x0a) return Buffer.from(bytes).toString('utf8');
    if (bytes.length < MAX_ANSWER) bytes.push(byte);
  }
}

/** Asks on the controlling terminal; returns when confirmed, throws a refusal otherwise. */
export function confirmOnTerminal(request: ConfirmationRequest): void {
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
    const answer = readLine(fd)?.trim() ?? '';
    const accepted = request.typed === undefined ? /^(y|yes)$/i.test(answer) : answer === request.typed;
    if (!accepted) throw refusal('invalid_state');
  } catch (error) {
    if (error instanceof AdminRefusal) throw error;
    throw refusal('invalid_request', [], error);
  } finally {
    closeSync(fd);
  }
}
