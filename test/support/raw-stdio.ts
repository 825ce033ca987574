// `aipcs` spoken to with raw JSON-RPC lines over stdio, for what the SDK
// client cannot send (float literals such as 1.0 or -0.0, NaN, malformed or
// oversized lines) or would hide (the exact bytes of an answer line).

import { spawn } from 'node:child_process';
import { aipcsBin } from './bins.js';

export interface RawLineSession {
  /** Writes one line; with an id, resolves with the answer line carrying that id. */
  send(line: string, id?: number): Promise<string>;
  /** initialize and notifications/initialized, with ids of its own counter (do not mix with explicit ids 1..n). */
  initialize(): Promise<void>;
  /** One tools/call with the arguments as written; resolves with its text content. */
  toolText(name: string, argumentsText: string): Promise<string>;
  close(): void;
}

/** Starts the built `aipcs` with `args` (PATH and `env` only in its environment). */
export function rawLineSession(args: string[], env: Record<string, string> = {}): RawLineSession {
  const child = spawn(process.execPath, [aipcsBin(), ...args], { stdio: ['pipe', 'pipe', 'ignore'], env: { PATH: process.env['PATH'] ?? '', ...env } });
  const waiting = new Map<number, (line: string) => void>();
  let out = '';
  // Decoded as a stream: a character split across two chunks must not become two U+FFFD.
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    out += chunk;
    let newline: number;
    while ((newline = out.indexOf('\n')) >= 0) {
      const line = out.slice(0, newline);
      out = out.slice(newline + 1);
      const id = (JSON.parse(line) as { id?: number }).id;
      if (id !== undefined) waiting.get(id)?.(line);
    }
  });
  const send = (line: string, id?: number): Promise<string> => {
    const answered = id === undefined ? Promise.resolve('') : new Promise<string>((resolve) => waiting.set(id, resolve));
    child.stdin.write(`${line}\n`);
    return answered;
  };
  let next = 1_000_000;
  const request = (method: string, paramsText: string): Promise<string> => {
    const id = ++next;
    return send(`{"jsonrpc":"2.0","id":${id},"method":"${method}","params":${paramsText}}`, id);
  };
  return {
    send,
    async initialize() {
      await request('initialize', '{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}');
      await send('{"jsonrpc":"2.0","method":"notifications/initialized"}');
    },
    async toolText(name, argumentsText) {
      const line = await request('tools/call', `{"name":"${name}","arguments":${argumentsText}}`);
      return (JSON.parse(line) as { result: { content: { text: string }[] } }).result.content[0]?.text ?? '';
    },
    close: () => child.kill(),
  };
}
