// A config deleted under a running server is a first run (spec 2.4/2.5):
// the config is written again and the record tree it names (the default
// one) is initialised, core record included, so a read_core that comes
// first finds the new core instead of failing to read it.
// (mutation review Q: A07)

import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { INITIALIZE_REQUEST, INITIALIZED_NOTIFICATION, makeTempHome, type ServerChild, startServerChild, type TempHome, writeConfig } from './support.js';

describe('a config deleted under the running server, then read_core', () => {
  let home: TempHome;
  let server: ServerChild;

  beforeEach(async () => {
    home = makeTempHome();
    await writeConfig(home, { path: join(home.root, 'first') });
    server = startServerChild(home.childEnv);
    server.send(INITIALIZE_REQUEST);
    await server.response(1);
    server.send(INITIALIZED_NOTIFICATION);
  });

  afterEach(async () => {
    server.child.stdin.end();
    await server.exited;
    home.cleanup();
  });

  it('answers the core of the new default tree', async () => {
    await fs.rm(home.appDir, { recursive: true });
    server.send({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'read_core', arguments: {} } });
    const result = (await server.response(7))['result'] as { isError?: boolean; content: { text: string }[] };
    expect(result.isError, result.content[0]?.text).toBeUndefined();
    expect(result.content[0]?.text).toContain('ai.syui.gpt.core');
  }, 30_000);
});
