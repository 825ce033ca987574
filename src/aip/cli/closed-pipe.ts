// A standard stream whose reader went away (`aip cat --content ID | head -c1`,
// `aip run --tee ... | head`) must not kill `aip` with an unhandled EPIPE
// stack: a run would then leave its command's process group running and
// store no evidence. Writes through this wrapper stop quietly once the pipe
// is closed (as a program killed by SIGPIPE would stop writing) and the
// command finishes with its own exit code. Other write errors still reach the
// writer's callback, so they are reported as `io` errors naming the stream
// (`cannot write to stdout: ENOSPC`; a bare `ENOSPC` did not say what failed).
import { Writable } from 'node:stream';
import { AipError } from '../core/errors.js';

function isClosedPipe(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'EPIPE';
}

/** A failed write to `name` (stdout, stderr) as the `io` error the user reads. */
function writeFailure(error: Error, name: string): AipError {
  const code = (error as { code?: unknown }).code;
  return new AipError('io', typeof code === 'string' ? `cannot write to ${name}: ${code}` : `cannot write to ${name}`, { cause: error });
}

export function tolerateClosedPipe(stream: NodeJS.WritableStream, name: string): Writable {
  let closed = false;
  stream.on('error', (error) => {
    if (isClosedPipe(error)) closed = true;
    // Any other error also reaches the callback of the write that met it.
  });
  const wrapper = new Writable({
    write(chunk: Buffer, _encoding, callback): void {
      if (closed) {
        callback();
        return;
      }
      stream.write(chunk, (error) => {
        if (error && isClosedPipe(error)) closed = true;
        callback(error && !closed ? writeFailure(error, name) : null);
      });
    },
  });
  // A failed write is reported through its callback; an unheard 'error' event
  // (a write without a callback, such as the live --tee copy) must not crash.
  wrapper.on('error', () => undefined);
  return wrapper;
}
