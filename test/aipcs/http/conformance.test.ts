// The official MCP conformance suite (@modelcontextprotocol/conformance,
// pinned) against `aipcs serve --transport streamable-http --profile sqlite`.
// Every scenario must pass except those in conformance-expected-failures.json,
// which need capabilities or test tools the contract does not offer; a listed
// scenario that starts passing fails this test so the list stays true.
// Offline: the suite talks only to the loopback listener.

import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDataRoot, sqliteArgs } from '../../support/aipcs-client.js';
import { repoRoot } from '../../support/bins.js';
import { freePort, startHttpAipcs, type HttpAipcs } from './support.js';

interface Check {
  readonly id: string;
  readonly status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | string;
  readonly errorMessage?: string;
}

const CLI = join(repoRoot, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const expected = (JSON.parse(readFileSync(join(repoRoot, 'test', 'aipcs', 'http', 'conformance-expected-failures.json'), 'utf8')) as { scenarios: Record<string, string> }).scenarios;

/** Runs the whole suite once; resolves with each scenario's checks (read from the suite's own result files). */
async function runSuite(url: URL, outputDir: string): Promise<Map<string, Check[]>> {
  const child = spawn(process.execPath, [CLI, 'server', '--url', url.href, '--suite', 'all', '--output-dir', outputDir], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/root', NO_COLOR: '1' },
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  // The suite exits 1 whenever a scenario fails; the files say which.
  if (code !== 0 && code !== 1) throw new Error(`conformance exited with ${String(code)}: ${output}`);
  const results = new Map<string, Check[]>();
  for (const entry of readdirSync(outputDir)) {
    const match = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(entry);
    if (!match?.[1]) continue;
    results.set(match[1], JSON.parse(readFileSync(join(outputDir, entry, 'checks.json'), 'utf8')) as Check[]);
  }
  return results;
}

describe('MCP conformance suite over Streamable HTTP', () => {
  let aipcs: HttpAipcs;
  let outputDir: string;
  let results: Map<string, Check[]>;

  beforeAll(async () => {
    const port = await freePort();
    // The DNS-rebinding scenario sends Origin http://<the URL's host>: allow exactly that one.
    aipcs = await startHttpAipcs([...sqliteArgs(freshDataRoot()), '--http-allowed-origins', `http://127.0.0.1:${port}`], {}, port);
    outputDir = mkdtempSync(join(tmpdir(), 'aipcs-conformance-'));
    results = await runSuite(aipcs.url, outputDir);
  }, 120_000);

  afterAll(async () => {
    expect(await aipcs.stop()).toBe(0);
    rmSync(outputDir, { recursive: true, force: true });
  });

  it('ran the server scenarios, including the ones a tools-only server must pass', () => {
    for (const name of ['server-initialize', 'ping', 'tools-list', 'server-sse-multiple-streams', 'dns-rebinding-protection']) {
      expect(results.has(name), name).toBe(true);
    }
    for (const name of Object.keys(expected)) expect(results.has(name), `${name} is listed but was not run`).toBe(true);
  });

  it('passes every scenario that applies, and fails exactly the listed ones', () => {
    const outcome = [...results].map(([name, checks]) => {
      const failures = checks.filter((check) => check.status === 'FAILURE');
      return { name, passed: failures.length === 0, failures: failures.map((check) => `${check.id}: ${check.errorMessage ?? ''}`) };
    });
    const unexpected = outcome.filter((scenario) => !scenario.passed && !(scenario.name in expected));
    const stale = outcome.filter((scenario) => scenario.passed && scenario.name in expected).map((scenario) => scenario.name);
    expect(unexpected, 'scenarios that fail but are not expected to').toEqual([]);
    expect(stale, 'listed as expected failures but now passing: remove them from the list').toEqual([]);
    const passing = outcome.filter((scenario) => scenario.passed).map((scenario) => scenario.name);
    expect(passing).toEqual(expect.arrayContaining(['server-initialize', 'ping', 'tools-list', 'server-sse-multiple-streams', 'dns-rebinding-protection']));
  });

  it('kept stdout empty and stderr free of the principal, paths, host and port', () => {
    expect(aipcs.stdout()).toBe('');
    expect(aipcs.stderr()).toContain('Streamable HTTP listener ready');
    expect(aipcs.stderr()).not.toContain('local-agent');
    expect(aipcs.stderr()).not.toContain('aipcs-e2e-');
    expect(aipcs.stderr()).not.toContain('127.0.0.1');
    expect(aipcs.stderr()).not.toContain(String(aipcs.port));
  });
});
