// A config error quotes the refused did or handle, and that message reaches
// every tool result and the instructions (a config broken under a running
// server). The config file may be 1 MiB, the instructions at most 256 KiB
// (spec 8): the quote keeps only the value's first characters and its length.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/aigpt/config/config.js';
import { MAX_INSTRUCTIONS_BYTES } from '../../src/aigpt/core/limits.js';
import { INITIALIZE_REQUEST, makeTempHome, type ServerChild, startServerChild, type TempHome, writeConfig } from './support.js';

describe('config errors quote a refused value with a bound', () => {
  let home: TempHome;

  beforeEach(() => {
    home = makeTempHome();
  });

  afterEach(() => {
    home.cleanup();
  });

  it('a long did or handle is quoted by its first 64 characters and its length', async () => {
    await writeConfig(home, { did: 'x'.repeat(900_000) });
    await expect(loadConfig(home.environment)).rejects.toThrow(
      `invalid config ${home.configFile}: bot.did is not a valid DID: "${'x'.repeat(64)}"... (900000 characters)`,
    );
    await writeConfig(home, { handle: `${'é'.repeat(70)}` });
    await expect(loadConfig(home.environment)).rejects.toThrow(
      `bot.handle is not a valid handle: "${'é'.repeat(64)}"... (70 characters)`,
    );
    // One of exactly 64 characters, and a short one, are still quoted whole.
    await writeConfig(home, { did: 'x'.repeat(64) });
    await expect(loadConfig(home.environment)).rejects.toThrow(new RegExp(`bot\\.did is not a valid DID: "x{64}"$`));
    await writeConfig(home, { did: 'did:plc:a/b' });
    await expect(loadConfig(home.environment)).rejects.toThrow(/bot\.did is not a valid DID: "did:plc:a\/b"$/);
  });

  it('the instructions stay within 256 KiB when the config breaks under a running server', async () => {
    await writeConfig(home, { memory: 3 });
    const server: ServerChild = startServerChild(home.childEnv);
    try {
      server.send({ jsonrpc: '2.0', id: 99, method: 'ping' });
      await server.response(99);
      await writeConfig(home, { did: `did:plc:${'y'.repeat(1_000_000)}` });
      server.send(INITIALIZE_REQUEST);
      const result = (await server.response(1))['result'] as { instructions: string };
      expect(Buffer.byteLength(result.instructions)).toBeLessThanOrEqual(MAX_INSTRUCTIONS_BYTES);
      expect(result.instructions).toMatch(/^\[aigpt\] invalid config .*bot\.did is not a valid DID: "did:plc:y+"\.\.\. \(1000008 characters\)$/);
    } finally {
      server.child.stdin.end();
      await server.exited;
    }
  });
});
