// A DSN libpq would refuse is refused before node-postgres sees it. The
// driver reads text that is neither a postgresql:// URI nor keyword=value
// conninfo as a URL relative to `postgres://base`: a mistyped
// `password=Top Secret` sent the whole text, password included, as the
// database name to a host named `base`. A URI the driver cannot parse and a
// TLS file that cannot be read each get their own fixed reason (they were
// reported as a lost connection). No server is needed: the refusal comes
// before any connection, which the listener here would see.
import { once } from 'node:events';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aipcsAsync } from '../../support/aipcs-admin.js';

const DSN_ENV = 'AIPCS_TEST_REFUSED_DSN';
const accepted: Socket[] = [];
const listener = createServer((socket) => {
  accepted.push(socket);
  socket.destroy();
});
let port = 0;

beforeAll(async () => {
  listener.listen(0, '127.0.0.1');
  await once(listener, 'listening');
  port = (listener.address() as AddressInfo).port;
});
afterAll(() => listener.close());

async function statusWith(dsn: string): Promise<{ readonly stdout: string; readonly stderr: string; readonly registry: unknown }> {
  const run = await aipcsAsync(['status', '--profile', 'postgresql', '--principal-id', 'p', '--postgres-dsn-env', DSN_ENV, '--log-level', 'info'], {
    env: { [DSN_ENV]: dsn, PGHOST: '127.0.0.1', PGPORT: String(port) },
  });
  expect(run.status, run.stderr).toBe(0);
  return { stdout: run.stdout, stderr: run.stderr, registry: (run.envelope.result as { registry?: unknown } | undefined)?.registry };
}

describe('DSNs refused before the driver sees them', () => {
  const cases: ReadonlyArray<readonly [string, () => string, RegExp]> = [
    ['an unquoted space in a keyword/value password', () => `host=127.0.0.1 port=${port} dbname=aipcs user=agent password=Top Secret`, /the DSN is neither a postgresql:\/\/ URI nor keyword=value text/],
    ['an unclosed quote', () => `host=127.0.0.1 port=${port} password='Secret`, /the DSN is neither a postgresql:\/\/ URI nor keyword=value text/],
    ['another scheme', () => `socket:/var/run/postgresql?db=Secret`, /the DSN is neither a postgresql:\/\/ URI nor keyword=value text/],
    ['a URI with a # in its password', () => `postgresql://agent:pa#Secret@127.0.0.1:${port}/aipcs`, /the DSN is not a valid URI \(percent-encode/],
    ['a missing sslrootcert', () => `postgresql://agent:Secret@127.0.0.1:${port}/aipcs?sslmode=verify-full&sslrootcert=/nonexistent/root.crt`, /a TLS file the DSN names .* cannot be read/],
  ];
  for (const [what, dsn, reason] of cases) {
    it(`${what}: unavailable, with its reason, and no connection`, async () => {
      const run = await statusWith(dsn());
      expect(run.registry).toMatchObject({ status: 'unavailable', issue_code: 'storage_unavailable' });
      expect(run.stderr).toMatch(reason);
      expect(`${run.stdout}${run.stderr}`).not.toContain('Secret');
      expect(accepted).toHaveLength(0);
    });
  }
});
