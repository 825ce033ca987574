// A small seeded protocol fuzz kept in the suite: a few hundred
// malformed and well-formed JSON-RPC lines, piped at once into the shared
// stdio transport and tool server, must each get exactly the answers JSON-RPC
// owes them: one answer carrying the request's id exactly as written for
// every message with a string or finite-number id (served, or refused with
// -32600/-32602), none for notifications, responses, batches, ids that
// cannot be written back and lines that are not JSON. No answer may repeat
// input text, and the session must end once the input has. Deterministic:
// fixed seeds, and each generated line carries its own expectation.

import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parseJson, type JsonValue } from '../../src/common/json.js';
import { createLogger } from '../../src/common/logger.js';
import { serveStdio, type ToolServerOptions } from '../../src/common/mcp/tool-server.js';
import { seededRandom } from '../support/prng.js';

const MARK = 'QZMARK';

function prng(seed: number): { int(n: number): number; pick<T>(items: readonly T[]): T } {
  const next = seededRandom(seed);
  return { int: (n) => Math.floor(next() * n), pick: (items) => items[Math.floor(next() * items.length)] as never };
}

const options: ToolServerOptions = {
  name: 'fuzz-echo',
  version: '1.0.0',
  logger: createLogger('fuzz-echo', 'silent'),
  tools: [{ name: 'echo', description: 'Echo.', inputSchema: { type: 'object', properties: { n: { type: 'integer' } }, required: [], additionalProperties: false } }],
  callTool: async () => ({ content: [{ type: 'text', text: 'ok' }] }),
  onInvalidArguments: () => ({ content: [{ type: 'text', text: 'invalid' }], isError: true }),
  onUnknownTool: () => ({ content: [{ type: 'text', text: 'unknown' }], isError: true }),
  onUnexpectedError: () => ({ content: [{ type: 'text', text: 'internal' }], isError: true }),
};

/** One generated line and the id its single answer must carry (canonical form), or null for no answer. */
interface Case {
  readonly line: string;
  readonly answerId: string | null;
}

/** The canonical form of an id as the answer's lossless parse gives it. */
function canonical(id: JsonValue | undefined): string {
  if (typeof id === 'string') return `s:${id}`;
  if (typeof id === 'bigint') return `n:${id}`;
  if (typeof id === 'number') return Number.isInteger(id) ? `n:${BigInt(id)}` : `f:${id}`;
  return `other:${String(id)}`;
}

function generate(seed: number, count: number): Case[] {
  const r = prng(seed);
  const cases: Case[] = [];
  for (let n = 1; cases.length < count; n++) {
    // ids: unique per line, in every answerable form
    const idForms: [string, string][] = [
      [String(n), `n:${n}`],
      [`"s${n}${MARK}\\u00e9"`, `s:s${n}${MARK}é`],
      [`${n}00000000000000000000`, `n:${n}00000000000000000000`],
      [`${n}.25`, `f:${n}.25`],
      [`-${n}`, `n:-${n}`],
    ];
    const [idText, key] = r.pick(idForms);
    const deep = `${'['.repeat(1001)}${']'.repeat(1001)}`;
    const wrong = r.pick(['5', '"x"', 'null', 'true', '[]', '[1,2]', `"${MARK}"`, '1e400', '-0', '{"a":1}']);
    const answered: string[] = [
      `{"jsonrpc":"2.0","id":${idText},"method":"ping"}`,
      `{"jsonrpc":"2.0","id":${idText},"method":"tools/list"}`,
      `{"jsonrpc":"2.0","id":${idText},"method":"tools/call","params":{"name":"echo","arguments":{"n":${r.pick(['1', '1.0', '"x"', '99999999999999999999'])}}}}`,
      `{"jsonrpc":"2.0","id":${idText},"method":"tools/call","params":{"name":"echo","arguments":${wrong}}}`,
      `{"jsonrpc":"2.0","id":${idText},"method":"tools/call","params":{"name":${wrong}}}`,
      `{"jsonrpc":"2.0","id":${idText},"method":"tools/call","params":${wrong}}`,
      `{"jsonrpc":"2.0","id":${idText},"method":"ping","params":${wrong}}`,
      `{"jsonrpc":"2.0","id":${idText},"method":${wrong === '"x"' ? '5' : wrong}}`,
      `{"jsonrpc":"2.0","id":${idText},"method":"${MARK}/unknown"}`,
      `{"id":${idText},"method":"ping"}`,
      `{"jsonrpc":${r.pick(['"1.0"', '2', 'null'])},"id":${idText},"method":"ping"}`,
      `{"jsonrpc":"2.0","id":${idText}}`,
      `\ufeff{"jsonrpc":"2.0","id":${idText},"method":"ping"}`,
      `{"jsonrpc":"2.0","id":${idText},"method":"ping","params":{"_meta":${wrong}}}`,
      `{"jsonrpc":"2.0","id":${idText},"method":"ping","params":{"d":${deep}}}`,
      `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"d":${deep}}},"id":${idText}}`,
      `{"jsonrpc":"2.0","id":${idText},"method":"ping","params":{"n":${'9'.repeat(5000)}}}`,
      `{"jsonrpc":"2.0","id":${idText},"method":"ping","id2":"${MARK}"}`,
    ];
    const silent: string[] = [
      `{"jsonrpc":"2.0","method":"notifications/${MARK}"}`,
      `{"jsonrpc":"2.0","id":${idText},"result":{}}`,
      `{"jsonrpc":"2.0","id":${idText},"error":{"code":1,"message":"${MARK}"}}`,
      `{"jsonrpc":"2.0","id":${r.pick(['null', 'true', '{}', '[]', '1e400'])},"method":"ping"}`,
      `[{"jsonrpc":"2.0","id":${idText},"method":"ping"}]`,
      `{"jsonrpc":"2.0","id":${idText},"method":"ping"`,
      `${MARK} not json`,
      '',
      '   ',
      `"${MARK}"`,
      deep,
      `{"\\ud800":"\\udc00${MARK}"}`,
    ];
    if (r.int(4) > 0) cases.push({ line: r.pick(answered), answerId: key });
    else cases.push({ line: r.pick(silent), answerId: null });
  }
  return cases;
}

async function pipeAll(cases: readonly Case[]): Promise<string[]> {
  const input = new PassThrough();
  const output = new PassThrough();
  let text = '';
  output.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  const served = serveStdio(options, { input, output });
  input.write('{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}\n');
  for (const { line } of cases) input.write(`${line}${line.length % 3 === 0 ? '\r\n' : '\n'}`);
  input.end();
  await served;
  return text.split('\n').filter((line) => line !== '');
}

describe('seeded protocol fuzz over the stdio transport', () => {
  for (const seed of [1, 2, 3]) {
    it(`seed ${seed}: one answer per answerable id, exactly as written, and none otherwise`, async () => {
      const cases = generate(seed, 300);
      const lines = await pipeAll(cases);
      const counts = new Map<string, number>();
      for (const line of lines) {
        const answer = parseJson(line, { maxBytes: 1 << 24, maxDepth: 64 }) as Record<string, JsonValue>;
        const key = canonical(answer['id']);
        counts.set(key, (counts.get(key) ?? 0) + 1);
        // Nothing of the input comes back but the id itself.
        expect(line.replace(/"id":"(?:[^"\\]|\\.)*"/, '')).not.toContain(MARK);
      }
      const expected = new Map<string, number>([['s:init', 1]]);
      for (const { answerId } of cases) if (answerId !== null) expected.set(answerId, (expected.get(answerId) ?? 0) + 1);
      expect(Object.fromEntries(counts)).toEqual(Object.fromEntries(expected));
    });
  }
});
