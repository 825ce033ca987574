// Carries tool arguments, parsed losslessly by our transports, past the SDK's
// own (lossy) message handling to the tools/call handler, keyed by request id.

import { isJsonObject, type JsonObject, type JsonValue } from '../json.js';

export type RequestKey = string | number;

/** Requests whose arguments may wait for their handler at once; older ones are dropped beyond it. */
const MAX_PENDING = 1024;

/**
 * Arguments waiting for their tools/call handler. Each id holds a queue, in
 * arrival order (the order handlers start in), so two in-flight requests
 * that share an id (a client error) still each run with their own
 * arguments. Bounded: arguments the SDK never hands to a handler cannot
 * accumulate.
 */
export class LosslessArguments {
  private readonly pending = new Map<RequestKey, JsonObject[]>();
  private count = 0;

  put(id: RequestKey, args: JsonObject): void {
    if (this.count >= MAX_PENDING) this.dropOldest();
    const queue = this.pending.get(id);
    if (queue) queue.push(args);
    else this.pending.set(id, [args]);
    this.count++;
  }

  take(id: RequestKey): JsonObject | undefined {
    const queue = this.pending.get(id);
    if (!queue) return undefined;
    const args = queue.shift();
    if (queue.length === 0) this.pending.delete(id);
    this.count--;
    return args;
  }

  get size(): number {
    return this.count;
  }

  clear(): void {
    this.pending.clear();
    this.count = 0;
  }

  private dropOldest(): void {
    const [id, queue] = this.pending.entries().next().value as [RequestKey, JsonObject[]];
    queue.shift();
    if (queue.length === 0) this.pending.delete(id);
    this.count--;
  }
}

/**
 * Splits a losslessly parsed JSON-RPC message into what the SDK should see
 * (plain numbers, `params: null` and `arguments: null` dropped: the first
 * means no params, the contract treats the second as `{}`; other null
 * members of params dropped as absent, as the Python SDK reads them; members JSON-RPC
 * does not define dropped too, as the Python SDK and serde ignore them where
 * the TypeScript SDK would refuse the whole message)
 * and, for tools/call requests, the lossless arguments object.
 */
export interface SplitMessage {
  readonly sdkMessage: JsonValue;
  readonly id?: RequestKey;
  readonly args?: JsonObject;
  /** tools/call whose arguments are not an object: answered with -32602 by the transport. */
  readonly invalidArguments?: boolean;
}

export function splitToolArguments(received: JsonValue): SplitMessage {
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
  if (args === null || args === undefined) {
    delete sdkParams['arguments'];
    return { sdkMessage: { ...message, params: sdkParams }, ...(id === undefined ? {} : { id, args: {} }) };
  }
  if (!isJsonObject(args)) return { sdkMessage: message, ...(id === undefined ? {} : { id }), invalidArguments: true };
  // The SDK sees an empty object; the real arguments travel beside it.
  sdkParams['arguments'] = {};
  return { sdkMessage: { ...message, params: sdkParams }, ...(id === undefined ? {} : { id, args }) };
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
