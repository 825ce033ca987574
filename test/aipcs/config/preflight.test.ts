import { describe, expect, it } from 'vitest';
import { transportPreflight } from '../../../src/aipcs/config/resolve.js';

const REFUSED = {
  ok: false,
  error: {
    code: 'transport_not_supported',
    message: 'Use documented AIPCS transport configuration; legacy listener settings are disabled.',
    issues: [],
    retryable: false,
  },
};

const GUARDS = [
  'FASTMCP_HOST',
  'FASTMCP_PORT',
  'FASTMCP_MOUNT_PATH',
  'FASTMCP_SSE_PATH',
  'FASTMCP_MESSAGE_PATH',
  'FASTMCP_STREAMABLE_HTTP_PATH',
  'AIPCS_HOST',
  'AIPCS_PORT',
  'AIPCS_MOUNT_PATH',
  'AIPCS_MCP_HOST',
  'AIPCS_MCP_PORT',
  'AIPCS_MCP_MOUNT_PATH',
];

describe('transport preflight (§2.3)', () => {
  it('passes the documented transports and no transport at all', () => {
    expect(transportPreflight({}, {})).toEqual({ ok: true });
    expect(transportPreflight({ transport: 'stdio' }, {})).toEqual({ ok: true });
    expect(transportPreflight({ transport: 'streamable-http' }, {})).toEqual({ ok: true });
  });

  it.each(['sse', '', 'STDIO', 'streamable_http', 'http'])('refuses --transport %j', (transport) => {
    expect(transportPreflight({ transport }, {})).toEqual(REFUSED);
  });

  it('refuses a non-empty retired AIPCS_MCP_TRANSPORT, whatever its value', () => {
    expect(transportPreflight({}, { AIPCS_MCP_TRANSPORT: 'stdio' })).toEqual(REFUSED);
    expect(transportPreflight({}, { AIPCS_MCP_TRANSPORT: ' ' })).toEqual(REFUSED);
    expect(transportPreflight({}, { AIPCS_MCP_TRANSPORT: '' })).toEqual({ ok: true });
  });

  it.each(GUARDS)('refuses a non-empty %s and ignores an empty one', (name) => {
    expect(transportPreflight({}, { [name]: '8000' })).toEqual(REFUSED);
    expect(transportPreflight({}, { [name]: '' })).toEqual({ ok: true });
    expect(transportPreflight({}, { [name]: undefined })).toEqual({ ok: true });
  });

  it('leaves AIPCS_TRANSPORT to resolution', () => {
    expect(transportPreflight({}, { AIPCS_TRANSPORT: 'sse' })).toEqual({ ok: true });
  });
});
