// MCP over stdio with lossless, bounded parsing. Each newline-terminated line
// is one JSON-RPC message; a malformed or oversized line is dropped (logged to
// stderr) and the session continues, as the contracts require. At the end of
// input the session ends once every request read has been answered.

import { isUtf8 } from 'node:buffer';
import type { Readable, Writable } from 'node:stream';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { CancelledNotificationSchema, isJSONRPCRequest, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { isJsonObject, isPlainObject, JsonError, parseJson, restoreExactNumbers, stringifyExact, toPlainJson, type JsonValue } from '../json.js';
import type { Logger } from '../logger.js';
import { invalidParamsResponse, splitToolArguments, type LosslessArguments } from './lossless-arguments.js';
import { startsToolCall } from './tool-calls.js';

export interface StdioTransportOptions {
  readonly input: Readable;
  readonly output: Writable;
  readonly lossless: LosslessArguments;
  readonly logger: Logger;
  /** Longest accepted line in bytes; longer lines are discarded whole. */
  readonly maxLineBytes?: number;
  readonly maxDepth?: number;
  /** The data member of -32602 answers (none when undefined). */
  readonly invalidParamsData?: string;
  /** tools/call arguments that are not an object: -32602 (default) or read as absent (ToolServerOptions). */
  readonly nonObjectArguments?: 'invalid-params' | 'absent';
  /** How long the end of input waits for the answers still owed (ANSWER_WAIT_MS unless set; tests shorten it). */
  readonly answerWaitMs?: number;
  /** When it answers true as that wait runs out, a call is still being served: the wait starts over instead of giving up. */
  readonly callsRunning?: () => boolean;
}

export const DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024;

/**
 * Nesting accepted in a request: about where Python's json module gives up
 * (its recursion limit), so that deep arguments still reach the tool and get
 * its validation answer rather than a protocol error.
 */
export const MAX_REQUEST_DEPTH = 1000;

/** How long the end of input waits for the answers still owed before the transport closes anyway. */
export const ANSWER_WAIT_MS = 60_000;

/**
 * Requests served at once (answers not yet taken by the output). At the bound
 * the transport stops reading until one is answered: a client that pipelines
 * thousands of requests, or never reads its answers, would otherwise have
 * every one of them running and every answer held in memory at once.
 */
export const MAX_REQUESTS_IN_FLIGHT = 16;

/**
 * A test-only override of the answer waits, read from the named environment
 * variable: whole milliseconds, at most seven digits; anything else (or unset)
 * leaves the normal waits.
 */
export function testAnswerWaitMs(env: Readonly<Record<string, string | undefined>>, name: string): number | undefined {
  const value = env[name];
  return value !== undefined && /^[0-9]{1,7}$/.test(value) ? Number(value) : undefined;
}

/** A request id as a map key (`1` and `"1"` are different ids). */
function idKey(id: string | number): string {
  return `${typeof id}:${String(id)}`;
}

function increment(counts: Map<string, number>, key: string): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

/** Counts one down; false when there was none. */
function decrement(counts: Map<string, number>, key: string): boolean {
  const count = counts.get(key);
  if (count === undefined) return false;
  if (count > 1) counts.set(key, count - 1);
  else counts.delete(key);
  return true;
}

export class LosslessStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private chunks: Buffer[] = [];
  private buffered = 0;
  private discarding = false;
  /**
   * The last bytes of an oversized line being discarded whose id did not show
   * at its start: clients that write `id` last (the MCP SDK does) are answered
   * from the line's end.
   */
  private discardedTail: Buffer | undefined;
  private closed = false;
  private readonly maxLineBytes: number;
  /** Requests handed to the server and not yet answered, counted by id (a client may reuse one). */
  private readonly owed = new Map<string, number>();
  /** Tool calls read whose handlers have not ended, by id (the tool server says when one ends). */
  private readonly callsAtWork = new Map<string, number>();
  /**
   * Of those, the ones the client cancelled: the SDK drops their answers but
   * cannot stop them (no tool looks at the cancellation), so they count
   * against the bound until they end. Freed at the cancellation, call and
   * cancel sent in turn had any number of calls running at once.
   */
  private readonly cancelledAtWork = new Map<string, number>();
  /** Input not yet read while the requests in flight are at their bound (the input is paused meanwhile). */
  private held: Buffer | undefined;
  /** The input ended while some of it was held: its end is taken once that is read. */
  private endHeld = false;
  private inputEnded = false;
  private answerWait: NodeJS.Timeout | undefined;
  private gaveUp = false;
  /** Error answers the transport writes itself, waiting for their turn (see answerDirectly). */
  private directPending = 0;
  /** The last answer written or waiting to be (answers go out one at a time, in order). */
  private writing: Promise<void> = Promise.resolve();
  private outputFailure: string | undefined;
  private inputFailure: string | undefined;

  constructor(private readonly options: StdioTransportOptions) {
    this.maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  }

  async start(): Promise<void> {
    this.options.input.on('data', this.onData);
    this.options.input.on('end', this.onEnd);
    this.options.input.on('error', this.onInputError);
    this.options.output.on('error', this.onOutputGone);
    this.options.output.on('close', this.onOutputGone);
  }

  private readonly onData = (chunk: Buffer | string): void => {
    const data = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    // A chunk already on its way when the input was paused waits with the rest.
    if (this.held !== undefined) this.held = Buffer.concat([this.held, data]);
    else this.consume(data);
  };

  private consume(input: Buffer): void {
    let data = input;
    while (data.length > 0) {
      if (this.inFlight >= MAX_REQUESTS_IN_FLIGHT) {
        this.held = data;
        this.options.input.pause();
        return;
      }
      const newline = data.indexOf(0x0a);
      if (newline === -1) {
        this.appendPartial(data);
        return;
      }
      this.appendPartial(data.subarray(0, newline));
      if (this.discarding) this.answerDiscardedFromTail();
      const line = this.discarding ? undefined : Buffer.concat(this.chunks, this.buffered);
      this.chunks = [];
      this.buffered = 0;
      this.discarding = false;
      if (line) this.handleLine(line);
      data = data.subarray(newline + 1);
    }
  }

  /** Requests read and not yet answered, the transport's own error answers included (`owed` holds at most the bound). */
  private get inFlight(): number {
    let owed = 0;
    for (const count of this.owed.values()) owed += count;
    for (const count of this.cancelledAtWork.values()) owed += count;
    return owed + this.directPending;
  }

  /** The tool server's word that a call's handler has ended (see cancelledAtWork). */
  readonly callSettled = (id: string | number): void => {
    const key = idKey(id);
    decrement(this.callsAtWork, key);
    if (decrement(this.cancelledAtWork, key) && !this.inputEnded) this.readOnIfRoom();
  };

  /** Reads on once an answer has made room below the bound. */
  private readOnIfRoom(): void {
    if (this.held === undefined || this.closed || this.inFlight >= MAX_REQUESTS_IN_FLIGHT) return;
    const data = this.held;
    this.held = undefined;
    this.consume(data);
    if (this.held !== undefined) return;
    if (this.endHeld) this.onEnd();
    else this.options.input.resume();
  }

  private appendPartial(part: Buffer): void {
    if (part.length === 0) return;
    if (this.discarding) {
      if (this.discardedTail !== undefined) this.discardedTail = lastBytes(Buffer.concat([this.discardedTail, part]));
      return;
    }
    if (this.buffered + part.length > this.maxLineBytes) {
      this.options.logger.warn('dropped an oversized input line');
      // Answer a request we can still identify from the line's beginning,
      // or else (once the line has ended) from its end.
      const whole = Buffer.concat([...this.chunks, part]);
      const id = idAtLineStart(whole);
      if (id !== undefined) this.answerDirectly(invalidRequestResponse(id, this.oversizedReason()));
      else this.discardedTail = lastBytes(whole);
      this.chunks = [];
      this.buffered = 0;
      this.discarding = true;
      return;
    }
    this.chunks.push(Buffer.from(part));
    this.buffered += part.length;
  }

  private handleLine(line: Buffer): void {
    let text = withoutByteOrderMark(line.toString('utf8'));
    if (text.endsWith('\r')) text = text.slice(0, -1);
    if (text.trim() === '') return;
    // Decoding would put U+FFFD in place of the bad bytes, and a tool would
    // store text the client never sent: such a line is not served (over HTTP
    // such a body is refused); a request whose id shows is answered.
    if (!isUtf8(line)) {
      const id = requestIdFromPrefix(text);
      this.options.logger.warn(id === undefined ? 'dropped an input line that is not valid UTF-8' : 'answered an input line that is not valid UTF-8 as an invalid request');
      if (id !== undefined) this.answerDirectly(invalidRequestResponse(id));
      return;
    }
    let parsed;
    try {
      parsed = parseJson(text, { maxBytes: this.maxLineBytes, maxDepth: this.options.maxDepth ?? MAX_REQUEST_DEPTH, keepNonFiniteFloats: true });
    } catch (error) {
      // Well-formed JSON beyond a bound (nesting, integer length) is not a
      // syntax error: a request whose id shows is answered, not left hanging.
      const id = error instanceof JsonError && error.code !== 'json_syntax' ? requestIdFromPrefix(text) : undefined;
      this.options.logger.warn(id === undefined ? 'dropped a malformed input line' : 'answered an input line beyond the JSON bounds as an invalid request');
      if (id !== undefined) this.answerDirectly(invalidRequestResponse(id));
      return;
    }
    const { sdkMessage, id, args, token, invalidArguments } = splitToolArguments(parsed, this.options.nonObjectArguments === 'absent');
    const plain = toPlainJson(sdkMessage);
    const isRequest = isJSONRPCRequest(plain);
    // A message with an id that is no request the SDK recognises (params or
    // _meta not an object, a method that is no string, no or another jsonrpc
    // member, an id that is fractional or an integer beyond 2^53) would be
    // dropped or only reach its onerror: JSON-RPC answers it Invalid Request,
    // here with the id exactly as sent, instead of leaving the client waiting.
    const requestId = answerableId(parsed);
    if (requestId !== undefined && !isRequest) {
      this.options.logger.warn('answered an input line that is not a valid JSON-RPC request');
      this.answerDirectly(invalidRequestResponse(requestId));
      return;
    }
    if (invalidArguments) {
      // Answered here so that no SDK text (which would quote the input) leaks.
      if (id !== undefined) this.answerDirectly(invalidParamsResponse(id, this.options.invalidParamsData));
      return;
    }
    // The SDK's protocol layer classifies every message itself (requests,
    // notifications, responses) and reports anything else through onerror,
    // so only the outer shape is checked here.
    if (!isJsonRpcObject(plain)) {
      this.options.logger.warn('dropped an input line that is not a JSON-RPC message');
      return;
    }
    if (token !== undefined && args !== undefined) this.options.lossless.put(token, args);
    if (!this.noteOwed(plain, isRequest)) return;
    this.onmessage?.(plain);
  }

  /**
   * Counts a request as owed an answer; a cancelled one is owed none (the SDK
   * sends nothing for it). False for a cancellation of no request still owed
   * an answer: it cancels nothing, yet the SDK applies a cancellation a turn
   * late, so one read just before its request (same line batch) silenced that
   * request's answer, and the end of input waited for it in vain.
   */
  private noteOwed(message: JSONRPCMessage, isRequest: boolean): boolean {
    const id = (message as { id?: unknown }).id;
    if (isRequest && (typeof id === 'string' || typeof id === 'number')) {
      increment(this.owed, idKey(id));
      // Counted from here, not from its start: a call and its cancellation
      // read in one chunk are both handled before the handler starts.
      if (startsToolCall(message)) increment(this.callsAtWork, idKey(id));
    } else if ('method' in message && message.method === 'notifications/cancelled') {
      // The SDK's Server drops the answer only for a cancellation its own
      // schema reads and whose requestId is truthy (the HTTP listener makes
      // the same test); for any other (`"requestId": 0`, `"reason": 5`) it
      // still answers, and the end of input waits for that answer.
      const cancel = CancelledNotificationSchema.safeParse(message);
      const requestId = cancel.success ? cancel.data.params.requestId : undefined;
      if (!requestId) return true;
      const key = idKey(requestId);
      if (!this.owed.has(key)) return false;
      if ((this.callsAtWork.get(key) ?? 0) > (this.cancelledAtWork.get(key) ?? 0)) increment(this.cancelledAtWork, key);
      this.settle(requestId);
    }
    return true;
  }

  private settle(id: string | number): void {
    if (decrement(this.owed, idKey(id))) this.answered();
  }

  /** An answer has gone out: at the end of input the session may close; before it, reading may go on. */
  private answered(): void {
    if (this.inputEnded) this.closeWhenAnswered();
    else this.readOnIfRoom();
  }

  /**
   * The end of input ends the session only once every request read has been
   * answered (a piped session gets all its answers, as from the Python SDK's
   * server), and a last line without a newline is still a line.
   */
  private readonly onEnd = (): void => {
    // The last chunk can be held (pausing in its data event does not hold back the end).
    if (this.held !== undefined) {
      this.endHeld = true;
      return;
    }
    this.endHeld = false;
    if (this.discarding) this.answerDiscardedFromTail();
    if (!this.discarding && this.buffered > 0) {
      const line = Buffer.concat(this.chunks, this.buffered);
      this.chunks = [];
      this.buffered = 0;
      this.handleLine(line);
    }
    this.inputEnded = true;
    this.closeWhenAnswered();
  };

  /** At the end of a discarded oversized line: answer it if its id is its last member. */
  private answerDiscardedFromTail(): void {
    const tail = this.discardedTail;
    this.discardedTail = undefined;
    if (tail === undefined) return;
    const id = idAtLineEnd(tail);
    if (id !== undefined) this.answerDirectly(invalidRequestResponse(id, this.oversizedReason()));
  }

  /** Said to the client, which cannot see our log: a request that is too long may be split (compress fewer items at once). */
  private oversizedReason(): string {
    return `the input line is longer than ${this.maxLineBytes} bytes`;
  }

  /**
   * Writes an error answer the transport gives itself, after the answers the
   * server is already preparing for earlier lines (initialize, ping and
   * tools/list finish within the same turn), so a piped session reads its
   * initialize answer first. The end of input waits for it like any answer.
   */
  private answerDirectly(message: JSONRPCMessage): void {
    this.directPending++;
    setImmediate(() => {
      void this.send(message).finally(() => {
        this.directPending--;
        this.answered();
      });
    });
  }

  private closeWhenAnswered(): void {
    if (this.owed.size === 0 && this.directPending === 0) void this.close();
    else {
      const waitMs = this.options.answerWaitMs ?? ANSWER_WAIT_MS;
      const ranOut = (): void => {
        if (this.options.callsRunning?.() === true) {
          this.answerWait = setTimeout(ranOut, waitMs);
          return;
        }
        this.gaveUp = true;
        void this.close();
      };
      this.answerWait ??= setTimeout(ranOut, waitMs);
    }
  }

  /**
   * Ends the session early (a shutdown signal): nothing more is read, a line
   * not yet complete is dropped (its end may never come), the requests
   * already read are answered, and the transport closes once they are, or
   * after `graceMs` (also when the input had ended and answers were still
   * owed), whichever comes first.
   */
  endInput(graceMs: number): void {
    if (this.closed) return;
    this.stopReading();
    clearTimeout(this.answerWait);
    this.answerWait = undefined;
    if (this.owed.size === 0 && this.directPending === 0) void this.close();
    else {
      this.answerWait = setTimeout(() => {
        this.gaveUp = true;
        void this.close();
      }, graceMs);
    }
  }

  /** Reads nothing more; a line not yet complete is dropped. */
  private stopReading(): void {
    this.options.input.off('data', this.onData);
    this.options.input.off('end', this.onEnd);
    this.chunks = [];
    this.buffered = 0;
    this.held = undefined;
    this.endHeld = false;
    this.discarding = false;
    this.discardedTail = undefined;
    this.inputEnded = true;
  }

  /**
   * Whether the session closed with answers still owed because its wait ran
   * out (endInput's grace, or the end of input's answer wait): a call still
   * running, or a client not reading them, whose pending writes on the
   * output would keep the process alive.
   */
  get abandonedAnswers(): boolean {
    return this.gaveUp;
  }

  /**
   * A failed read (EIO on a terminal, ECONNRESET on a socket, EBADF on an fd
   * 0 opened for writing) ends the input without an end event: nothing more
   * will come, so the session ends as at the end of input, once the answers
   * owed are written. A line not yet complete is dropped (its end never
   * comes). Unless the client went away (a reset connection), the failure is
   * kept for the command to report: it is no end of session a client chose.
   */
  private readonly onInputError = (error: Error): void => {
    const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
    if (code !== 'ECONNRESET' && code !== 'EPIPE') this.inputFailure ??= code;
    this.options.logger.debug('reading the input failed; ending the session');
    if (this.closed || this.inputEnded) return;
    this.stopReading();
    this.closeWhenAnswered();
  };

  /**
   * The client closed its end of our output (EPIPE): nothing more can be
   * answered, so the session ends now rather than waiting for a drain that
   * never comes (ANSWER_WAIT_MS at the end of input, one listener per answer).
   */
  private readonly onOutputGone = (reason?: unknown): void => {
    if (this.closed) return;
    // A reader that went away (EPIPE) is a client ending the session; any
    // other write failure (ENOSPC, EIO) lost answers the client was owed.
    const code = reason instanceof Error ? ((reason as NodeJS.ErrnoException).code ?? 'unknown error') : undefined;
    if (code !== undefined && code !== 'EPIPE' && code !== 'ECONNRESET') this.outputFailure = code;
    this.options.logger.debug('the output closed; ending the session');
    void this.close();
  };

  /** The system code of a failure to write the output other than a reader going away, if one ended the session. */
  get outputError(): string | undefined {
    return this.outputFailure;
  }

  /** The system code of a failure to read the input other than a client going away, if one ended the session. */
  get inputError(): string | undefined {
    return this.inputFailure;
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closed) return;
    // Exact numbers: the tools/list schemas carry 2^63-1 bounds, and tool
    // results carry their numbers as stand-ins (tool-server.ts).
    const text = restoreExactNumbers(stringifyExact(message)) + '\n';
    // One answer at a time waits for a full pipe, the others queue behind it
    // in order (not one drain listener each).
    const turn = this.writing.then(() => this.writeLine(text));
    this.writing = turn;
    await turn;
    const id = (message as { id?: unknown }).id;
    if (('result' in message || 'error' in message) && (typeof id === 'string' || typeof id === 'number')) this.settle(id);
  }

  /**
   * Writes one line; resolves once the system has taken it (the write's
   * callback), or once the reader has gone (error, close). Not on write()'s
   * return value: a stream takes up to its high-water mark (16 KiB on a pipe)
   * into a buffer of its own, and a line sitting there, behind a pipe the
   * client never reads, counted as answered; a shutdown signal then found
   * nothing owed, closed the session, and left the process held open by that
   * write for good.
   */
  private writeLine(text: string): Promise<void> {
    const output = this.options.output;
    if (this.closed || output.destroyed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = (): void => {
        output.off('error', done);
        output.off('close', done);
        resolve();
      };
      output.on('error', done);
      output.on('close', done);
      output.write(text, done);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.answerWait);
    this.owed.clear();
    this.callsAtWork.clear();
    this.cancelledAtWork.clear();
    this.held = undefined;
    this.options.input.off('data', this.onData);
    this.options.input.off('end', this.onEnd);
    this.options.input.off('error', this.onInputError);
    this.options.output.off('close', this.onOutputGone);
    this.chunks = [];
    this.options.lossless.clear();
    this.onclose?.();
  }
}

/**
 * The id of a message that asks for an answer (an object with an `id` and
 * neither `result` nor `error`, so not a client's response), when it can be
 * written back exactly: a string, an integer, or a finite number. A null,
 * boolean or structured id, or one beyond binary64 (`1e400`), cannot.
 */
export function answerableId(message: JsonValue): string | number | bigint | undefined {
  if (!isJsonObject(message) || 'result' in message || 'error' in message) return undefined;
  const id = message['id'];
  if (typeof id === 'string' || typeof id === 'bigint') return id;
  return typeof id === 'number' && Number.isFinite(id) ? id : undefined;
}

/**
 * A line's text without one leading byte order mark (a Windows pipe or
 * editor may write one): RFC 8259 lets a parser ignore it, and the request
 * behind it is served instead of dropped as malformed.
 */
export function withoutByteOrderMark(text: string): string {
  return text.startsWith('\ufeff') ? text.slice(1) : text;
}

function isJsonRpcObject(value: unknown): value is JSONRPCMessage {
  return isPlainObject(value) && value['jsonrpc'] === '2.0';
}

/** An id token: a number whose integer part has up to 4300 digits (what the parser reads, Python's bound), or a short string. */
const ID_VALUE = /^\s*:\s*(-?(?:0|[1-9][0-9]{0,4299})(?:\.[0-9]{1,400})?(?:[eE][+-]?[0-9]{1,4})?|"(?:[^"\\]|\\.){0,256}")\s*[,}]/;

/**
 * The JSON-RPC id of a line that cannot be parsed whole (too long or too
 * deep), if it shows as a member of the top-level object within `text`.
 * Only the top level counts: an `"id"` inside params (a record's field, a
 * notification's payload) never does. Strings are skipped with their escapes.
 */
export function requestIdFromPrefix(text: string): string | number | bigint | undefined {
  let depth = 0;
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === '"') {
      let end = i + 1;
      while (end < text.length && text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      if (end >= text.length) return undefined;
      if (depth === 1 && expectKey && text.slice(i, end + 1) === '"id"') {
        return idFromToken(ID_VALUE.exec(text.slice(end + 1, end + 4600))?.[1]);
      }
      expectKey = false;
      i = end;
    } else if (char === '{') {
      depth++;
      expectKey = depth === 1;
    } else if (char === '[') {
      depth++;
    } else if (char === '}' || char === ']') {
      depth--;
    } else if (char === ',' && depth === 1) {
      expectKey = true;
    }
  }
  return undefined;
}

/** How much of an oversized line's start is searched for its id. */
const PREFIX_BYTES = 4096;

/** How much of a discarded line's end is kept to find an id written last. */
const TAIL_BYTES = 4608;

/**
 * An oversized line is answered -32600 with the id at its start (found in
 * `line`'s first bytes, as soon as it overflows), else with the one written
 * last (found in `end`, its last bytes without the newline, at its end).
 * Undefined: no answer comes. The aigpt gate waits for those answers by the same rule.
 */
export function idAtLineStart(line: Buffer): string | number | bigint | undefined {
  return requestIdFromPrefix(line.subarray(0, PREFIX_BYTES).toString('utf8'));
}

/** See idAtLineStart. */
export function idAtLineEnd(end: Buffer): string | number | bigint | undefined {
  return requestIdFromSuffix(lastBytes(end).toString('utf8'));
}

/** The last `count` bytes of `buffer` (copied out of a longer one, so the rest can be collected); by default as many as an id written last is looked for in. */
export function lastBytes(buffer: Buffer, count = TAIL_BYTES): Buffer {
  return buffer.length <= count ? buffer : Buffer.from(buffer.subarray(buffer.length - count));
}

const TRAILING_ID = /[{,]\s*"id"\s*:\s*(-?(?:0|[1-9][0-9]{0,4299})(?:\.[0-9]{1,400})?(?:[eE][+-]?[0-9]{1,4})?|"(?:[^"\\]|\\.){0,256}")\s*\}\s*$/;

/**
 * The JSON-RPC id of a line that cannot be parsed whole, when `"id"` is the
 * last member of the top-level object (the MCP SDK writes
 * `{"method":...,"params":...,"jsonrpc":"2.0","id":7}`). Only a member
 * directly before the line's final `}` counts, so an `"id"` nested in params
 * (followed by more closing brackets) never does.
 */
export function requestIdFromSuffix(text: string): string | number | bigint | undefined {
  return idFromToken(TRAILING_ID.exec(text)?.[1]);
}

/** The id an id token (a number, or a JSON string literal) stands for; an integer beyond 2^53 stays exact, a number beyond binary64 is none. */
function idFromToken(token: string | undefined): string | number | bigint | undefined {
  if (!token) return undefined;
  if (/^-?[0-9]+$/.test(token)) {
    const integer = BigInt(token);
    return Number.isSafeInteger(Number(integer)) ? Number(integer) : integer;
  }
  if (!token.startsWith('"')) {
    const number = Number(token);
    return Number.isFinite(number) ? number : undefined;
  }
  try {
    return JSON.parse(token) as string;
  } catch {
    return undefined;
  }
}

/** JSON-RPC -32600, with the reason when the client can act on it; a bigint id is written exactly by send(). */
function invalidRequestResponse(id: string | number | bigint, reason?: string): JSONRPCMessage {
  const message = reason === undefined ? 'Invalid Request' : `Invalid Request: ${reason}`;
  return { jsonrpc: '2.0', id, error: { code: -32600, message } } as unknown as JSONRPCMessage;
}
