// Shared builders for the configuration tests: a resolver call with a fake
// TOML file, and expectations on the single-issue error document.

import { expect } from 'vitest';
import type { ConfigErrorDocument, ConfigIssuePath } from '../../../src/aipcs/config/errors.js';
import type { ConfigOptions } from '../../../src/aipcs/config/fields.js';
import { resolveConfiguration, type ConfigResolution, type ResolvedConfig } from '../../../src/aipcs/config/resolve.js';

export interface Call {
  readonly options?: ConfigOptions;
  readonly env?: Record<string, string | undefined>;
  /** TOML text of the file given with --config (the option is set automatically). */
  readonly toml?: string;
  readonly platform?: NodeJS.Platform;
  readonly sqliteVersion?: string | null;
}

export const FAKE_CONFIG_PATH = '/nonexistent/aipcs-test/config.toml';

export function run(call: Call = {}): ConfigResolution {
  const options: ConfigOptions = call.toml === undefined ? (call.options ?? {}) : { ...call.options, config: FAKE_CONFIG_PATH };
  return resolveConfiguration({
    options,
    env: call.env ?? {},
    platform: call.platform ?? 'linux',
    sqliteVersion: call.sqliteVersion === undefined ? '3.53.2' : call.sqliteVersion,
    readConfigFile: () => (call.toml === undefined ? { ok: false } : { ok: true, bytes: Buffer.from(call.toml, 'utf8') }),
  });
}

export function ok(call: Call = {}): ResolvedConfig {
  const result = run(call);
  if (!result.ok) throw new Error(`expected success, got ${JSON.stringify(result.error)}`);
  return result.config;
}

export function failure(call: Call): ConfigErrorDocument {
  const result = run(call);
  if (result.ok) throw new Error('expected a configuration failure');
  return result.error;
}

export function expectInvalid(call: Call, path: ConfigIssuePath): void {
  const error = failure(call);
  expect(error).toEqual({
    code: 'validation_failed',
    message: 'Configuration failed public validation.',
    issues: [
      {
        code: 'invalid_configuration',
        path,
        message: 'The configuration value is invalid or unavailable.',
        remediation: 'Use a documented value and retry.',
      },
    ],
    retryable: false,
  });
}

export function expectTransportNotSupported(call: Call): void {
  const error = failure(call);
  expect(error.code).toBe('transport_not_supported');
  expect(error.issues).toEqual([]);
}

/** The minimal TOML header every file needs. */
export const V1 = 'config_version = 1\n';

/** A persistent sqlite profile that resolves on linux with a home directory. */
export const SQLITE: Call = {
  options: { profile: 'sqlite', principal_id: 'agent' },
  env: { HOME: '/home/agent' },
};
