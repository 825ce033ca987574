// AIPCS tool-call latency over Streamable HTTP beside stdio: the same built
// `aipcs serve --profile sqlite`, the same SDK Client, the same calls
// (aipcs_server_info, aipcs_record_get, aipcs_record_create), one after
// another. Prints a markdown section. Loopback only; the listener is stopped
// at the end. Sizes can be reduced for a quick run: AIPCS_BENCH_SCALE=0.1.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { percentile, serverManaged } from './fixtures.mjs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const here = dirname(fileURLToPath(import.meta.url));
const bin = join(here, '..', 'dist', 'src', 'aipcs', 'cli', 'main.js');
const scale = Number(process.env.AIPCS_BENCH_SCALE ?? '1');
const rounds = Math.max(50, Math.round(500 * scale));
const warmup = 30;

const manifest = {
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
      ],
    },
  ],
};

const fmt = (value, digits = 3) => value.toFixed(digits);
const elapsedMs = (started) => Number(process.hrtime.bigint() - started) / 1e6;

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function serveArgs(dataRoot) {
  return ['serve', '--profile', 'sqlite', '--principal-id', 'bench', '--sqlite-data-root', dataRoot];
}

async function stdioClient(dataRoot) {
  const client = new Client({ name: 'bench', version: '1' });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [bin, ...serveArgs(dataRoot)], stderr: 'ignore' }));
  return { client, stop: () => client.close() };
}

async function httpClient(dataRoot) {
  const port = await freePort();
  const child = spawn(process.execPath, [bin, ...serveArgs(dataRoot), '--transport', 'streamable-http', '--http-port', String(port), '--log-level', 'info'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  await new Promise((resolve, reject) => {
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      if (stderr.includes('listener ready')) resolve();
    });
    exited.then((code) => reject(new Error(`aipcs exited with ${code}`)));
  });
  const client = new Client({ name: 'bench', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
  return {
    client,
    async stop() {
      await client.close();
      child.kill('SIGTERM');
      const code = await exited;
      if (code !== 0) throw new Error(`aipcs exited with ${code} on SIGTERM`);
    },
  };
}

async function measure(label, open) {
  const base = mkdtempSync(join(tmpdir(), 'aipcs-bench-http-'));
  const { client, stop } = await open(join(base, 'data'));
  const call = async (name, args) => {
    const result = await client.callTool({ name, arguments: args });
    const envelope = JSON.parse(result.content[0].text);
    if (!envelope.ok) throw new Error(`${label}: ${name} failed`);
    return envelope.result;
  };
  const connectStarted = process.hrtime.bigint();
  const seeded = await call('aipcs_service_seed', { domain_name: 'bench', domain_class: 'bench', intent_description: 'Benchmark.', idempotency_key: 's' });
  const serviceId = seeded.service_id;
  await call('aipcs_service_design', { service_id: serviceId, schema: manifest, idempotency_key: 'd' });
  await call('aipcs_service_materialise', { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'm' });
  const setupMs = elapsedMs(connectStarted);
  const created = await call('aipcs_record_create', { service_id: serviceId, entity_name: 'note', record: { title: 'fixed', status: 'a', confidence: 0.5 }, idempotency_key: 'fixed' });
  const recordId = created.record.id;

  const sample = async (name, argsFor) => {
    for (let i = 0; i < warmup; i++) await call(name, argsFor(-1 - i));
    const times = [];
    for (let i = 0; i < rounds; i++) {
      const started = process.hrtime.bigint();
      await call(name, argsFor(i));
      times.push(elapsedMs(started));
    }
    return { p50: percentile(times, 0.5), p95: percentile(times, 0.95) };
  };
  const info = await sample('aipcs_server_info', () => ({}));
  const get = await sample('aipcs_record_get', () => ({ service_id: serviceId, entity_name: 'note', record_id: recordId }));
  const create = await sample('aipcs_record_create', (i) => ({ service_id: serviceId, entity_name: 'note', record: { title: `note ${i}`, status: 's', confidence: 0.25 }, idempotency_key: `k${i}` }));
  await stop();
  rmSync(base, { recursive: true, force: true });
  return { label, setupMs, info, get, create };
}

const stdio = await measure('stdio', stdioClient);
const http = await measure('Streamable HTTP', httpClient);
const row = (name, pick) => `| ${name} | ${fmt(pick(stdio).p50)} | ${fmt(pick(stdio).p95)} | ${fmt(pick(http).p50)} | ${fmt(pick(http).p95)} | +${fmt(pick(http).p50 - pick(stdio).p50)} |`;

const lines = [
  '## AIPCS over Streamable HTTP vs stdio',
  '',
  `Sequential tool calls through the MCP SDK Client against the built \`aipcs serve --profile sqlite\`, over stdio pipes and over the loopback Streamable HTTP listener (SSE-framed responses, one session); ${rounds} timed calls per tool after ${warmup} warm-up calls:`,
  '',
  '| tool | stdio p50 ms | stdio p95 ms | HTTP p50 ms | HTTP p95 ms | HTTP − stdio p50 ms |',
  '| --- | ---: | ---: | ---: | ---: | ---: |',
  row('aipcs_server_info', (r) => r.info),
  row('aipcs_record_get', (r) => r.get),
  row('aipcs_record_create', (r) => r.create),
  '',
  `Seed, design and materialise (three calls, first use of the connection): stdio ${fmt(stdio.setupMs, 1)} ms, HTTP ${fmt(http.setupMs, 1)} ms.`,
  '',
];
process.stdout.write(lines.join('\n') + '\n');
