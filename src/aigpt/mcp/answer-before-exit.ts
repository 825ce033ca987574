// Spec 5.1 and the reference's stdio loop: requests are served one at a time,
// in the order they were read, each answered before the next is looked at,
// and the server exits at end of input only after answering every request it
// read (so `printf '...' | aigpt server` gets every answer, and a read_memory
// sent after a save_memory sees that memory). The shared stdio transport
// handles requests concurrently and closes, dropping later answers, as soon as
// its input ends. This gate sits between the real streams and the transport:
// it hands the transport one line at a time and, after a request, holds the
// next line back (pausing stdin) until that request's answer has been written.
// A final line without a newline is served as a line, as the reference does.
// A request that gets no answer within a bound while no tool call is being
// served stops being waited for, so a request nothing serves can never block
// the session or keep the process alive.
// A line that is not valid UTF-8 is not served with replacement characters
// (which would save U+FFFD in place of the text sent): it is reported on
// stderr and skipped (spec 5.1), and a request whose id shows in it gets
// -32600 so the client is not left waiting.

import { isUtf8 } from 'node:buffer';
import { PassThrough, Writable, type Readable } from 'node:stream';
import { isPlainObject, parseJson } from '../../common/json.js';
import { idAtLineEnd, idAtLineStart, lastBytes, MAX_REQUEST_DEPTH, withoutByteOrderMark } from '../../common/mcp/stdio-transport.js';

/** How long one request may hold back the lines after it. */
export const ANSWER_WAIT_MS = 30_000;

export interface AnswerGate {
  readonly input: Readable;
  readonly output: Writable;
  /** Reads nothing more (the session ended): lines held back are dropped and the source is released. */
  stop(): void;
}

/** The identity of a JSON-RPC id, as the request and its answer both carry it. */
function idKey(id: unknown): string | undefined {
  if (typeof id === 'string') return `s${id}`;
  // A fractional id is no JSON-RPC request, but the transport answers it (-32600) with that id.
  if (typeof id === 'number' && Number.isFinite(id)) return `n${String(id)}`;
  // From the lossless fallback of parseLine: the same key JSON.parse's number would give.
  if (typeof id === 'bigint') return `n${String(Number(id))}`;
  return undefined;
}

function parseLine(line: string): unknown {
  // The transport ignores a leading byte order mark; so does the gate, so that such a request is waited for too.
  const text = withoutByteOrderMark(line.endsWith('\r') ? line.slice(0, -1) : line);
  try {
    return JSON.parse(text);
  } catch {
    // The transport also serves a line holding NaN, Infinity or -Infinity
    // (keepNonFiniteFloats), which JSON.parse refuses: read it as the
    // transport does, so that its request is waited for like any other.
    try {
      return parseJson(text, { maxBytes: Number.MAX_SAFE_INTEGER, maxDepth: MAX_REQUEST_DEPTH, keepNonFiniteFloats: true });
    } catch {
      return undefined;
    }
  }
}

/**
 * A line as parseLine reads it, but with integers as bigints (the lossless
 * parser first), so that an id beyond 2^53 is known exactly.
 */
function parseLineExactly(line: string): unknown {
  const text = withoutByteOrderMark(line.endsWith('\r') ? line.slice(0, -1) : line);
  try {
    return parseJson(text, { maxBytes: Number.MAX_SAFE_INTEGER, maxDepth: MAX_REQUEST_DEPTH, keepNonFiniteFloats: true });
  } catch {
    return parseLine(line);
  }
}

/** JSON-RPC -32600 for the id of a line that cannot be served, the id exactly as sent (an integer id is a bigint here). */
function invalidRequestLine(id: string | number | bigint): string {
  return `{"jsonrpc":"2.0","id":${typeof id === 'string' ? JSON.stringify(id) : String(id)},"error":{"code":-32600,"message":"Invalid Request"}}\n`;
}

/**
 * The id key of a line the transport will answer, else undefined: a request,
 * or any other message with an id that is no response (no or another
 * `jsonrpc`, a method that is no string), which it answers -32600 itself.
 * Waiting for those too keeps every answer in the order of its line.
 */
function requestKey(line: Buffer): string | undefined {
  const message = parseLine(line.toString('utf8'));
  if (!isPlainObject(message) || 'result' in message || 'error' in message) return undefined;
  return idKey(message['id']);
}

export function answerBeforeExit(
  source: Readable,
  sink: Writable,
  maxLineBytes: number,
  warn: (message: string) => void,
  waitMs = ANSWER_WAIT_MS,
  stillServing: () => boolean = () => false,
): AnswerGate {
  const input = new PassThrough();
  let unread: Buffer = Buffer.alloc(0);
  /** Bytes of an oversized line are passed through as they come (the transport refuses it). */
  let inOversized = false;
  let waitingFor: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  let ended = false;
  let gateOpen = false; // the sink failed: nothing is waited for any more

  const stopWaiting = (): void => {
    waitingFor = undefined;
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
  };

  const forward = (bytes: Buffer): void => {
    if (bytes.length > 0 && !input.writableEnded) input.write(bytes);
  };

  /** Holds the lines after this one back until the answer to `key` is written. */
  const waitFor = (key: string | undefined): void => {
    if (key === undefined || gateOpen) return;
    waitingFor = key;
    // A request still being served (a save waiting for another writer's
    // lock, a large compress) is waited for until it is answered, or the
    // next line would run before it and without its effects.
    const ranOut = (): void => {
      if (stillServing()) {
        timer = setTimeout(ranOut, waitMs);
        return;
      }
      stopWaiting();
      pump();
    };
    timer = setTimeout(ranOut, waitMs);
  };

  // An oversized line is refused by the transport, with -32600 when its id
  // shows at its start (answered as the line overflows) or is written last
  // (answered at its end): that answer is waited for too, or it would come
  // after the answer to the next line. The end of the line is kept meanwhile.
  let oversizedTail: Buffer | undefined;

  let stopped = false;
  const pump = (): void => {
    if (stopped) return;
    while (waitingFor === undefined && unread.length > 0) {
      const newline = unread.indexOf(0x0a);
      if (inOversized) {
        const end = newline === -1 ? unread.length : newline + 1;
        const part = unread.subarray(0, end);
        unread = unread.subarray(end);
        if (oversizedTail !== undefined) oversizedTail = lastBytes(Buffer.concat([oversizedTail, newline === -1 ? part : part.subarray(0, -1)]));
        if (newline !== -1) {
          inOversized = false;
          // Set before the end is handed over, as for any request below.
          if (oversizedTail !== undefined) waitFor(idKey(idAtLineEnd(oversizedTail)));
          oversizedTail = undefined;
        }
        forward(part);
        continue;
      }
      if (newline === -1) {
        if (unread.length <= maxLineBytes) break; // wait for the rest of the line
        inOversized = true;
        const start = unread;
        unread = Buffer.alloc(0);
        const key = idKey(idAtLineStart(start));
        oversizedTail = key === undefined ? lastBytes(start) : undefined;
        // Handed over first: the transport answers once it sees the line overflow.
        forward(start);
        waitFor(key);
        continue;
      }
      const line = unread.subarray(0, newline + 1);
      unread = unread.subarray(newline + 1);
      if (line.length - 1 <= maxLineBytes && !isUtf8(line)) {
        const message = parseLineExactly(line.subarray(0, -1).toString('utf8'));
        const id = isPlainObject(message) ? message['id'] : undefined;
        if (!gateOpen && isPlainObject(message) && typeof message['method'] === 'string' && idKey(id) !== undefined) {
          warn('answered an input line that is not valid UTF-8 as an invalid request');
          sink.write(invalidRequestLine(id as string | number | bigint));
        } else {
          warn('dropped an input line that is not valid UTF-8');
        }
        continue;
      }
      const content = line.subarray(0, -1);
      // Set before the line is handed over: the transport may answer it
      // synchronously (a request it refuses itself), within forward().
      if (!gateOpen) waitFor(content.length > maxLineBytes ? idKey(idAtLineStart(content) ?? idAtLineEnd(content)) : requestKey(content));
      forward(line);
    }
    if (waitingFor === undefined) {
      if (ended) {
        if (unread.length > 0 && !inOversized) {
          // A last line without its newline is still a line.
          unread = Buffer.concat([unread, Buffer.from('\n')]);
          pump();
          return;
        }
        forward(unread);
        unread = Buffer.alloc(0);
        if (!input.writableEnded) input.end();
      } else if (source.isPaused()) source.resume();
    } else if (!ended && !source.isPaused()) source.pause();
  };

  source.on('data', (chunk: Buffer | string) => {
    const data = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    unread = unread.length === 0 ? data : Buffer.concat([unread, data]);
    pump();
  });
  source.on('end', () => {
    ended = true;
    pump();
  });
  source.on('error', (error) => input.destroy(error));

  /** Looks at what the transport writes: the answer to the request waited for releases the next line. */
  let written: Buffer = Buffer.alloc(0);
  const noteAnswers = (data: Buffer): void => {
    written = written.length === 0 ? data : Buffer.concat([written, data]);
    for (let newline = written.indexOf(0x0a); newline !== -1; newline = written.indexOf(0x0a)) {
      const line = written.subarray(0, newline);
      written = written.subarray(newline + 1);
      if (waitingFor === undefined) continue;
      const message = parseLine(line.toString('utf8'));
      if (isPlainObject(message) && !('method' in message) && idKey(message['id']) === waitingFor) {
        stopWaiting();
        // Let the transport finish this write before it is handed more.
        setImmediate(pump);
      }
    }
  };

  // A sink that failed (a client that closed our stdout) takes no answers:
  // nothing is waited for any more, and writes complete at once.
  let waitingWrites = new Set<() => void>();
  const releaseWrites = (): void => {
    const callbacks = waitingWrites;
    waitingWrites = new Set();
    for (const callback of callbacks) callback();
  };
  sink.on('error', () => {
    gateOpen = true;
    stopWaiting();
    releaseWrites();
    setImmediate(pump);
    // The transport behind the gate sees the client go as it would on the
    // real stream, and ends the session (without this it never did: a client
    // that closed our stdout but kept stdin open left the server running).
    setImmediate(() => output.destroy());
  });

  // An answer counts as written (for the transport, which ends the session
  // on it) only once the system has taken it from the real output (its
  // write callback), not once the output has buffered it: answers a client
  // did not read would otherwise sit in a buffer as if sent, and a shutdown
  // signal found nothing owed, closed the session, and left the process
  // waiting on stdout for good. No buffer of its own either, for the same reason.
  const output = new Writable({
    highWaterMark: 0,
    write(chunk: Buffer | string, _encoding, callback): void {
      if (gateOpen) {
        callback();
        return;
      }
      const data = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
      const written = (): void => {
        if (!waitingWrites.delete(written)) return;
        callback();
      };
      waitingWrites.add(written);
      sink.write(data, written);
      noteAnswers(data);
    },
  });

  const stop = (): void => {
    stopped = true;
    stopWaiting();
    unread = Buffer.alloc(0);
    source.destroy();
  };

  return { input, output, stop };
}
