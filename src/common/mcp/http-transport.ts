// MCP over Streamable HTTP on node:http: one endpoint, request checks against
// Host/Origin allow-lists, bounded lossless body parsing, one SDK Server per
// stateful session and idle expiry. Knows no system: the caller supplies the
// settings and a factory for each session's tool server.

import { randomUUID } from 'node:crypto';
import { BlockList, isIP, type Socket } from 'node:net';
import { isUtf8 } from 'node:buffer';
import { createServer, type IncomingMessage, type Server as NodeHttpServer, type ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isJsonContentType as sdkIsJsonContentType } from '@modelcontextprotocol/sdk/shared/mediaType.js';
import {
  CancelledNotificationSchema,
  isInitializeRequest,
  isJSONRPCErrorResponse,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  JSONRPCMessageSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCMessage,
  type MessageExtraInfo,
} from '@modelcontextprotocol/sdk/types.js';
import { holdsNumberStandIn, isJsonObject, isPlainObject, JsonError, parseJson, restoreExactNumbers, stringifyExact, toPlainJson, withBigIntStandIns, type JsonObject, type JsonValue } from '../json.js';
import type { Logger } from '../logger.js';
import { invalidParamsResponse, splitToolArguments, type RequestKey } from './lossless-arguments.js';
import { answerableId, MAX_REQUEST_DEPTH, requestIdFromPrefix, withoutByteOrderMark } from './stdio-transport.js';
import { startsToolCall } from './tool-calls.js';
import { integerVersionAsText, type ToolServer } from './tool-server.js';

/** Same bound as a stdio line, so a request that fits one transport fits the other. */
export const DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024;
/** How long shutdown waits for tool calls already running before it closes their sessions. */
const DEFAULT_SHUTDOWN_GRACE_MS = 5_000;
/** How much of a refused request's body is read away before the refusal is sent. */
const DISCARD_LIMIT_BYTES = 64 * 1024 * 1024;
const DISCARD_LIMIT_MS = 10_000;
/**
 * How often an open SSE response carries a comment line, so idle streams stay
 * alive (as the reference's SSE responses do). The SDK transport writes them
 * (`: keepalive`, its default is this same interval); the listener only sets it.
 */
const DEFAULT_KEEPALIVE_MS = 15_000;

/**
 * How long an idle keep-alive connection stays open (Node's default is 5 s).
 * A client whose event loop is busy longer than that between two requests
 * (the SDK client compiles every tool's output schema after tools/list; an
 * agent's own work) reuses a socket the listener already closed, and the
 * SDK does not retry that POST: the call fails with "other side closed".
 * fetch itself drops an idle socket after 4 s when no hint says otherwise
 * (the SDK transport's `Connection: keep-alive` header keeps Node from
 * sending one), so the longer wait matters to a client too busy to do so.
 */
const IDLE_CONNECTION_MS = 60_000;

/**
 * How long a POST's body may take to arrive once its bytes are reserved
 * (D43). Node ends an incomplete request only after 300 s, and a body held
 * open that long kept its share of the body budget from every other POST.
 * A JSON-RPC body is sent in one go: over loopback even 8 MiB takes
 * milliseconds.
 */
const BODY_DEADLINE_MS = 30_000;

export interface HttpTransportOptions {
  /** Literal IP to bind. */
  readonly host: string;
  /** TCP port; 0 picks a free one (tests). */
  readonly port: number;
  /** The one endpoint path, for example `/mcp`. */
  readonly path: string;
  /** Host header allow-list: `name`, `name:port`, `name:*` or the bracketed IPv6 forms; case-insensitive. */
  readonly allowedHosts: readonly string[];
  /** Origin allow-list; a request without Origin is accepted, any other Origin must be listed. */
  readonly allowedOrigins: readonly string[];
  /** A session with no request for this long is closed; its id then gets 404. */
  readonly sessionIdleTimeoutMs: number;
  /** Binding a non-loopback address also needs a non-empty Host allow-list. */
  readonly allowNonLoopback: boolean;
  /**
   * Builds the tool server of one new session (one SDK Server per session);
   * one that passes `hooks.onCallSettled` on has its calls counted until
   * their handlers end (see PlaceHold).
   */
  createSession(hooks: SessionHooks): ToolServer;
  /** The MCP revisions the session servers negotiate (default: the SDK's); `MCP-Protocol-Version` must name one. */
  readonly protocolVersions?: readonly string[];
  /** The data member of -32602 answers given before a session exists (none when undefined). */
  readonly invalidParamsData?: string;
  readonly logger: Logger;
  readonly maxBodyBytes?: number;
  readonly maxDepth?: number;
  readonly shutdownGraceMs?: number;
  /** Interval of the SDK transport's `: keepalive` comments on open SSE responses (default 15 s). */
  readonly keepAliveMs?: number;
  /** Called after a session has been closed, with the reason (tests and diagnostics). */
  readonly onSessionClosed?: (reason: SessionCloseReason) => void;
  /** Open sessions at most (default MAX_SESSIONS); a new one then replaces the least recently used idle one. */
  readonly maxSessions?: number;
  /** Request-body bytes all POSTs together may hold at once (default BODY_BUDGET_BODIES bodies of maxBodyBytes). */
  readonly bodyBudgetBytes?: number;
  /** POSTs whose response has not ended that the listener serves at once (default MAX_POSTS_ANSWERING); later ones wait. */
  readonly maxPostsAnswering?: number;
  /** How long a POST body may take to arrive once reserved (default BODY_DEADLINE_MS); later, 408. */
  readonly bodyDeadlineMs?: number;
  /** How long a connection may stay open without sending a request, first or next (default IDLE_CONNECTION_MS). */
  readonly idleConnectionMs?: number;
}

export type SessionCloseReason = 'deleted' | 'expired' | 'shutdown' | 'evicted';

/**
 * Open sessions one listener keeps. Each holds an MCP server (about 40 KB),
 * and a client that initializes for every connection without DELETE leaves
 * one behind each time until the idle timeout (30 minutes by default): at a
 * few hundred a second the server would run out of memory. Past the cap a
 * new session closes the least recently used idle one (its id then gets 404,
 * as an expired one does); with every session busy, initialize gets 503.
 */
export const MAX_SESSIONS = 1000;

/**
 * Request bodies of the largest size the listener reads and keeps at once
 * (decisions D43). Each POST reserves its declared Content-Length (the body
 * bound when it declares none, cut to the bytes that came once read) before
 * it reads a byte and holds it until its handling ends; one that does not
 * fit waits, first come first served,
 * without reading its socket. A body costs about three times its size while
 * it is read and parsed (about 26 MB for 8 MiB), so without a bound 16
 * concurrent 8 MiB bodies took the server past 270 MiB of RSS, 32 past 370.
 */
export const BODY_BUDGET_BODIES = 4;

/**
 * POSTs the listener serves at once, counted from admission to the end of
 * their response (decisions.md D57). The body budget is given back once the
 * SDK has the message, but the answer is written later and stays in memory
 * until the client reads it: clients that sent calls without reading their
 * answers grew the server by about 5 MB per unread page of records, without
 * a ceiling. Past the bound, a POST waits, reading nothing, for one to end.
 */
export const MAX_POSTS_ANSWERING = 32;

export interface HttpListener {
  /** The bound address (the real port when 0 was asked for). */
  readonly host: string;
  readonly port: number;
  /** Open sessions right now. */
  sessionCount(): number;
  /** Stops accepting, lets running calls finish (bounded), closes every session and connection. */
  close(): Promise<void>;
}

export class HttpExposureError extends Error {
  constructor() {
    super('A non-loopback address needs allow_non_loopback and an explicit Host allow-list.');
    this.name = 'HttpExposureError';
  }
}

/** A response carrying a tools/list result (whose schemas may hold bigint bounds). */
function listsTools(message: JSONRPCMessage): boolean {
  const result = (message as { result?: unknown }).result;
  return typeof result === 'object' && result !== null && Array.isArray((result as { tools?: unknown }).tools);
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** True for 127.0.0.0/8 and ::1; anything else (including names) is treated as exposed. */
export function isLoopbackAddress(host: string): boolean {
  const family = isIP(host);
  if (family === 4) return LOOPBACK.check(host, 'ipv4');
  if (family === 6) return LOOPBACK.check(host, 'ipv6');
  return false;
}

/** Operations spec §6.3: loopback, or an explicit opt-in together with a Host allow-list. */
export function exposureAllowed(host: string, allowNonLoopback: boolean, allowedHosts: readonly string[]): boolean {
  return isLoopbackAddress(host) || (allowNonLoopback && allowedHosts.length > 0);
}

// ---------------------------------------------------------------------------
// Request checks (operations spec §6.2). Pure, so tests can table them.

/**
 * The first Content-Type gate of a POST (before Host and Origin, refused
 * with 400): the value starts with `application/json`, in any case. What
 * passes here but is no JSON media type (`application/jsonl`) is refused
 * later with 415 by `isJsonContentType`, as the reference's SDK does.
 */
export function startsAsJsonContentType(header: string | undefined): boolean {
  return header !== undefined && header.trim().toLowerCase().startsWith('application/json');
}

/**
 * `application/json` with optional parameters, the media type compared
 * case-insensitively: the SDK transport's own test, so that every 415 is the
 * listener's (a comma in the parameters, `application/json; a=b, text/plain`,
 * passed a looser test here and met the SDK's 415, with another code).
 */
export function isJsonContentType(header: string | undefined): boolean {
  return header !== undefined && sdkIsJsonContentType(header);
}

/**
 * Host header against the allow-list: exact (case-insensitive), or `name:*`
 * for `name:<port>`, a port being 0-65535 (a larger number is no port, and
 * the SDK's request adapter could not read such a Host as a URL).
 */
export function isAllowedHost(header: string | undefined, allowed: readonly string[]): boolean {
  if (header === undefined || header === '') return false;
  const host = header.toLowerCase();
  for (const entry of allowed) {
    const candidate = entry.toLowerCase();
    if (candidate.endsWith(':*')) {
      // A wildcard matches ports only: a Host of the entry's own text (`name:*`) is no host.
      const base = candidate.slice(0, -1);
      const port = host.slice(base.length);
      if (host.startsWith(base) && /^[0-9]{1,5}$/.test(port) && Number(port) <= 65535) return true;
    } else if (candidate === host) return true;
  }
  return false;
}

/**
 * Origin against the allow-list. Absent (or empty, which no browser sends) is
 * accepted for non-browser clients; anything else must be listed. Scheme and
 * host are case-insensitive in an origin, so the comparison is too.
 */
export function isAllowedOrigin(header: string | undefined, allowed: readonly string[]): boolean {
  if (header === undefined || header === '') return true;
  const origin = header.toLowerCase();
  return allowed.some((entry) => entry.toLowerCase() === origin);
}

/** An absent `MCP-Protocol-Version` is accepted (the client predates the header); a present one must be listed. */
export function isSupportedProtocolVersion(header: string | undefined, supported: readonly string[]): boolean {
  return header === undefined || supported.includes(header);
}

/**
 * The media ranges of an Accept header as the reference's SDK reads them:
 * split at commas, each trimmed, and one that starts with the media type
 * (parameters such as `q` allowed) counts. Case-sensitive, as there.
 */
export function acceptedMediaTypes(header: string | undefined): { readonly json: boolean; readonly eventStream: boolean } {
  const ranges = (header ?? '').split(',').map((range) => range.trim());
  return { json: ranges.some((range) => range.startsWith('application/json')), eventStream: ranges.some((range) => range.startsWith('text/event-stream')) };
}

/**
 * True when `requestPath` is the endpoint path with its trailing slashes
 * removed or one slash added (`/mcp/` for `/mcp`, `/mcp` for `/mcp/`): such a
 * request is redirected to the endpoint, as the reference's router does, so a
 * client configured with either spelling of the URL reaches it.
 */
export function isSlashVariant(requestPath: string, path: string): boolean {
  if (requestPath === '/' || requestPath === path) return false;
  const variant = requestPath.endsWith('/') ? requestPath.replace(/\/+$/, '') : `${requestPath}/`;
  return variant === path;
}

function singleHeader(value: string | string[] | undefined): string | undefined {
  // A repeated header node keeps as an array is ambiguous: treat it as wrong.
  return Array.isArray(value) ? undefined : value;
}

/**
 * The Content-Type of a request that sent exactly one Content-Type line.
 * node keeps only the first of repeated lines in `headers`, while the SDK's
 * request adapter reads them joined (and answers 415 with its own code), so
 * a repeated one is counted here and treated as no JSON Content-Type.
 */
function soleContentType(req: IncomingMessage): string | undefined {
  const lines = req.headersDistinct['content-type'];
  return lines?.length === 1 ? lines[0] : undefined;
}

/** The path and query of an absolute-form target; any other target as it is (the endpoint check answers it). */
function originForm(target: string): string {
  try {
    const parsed = new URL(target);
    if (parsed.protocol === 'http:' || parsed.protocol === 'https:') return `${parsed.pathname}${parsed.search}`;
  } catch {
    // Not a URL: left to the endpoint check (404).
  }
  return target;
}

/**
 * The Host of a request that sent exactly one Host line. node keeps only the
 * first of repeated lines in `headers.host`, so a second one (which RFC 9112
 * §3.2 makes the request invalid with) would pass unseen; it is counted here.
 */
function soleHost(req: IncomingMessage): string | undefined {
  const lines = req.headersDistinct['host'];
  return lines?.length === 1 ? lines[0] : undefined;
}

// ---------------------------------------------------------------------------

type StagedCall = { readonly invalid: true } | { readonly invalid: false; readonly args: JsonObject; readonly token: string };

/** What the listener asks of a session's tool server. */
export interface SessionHooks {
  /** Called when the handler of the tools/call request with this id has ended. */
  onCallSettled(id: string | number): void;
}

/**
 * A POST's place among those answering (MAX_POSTS_ANSWERING), given back
 * once its response has closed and every tool call it carried has ended. A
 * call's handler outlives its response when the client cancels it (the SDK
 * drops the answer but cannot stop the call) or hangs up: freed with the
 * response, call-and-cancel pairs had any number of calls running at once.
 */
interface PlaceHold {
  count: number;
  readonly release: () => void;
}

function dropHold(hold: PlaceHold): void {
  hold.count--;
  if (hold.count === 0) hold.release();
}

interface Session {
  readonly transport: StreamableHTTPServerTransport;
  readonly tools: ToolServer;
  /** The place of the POST each request id came in, while that POST is handled. */
  readonly postPlaces: Map<RequestKey, PlaceHold>;
  /** The places held for calls whose handlers run, by request id (in arrival order per id). */
  readonly callPlaces: Map<RequestKey, PlaceHold[]>;
  /** tools/call arguments parsed from a POST body, waiting for the SDK to route that request. */
  readonly staged: Map<RequestKey, StagedCall>;
  /** Each request id of an open POST stream not yet answered, to the set of all such ids of that POST. */
  readonly unanswered: Map<RequestKey, Set<RequestKey>>;
  /** The unanswered requests the client has cancelled: the SDK's Server never answers those. */
  readonly cancelled: Set<RequestKey>;
  /** Ids of requests handed to the Server and neither answered nor cancelled yet, whether or not a client still waits on them. */
  readonly running: Set<RequestKey>;
  id?: string;
  /** True while the session's GET stream is open (at most one). */
  listening: boolean;
  /** POST/DELETE requests being handled; a session with one running is never idle. */
  busy: number;
  /** performance.now() of the last activity: idleness is measured on a monotonic clock, untouched by wall-clock steps. */
  lastActivity: number;
  timer?: NodeJS.Timeout | undefined;
  closed: boolean;
}

type BodyOutcome = { readonly ok: true; readonly text: string } | { readonly ok: false; readonly status: 400 | 408 | 413; readonly undecodable?: string };

/**
 * Reads and discards what is left of a request body, up to a bound in bytes
 * and time. A refusal is written after this: closing a socket with unread
 * data makes the kernel reset the connection, and the client would lose the
 * status it is owed. Past the bound the refusal goes out anyway.
 */
function discardBody(req: IncomingMessage): Promise<void> {
  if (req.complete || req.readableEnded || req.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    let seen = 0;
    const finish = (): void => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', finish);
      req.off('close', finish);
      req.off('error', finish);
      req.pause();
      resolve();
    };
    const onData = (chunk: Buffer): void => {
      seen += chunk.length;
      if (seen > DISCARD_LIMIT_BYTES) finish();
    };
    const timer = setTimeout(finish, DISCARD_LIMIT_MS);
    req.on('data', onData);
    req.once('end', finish);
    req.once('close', finish);
    req.once('error', finish);
    req.resume();
  });
}

/** An HTTP/1.1 request without Host (RFC 9112 §3.2): 400 in plain text, and the connection closed. */
function missingHost(res: ServerResponse): void {
  const body = 'Invalid HTTP request received.';
  res.writeHead(400, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': String(Buffer.byteLength(body)), Connection: 'close' });
  res.end(body);
}

/**
 * The SDK transport says `Connection: keep-alive` on every response it
 * writes (its SSE streams), also to a client that asked to close after its
 * request, and the socket then stayed open: such a request is answered
 * `close`, and closed, as Node answers it everywhere else.
 */
function closingWhenAsked(res: ServerResponse): void {
  if (!/(^|,)\s*close\s*(,|$)/i.test(res.req.headers.connection ?? '')) return;
  editingHeadHeaders(res, (record) => {
    let named = false;
    for (const name of Object.keys(record)) {
      if (name.toLowerCase() !== 'connection') continue;
      record[name] = 'close';
      named = true;
    }
    // Removing a stored Connection header also stops node from adding its
    // own `close`, so an answer whose headers named none went out without it.
    if (!named) record['Connection'] = 'close';
    res.removeHeader('connection');
  });
}

/** Lets `edit` change the header objects handed to `res.writeHead` before they go out. */
function editingHeadHeaders(res: ServerResponse, edit: (record: Record<string, unknown>) => void): void {
  const writeHead = res.writeHead.bind(res) as (status: number, ...rest: unknown[]) => ServerResponse;
  (res as unknown as { writeHead: typeof writeHead }).writeHead = (status, ...rest) => {
    for (const headers of rest) {
      if (isPlainObject(headers)) edit(headers);
    }
    return writeHead(status, ...rest);
  };
}

/**
 * Turns the number stand-ins of the response events written to `res` back
 * into exact numbers. The SDK writes each SSE event as one chunk; an SSE
 * response that completed before its headers went out gets a Content-Length
 * from the HTTP adapter, which the shorter text would contradict, so SSE
 * responses drop it (chunked encoding carries them instead).
 */
function writingExactNumbers(res: ServerResponse): void {
  const write = res.write.bind(res) as (chunk: unknown, ...rest: unknown[]) => boolean;
  const restored = (chunk: unknown): unknown => {
    if (typeof chunk === 'string') return restoreExactNumbers(chunk);
    if (chunk instanceof Uint8Array && holdsNumberStandIn(chunk)) return Buffer.from(restoreExactNumbers(Buffer.from(chunk).toString('utf8')), 'utf8');
    return chunk;
  };
  (res as unknown as { write: typeof write }).write = (chunk, ...rest) => write(restored(chunk), ...rest);
  editingHeadHeaders(res, (record) => {
    const type = Object.entries(record).find(([name]) => name.toLowerCase() === 'content-type')?.[1];
    if (typeof type === 'string' && type.startsWith('text/event-stream')) {
      for (const name of Object.keys(record)) if (name.toLowerCase() === 'content-length') delete record[name];
    }
  });
}

async function rejection(
  res: ServerResponse,
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {},
  id: RequestKey | bigint | null = null,
  data?: string,
): Promise<void> {
  if (res.headersSent) {
    res.end();
    return;
  }
  await discardBody(res.req);
  writeRefusal(res, status, code, message, headers, id, data);
}

/**
 * The refusal of a POST whose body stopped arriving before its deadline:
 * nothing more is read from it, and its connection is closed once the answer
 * is out (or at once, should the client not read it either).
 */
function bodyTimedOut(res: ServerResponse): void {
  const socket = res.req.socket;
  res.once('finish', () => socket.destroy());
  res.once('close', () => socket.destroy());
  writeRefusal(res, 408, -32000, 'Request Timeout');
}

function writeRefusal(res: ServerResponse, status: number, code: number, message: string, headers: Record<string, string> = {}, id: RequestKey | bigint | null = null, data?: string): void {
  // An answer to a request that shows its id is written as the stdio transport writes it.
  const error = data === undefined ? { code, message } : { code, message, data };
  const body = Buffer.from(stringifyExact(id === null ? { jsonrpc: '2.0', error, id } : { jsonrpc: '2.0', id, error }));
  // The connection closes after a refusal; the client opens a fresh one.
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': String(body.length), Connection: 'close', ...headers });
  res.end(body);
}

/** 307 to `location` (a path on this listener), with no body; a request body is read away first, as for a refusal. */
async function redirection(res: ServerResponse, location: string): Promise<void> {
  await discardBody(res.req);
  res.writeHead(307, { Location: location, 'Content-Length': '0', Connection: 'close' });
  res.end();
}

/**
 * The body bytes a POST reserves before it is read: its declared
 * Content-Length, or the body bound when it declares none (chunked). A body
 * declared larger than the bound reserves nothing: it is refused with 413
 * and read away without being kept.
 */
function bodyReservation(req: IncomingMessage, maxBytes: number): number {
  const declared = req.headers['content-length'];
  const size = declared === undefined ? maxBytes : Number(declared);
  if (!Number.isSafeInteger(size) || size < 0) return maxBytes;
  return size > maxBytes ? 0 : size;
}

interface BudgetWaiter {
  readonly bytes: number;
  grant(granted: boolean): void;
}

/** Gives reserved bytes back: all of them, or all but `keep`, which a later call gives back. */
type BudgetRelease = (keep?: number) => void;

/**
 * A budget all POSTs together draw on: request-body bytes (BODY_BUDGET_BODIES)
 * or POSTs answering (MAX_POSTS_ANSWERING). Reservations are granted in
 * arrival order: one that does not fit waits, and so does every later one,
 * however small, so a large body is never passed over for good by a stream
 * of small ones. A waiting request reads nothing from its socket (TCP holds
 * its client back) and leaves the queue when its client goes away.
 */
class FifoBudget {
  private held = 0;
  private readonly waiting: BudgetWaiter[] = [];

  constructor(private readonly total: number) {}

  /**
   * Resolves with the function that gives the bytes back once they are
   * reserved, or undefined when the client went away (or the listener
   * closed) first. A reservation larger than the whole budget is cut to it.
   */
  reserve(wanted: number, req: IncomingMessage, res: ServerResponse): Promise<BudgetRelease | undefined> {
    const bytes = Math.min(wanted, this.total);
    if (bytes === 0) return Promise.resolve(() => undefined);
    if (req.destroyed || req.socket.destroyed) return Promise.resolve(undefined);
    if (this.waiting.length === 0 && this.held + bytes <= this.total) {
      this.held += bytes;
      return Promise.resolve(this.releaser(bytes));
    }
    return new Promise((resolve) => {
      const leave = (): void => {
        const at = this.waiting.indexOf(waiter);
        if (at === -1) return;
        this.waiting.splice(at, 1);
        waiter.grant(false);
        // The head leaving may let the ones behind it start.
        this.grantWaiting();
      };
      const waiter: BudgetWaiter = {
        bytes,
        grant: (granted) => {
          req.off('close', leave);
          res.off('close', leave);
          resolve(granted ? this.releaser(bytes) : undefined);
        },
      };
      this.waiting.push(waiter);
      req.once('close', leave);
      res.once('close', leave);
    });
  }

  /** Turns every waiting request away (the listener is closing). */
  refuseWaiting(): void {
    for (const waiter of this.waiting.splice(0)) waiter.grant(false);
  }

  private releaser(bytes: number): BudgetRelease {
    let kept = bytes;
    return (keep = 0) => {
      const given = kept - Math.min(Math.max(keep, 0), kept);
      if (given === 0) return;
      kept -= given;
      this.held -= given;
      this.grantWaiting();
    };
  }

  private grantWaiting(): void {
    for (let next = this.waiting[0]; next !== undefined && this.held + next.bytes <= this.total; next = this.waiting[0]) {
      this.waiting.shift();
      this.held += next.bytes;
      next.grant(true);
    }
  }
}

/** Reads at most `maxBytes` within `deadlineMs`; a declared or actual larger body stops the read at once, as does the deadline. */
function readBody(req: IncomingMessage, maxBytes: number, deadlineMs: number): Promise<BodyOutcome> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > maxBytes) return Promise.resolve({ ok: false, status: 413 });
  // A request whose client left while it waited for the body budget: nothing more will come.
  if (req.destroyed) return Promise.resolve({ ok: false, status: 400 });
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let received = 0;
    let done = false;
    const finish = (outcome: BodyOutcome): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onAbort);
      req.off('close', onAbort);
      resolve(outcome);
    };
    const onData = (chunk: Buffer): void => {
      received += chunk.length;
      if (received > maxBytes) {
        req.pause();
        finish({ ok: false, status: 413 });
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      const bytes = Buffer.concat(chunks, received);
      if (isUtf8(bytes)) finish({ ok: true, text: withoutByteOrderMark(bytes.toString('utf8')) });
      else finish({ ok: false, status: 400, undecodable: bytes.toString('utf8') });
    };
    const onAbort = (): void => finish({ ok: false, status: 400 });
    const timer = setTimeout(() => {
      req.pause();
      finish({ ok: false, status: 408 });
    }, deadlineMs);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onAbort);
    req.on('close', onAbort);
  });
}

/** The id of a request that is no valid JSON-RPC message, as the stdio transport answers it: a string or a finite number, exactly as sent. */
function invalidRequestId(message: JsonValue): RequestKey | bigint | null {
  return answerableId(message) ?? null;
}

function carriesExactNumbers(message: JsonValue): boolean {
  return isJsonObject(message) && (message['method'] === 'tools/list' || message['method'] === 'tools/call');
}

/** An initialize request: one sent as a notification (no id) could never learn its session id, so it opens none. */
function isInitialize(message: JsonValue): boolean {
  return isJsonObject(message) && message['method'] === 'initialize' && Object.hasOwn(message, 'id');
}

/** The SDK transport's map from a request to the stream that answers it (SDK 1.32, pinned). */
type StreamRoutes = { _webStandardTransport?: { _requestToStreamMapping?: unknown } };

/** The SDK transport's own flag (SDK 1.32, pinned): true once its session was initialized. */
type InitializedFlag = { _webStandardTransport?: { _initialized?: unknown } };

/**
 * Lets an `initialize` through in a session that already has one. The SDK
 * transport refuses it (400, "Server already initialized"); the reference's
 * SDK hands it to the session's server, which answers it again, as a second
 * initialize is answered over stdio. The session keeps its id (the id
 * generator returns it). Returns a function that restores the flag should
 * the SDK not get as far as setting it again.
 */
function allowReinitialize(transport: StreamableHTTPServerTransport): () => void {
  const inner = (transport as unknown as InitializedFlag)._webStandardTransport;
  if (inner === undefined || typeof inner._initialized !== 'boolean') return () => undefined;
  inner._initialized = false;
  return () => {
    inner._initialized = true;
  };
}

/** Starts the listener; rejects when the exposure rules refuse the address or the bind fails. */
export async function startHttpTransport(options: HttpTransportOptions): Promise<HttpListener> {
  if (!exposureAllowed(options.host, options.allowNonLoopback, options.allowedHosts)) throw new HttpExposureError();
  const { logger } = options;
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const maxDepth = options.maxDepth ?? MAX_REQUEST_DEPTH;
  const idleMs = options.sessionIdleTimeoutMs;
  const keepAliveMs = options.keepAliveMs ?? DEFAULT_KEEPALIVE_MS;
  // Checked here rather than by the SDK's transport, which accepts every
  // revision it knows (2024-10-07 too) whatever the server negotiates.
  const protocolVersions = options.protocolVersions ?? SUPPORTED_PROTOCOL_VERSIONS;
  const versionRefusal = `Bad Request: Unsupported protocol version (supported versions: ${protocolVersions.join(', ')})`;
  const refusesVersion = (req: IncomingMessage): boolean => !isSupportedProtocolVersion(singleHeader(req.headers['mcp-protocol-version']), protocolVersions);
  const sessions = new Map<string, Session>();
  const maxSessions = options.maxSessions ?? MAX_SESSIONS;
  const bodyBudget = new FifoBudget(options.bodyBudgetBytes ?? BODY_BUDGET_BODIES * maxBodyBytes);
  const answering = new FifoBudget(options.maxPostsAnswering ?? MAX_POSTS_ANSWERING);
  let closing = false;
  let busyRequests = 0;
  const quietWaiters: (() => void)[] = [];

  function scheduleExpiry(session: Session): void {
    clearTimeout(session.timer);
    if (session.closed || session.busy > 0) return;
    session.timer = setTimeout(() => {
      if (session.closed || session.busy > 0) return;
      if (performance.now() - session.lastActivity >= idleMs) void closeSession(session, 'expired');
      else scheduleExpiry(session);
    }, Math.max(0, session.lastActivity + idleMs - performance.now()));
    // An idle session must not keep the process alive.
    session.timer.unref();
  }

  function touch(session: Session, delta: 1 | -1 | 0): void {
    session.busy += delta;
    session.lastActivity = performance.now();
    scheduleExpiry(session);
  }

  /**
   * The SDK ends a POST's SSE stream once every request on it is answered,
   * but its Server sends no answer to a cancelled request: a stream whose
   * only unanswered requests are cancelled would stay open (and its session
   * busy, never expiring) until the client hung up. End it instead.
   */
  function endIfOnlyCancelled(session: Session, group: Set<RequestKey>): void {
    const [first] = group;
    if (first === undefined || ![...group].every((id) => session.cancelled.has(id))) return;
    session.transport.closeSSEStream(first);
    // The SDK forgets a request's stream only when it answers it, and a
    // cancelled one is never answered: without this a long session kept one
    // entry per cancelled request for good.
    const routes = (session.transport as unknown as StreamRoutes)._webStandardTransport?._requestToStreamMapping;
    if (routes instanceof Map) for (const id of group) routes.delete(id);
  }

  function answered(session: Session, id: RequestKey): void {
    const group = session.unanswered.get(id);
    if (!group) return;
    session.unanswered.delete(id);
    group.delete(id);
    endIfOnlyCancelled(session, group);
  }

  async function closeSession(session: Session, reason: SessionCloseReason): Promise<void> {
    if (session.closed) return;
    session.closed = true;
    clearTimeout(session.timer);
    if (session.id !== undefined) sessions.delete(session.id);
    session.staged.clear();
    session.unanswered.clear();
    session.cancelled.clear();
    session.running.clear();
    session.tools.lossless.clear();
    try {
      // Closes the transport too, which ends the session's open SSE streams.
      await session.tools.server.close();
    } catch {
      logger.warn('an MCP session did not close cleanly');
    }
    if (session.id !== undefined) {
      logger.debug(`an MCP session was closed (${reason})`);
      options.onSessionClosed?.(reason);
    }
  }

  /** A call's handler has ended: its POST's place no longer waits for it. */
  function callSettled(session: Session, id: RequestKey): void {
    const holds = session.callPlaces.get(id);
    const hold = holds?.shift();
    if (holds !== undefined && holds.length === 0) session.callPlaces.delete(id);
    if (hold !== undefined) dropHold(hold);
  }

  async function openSession(): Promise<Session> {
    // No call starts before the session below exists (the Server is connected after it).
    const tools = options.createSession({ onCallSettled: (id) => callSettled(session, id) });
    const transport = new StreamableHTTPServerTransport({
      // 32 lowercase hex digits (a UUID4 without dashes), the form of the
      // reference's ids. A second initialize in the session
      // (allowReinitialize) keeps its id.
      sessionIdGenerator: () => session.id ?? randomUUID().replaceAll('-', ''),
      keepAliveMs,
      // The listener has checked Host and Origin already, with the spec's status codes.
      enableDnsRebindingProtection: false,
      onsessioninitialized: (id) => {
        if (session.id !== undefined) return;
        session.id = id;
        sessions.set(id, session);
        logger.debug('an MCP session was opened');
      },
    });
    const session: Session = { transport, tools, postPlaces: new Map(), callPlaces: new Map(), staged: new Map(), unanswered: new Map(), cancelled: new Set(), running: new Set(), listening: false, busy: 0, lastActivity: performance.now(), closed: false };
    // The SDK's transport serialises with JSON.stringify, which refuses the
    // bigint bounds of a tools/list result: they travel as stand-in strings
    // and the response stream writes them back as exact integers.
    const sdkSend = transport.send.bind(transport);
    transport.send = async (message, sendOptions) => {
      try {
        await sdkSend(listsTools(message) ? (withBigIntStandIns(message) as JSONRPCMessage) : message, sendOptions);
      } finally {
        if ((isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) && message.id !== undefined) {
          session.running.delete(message.id);
          answered(session, message.id);
        }
      }
    };
    // Set before connect: the SDK's Server chains its own handler after this one.
    transport.onclose = () => void closeSession(session, 'deleted');
    tools.server.onerror = () => logger.debug('an MCP protocol error was ignored');
    await tools.server.connect(transport);
    // The SDK hands each checked message to this handler; a tools/call takes
    // its lossless arguments on the way, or is answered -32602 without ever
    // reaching the Server (whose own error would quote the input).
    const deliver = transport.onmessage;
    transport.onmessage = (message: JSONRPCMessage, extra?: MessageExtraInfo) => {
      if (isJSONRPCRequest(message)) session.running.add(message.id);
      if (isJSONRPCRequest(message) && message.method === 'tools/call') {
        const staged = session.staged.get(message.id);
        session.staged.delete(message.id);
        if (staged?.invalid) {
          transport.send(invalidParamsResponse(message.id, tools.invalidParamsData)).catch(() => logger.debug('an MCP response could not be delivered'));
          return;
        }
        if (staged?.invalid === false) tools.lossless.put(staged.token, staged.args);
      }
      // A call holds its POST's place until its handler ends (see PlaceHold).
      const hold = tools.reportsSettledCalls && isJSONRPCRequest(message) && startsToolCall(message) ? session.postPlaces.get(message.id) : undefined;
      if (hold !== undefined && isJSONRPCRequest(message)) {
        hold.count++;
        const holds = session.callPlaces.get(message.id);
        if (holds === undefined) session.callPlaces.set(message.id, [hold]);
        else holds.push(hold);
      }
      deliver?.(message, extra);
      // The Server drops a cancelled request's answer only for a cancellation
      // its own schema accepts and whose requestId is truthy: the same test here.
      const cancel = CancelledNotificationSchema.safeParse(message);
      const cancelledId = cancel.success ? cancel.data.params.requestId : undefined;
      // A cancelled request is never answered: its id is free again.
      if (cancelledId) session.running.delete(cancelledId);
      const group = cancelledId ? session.unanswered.get(cancelledId) : undefined;
      if (cancelledId && group) {
        session.cancelled.add(cancelledId);
        endIfOnlyCancelled(session, group);
      }
    };
    return session;
  }

  async function handlePost(req: IncomingMessage, res: ServerResponse, known: Session | undefined): Promise<void> {
    let session = known;
    if (session) touch(session, 1);
    let releaseBody: BudgetRelease | undefined;
    try {
      // A place among the POSTs answering first, held until this response
      // has closed (its last bytes handed to the system: node finishes a
      // response only once the socket has written them out, and an unread
      // answer keeps it open; or its connection gone) and every tool call it
      // carried has ended (see PlaceHold).
      const releaseAnswering = await answering.reserve(1, req, res);
      if (releaseAnswering === undefined) return closing ? rejection(res, 503, -32000, 'Service Unavailable') : undefined;
      const place: PlaceHold = { count: 1, release: () => releaseAnswering() };
      res.once('close', () => dropHold(place));
      if (res.closed) dropHold(place);
      // The body's bytes are reserved before one is read, and held until
      // this request's handling ends (the body, its text and its parse live
      // that long); meanwhile the session counts as busy. A body that
      // declared no length (chunked) reserved the whole bound: once read, it
      // keeps only what it holds, or four small chunked calls would hold the
      // budget for as long as they run and every other POST would wait.
      releaseBody = await bodyBudget.reserve(bodyReservation(req, maxBodyBytes), req, res);
      if (releaseBody === undefined) return closing ? rejection(res, 503, -32000, 'Service Unavailable') : undefined;
      const body = await readBody(req, maxBodyBytes, options.bodyDeadlineMs ?? BODY_DEADLINE_MS);
      if (body.ok) releaseBody(Buffer.byteLength(body.text));
      if (!body.ok) {
        if (body.status === 408) return bodyTimedOut(res);
        if (body.status === 413) return rejection(res, 413, -32000, 'Payload Too Large');
        // Text that is not UTF-8 gets the answer the stdio transport gives it.
        if (body.undecodable !== undefined) return rejection(res, 400, -32600, 'Invalid Request', {}, requestIdFromPrefix(body.undecodable) ?? null);
        return rejection(res, 400, -32700, 'Parse error');
      }
      let parsed: JsonValue;
      try {
        parsed = parseJson(body.text, { maxBytes: maxBodyBytes, maxDepth, keepNonFiniteFloats: true });
      } catch (error) {
        // Well-formed JSON beyond a bound (nesting, integer length) is not a
        // syntax error: -32600 with the id when it shows, as over stdio.
        if (error instanceof JsonError && error.code !== 'json_syntax') return rejection(res, 400, -32600, 'Invalid Request', {}, requestIdFromPrefix(body.text) ?? null);
        return rejection(res, 400, -32700, 'Parse error');
      }
      // A JSON array (a batch, empty or not) is no message: the reference's SDK
      // reads one message per POST and refuses anything else with 400, and a
      // batch line over stdio gets no answer. It is an invalid request here.
      if (Array.isArray(parsed)) return rejection(res, 400, -32600, 'Invalid Request');
      const messages = [parsed];
      const splits = [splitToolArguments(parsed)];
      const plain = splits.map((split) => integerVersionAsText(toPlainJson(split.sdkMessage)));
      // JSON that is no JSON-RPC message (params or _meta not an object, an id
      // beyond 2^53, null or of another type): the SDK would call it a parse
      // error; it is an invalid request, answered as over stdio.
      if (!plain.every((message) => JSONRPCMessageSchema.safeParse(message).success)) {
        return rejection(res, 400, -32600, 'Invalid Request', {}, invalidRequestId(parsed));
      }
      if (session === undefined) {
        if (!messages.some(isInitialize)) return rejection(res, 400, -32600, 'Bad Request: Missing session ID');
        // An initialize whose params do not read as one: the SDK would call it
        // "Server not initialized"; stdio answers it -32602 with its id.
        if (!plain.some(isInitializeRequest)) return rejection(res, 400, -32602, 'Invalid request parameters', {}, invalidRequestId(parsed), options.invalidParamsData);
        if (sessions.size >= maxSessions) {
          let oldest: Session | undefined;
          for (const open of sessions.values()) if (open.busy === 0 && (oldest === undefined || open.lastActivity < oldest.lastActivity)) oldest = open;
          if (oldest === undefined) return rejection(res, 503, -32000, 'Service Unavailable: too many sessions in use');
          await closeSession(oldest, 'evicted');
        }
        session = await openSession();
        touch(session, 1);
      } else if (!plain.some(isInitializeRequest) && refusesVersion(req)) {
        // Checked after the body, as the reference does: an initialize in a
        // session (which negotiates the revision anew) carries none to check.
        return rejection(res, 400, -32600, versionRefusal);
      }
      if (session.closed) return rejection(res, 404, -32600, 'Session not found');
      const target = session;
      const requestIds = plain.filter(isJSONRPCRequest).map((request) => request.id);
      // An id of a request the session is still working on (a client must not
      // reuse ids in a session): the SDK routes answers by id alone, so the
      // first call's answer would end this stream, and the first stream, if
      // its client still waits, would wait for good. Refused; no answer
      // carries the id, which is not this request's alone.
      if (requestIds.some((id) => target.unanswered.has(id) || target.running.has(id))) return rejection(res, 400, -32600, 'Invalid Request: request id already in use');
      const staged: RequestKey[] = [];
      for (const split of splits) {
        if (split.id === undefined) continue;
        const call: StagedCall | undefined = split.invalidArguments === true ? { invalid: true } : split.args !== undefined && split.token !== undefined ? { invalid: false, args: split.args, token: split.token } : undefined;
        if (call === undefined) continue;
        target.staged.set(split.id, call);
        staged.push(split.id);
      }
      const group = new Set(requestIds);
      for (const id of requestIds) target.unanswered.set(id, group);
      for (const id of requestIds) target.postPlaces.set(id, place);
      try {
        // Only tools/list (the schemas' 2^63-1 bounds) and tools/call results
        // (structuredContent) carry number stand-ins.
        if (messages.some(carriesExactNumbers)) writingExactNumbers(res);
        const restore = target.id !== undefined && plain.some(isInitializeRequest) ? allowReinitialize(target.transport) : undefined;
        try {
          await target.transport.handleRequest(req, res, plain[0]);
        } finally {
          restore?.();
        }
      } finally {
        // What the SDK refused (session header, protocol version) never reached
        // the handler above; drop it so nothing outlives the request.
        for (const id of staged) target.staged.delete(id);
        for (const id of requestIds) if (target.postPlaces.get(id) === place) target.postPlaces.delete(id);
        // The stream has ended: whatever it still waited for is no longer tracked.
        for (const id of requestIds) {
          if (target.unanswered.get(id) !== group) continue;
          target.unanswered.delete(id);
          target.cancelled.delete(id);
        }
        // An initialize the SDK refused leaves a session that never started.
        if (target.id === undefined) await closeSession(target, 'deleted');
      }
    } finally {
      releaseBody?.();
      if (session) touch(session, -1);
    }
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Operations spec §6.1: no Date header (and node sends no Server header).
    res.sendDate = false;
    if (req.httpVersion === '1.1' && req.headersDistinct['host'] === undefined) return missingHost(res);
    closingWhenAsked(res);
    // RFC 9112 §3.2.2: a server must accept the absolute form
    // (`POST http://host:port/mcp`), as the reference's server does; it is
    // read as its path and query from here on.
    if (req.url !== undefined && !req.url.startsWith('/')) req.url = originForm(req.url);
    const url = req.url ?? '';
    const query = url.indexOf('?');
    const requestPath = query === -1 ? url : url.slice(0, query);
    if (requestPath !== options.path) {
      // The other spelling of the endpoint (trailing slash added or dropped):
      // 307 to the endpoint, query kept, as the reference's router answers;
      // the client repeats the request there, method and body unchanged.
      if (isSlashVariant(requestPath, options.path)) return redirection(res, `${options.path}${query === -1 ? '' : url.slice(query)}`);
      return rejection(res, 404, -32000, 'Not Found');
    }
    const method = req.method ?? '';
    // The order is the reference's (router, session manager, SDK transport);
    // every status is the spec's. X-Forwarded-* is never read.
    // 1. The router knows GET, HEAD, POST and DELETE on the endpoint only.
    if (method !== 'GET' && method !== 'POST' && method !== 'DELETE' && method !== 'HEAD') {
      return rejection(res, 405, -32000, 'Method not allowed.', { Allow: 'GET, POST, DELETE' });
    }
    // 2. A session id the listener does not know (never issued, deleted or
    //    expired) is 404 before anything else is read, so the client starts
    //    a new session whatever else was wrong with the request.
    // Counted by line: node joins repeated ones with ", " (an id no session
    // has, which would tell a client its live session is gone).
    const sessionLines = req.headersDistinct['mcp-session-id'];
    if (sessionLines !== undefined && sessionLines.length > 1) return rejection(res, 400, -32000, 'Bad Request: Mcp-Session-Id header must appear once');
    const rawSession = sessionLines?.[0];
    // Present but empty is an id no session has, as in the reference.
    const session = rawSession === undefined ? undefined : sessions.get(rawSession);
    if (rawSession !== undefined && !session) return rejection(res, 404, -32600, 'Session not found');
    // 3. The request checks of operations spec §6.2.
    const contentType = soleContentType(req);
    if (method === 'POST' && !startsAsJsonContentType(contentType)) {
      return rejection(res, 400, -32000, 'Bad Request: Content-Type must be application/json');
    }
    if (!isAllowedHost(soleHost(req), options.allowedHosts)) return rejection(res, 421, -32000, 'Misdirected Request: Host not allowed');
    // An allowed entry the URL parser cannot read (`1.2.3.999`): the SDK
    // builds the request's URL from the Host and answered its TypeError's
    // text as a parse error.
    if (!URL.canParse(`http://${soleHost(req) ?? ''}${url}`)) return rejection(res, 400, -32000, 'Bad Request: Invalid Host header');
    const origin = req.headers.origin;
    if (Array.isArray(origin) || !isAllowedOrigin(origin, options.allowedOrigins)) return rejection(res, 403, -32000, 'Forbidden: Origin not allowed');
    if (method === 'HEAD') return rejection(res, 405, -32600, 'Method Not Allowed', { Allow: 'GET, POST, DELETE' });
    if (closing) return rejection(res, 503, -32000, 'Service Unavailable');
    const accepts = acceptedMediaTypes(singleHeader(req.headers.accept));
    if (method === 'POST') {
      // 4. A POST: Accept and the media type, then the body.
      if (!accepts.json || !accepts.eventStream) return rejection(res, 406, -32600, 'Not Acceptable: Client must accept both application/json and text/event-stream');
      if (!isJsonContentType(contentType)) return rejection(res, 415, -32600, 'Unsupported Media Type: Content-Type must be application/json');
      busyRequests++;
      try {
        return await handlePost(req, res, session);
      } finally {
        busyRequests--;
        if (busyRequests === 0) for (const wake of quietWaiters.splice(0)) wake();
      }
    }
    // 5. A GET (the liveness probe's 406 comes first) or a DELETE.
    if (method === 'GET' && !accepts.eventStream) return rejection(res, 406, -32600, 'Not Acceptable: Client must accept text/event-stream');
    if (!session) return rejection(res, 400, -32600, 'Bad Request: Missing session ID');
    if (refusesVersion(req)) return rejection(res, 400, -32600, versionRefusal);
    if (method === 'GET') {
      // One GET stream a session, as in the reference: another while it is
      // open gets 409 with the reference's code and message (the SDK
      // transport's own 409 says -32000).
      if (session.listening) return rejection(res, 409, -32600, 'Conflict: Only one SSE stream is allowed per session');
      // A standalone SSE stream is passive: opening it is activity, holding it open is not.
      touch(session, 0);
      session.listening = true;
      try {
        return await session.transport.handleRequest(req, res);
      } finally {
        session.listening = false;
      }
    }
    touch(session, 1);
    try {
      return await session.transport.handleRequest(req, res);
    } finally {
      touch(session, -1);
    }
  }

  // Node times out a connection idle between two requests (keepAliveTimeout)
  // but not one that never sends its first: each held a descriptor for good,
  // and a few hundred of them left none for the stores (ulimit -n 256).
  const idleConnectionMs = options.idleConnectionMs ?? IDLE_CONNECTION_MS;
  const awaitingFirstRequest = new WeakMap<Socket, NodeJS.Timeout>();
  // Node answers an HTTP/1.1 request without Host 400 itself, with a Date
  // header (§6.1: none); the handler answers it instead, as the reference's
  // HTTP server does.
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    clearTimeout(awaitingFirstRequest.get(req.socket));
    awaitingFirstRequest.delete(req.socket);
    handle(req, res).catch(() => {
      // Only a bug gets here; the detail stays out of the response and the log.
      logger.error('an HTTP request failed unexpectedly');
      if (!res.headersSent) void rejection(res, 500, -32603, 'Internal error');
      else res.destroy();
    });
  };
  const server: NodeHttpServer = createServer({ requireHostHeader: false }, onRequest);
  // Node answers an Expect other than 100-continue 417 itself, before every
  // check and with a Date header; the reference's server ignores it, so such
  // a request is handled as any other.
  server.on('checkExpectation', onRequest);
  server.keepAliveTimeout = idleConnectionMs;
  server.on('connection', (socket: Socket) => {
    const timer = setTimeout(() => socket.destroy(), idleConnectionMs);
    timer.unref();
    awaitingFirstRequest.set(socket, timer);
    socket.once('close', () => clearTimeout(timer));
  });

  await new Promise<void>((resolve, reject) => {
    const onError = (error: Error): void => reject(error);
    server.once('error', onError);
    server.listen({ host: options.host, port: options.port, exclusive: true }, () => {
      server.off('error', onError);
      resolve();
    });
  });
  server.on('error', () => logger.warn('the HTTP listener reported an error'));
  const address = server.address();
  const port = address !== null && typeof address === 'object' ? address.port : options.port;

  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closed ??= (async () => {
      closing = true;
      bodyBudget.refuseWaiting();
      answering.refuseWaiting();
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      if (busyRequests > 0) {
        // Tool calls already running get a bounded chance to answer before their sessions close.
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, options.shutdownGraceMs ?? DEFAULT_SHUTDOWN_GRACE_MS);
          timer.unref();
          quietWaiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      await Promise.all([...sessions.values()].map((session) => closeSession(session, 'shutdown')));
      server.closeAllConnections();
      await stopped;
    })();
    return closed;
  };

  return { host: options.host, port, sessionCount: () => sessions.size, close };
}
