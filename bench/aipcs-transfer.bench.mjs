// AIPCS export and import throughput for one service of 100k records (with
// history), through the real `aipcs export` / `aipcs import` commands, on
// SQLite and on a throwaway PostgreSQL 18. Peak resident memory of each
// command is sampled from /proc; runs at a tenth and at twice the size show
// whether memory stays flat as the service grows. Baseline: copying the artefact file with the same stream machinery
// (read + write, no validation).

import { spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { serverManaged } from './fixtures.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, '..', 'dist', 'src', 'aipcs');
const bin = join(dist, 'cli', 'main.js');
const { openSqliteStorage } = await import(join(dist, 'storage/sqlite/index.js'));
const { openPostgresStorage } = await import(join(dist, 'storage/postgres/index.js'));
const { createApplication } = await import(join(dist, 'core/application.js'));
const { validateManifest } = await import(join(dist, 'contract/manifest/validate-manifest.js'));
const { parseJson } = await import(join(here, '..', 'dist', 'src', 'common', 'json.js'));
const { startCluster } = await import(join(here, '..', 'dist', 'test', 'support', 'postgres-cluster.js'));
const { default: pg } = await import('pg');

const scale = Number(process.env.AIPCS_BENCH_SCALE ?? '1');
const full = Math.max(1000, Math.round(100_000 * scale));

const manifest = validateManifest(
  parseJson(
    JSON.stringify({
      manifest_version: 2,
      schema_version: 1,
      entities: [
        {
          name: 'note',
          attributes: [
            ...serverManaged,
            { name: 'title', type: 'string', required: true },
            { name: 'detail', type: 'string', retrieval_mode: 'annotation' },
            { name: 'status', type: 'string' },
            { name: 'confidence', type: 'number' },
            { name: 'tags', type: 'string_list', retrieval_mode: 'membership' },
          ],
        },
      ],
    }),
    { maxBytes: 1 << 20, maxDepth: 64 },
  ),
).manifest;

/** Runs `aipcs …`, sampling the child's resident set; returns envelope, seconds and peak RSS in MiB. */
function run(args, env = {}) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, [bin, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let peak = 0;
    const sample = () => {
      try {
        const kb = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0);
        peak = Math.max(peak, kb / 1024);
      } catch {
        // the process has exited
      }
    };
    const timer = setInterval(sample, 10);
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('exit', () => {
      clearInterval(timer);
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const line = (stdout.trim() || stderr.trim()).split('\n').at(-1) ?? '';
      let envelope;
      try {
        envelope = JSON.parse(line);
      } catch {
        envelope = { ok: false, error: { code: 'unparsable' } };
      }
      if (!envelope.ok) reject(new Error(`aipcs ${args[0]} failed: ${JSON.stringify(envelope.error)}`));
      else resolve({ envelope, seconds, peak });
    });
  });
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

/** A materialised service with `count` records and one history event each, loaded in large units. */
async function loadService(storage, count) {
  const app = appOver(storage);
  const seeded = await app.lifecycle.seed({ domainName: `bench_${count}`, domainClass: 'bench', intentDescription: 'Transfer benchmark.', idempotencyKey: `seed-${count}` });
  const serviceId = seeded.service_id;
  await app.lifecycle.design({ serviceId, manifest, idempotencyKey: `design-${count}` });
  await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: `mat-${count}` });
  const admission = await app.lifecycle.admitData(serviceId);
  const layout = admission.layout.entities[0];
  let now = 1_800_000_000_000_000n;
  for (let start = 0; start < count; start += 10_000) {
    await storage.data.write(admission.service.storage, 'bench', async (tx) => {
      for (let i = start; i < Math.min(count, start + 10_000); i++) {
        now += 1n;
        const fields = { title: `note ${i}`, detail: `Detail of note ${i}: ${'lorem ipsum '.repeat(8)}`, status: `s${i % 10}`, confidence: (i % 100) / 100, tags: [`t${i % 100}`, 'bench'] };
        const record = { id: randomUUID(), createdAt: now, updatedAt: now, createdVia: 'mcp', recordVersion: 1n, fields };
        await tx.insertRecord(layout, record);
        await tx.appendHistory({ entityName: 'note', recordId: record.id, recordVersion: 1n, kind: 'create', before: null, after: fields, occurredAt: now });
      }
    });
  }
  return serviceId;
}

async function measure(backend, count) {
  const folder = mkdtempSync(join(tmpdir(), 'aipcs-bench-'));
  try {
    const source = await backend.fresh(folder, 'source');
    const storage = await source.open();
    const serviceId = await loadService(storage, count);
    await storage.close();
    await run(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', randomUUID(), ...source.args], source.env);
    const artefact = join(folder, 'service.aipcs.jsonl');
    const exported = await run(['export', serviceId, '--output', artefact, '--expected-revision', '4', '--operation-id', randomUUID(), ...source.args], source.env);
    const bytes = statSync(artefact).size;
    const destination = await backend.fresh(folder, 'destination');
    await (await destination.open()).close(); // migrate the destination registry, as `serve` would
    const dryRun = await run(['import', '--input', artefact, '--dry-run', ...destination.args], destination.env);
    const imported = await run(['import', '--input', artefact, '--operation-id', randomUUID(), '--yes', ...destination.args], destination.env);
    const copyStarted = process.hrtime.bigint();
    await pipeline(createReadStream(artefact), createWriteStream(join(folder, 'copy')));
    const copySeconds = Number(process.hrtime.bigint() - copyStarted) / 1e9;
    await source.drop();
    await destination.drop();
    const mb = bytes / 1e6;
    return { count, mb, exported, dryRun, imported, copySeconds, rate: (result) => mb / result.seconds };
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

const sqlite = {
  name: 'SQLite',
  async fresh(folder, label) {
    const dataRoot = join(folder, label);
    return {
      args: ['--profile', 'sqlite', '--principal-id', 'bench', '--sqlite-data-root', dataRoot],
      env: {},
      open: () => openSqliteStorage({ dataRoot, busyTimeoutMs: 5000, defaultRoot: false }),
      drop: async () => undefined,
    };
  },
};

async function postgresBackend() {
  const cluster = await startCluster('18');
  const admin = new pg.Client({ connectionString: cluster.adminUrl });
  await admin.connect();
  let n = 0;
  return {
    name: `PostgreSQL ${cluster.serverVersion}`,
    async fresh() {
      const name = `aipcs_transfer_${++n}`;
      await admin.query(`CREATE DATABASE ${name}`);
      const dsn = cluster.adminUrl.replace(/\/postgres$/, `/${name}`);
      return {
        args: ['--profile', 'postgresql', '--principal-id', 'bench', '--postgres-dsn-env', 'AIPCS_BENCH_DSN', '--postgres-statement-timeout-ms', '300000'],
        env: { AIPCS_BENCH_DSN: dsn },
        open: () => openPostgresStorage({ dsn, connectTimeoutSeconds: 10, lockTimeoutMs: 5000, statementTimeoutMs: 300000 }),
        drop: async () => undefined,
      };
    },
    async close() {
      await admin.end();
      await cluster.stop();
    },
  };
}

const results = [];
// A tenth, the full size and twice it (still under the format's default
// 256 MiB artefact limit): memory must level off once caches are warm.
const sizes = [Math.max(1000, Math.round(full / 10)), full, 2 * full];
for (const count of sizes) results.push({ backend: sqlite.name, ...(await measure(sqlite, count)) });
try {
  const postgres = await postgresBackend();
  try {
    for (const count of sizes) results.push({ backend: postgres.name, ...(await measure(postgres, count)) });
  } finally {
    await postgres.close();
  }
} catch (error) {
  process.stderr.write(`PostgreSQL part skipped: ${error.message}\n`);
}

const fmt = (value, digits = 1) => value.toFixed(digits);
const lines = [
  '## AIPCS export and import',
  '',
  'Whole commands as an operator runs them (process start included), one materialised service with one history event per record; MB/s over the artefact size. Peak RSS is the command process. Baseline: a plain stream copy of the same file.',
  '',
  '| backend | records | artefact MB | export MB/s | import --dry-run MB/s | import MB/s | plain copy MB/s | export peak RSS MiB | import peak RSS MiB |',
  '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ...results.map(
    (r) =>
      `| ${r.backend} | ${r.count} | ${fmt(r.mb)} | ${fmt(r.rate(r.exported))} | ${fmt(r.rate(r.dryRun))} | ${fmt(r.rate(r.imported))} | ${fmt(r.mb / r.copySeconds, 0)} | ${fmt(r.exported.peak, 0)} | ${fmt(r.imported.peak, 0)} |`,
  ),
  '',
];
process.stdout.write(lines.join('\n') + '\n');
