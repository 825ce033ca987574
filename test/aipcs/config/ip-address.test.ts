import { describe, expect, it } from 'vitest';
import { parseIpLiteral } from '../../../src/aipcs/config/ip-address.js';

describe('IP literals (§2.5.4 host)', () => {
  it.each([
    ['0.0.0.0', '0.0.0.0'],
    ['255.255.255.255', '255.255.255.255'],
    ['::', '::'],
    ['1::', '1::'],
    ['::1:2:3:4:5:6:7', '0:1:2:3:4:5:6:7'],
    ['1:2:3:4:5:6:7::', '1:2:3:4:5:6:7:0'],
    ['1:0:0:1:0:0:0:1', '1:0:0:1::1'],
    ['1:0:0:0:1:0:0:1', '1::1:0:0:1'],
    ['0:0:1:0:0:0:0:0', '0:0:1::'],
    ['ABCD:00EF::0', 'abcd:ef::'],
    ['1:2:3:4:5:6:1.2.3.4', '1:2:3:4:5:6:102:304'],
    ['::1.2.3.4', '::102:304'],
    ['::ffff:1.2.3.4', '::ffff:1.2.3.4'],
    ['::ffff:0102:0304', '::ffff:1.2.3.4'],
    ['::ffff:0:1.2.3.4', '::ffff:0:102:304'],
    // IPv4-mapped means all of the first 80 bits are zero, the first group too.
    ['1::ffff:1.2.3.4', '1::ffff:102:304'],
    ['fe80::1%eth0', 'fe80::1%eth0'],
  ])('normalises %s to %s', (input, output) => {
    expect(parseIpLiteral(input)?.text).toBe(output);
  });

  it.each([
    '',
    '1.2.3',
    '1.2.3.4.5',
    '01.2.3.4',
    '1.2.3.256',
    '1.2.3.-1',
    '１.2.3.4',
    '1::2::3',
    ':1::2',
    '1::2:',
    '1:2:3:4:5:6:7:8:9',
    '1::2:3:4:5:6:7:8',
    '1:2:3:4:5:6:7',
    '12345::',
    'g::1',
    '::1.2.3',
    '::1.2.3.4:5',
    'fe80::1%',
    'fe80::1%a%b',
    '::1/128',
    // Python refuses a slash anywhere, the zone included.
    'fe80::1%eth0/64',
    'localhost',
  ])('refuses %j', (input) => {
    expect(parseIpLiteral(input)).toBeNull();
  });

  it('knows loopback: 127.0.0.0/8, ::1 and IPv4-mapped 127.0.0.0/8', () => {
    for (const text of ['127.0.0.1', '127.255.255.254', '::1', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1', '::1%lo']) {
      expect(parseIpLiteral(text)?.isLoopback).toBe(true);
    }
    for (const text of ['128.0.0.1', '0.0.0.0', '::', '::2', '::127.0.0.1', '::ffff:10.0.0.1', 'fe80::1', '1::ffff:127.0.0.1']) {
      expect(parseIpLiteral(text)?.isLoopback).toBe(false);
    }
  });
});
