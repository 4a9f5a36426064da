import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { refusedAddress, refusedUrl } from '../src/webhooks/address.js';

const production = { allowLoopback: false };
const development = { allowLoopback: true };

describe('webhook addresses: IPv6 forms that carry an IPv4 address', () => {
  it('refuses IPv4-compatible, IPv4-mapped and IPv4-translated (SIIT) addresses in production', async () => {
    for (const address of [
      '::127.0.0.1',
      '::7f00:1',
      '::10.0.0.1',
      '::8.8.8.8',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:8.8.8.8',
      '::ffff:0:7f00:1',
      '::ffff:0:127.0.0.1',
      '::ffff:0:a9fe:a9fe',
    ]) {
      assert.ok(refusedAddress(address, production), address);
    }
    for (const url of [
      'https://[::127.0.0.1]/',
      'https://[::ffff:0:7f00:1]/',
      'https://[::ffff:127.0.0.1]/',
      'https://[::ffff:0:169.254.169.254]/',
    ]) {
      assert.match(String(await refusedUrl(url, production)), /loopback, private/, url);
    }
  });

  it('keeps public IPv4 and IPv6 addresses, and loopback in development', async () => {
    for (const address of [
      '93.184.216.34',
      '8.8.8.8',
      '2606:4700::1111',
      '2a00:1450:4001:80e::200e',
      '64:ff9a::1',
    ]) {
      assert.equal(refusedAddress(address, production), undefined, address);
    }
    assert.equal(refusedAddress('::ffff:127.0.0.1', development), undefined);
    assert.equal(await refusedUrl('http://[::1]:9/', development), undefined);
    assert.ok(refusedAddress('::ffff:0:a00:1', development), 'SIIT 10.0.0.1');
  });
});
