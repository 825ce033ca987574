// The aigpt stdio gate answers a line that is not valid
// UTF-8 itself (-32600 to its id; the line is never served). It read the id
// with JSON.parse, so an integer id beyond 2^53 came back rounded (a client
// waiting for 9007199254740993 got 9007199254740992), where the shared
// transport answers every other line with the id exactly as sent (91e649f).

import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { answerBeforeExit } from '../../src/aigpt/mcp/answer-before-exit.js';

describe('aigpt stdio gate: a line that is not valid UTF-8', () => {
  it('is answered -32600 with its id exactly as sent, beyond 2^53 too', () => {
    const source = new PassThrough();
    const written: Buffer[] = [];
    const sink = new PassThrough();
    sink.on('data', (chunk: Buffer) => written.push(chunk));
    answerBeforeExit(source, sink, 1024 * 1024, () => undefined);
    for (const id of ['9007199254740993', '-123456789012345678901234567890', '7', '"a"']) {
      source.write(Buffer.concat([Buffer.from(`{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"save_memory","arguments":{"content":"a`), Buffer.from([0xff]), Buffer.from('"}}}\n')]));
    }
    const lines = Buffer.concat(written).toString('utf8').trimEnd().split('\n');
    expect(lines).toEqual(
      ['9007199254740993', '-123456789012345678901234567890', '7', '"a"'].map((id) => `{"jsonrpc":"2.0","id":${id},"error":{"code":-32600,"message":"Invalid Request"}}`),
    );
  });
});
