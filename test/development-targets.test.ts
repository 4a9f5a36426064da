/**
 * docs/webhooks.md names the webhook targets development allows as src/webhooks/address.ts has them
 * (issue 51: it named three while the whole loopback range passed).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { refusedAddress, refusedTarget, refusedUrl } from '../src/webhooks/address.js';

const DEVELOPMENT = { allowLoopback: true };
const PRODUCTION = { allowLoopback: false };

/** docs/webhooks.md's bullet on targets, as one line of text. */
function targetsBullet(): string {
  const readme = readFileSync(new URL('../docs/webhooks.md', import.meta.url), 'utf8');
  const bullet = /^- Only `https` outside development;[\s\S]*?(?=\n(?:- |\n)|\n?$(?![\s\S]))/m.exec(
    readme,
  )?.[0];
  assert.ok(bullet, 'docs/webhooks.md says where webhooks may go');
  return bullet.replace(/\s+/g, ' ');
}

describe('webhook targets in development, as the README says', () => {
  it('allows every loopback form the README names, and the README names every one allowed', async () => {
    const bullet = targetsBullet();
    for (const named of ['127.0.0.0/8', '127.0.0.1', '127.1', '::1', '::ffff:127.0.0.1']) {
      assert.ok(bullet.includes(`\`${named}\``), `the README names ${named}: ${bullet}`);
    }
    // The whole /8, IPv4-mapped too: allowed in development, refused elsewhere.
    for (const address of [
      '127.0.0.1',
      '127.0.0.2',
      '127.255.255.254',
      '::1',
      '::ffff:127.0.0.1',
    ]) {
      assert.equal(refusedAddress(address, DEVELOPMENT), undefined, address);
      assert.ok(refusedAddress(address, PRODUCTION), address);
    }
    for (const url of [
      'http://127.1:3000/hook',
      'http://2130706433/',
      'http://[::ffff:127.0.0.1]/',
    ]) {
      assert.equal(refusedTarget(url, DEVELOPMENT).refused, undefined, url);
    }
    assert.ok(bullet.includes('`localhost`'));
    assert.equal(await refusedUrl('http://localhost:3000/hook', DEVELOPMENT), undefined);
  });

  it('refuses in development what the README says it refuses there', () => {
    const bullet = targetsBullet();
    assert.match(
      bullet,
      /Everything else is refused there too: private ranges, `0\.0\.0\.0`, link-local and metadata addresses/,
    );
    for (const address of [
      '0.0.0.0',
      '::',
      '10.0.0.1',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      'fe80::1',
      '::ffff:10.0.0.1',
      '::127.0.0.1',
    ]) {
      assert.ok(refusedAddress(address, DEVELOPMENT), address);
    }
  });
});
