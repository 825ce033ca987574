// Which requests the SDK hands to the tool server's call handler, for the
// transports that count calls until their handlers end (a cancelled call
// still runs: the SDK drops its answer but cannot stop it).

import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/**
 * A tools/call request the SDK will hand to the tool server's handler: all
 * of them but one asking for a task (the SDK refuses it first, as these
 * servers declare no tasks).
 */
export function startsToolCall(message: JSONRPCMessage): boolean {
  if (!('method' in message) || message.method !== 'tools/call' || !('id' in message)) return false;
  const task = (message.params as { task?: unknown } | undefined)?.task;
  return typeof task !== 'object' || task === null;
}
