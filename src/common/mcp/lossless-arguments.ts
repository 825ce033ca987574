// Carries tool arguments, parsed losslessly by our transports, past the SDK's
// own (lossy) message handling to the tools/call handler. The SDK's copy of a
// call carries, in place of its arguments, a token of that one message.

import { randomBytes } from 'node:crypto';
import { isJsonObject, type JsonObject, type JsonValue } from '../json.js';

export type RequestKey = string | number;

/** Argument sets that may wait for their handler at once; older ones are dropped beyond it. */
const MAX_PENDING = 1024;

/**
 * The one member of the arguments the SDK sees for a tools/call whose real
 * arguments wait here. Every tools/call passes through splitToolArguments,
 * so the SDK never sees arguments a client chose; the token's random prefix
 * (fresh in each process, never written anywhere) keeps one from being
 * forged all the same.
 */
const TOKEN_MEMBER = 'lossless_arguments_token';
const TOKEN_PREFIX = `${randomBytes(16).toString('hex')}:`;
let lastToken = 0;

/** What the tools/call handler finds for the arguments the SDK handed it. */
export type TakenArguments =
  | { readonly kind: 'found'; readonly args: JsonObject }
  /** The call's arguments were dropped by the bound: it must not run. */
  | { readonly kind: 'dropped' }
  /** No token: the SDK's arguments are the call's own (absent, `{}`, or not from our transports). */
  | { readonly kind: 'plain' };

/**
 * Arguments waiting for their tools/call handler, each under the token of
 * its own message (two in-flight requests sharing an id, a client error,
 * still each run with their own). Bounded: arguments the SDK never hands to
 * a handler cannot accumulate; a call whose arguments were dropped finds
 * that out rather than running with others.
 */
export class LosslessArguments {
  private readonly pending = new Map<string, JsonObject>();

  put(token: string, args: JsonObject): void {
    if (this.pending.size >= MAX_PENDING) {
      const oldest = this.pending.keys().next().value as string;
      this.pending.delete(oldest);
    }
    this.pending.set(token, args);
  }

  /** Takes the arguments for the SDK's copy of a call's arguments. */
  take(sdkArguments: unknown): TakenArguments {
    const token = tokenOf(sdkArguments);
    if (token === undefined) return { kind: 'plain' };
    const args = this.pending.get(token);
    if (args === undefined) return { kind: 'dropped' };
    this.pending.delete(token);
    return { kind: 'found', args };
  }

  get size(): number {
    return this.pending.size;
  }

  clear(): void {
    this.pending.clear();
  }
}

function tokenOf(sdkArguments: unknown): string | undefined {
  if (typeof sdkArguments !== 'object' || sdkArguments === null || Array.isArray(sdkArguments)) return undefined;
  const keys = Object.keys(sdkArguments);
  const token: unknown = (sdkArguments as Record<string, unknown>)[TOKEN_MEMBER];
  return keys.length === 1 && typeof token === 'string' && token.startsWith(TOKEN_PREFIX) ? token : undefined;
}

/**
 * Splits a losslessly parsed JSON-RPC message into what the SDK should see
 * (plain numbers, `params: null` and `arguments: null` dropped: the first
 * means no params, the contract treats the second as `{}`; other null
 * members of params dropped as absent, as the Python SDK reads them; members JSON-RPC
 * does not define dropped too, as the Python SDK and serde ignore them where
 * the TypeScript SDK would refuse the whole message)
 * and, for tools/call requests with arguments, the lossless arguments object
 * and the token the SDK's copy carries in their place (put them in
 * LosslessArguments when the message is handed to the SDK).
 */
export interface SplitMessage {
  readonly sdkMessage: JsonValue;
  readonly id?: RequestKey;
  readonly args?: JsonObject;
  readonly token?: string;
  /** tools/call whose arguments are not an object: answered with -32602 by the transport. */
  readonly invalidArguments?: boolean;
}

export function splitToolArguments(received: JsonValue, nonObjectArgumentsAbsent = false): SplitMessage {
  // `"params": null` is absent params to the Python SDK (an optional field);
  // the TypeScript SDK would refuse the whole message.
  const message = isJsonObject(received) ? withoutTaskMetadata(withoutNullParams(jsonRpcMembers(received))) : received;
  if (!isJsonObject(message) || message['method'] !== 'tools/call' || !isJsonObject(message['params'])) {
    return { sdkMessage: message };
  }
  const params = message['params'];
  const rawId = message['id'];
  const id = typeof rawId === 'bigint' ? Number(rawId) : typeof rawId === 'string' || typeof rawId === 'number' ? rawId : undefined;
  const args = params['arguments'];
  const sdkParams: JsonObject = { ...params };
  if (args === null || args === undefined || (nonObjectArgumentsAbsent && !isJsonObject(args))) {
    // No arguments are `{}`: the SDK's copy has none, which the handler reads as such.
    delete sdkParams['arguments'];
    return { sdkMessage: { ...message, params: sdkParams }, ...(id === undefined ? {} : { id }) };
  }
  if (!isJsonObject(args)) return { sdkMessage: message, ...(id === undefined ? {} : { id }), invalidArguments: true };
  // `{}` is the same to the SDK; a notification runs no handler.
  if (Object.keys(args).length === 0 || id === undefined) {
    sdkParams['arguments'] = {};
    return { sdkMessage: { ...message, params: sdkParams }, ...(id === undefined ? {} : { id }) };
  }
  // The SDK sees a token of this message; the real arguments travel beside it.
  const token = `${TOKEN_PREFIX}${++lastToken}`;
  sdkParams['arguments'] = { [TOKEN_MEMBER]: token };
  return { sdkMessage: { ...message, params: sdkParams }, id, args, token };
}

/**
 * A request without its task metadata. A task-augmented request (MCP
 * 2025-11-25) to a server that declares no tasks capability is processed
 * normally, its task metadata ignored, as that revision requires and the
 * Python SDK does, whatever its method; the TypeScript SDK's protocol layer
 * would answer it -32603 with a message that names the method (an
 * unregistered one too, which is -32601). Metadata that does not read as
 * such (`"task": 5`) stays, for the -32602 of any unreadable params. The
 * same object when there is none.
 */
function withoutTaskMetadata(message: JsonObject): JsonObject {
  const params = message['params'];
  if (typeof message['method'] !== 'string' || !isJsonObject(params) || !isTaskMetadata(params['task'])) return message;
  const { task: _task, ...rest } = params;
  return { ...message, params: rest };
}

function isTaskMetadata(value: JsonValue | undefined): boolean {
  if (!isJsonObject(value)) return false;
  const ttl = value['ttl'];
  return ttl === undefined || typeof ttl === 'number' || typeof ttl === 'bigint';
}

/**
 * A request or notification whose params hold members set to null, without
 * them: the Python SDK reads a null optional member (`"_meta": null`,
 * `"cursor": null`, `"clientInfo": {"title": null}`, a cancel's
 * `"reason": null`) as absent, where the TypeScript SDK's schemas refuse the
 * whole message. A required member set to null is then missing, which both
 * refuse. Tool arguments are the tool's data and keep their nulls
 * (`"arguments": null` itself means `{}`, as absent). The same object when
 * there is nothing to drop.
 */
function withoutNullParams(message: JsonObject): JsonObject {
  const params = message['params'];
  if (typeof message['method'] !== 'string' || !isJsonObject(params)) return message;
  const stripped = withoutNullMembers(params, message['method'] === 'tools/call');
  return stripped === params ? message : { ...message, params: stripped };
}

function withoutNullMembers(object: JsonObject, keepArguments: boolean): JsonObject {
  let copy: JsonObject | undefined;
  for (const [key, value] of Object.entries(object)) {
    let kept: JsonValue | undefined = value;
    if (value === null) kept = undefined;
    else if (isJsonObject(value) && !(keepArguments && key === 'arguments')) kept = withoutNullMembers(value, false);
    if (kept === value) continue;
    copy ??= { ...object };
    if (kept === undefined) delete copy[key];
    else copy[key] = kept;
  }
  return copy ?? object;
}

const JSON_RPC_MEMBERS = new Set(['jsonrpc', 'id', 'method', 'params', 'result', 'error']);

/** The message without `"params": null` and without members JSON-RPC does not define; the same object when there are none. */
function jsonRpcMembers(message: JsonObject): JsonObject {
  const keys = Object.keys(message);
  if (message['params'] !== null && keys.every((key) => JSON_RPC_MEMBERS.has(key))) return message;
  const copy: JsonObject = {};
  for (const key of keys) if (JSON_RPC_MEMBERS.has(key) && !(key === 'params' && message[key] === null)) copy[key] = message[key] as JsonValue;
  return copy;
}

/**
 * JSON-RPC -32602 for tools/call arguments that are not an object; echoes
 * nothing. `data`, when given, is sent as the error's data member (AIPCS
 * sends `""`, as the Python SDK its reference is built on does).
 */
export function invalidParamsResponse(id: RequestKey, data?: string): { jsonrpc: '2.0'; id: RequestKey; error: { code: number; message: string; data?: string } } {
  return { jsonrpc: '2.0', id, error: { code: -32602, message: 'Invalid request parameters', ...(data === undefined ? {} : { data }) } };
}
