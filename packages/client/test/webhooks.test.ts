import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { verifyWebhookSignature } from '../src/index.js';

const secret = 'whsec_test_0123456789abcdef';
const body = '{"id":"evt_1","type":"pet.created","createdAt":"2026-11-24T00:00:00Z","data":{}}';
const now = 1_790_000_000;
const sign = (key: string, t: number, text: string) =>
  createHmac('sha256', key).update(`${t}.${text}`).digest('hex');

describe('verifyWebhookSignature', () => {
  it('accepts the signature the service sends, and refuses any change', async () => {
    const header = `t=${now},v1=${sign(secret, now, body)}`;
    assert.equal(await verifyWebhookSignature(secret, header, body, 300, now * 1000), true);
    const bytes = new TextEncoder().encode(body);
    assert.equal(await verifyWebhookSignature(secret, header, bytes, 300, now * 1000), true);
    assert.equal(await verifyWebhookSignature(secret, header, `${body} `, 300, now * 1000), false);
    assert.equal(await verifyWebhookSignature('whsec_other', header, body, 300, now * 1000), false);
    const otherTime = `t=${now + 1},v1=${sign(secret, now, body)}`;
    assert.equal(await verifyWebhookSignature(secret, otherTime, body, 300, now * 1000), false);
    for (const bad of [undefined, '', 'v1=abc', `t=${now}`, `t=x,v1=${sign(secret, now, body)}`]) {
      assert.equal(await verifyWebhookSignature(secret, bad, body, 300, now * 1000), false, bad);
    }
  });

  it('refuses a delivery signed outside the tolerance, either way', async () => {
    const header = `t=${now},v1=${sign(secret, now, body)}`;
    assert.equal(
      await verifyWebhookSignature(secret, header, body, 300, (now + 301) * 1000),
      false,
    );
    assert.equal(
      await verifyWebhookSignature(secret, header, body, 300, (now - 301) * 1000),
      false,
    );
    assert.equal(await verifyWebhookSignature(secret, header, body, 600, (now + 301) * 1000), true);
  });

  it('accepts either secret after a rotation (one v1 per secret)', async () => {
    const previous = 'whsec_previous_secret_value';
    const header = `t=${now},v1=${sign(secret, now, body)},v1=${sign(previous, now, body)}`;
    assert.equal(await verifyWebhookSignature(secret, header, body, 300, now * 1000), true);
    assert.equal(await verifyWebhookSignature(previous, header, body, 300, now * 1000), true);
  });
});
