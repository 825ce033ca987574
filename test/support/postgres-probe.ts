// What the server itself says our DDL looks like: the DDL is run in a
// uniquely named scratch schema inside a transaction that is always rolled
// back, and the schema's catalog signature read before the rollback. The
// product renders expected signatures without building anything
// (src/aipcs/storage/postgres/catalog.ts); tests compare the two.

import { randomBytes } from 'node:crypto';
import { schemaSignature } from '../../src/aipcs/storage/postgres/catalog.js';
import type { PostgresConnection } from '../../src/aipcs/storage/postgres/connection.js';

class ProbeDone extends Error {
  constructor(readonly signature: string) {
    super('probe rolled back');
  }
}

/** The signature of what `ddlFor(scratch)` builds (with `tablePrefix`, as schemaSignature takes it). */
export async function probeSignature(connection: PostgresConnection, ddlFor: (schema: string) => readonly string[], tablePrefix: string | null = null): Promise<string> {
  const scratch = `__aipcs_probe_${randomBytes(8).toString('hex')}`;
  try {
    await connection.transaction('write', async (session) => {
      for (const ddl of ddlFor(scratch)) await session.run(ddl);
      throw new ProbeDone(await schemaSignature(session, scratch, tablePrefix));
    });
  } catch (error) {
    if (error instanceof ProbeDone) return error.signature;
    throw error;
  }
  throw new Error('the probe transaction was not rolled back');
}
