// A server (or network) that stops answering mid-session: statement_timeout
// cannot fire there, so the adapter must still give up within its configured
// timeouts instead of leaving the tool call waiting forever. And a session
// that the server ends while answering a COMMIT, which may already be
// durable. And a pooled connection that died while idle without the close
// ever reaching the client (a server that restarted or failed over). A TCP
// relay in front of the test cluster plays these servers.

import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { StorageFailure } from '../../../../src/aipcs/core/ports.js';
import { PostgresConnection } from '../../../../src/aipcs/storage/postgres/connection.js';
import { createTestDatabase, expectClustersUnderCi, postgresClusters, type TestDatabase } from '../../../support/postgres.js';

interface Relay {
  readonly port: number;
  /** From now on nothing is passed on in either direction, and no socket is closed. */
  freeze(): void;
  /**
   * The next COMMIT reaches the server, but the client gets, instead of its
   * answer, the FATAL error of a terminated backend (or the one given) and
   * then end of stream.
   */
  endSessionOnCommit(ending?: SessionEnd): void;
  /** From now on every answer of the server reaches the client `ms` later (a slow network). */
  delayAnswers(ms: number): void;
  /**
   * The next connection opened is reset by the peer when its second BEGIN
   * arrives: after its preparation, at the first unit it runs.
   */
  resetNextAtSecondBegin(): void;
  /** How many connections the client has opened through the relay. */
  connections(): number;
  /**
   * The connections open now are gone without a word: the next thing the
   * client sends on one is answered by a TCP reset, as from a server host
   * that restarted. Connections opened later pass through.
   */
  vanish(): void;
  /**
   * The next connection opened is ended by the server right after its
   * start-up: the FATAL error of a terminated backend arrives in the same
   * packet as its ReadyForQuery.
   */
  endNextAfterStartup(): void;
  close(): Promise<void>;
}

async function relayTo(target: URL): Promise<Relay> {
  const [port, host] = [Number(target.port), target.hostname];
  let frozen = false;
  let endOnCommit: SessionEnd | undefined;
  let endAfterStartup = false;
  const sockets: Socket[] = [];
  const vanished = new Set<Socket>();
  let opened = 0;
  let answerDelay = 0;
  let resetNext = false;
  const server: Server = createServer((inbound) => {
    opened++;
    let resetAtBegin = false;
    if (resetNext) [resetAtBegin, resetNext] = [true, false];
    let begins = 0;
    const outbound = connect(port, host);
    sockets.push(inbound, outbound);
    for (const socket of [inbound, outbound]) socket.on('error', () => undefined);
    inbound.on('data', (chunk: Buffer) => {
      if (vanished.has(inbound)) {
        outbound.destroy();
        inbound.resetAndDestroy();
        return;
      }
      if (frozen) return;
      if (resetAtBegin && chunk.includes('BEGIN ISOLATION LEVEL') && ++begins === 2) {
        outbound.destroy();
        inbound.resetAndDestroy();
        return;
      }
      outbound.write(chunk);
      if (endOnCommit !== undefined && chunk.includes('COMMIT\0')) {
        frozen = true;
        // Give the server time to commit, then answer as a backend killed right after it.
        const ending = endOnCommit;
        setTimeout(() => inbound.end(fatalAdminShutdown(ending)), 300);
      }
    });
    let startupEnds = false;
    if (endAfterStartup) [startupEnds, endAfterStartup] = [true, false];
    outbound.on('data', (chunk: Buffer) => {
      if (frozen || vanished.has(inbound)) return;
      if (startupEnds && chunk.includes(READY_FOR_QUERY_IDLE)) {
        inbound.end(Buffer.concat([chunk, fatalAdminShutdown()]));
        outbound.destroy();
        return;
      }
      // One delay for every chunk: the timers fire, and the chunks arrive, in order.
      if (answerDelay > 0) setTimeout(() => inbound.write(chunk), answerDelay);
      else inbound.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    freeze: () => (frozen = true),
    endSessionOnCommit: (ending = ADMIN_SHUTDOWN) => (endOnCommit = ending),
    delayAnswers: (ms) => (answerDelay = ms),
    resetNextAtSecondBegin: () => (resetNext = true),
    connections: () => opened,
    vanish: () => sockets.forEach((socket) => vanished.add(socket)),
    endNextAfterStartup: () => (endAfterStartup = true),
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** ReadyForQuery, transaction status idle: the last message of a connection's start-up. */
const READY_FOR_QUERY_IDLE = Buffer.from([0x5a, 0, 0, 0, 5, 0x49]);

/** The severity as the server's lc_messages says it (S), and its SQLSTATE. */
interface SessionEnd {
  readonly severity: string;
  readonly sqlstate: string;
}

const ADMIN_SHUTDOWN: SessionEnd = { severity: 'FATAL', sqlstate: '57P01' };

/** The ErrorResponse a backend sends when pg_terminate_backend ends it (or another FATAL). */
function fatalAdminShutdown(ending: SessionEnd = ADMIN_SHUTDOWN): Buffer {
  const fields = [['S', ending.severity], ['V', 'FATAL'], ['C', ending.sqlstate], ['M', 'terminating connection due to administrator command']];
  const body = Buffer.concat([...fields.map(([key, value]) => Buffer.from(`${key}${value}\0`)), Buffer.from([0])]);
  const header = Buffer.alloc(5);
  header.write('E', 0);
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}

async function outcome(promise: Promise<unknown>): Promise<{ kind: string; ms: number }> {
  const started = Date.now();
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(StorageFailure);
  return { kind: (error as StorageFailure).kind, ms: Date.now() - started };
}

const timeouts = { connectTimeoutSeconds: 1, lockTimeoutMs: 500, statementTimeoutMs: 1000 };

describe('an unresponsive PostgreSQL server', () => {
  expectClustersUnderCi();

  let db: TestDatabase | undefined;
  let relay: Relay | undefined;
  let connection: PostgresConnection | undefined;
  // A unit a test holds open: released here too, so that a test that fails
  // or times out while holding it does not leave close() waiting for it.
  let releaseHeld = (): void => undefined;

  afterEach(async () => {
    releaseHeld();
    releaseHeld = () => undefined;
    await relay?.close();
    await connection?.close().catch(() => undefined);
    await db?.drop();
    [db, relay, connection] = [undefined, undefined, undefined];
  });

  describe.each(postgresClusters().map((cluster) => [cluster.version, cluster] as const))('PostgreSQL %s', (_version, cluster) => {
    /** A read unit that holds its pooled connection until `releaseHeld()`; answers once its body runs (wrapped: awaiting the unit itself would wait for its release). */
    async function holdUnit(connection: PostgresConnection): Promise<{ holding: Promise<void> }> {
      let held!: () => void;
      const holdingStarted = new Promise<void>((resolve) => (held = resolve));
      const holding = connection.transaction(
        'read',
        () =>
          new Promise<void>((resolve) => {
            releaseHeld = resolve;
            held();
          }),
      );
      await holdingStarted;
      return { holding };
    }

    async function openThroughRelay(): Promise<{ relay: Relay; connection: PostgresConnection }> {
      db = await createTestDatabase(cluster);
      const url = new URL(db.url);
      relay = await relayTo(url);
      url.port = String(relay.port);
      connection = new PostgresConnection({ dsn: url.toString(), ...timeouts });
      // A pooled, prepared connection that works: what a running server holds.
      expect(await connection.transaction('read', (session) => session.rows('SELECT 1 AS one'))).toEqual([{ one: 1 }]);
      return { relay, connection };
    }

    it('ends a statement on a pooled connection within the timeouts, as unavailable', async () => {
      const { relay, connection } = await openThroughRelay();
      relay.freeze();
      const { kind, ms } = await outcome(connection.transaction('read', (session) => session.rows('SELECT 1 AS one')));
      expect(kind).toBe('unavailable');
      expect(ms).toBeLessThan(timeouts.statementTimeoutMs + timeouts.connectTimeoutSeconds * 1000 + 3000);
      // A BEGIN with no answer is not a connection lost while idle: no second connection is tried.
      expect(relay.connections()).toBe(1);
    }, 20_000);

    it('ends a statement inside a unit within the timeouts, as unavailable, without a ROLLBACK waiting them out again', async () => {
      const { relay, connection } = await openThroughRelay();
      const { kind, ms } = await outcome(
        connection.transaction('read', (session) => {
          relay.freeze();
          return session.rows('SELECT 1 AS one');
        }),
      );
      expect(kind).toBe('unavailable');
      // One wait for the client's bound (statement + connect timeout), not a second for a ROLLBACK on the lost connection.
      expect(ms).toBeLessThan(timeouts.statementTimeoutMs + timeouts.connectTimeoutSeconds * 1000 + 1500);
    }, 20_000);

    it('replaces a pooled connection that died while idle instead of failing the next unit', async () => {
      const { relay, connection } = await openThroughRelay();
      relay.vanish();
      expect(await connection.transaction('read', (session) => session.rows('SELECT 2 AS two'))).toEqual([{ two: 2 }]);
      relay.vanish();
      expect(await connection.transaction('write', (session) => session.rows('SELECT 3 AS three'))).toEqual([{ three: 3 }]);
    }, 20_000);

    it('ends the unit of a fresh connection lost at its first BEGIN as unavailable, without trying another', async () => {
      // Only a pooled connection that died while idle is replaced: a new one
      // that is lost at once says the server is in trouble now.
      const { relay, connection } = await openThroughRelay();
      const { holding } = await holdUnit(connection);
      relay.resetNextAtSecondBegin();
      expect((await outcome(connection.transaction('read', (session) => session.rows('SELECT 1 AS one')))).kind).toBe('unavailable');
      expect(relay.connections()).toBe(2);
      releaseHeld();
      await holding;
    }, 20_000);

    it('survives a backend terminated right after its start-up, before the pool hands the connection out', async () => {
      const { relay, connection } = await openThroughRelay();
      // The pooled connection is busy, so the unit below opens a new one. The
      // unit holds it once its body runs: waited for, so that the relay ends
      // the next connection, not the one this unit might still be opening.
      const { holding } = await holdUnit(connection);
      relay.endNextAfterStartup();
      expect((await outcome(connection.transaction('read', (session) => session.rows('SELECT 1 AS one')))).kind).toBe('unavailable');
      releaseHeld();
      await holding;
      expect(await connection.transaction('read', (session) => session.rows('SELECT 4 AS four'))).toEqual([{ four: 4 }]);
    }, 20_000);

    it('answers a statement past statement_timeout as busy over a slow network too', async () => {
      // The server's cancellation reaches the client late; the client's own bound must not fire first.
      const { relay, connection } = await openThroughRelay();
      relay.delayAnswers(400);
      expect((await outcome(connection.transaction('read', (session) => session.rows('SELECT pg_sleep(3)')))).kind).toBe('busy');
    }, 20_000);

    it('answers a COMMIT that gets no reply as uncertain', async () => {
      const { relay, connection } = await openThroughRelay();
      const write = connection.transaction('write', async (session) => {
        await session.run('SELECT 1');
        relay.freeze();
      });
      expect((await outcome(write)).kind).toBe('uncertain');
    }, 20_000);

    it('answers a COMMIT whose session the server ends as uncertain, since it may be durable', async () => {
      const { relay, connection } = await openThroughRelay();
      await connection.transaction('write', (session) => session.run('CREATE TABLE public.t (n int)'));
      relay.endSessionOnCommit();
      const write = connection.transaction('write', (session) => session.run('INSERT INTO public.t VALUES (1)'));
      expect((await outcome(write)).kind).toBe('uncertain');
      // It was in fact committed: an answer of "unavailable" would have invited a second write.
      const direct = new PostgresConnection({ dsn: db!.url, ...timeouts });
      try {
        expect(await direct.transaction('read', (session) => session.rows('SELECT n FROM public.t'))).toEqual([{ n: 1 }]);
      } finally {
        await direct.close();
      }
    }, 20_000);

    // node-postgres reads the severity from the translated field (S): a
    // server whose lc_messages is not English says FATAL in its own words,
    // and the SQLSTATE or the session's end must tell. Any other FATAL ends the session too.
    it.each([
      ['a translated severity', { severity: 'ВАЖНО', sqlstate: '57P01' }],
      ['another SQLSTATE', { severity: 'FATAL', sqlstate: '08P01' }],
      ['a translated severity and another SQLSTATE', { severity: 'ВАЖНО', sqlstate: '08P01' }],
    ] as const)('answers a COMMIT whose session ends with %s as uncertain', async (_what, ending) => {
      const { relay, connection } = await openThroughRelay();
      relay.endSessionOnCommit(ending);
      expect((await outcome(connection.transaction('write', (session) => session.run('SELECT 1')))).kind).toBe('uncertain');
    }, 20_000);
  });
});
