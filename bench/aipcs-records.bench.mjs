// AIPCS records: record_create over the real stdio MCP client against a
// bare better-sqlite3 insert of the same row with the same durability
// settings; exact search at 10k/100k/1M records in one entity; list
// pagination through 100k records. The same rows and client run on SQLite
// and on a throwaway PostgreSQL 18 started here. Prints a markdown section.
// Sizes can be reduced for a quick run: AIPCS_BENCH_SCALE=0.1.

import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ms, percentile, serverManaged } from './fixtures.mjs';
import Database from 'better-sqlite3';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, '..', 'dist', 'src', 'aipcs');
const { openSqliteStorage } = await import(join(dist, 'storage/sqlite/index.js'));
const { createApplication } = await import(join(dist, 'core/application.js'));
const { validateManifest } = await import(join(dist, 'contract/manifest/validate-manifest.js'));
const { openPostgresStorage } = await import(join(dist, 'storage/postgres/index.js'));
const { BOOKKEEPING_DDL, layoutDdl } = await import(join(dist, 'storage/sqlite/service-store.js'));
const { storeLayoutOf } = await import(join(dist, 'core/layout.js'));
const { parseJson } = await import(join(here, '..', 'dist', 'src', 'common', 'json.js'));
const { startCluster } = await import(join(here, '..', 'dist', 'test', 'support', 'postgres-cluster.js'));
const { default: pg } = await import('pg');

const scale = Number(process.env.AIPCS_BENCH_SCALE ?? '1');
const sized = (n) => Math.max(100, Math.round(n * scale));

const manifestDocument = {
  manifest_version: 2,
  schema_version: 1,
  entities: [
    {
      name: 'note',
      attributes: [
        ...serverManaged,
        { name: 'title', type: 'string', required: true },
        { name: 'status', type: 'string' },
        { name: 'confidence', type: 'number' },
        { name: 'tags', type: 'string_list', retrieval_mode: 'membership' },
      ],
    },
  ],
};

const fmt = (value, digits = 3) => value.toFixed(digits);

function freshRoot() {
  const base = mkdtempSync(join(tmpdir(), 'aipcs-bench-'));
  return { base, dataRoot: join(base, 'data') };
}

async function materialisedService(app) {
  const manifest = validateManifest(parseJson(JSON.stringify(manifestDocument), { maxBytes: 1 << 20, maxDepth: 64 })).manifest;
  const seeded = await app.lifecycle.seed({ domainName: 'bench', domainClass: 'bench', intentDescription: 'Benchmark.', idempotencyKey: 'seed' });
  const serviceId = seeded.service_id;
  await app.lifecycle.design({ serviceId, manifest, idempotencyKey: 'design' });
  await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'mat' });
  return serviceId;
}

function appOver(storage) {
  let now = 1_800_000_000_000_000n;
  return createApplication(storage, {
    principalId: 'bench',
    createdVia: 'mcp',
    nowMicros: () => (now += 1n),
    uuid: () => randomUUID(),
    sha256: (text) => createHash('sha256').update(text).digest('hex'),
  });
}

// --- 1. record_create over stdio MCP vs bare better-sqlite3 ---------------------------------

/** Untimed calls before each timed series, so every series runs warm (optimised code, steady WAL). */
const WARM_UP = 300;

async function benchCreate(backend) {
  const n = sized(1000);
  const { base, dataRoot } = freshRoot();
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [join(dist, 'cli/main.js'), 'serve', '--principal-id', 'bench', ...backend.serveArgs(dataRoot)],
    env: { ...process.env, ...backend.env },
    stderr: 'ignore',
  });
  const client = new Client({ name: 'bench', version: '1' });
  await client.connect(transport);
  const call = async (name, args) => JSON.parse((await client.callTool({ name, arguments: args })).content[0].text);
  const seeded = await call('aipcs_service_seed', { domain_name: 'bench', domain_class: 'bench', intent_description: 'Benchmark.', idempotency_key: 's' });
  const serviceId = seeded.result.service_id;
  await call('aipcs_service_design', { service_id: serviceId, schema: manifestDocument, idempotency_key: 'd' });
  await call('aipcs_service_materialise', { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'm' });
  const floor = [];
  for (let i = -WARM_UP; i < n; i++) {
    const started = process.hrtime.bigint();
    await call('aipcs_server_info', {});
    if (i >= 0) floor.push(ms(process.hrtime.bigint() - started));
  }
  const mcp = [];
  for (let i = -WARM_UP; i < n; i++) {
    const started = process.hrtime.bigint();
    const envelope = await call('aipcs_record_create', { service_id: serviceId, entity_name: 'note', record: { title: `note ${i}`, status: `s${i % 50}`, confidence: 0.5, tags: ['a', `t${i % 10}`] }, idempotency_key: `k${i}` });
    if (i >= 0) mcp.push(ms(process.hrtime.bigint() - started));
    if (!envelope.ok) throw new Error('create failed');
  }
  await client.close();

  // Baselines, interleaved so that both see the same machine state: the same
  // row into a bare table, and the create's whole write set; same WAL and
  // synchronous=FULL, one transaction each.
  const bareInsert = bareRowInserter(join(base, 'bare.sqlite'));
  const writeSetInsert = bareWriteSetInserter(join(base, 'write-set.sqlite'));
  const bare = [];
  const writeSet = [];
  for (let i = -WARM_UP; i < n; i++) {
    // Alternate which goes first: a commit right after another file's commit can pay for it.
    const [bareMs, writeSetMs] = i % 2 === 0 ? [bareInsert(i), writeSetInsert(i)] : [writeSetInsert(i), bareInsert(i)].reverse();
    if (i >= 0) {
      bare.push(bareMs);
      writeSet.push(writeSetMs);
    }
  }
  bareInsert.close();
  writeSetInsert.close();
  rmSync(base, { recursive: true, force: true });
  return {
    n,
    floorP50: percentile(floor, 0.5),
    floorP95: percentile(floor, 0.95),
    mcpP50: percentile(mcp, 0.5),
    mcpP95: percentile(mcp, 0.95),
    bareP50: percentile(bare, 0.5),
    bareP95: percentile(bare, 0.95),
    writeSetP50: percentile(writeSet, 0.5),
    writeSetP95: percentile(writeSet, 0.95),
  };
}

function durableDatabase(path) {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  return db;
}

/** The create's row into a bare table; each call times one transaction. */
function bareRowInserter(path) {
  const db = durableDatabase(path);
  db.exec(`CREATE TABLE note (id TEXT PRIMARY KEY NOT NULL, owner_id TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, created_via TEXT NOT NULL,
    record_version INTEGER NOT NULL, title TEXT NOT NULL, status TEXT, confidence REAL, tags TEXT) STRICT`);
  const insert = db.prepare(`INSERT INTO note VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const run = (i) => {
    const started = process.hrtime.bigint();
    db.exec('BEGIN IMMEDIATE');
    insert.run(randomUUID(), 'bench', '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z', 'mcp', 1, `note ${i}`, `s${i % 50}`, 0.5, JSON.stringify(['a', `t${i % 10}`]));
    db.exec('COMMIT');
    return ms(process.hrtime.bigint() - started);
  };
  run.close = () => db.close();
  return run;
}

/**
 * What a create must make durable, without the server: the store's own DDL
 * (bookkeeping tables and the entity with its equality indexes), then per
 * create one transaction writing the row, its list members, the history
 * event and the replay record, with bare prepared statements.
 */
function bareWriteSetInserter(path) {
  const manifest = validateManifest(parseJson(JSON.stringify(manifestDocument), { maxBytes: 1 << 20, maxDepth: 64 })).manifest;
  const db = durableDatabase(path);
  for (const ddl of [...BOOKKEEPING_DDL, ...layoutDdl(storeLayoutOf(manifest))]) db.exec(ddl);
  const row = db.prepare(`INSERT INTO note (id, owner_id, created_at, updated_at, created_via, record_version, title, status, confidence, tags) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const member = db.prepare(`INSERT INTO __aipcs_list_member (entity_name, field_name, member, record_id) VALUES (?, ?, ?, ?)`);
  const history = db.prepare(
    `INSERT INTO __aipcs_record_history (principal_id, entity_name, record_id, record_version, event_kind, before_json, after_json, occurred_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const replay = db.prepare(`INSERT INTO __aipcs_record_mutation (principal_id, idempotency_key, operation_kind, fingerprint, result_json, completed_at) VALUES (?, ?, ?, ?, ?, ?)`);
  const run = (i) => {
    const id = randomUUID();
    const tags = ['a', `t${i % 10}`];
    const fields = JSON.stringify({ title: `note ${i}`, status: `s${i % 50}`, confidence: 0.5, tags });
    const started = process.hrtime.bigint();
    db.exec('BEGIN IMMEDIATE');
    row.run(id, 'bench', '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z', 'mcp', 1, `note ${i}`, `s${i % 50}`, 0.5, JSON.stringify(tags));
    for (const tag of tags) member.run('note', 'tags', tag, id);
    history.run('bench', 'note', id, 1, 'create', null, fields, i);
    replay.run('bench', `k${i}`, 'create', 'f'.repeat(64), `{"record":${fields},"replayed":false}`, i);
    db.exec('COMMIT');
    return ms(process.hrtime.bigint() - started);
  };
  run.close = () => db.close();
  return run;
}

// --- 2. exact search at growing sizes, 3. pagination ------------------------------------------

async function loadRecords(storage, serviceId, app, total, loaded) {
  const admission = await app.lifecycle.admitData(serviceId);
  const layout = admission.layout.entities.find((entity) => entity.name === 'note');
  const batch = 20_000;
  let now = 1_800_000_000_000_000n;
  for (let start = loaded; start < total; start += batch) {
    await storage.data.write(admission.service.storage, 'bench', async (tx) => {
      for (let i = start; i < Math.min(total, start + batch); i++) {
        now += 1n;
        await tx.insertRecord(layout, {
          id: randomUUID(),
          createdAt: now,
          updatedAt: now,
          createdVia: 'mcp',
          recordVersion: 1n,
          fields: { title: `note ${i}`, status: `s${i % 100}`, confidence: (i % 100) / 100, tags: [`t${i % 100}`] },
        });
      }
    });
  }
}

async function benchSearch(backend) {
  const { base, dataRoot } = freshRoot();
  const storage = await backend.open(dataRoot);
  const app = appOver(storage);
  const serviceId = await materialisedService(app);
  const sizes = backend.sizes;
  const rows = [];
  let loaded = 0;
  let pagination;
  for (const size of sizes) {
    await loadRecords(storage, serviceId, app, size, loaded);
    loaded = size;
    await backend.afterLoad?.((await app.lifecycle.admitData(serviceId)).service.storage.namespace);
    const scalar = [];
    const member = [];
    for (let q = 0; q < 300; q++) {
      let started = process.hrtime.bigint();
      await app.records.list({ serviceId, entityName: 'note', limit: 50, cursor: null, branch: null, filters: { status: `s${(q * 37) % 100}` } });
      scalar.push(ms(process.hrtime.bigint() - started));
      started = process.hrtime.bigint();
      await app.records.list({ serviceId, entityName: 'note', limit: 50, cursor: null, branch: null, filters: { tags: `t${(q * 13) % 100}` } });
      member.push(ms(process.hrtime.bigint() - started));
    }
    rows.push({ size, scalarP50: percentile(scalar, 0.5), scalarP95: percentile(scalar, 0.95), memberP50: percentile(member, 0.5), memberP95: percentile(member, 0.95) });
    if (size === sizes[1]) {
      const pages = [];
      let cursor = null;
      let seen = 0;
      const started = process.hrtime.bigint();
      do {
        const pageStart = process.hrtime.bigint();
        const page = await app.records.list({ serviceId, entityName: 'note', limit: 100, cursor, branch: null });
        pages.push(ms(process.hrtime.bigint() - pageStart));
        seen += page.records.length;
        cursor = page.next_cursor;
      } while (cursor !== null);
      pagination = { records: seen, pages: pages.length, totalMs: ms(process.hrtime.bigint() - started), pageP50: percentile(pages, 0.5) };
    }
  }
  await storage.close();
  rmSync(base, { recursive: true, force: true });
  return { rows, pagination };
}

async function postgresBackend() {
  const cluster = await startCluster('18');
  const admin = new pg.Client({ connectionString: cluster.adminUrl });
  await admin.connect();
  let n = 0;
  const fresh = async () => {
    const name = `aipcs_bench_${++n}`;
    await admin.query(`CREATE DATABASE ${name}`);
    return cluster.adminUrl.replace(/\/postgres$/, `/${name}`);
  };
  const createDsn = await fresh();
  const searchDsn = await fresh();
  const options = (dsn) => ({ dsn, connectTimeoutSeconds: 10, lockTimeoutMs: 5000, statementTimeoutMs: 300000 });
  return {
    name: `PostgreSQL ${cluster.serverVersion}`,
    serveArgs: () => ['--profile', 'postgresql', '--postgres-dsn-env', 'AIPCS_BENCH_DSN', '--postgres-statement-timeout-ms', '300000'],
    env: { AIPCS_BENCH_DSN: createDsn },
    open: () => openPostgresStorage(options(searchDsn)),
    // A bulk load leaves the planner without statistics until autovacuum
    // runs (within a minute); analyse at once, as an operator would.
    async afterLoad(namespace) {
      const client = new pg.Client({ connectionString: searchDsn });
      await client.connect();
      await client.query(`ANALYZE "${namespace}"."note", "${namespace}"."__aipcs_list_member"`);
      await client.end();
    },
    // The test cluster runs with fsync off; durability is not what this compares.
    sizes: [sized(10_000), sized(100_000)],
    async close() {
      await admin.end();
      await cluster.stop();
    },
  };
}

const sqlite = {
  name: 'SQLite',
  serveArgs: (dataRoot) => ['--profile', 'sqlite', '--sqlite-data-root', dataRoot],
  env: {},
  open: (dataRoot) => openSqliteStorage({ dataRoot, busyTimeoutMs: 5000, defaultRoot: false }),
  sizes: [sized(10_000), sized(100_000), sized(1_000_000)],
  close: async () => undefined,
};

const create = await benchCreate(sqlite);
const search = await benchSearch(sqlite);
const first = search.rows[0];
const last = search.rows[search.rows.length - 1];

let postgres;
try {
  if (process.env.AIPCS_BENCH_SKIP_POSTGRES) throw new Error('AIPCS_BENCH_SKIP_POSTGRES is set');
  const backend = await postgresBackend();
  try {
    postgres = { name: backend.name, create: await benchCreate(backend), search: await benchSearch(backend) };
  } finally {
    await backend.close();
  }
} catch (error) {
  process.stderr.write(`PostgreSQL part skipped: ${error.message}\n`);
}

const lines = [
  '## AIPCS records',
  '',
  '### SQLite',
  '',
  `record_create over the stdio MCP client (${create.n} sequential calls) vs a bare better-sqlite3 insert of the same row (WAL, synchronous=FULL, one transaction per insert):`,
  '',
  '| | p50 ms | p95 ms |',
  '| --- | ---: | ---: |',
  `| aipcs_record_create via MCP stdio | ${fmt(create.mcpP50)} | ${fmt(create.mcpP95)} |`,
  `| bare insert | ${fmt(create.bareP50)} | ${fmt(create.bareP95)} |`,
  `| the create's write set in bare better-sqlite3 (store DDL; row, members, history, replay; one transaction) | ${fmt(create.writeSetP50)} | ${fmt(create.writeSetP95)} |`,
  `| aipcs_server_info via MCP stdio (protocol floor, no storage) | ${fmt(create.floorP50)} | ${fmt(create.floorP95)} |`,
  `| ratio (target ≤ 3x) | ${fmt(create.mcpP50 / create.bareP50, 2)}x | |`,
  '',
  'Exact search in one entity, in process through the application layer (limit 50, 300 queries per size; 100 distinct statuses and tags, so every query fills its page at 10k records and beyond):',
  '',
  '| records | scalar p50 ms | scalar p95 ms | membership p50 ms | membership p95 ms |',
  '| ---: | ---: | ---: | ---: | ---: |',
  ...search.rows.map((row) => `| ${row.size} | ${fmt(row.scalarP50)} | ${fmt(row.scalarP95)} | ${fmt(row.memberP50)} | ${fmt(row.memberP95)} |`),
  '',
  `Scalar search p50 at ${last.size} vs ${first.size}: ${fmt(last.scalarP50 / first.scalarP50, 2)}x (target ≤ 1.5x); membership: ${fmt(last.memberP50 / first.memberP50, 2)}x.`,
  '',
  `Pagination through ${search.pagination.records} records, 100 per page: ${search.pagination.pages} pages in ${fmt(search.pagination.totalMs, 0)} ms (page p50 ${fmt(search.pagination.pageP50)} ms).`,
  '',
];
if (postgres) {
  lines.push(
    `### ${postgres.name} beside SQLite (same rows, same client)`,
    '',
    'The PostgreSQL cluster is the throwaway one the tests use (loopback, fsync off), so create latency is not comparable for durability; it shows the protocol and query overhead of the adapter.',
    '',
    '| | SQLite p50 ms | PostgreSQL p50 ms | ratio |',
    '| --- | ---: | ---: | ---: |',
    `| aipcs_record_create via MCP stdio | ${fmt(create.mcpP50)} | ${fmt(postgres.create.mcpP50)} | ${fmt(postgres.create.mcpP50 / create.mcpP50, 2)}x |`,
    ...postgres.search.rows.map((row) => {
      const same = search.rows.find((candidate) => candidate.size === row.size);
      return `| scalar search at ${row.size} records | ${fmt(same.scalarP50)} | ${fmt(row.scalarP50)} | ${fmt(row.scalarP50 / same.scalarP50, 2)}x |\n| membership search at ${row.size} records | ${fmt(same.memberP50)} | ${fmt(row.memberP50)} | ${fmt(row.memberP50 / same.memberP50, 2)}x |`;
    }),
    `| pagination page (100 records) | ${fmt(search.pagination.pageP50)} | ${fmt(postgres.search.pagination.pageP50)} | ${fmt(postgres.search.pagination.pageP50 / search.pagination.pageP50, 2)}x |`,
    '',
  );
}
process.stdout.write(lines.join('\n') + '\n');
