// The request-check predicates of the Streamable HTTP listener as tables
// (operations spec §6.2 and the Host/Origin entry forms of §2.5.4), and the
// loopback rule of §6.3.

import { describe, expect, it } from 'vitest';
import { exposureAllowed, isAllowedHost, isAllowedOrigin, isJsonContentType, isLoopbackAddress } from '../../src/common/mcp/http-transport.js';

describe('Content-Type', () => {
  it.each([
    ['application/json', true],
    ['application/json; charset=utf-8', true],
    ['Application/JSON', true],
    [' application/json ;charset=UTF-8', true],
    [undefined, false],
    ['', false],
    ['text/plain', false],
    ['application/json-seq', false],
    ['application/jsonx', false],
    ['text/plain; a=application/json', false],
    ['multipart/form-data', false],
    // Two values joined with a comma (duplicate headers): the SDK's 415 had another code.
    ['application/json; charset=utf-8, text/plain', false],
    ['application/json;', true],
  ])('%s → %s', (header, expected) => {
    expect(isJsonContentType(header)).toBe(expected);
  });
});

describe('Host allow-list', () => {
  const allowed = ['127.0.0.1:8000', 'localhost:8000', 'Gateway.Example', '[::1]:*', 'lan.example:*'];
  it.each([
    ['127.0.0.1:8000', true],
    ['localhost:8000', true],
    ['LOCALHOST:8000', true],
    ['gateway.example', true],
    ['[::1]:8000', true],
    ['[::1]:1', true],
    ['lan.example:443', true],
    ['127.0.0.1', false],
    ['127.0.0.1:8001', false],
    ['localhost', false],
    ['gateway.example:443', false],
    ['[::1]', false],
    ['lan.example', false],
    ['lan.example:', false],
    ['lan.example:80x', false],
    // `name:*` is any port, and 99999 is none: such a Host reached the SDK's
    // request adapter, whose URL parse failed (a bare 400 with no body).
    ['lan.example:65535', true],
    ['lan.example:65536', false],
    ['[::1]:99999', false],
    ['lan.example.evil:80', false],
    // The wildcard's colon is part of the name it matches.
    ['lan.examplex443', false],
    // The entry's own text is no Host: it passed as an exact match and met
    // the same bare 400 instead of 421.
    ['lan.example:*', false],
    ['LAN.example:*', false],
    ['[::1]:*', false],
    ['evil.example', false],
    ['', false],
    [undefined, false],
  ])('%s → %s', (header, expected) => {
    expect(isAllowedHost(header, allowed)).toBe(expected);
  });
});

it('refuses an empty Host even when the list holds an empty entry', () => {
  expect(isAllowedHost('', ['', 'localhost:*'])).toBe(false);
});

describe('Origin allow-list', () => {
  it('accepts an absent Origin whatever the list', () => {
    expect(isAllowedOrigin(undefined, [])).toBe(true);
    expect(isAllowedOrigin(undefined, ['http://localhost:3000'])).toBe(true);
  });

  it('accepts an empty Origin as absent, as the reference does (no browser sends one)', () => {
    expect(isAllowedOrigin('', [])).toBe(true);
    expect(isAllowedOrigin('', ['http://localhost:3000'])).toBe(true);
  });

  it('refuses every present Origin when the list is empty', () => {
    expect(isAllowedOrigin('http://127.0.0.1:8000', [])).toBe(false);
    expect(isAllowedOrigin('null', [])).toBe(false);
  });

  it.each([
    ['http://localhost:3000', true],
    ['HTTP://LOCALHOST:3000', true],
    ['https://app.example', true],
    ['http://localhost:3001', false],
    ['http://localhost', false],
    ['https://localhost:3000', false],
    ['http://app.example', false],
    ['https://app.example:443', false],
    ['https://app.example/', false],
    ['null', false],
  ])('%s → %s', (header, expected) => {
    expect(isAllowedOrigin(header, ['http://localhost:3000', 'https://app.example'])).toBe(expected);
  });
});

describe('loopback and exposure', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.1.2.3', true],
    ['::1', true],
    ['0.0.0.0', false],
    ['::', false],
    ['192.0.2.10', false],
    ['2001:db8::1', false],
    ['localhost', false],
  ])('%s is loopback: %s', (host, expected) => {
    expect(isLoopbackAddress(host)).toBe(expected);
  });

  it('allows a non-loopback address only with the opt-in and a Host list', () => {
    expect(exposureAllowed('127.0.0.1', false, [])).toBe(true);
    expect(exposureAllowed('0.0.0.0', false, ['gw.example'])).toBe(false);
    expect(exposureAllowed('0.0.0.0', true, [])).toBe(false);
    expect(exposureAllowed('0.0.0.0', true, ['gw.example'])).toBe(true);
  });
});
