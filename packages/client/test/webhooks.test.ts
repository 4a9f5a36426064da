import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { signature } from '../../../src/webhooks/dispatcher.js';
import {
  constructWebhookEvent,
  type Event,
  generateWebhookTestHeaders,
  verifyWebhookSignature,
  WebhookSignatureError,
  type WebhookSignatureFailure,
} from '../src/index.js';

const secret = 'whsec_test_0123456789abcdef';
const pet = { id: 1, name: 'Rex', categoryId: 1, status: 'available' };
const body = JSON.stringify({
  id: 'evt_1',
  type: 'pet.created',
  createdAt: '2026-11-24T00:00:00Z',
  data: pet,
});
const now = 1_790_000_000;
const sign = (key: string, t: number, text: string) =>
  createHmac('sha256', key).update(`${t}.${text}`).digest('hex');
const header = `t=${now},v1=${sign(secret, now, body)}`;
const at = (seconds: number) => ({ nowMs: seconds * 1000 });

/** The reason constructWebhookEvent gives (it must refuse). */
async function refused(call: Promise<Event>): Promise<WebhookSignatureFailure> {
  try {
    await call;
  } catch (error) {
    assert.ok(error instanceof WebhookSignatureError, String(error));
    assert.equal(error.name, 'WebhookSignatureError');
    return error.reason;
  }
  assert.fail('the delivery was accepted');
}

describe('constructWebhookEvent', () => {
  it('returns the typed event of a delivery signed as the service signs, from a string or a Buffer', async () => {
    const event = await constructWebhookEvent(body, header, secret, at(now));
    assert.equal(event.type, 'pet.created');
    if (event.type === 'pet.created') assert.equal(event.data.name, 'Rex');
    const fromBuffer = await constructWebhookEvent(Buffer.from(body), header, secret, at(now));
    assert.deepEqual(fromBuffer, event);
    const fromBytes = await constructWebhookEvent(
      new TextEncoder().encode(body),
      header,
      secret,
      at(now),
    );
    assert.deepEqual(fromBytes, event);
  });

  it('takes the header as a framework gives it: one value, or several', async () => {
    const [t, v1] = header.split(',');
    assert.ok(t && v1);
    const event = await constructWebhookEvent(body, [t, v1], secret, at(now));
    assert.equal(event.id, 'evt_1');
    const spaced = await constructWebhookEvent(body, `${t}, ${v1}`, secret, at(now));
    assert.equal(spaced.id, 'evt_1');
  });

  it('says why it refuses a delivery', async () => {
    // Each called in its turn: a refusal made early would go unhandled until awaited.
    const cases: Array<[WebhookSignatureFailure, () => Promise<Event>]> = [
      ['no_signature', () => constructWebhookEvent(body, undefined, secret, at(now))],
      ['no_signature', () => constructWebhookEvent(body, '', secret, at(now))],
      ['no_signature', () => constructWebhookEvent(body, [], secret, at(now))],
      ['no_signature', () => constructWebhookEvent(body, `t=${now}`, secret, at(now))],
      [
        'malformed',
        () => constructWebhookEvent(body, `v1=${sign(secret, now, body)}`, secret, at(now)),
      ],
      [
        'malformed',
        () => constructWebhookEvent(body, `t=x,v1=${sign(secret, now, body)}`, secret, at(now)),
      ],
      ['bad_signature', () => constructWebhookEvent(`${body} `, header, secret, at(now))],
      ['bad_signature', () => constructWebhookEvent(body, header, 'whsec_other', at(now))],
      [
        'bad_signature',
        () =>
          constructWebhookEvent(
            body,
            `t=${now + 1},v1=${sign(secret, now, body)}`,
            secret,
            at(now),
          ),
      ],
      ['too_old', () => constructWebhookEvent(body, header, secret, at(now + 301))],
      ['too_new', () => constructWebhookEvent(body, header, secret, at(now - 301))],
      [
        'malformed',
        () =>
          constructWebhookEvent(
            'not json',
            `t=${now},v1=${sign(secret, now, 'not json')}`,
            secret,
            at(now),
          ),
      ],
      [
        'malformed',
        () =>
          constructWebhookEvent(
            '{"id":1}',
            `t=${now},v1=${sign(secret, now, '{"id":1}')}`,
            secret,
            at(now),
          ),
      ],
    ];
    for (const [reason, call] of cases) assert.equal(await refused(call()), reason);
  });

  it('says with each refusal what to do next', async () => {
    const message = async (call: Promise<Event>) =>
      call.then(
        () => assert.fail('the delivery was accepted'),
        (error: Error) => error.message,
      );
    // The mistake most made: the body parsed and serialised again before it is checked.
    const reserialised = JSON.stringify(JSON.parse(body), null, 2);
    assert.match(
      await message(constructWebhookEvent(reserialised, header, secret, at(now))),
      /: pass the raw body as received/,
    );
    assert.match(
      await message(constructWebhookEvent(body, undefined, secret, at(now))),
      /: pass the header as received/,
    );
    assert.match(
      await message(constructWebhookEvent(body, header, secret, at(now + 301))),
      /clock.*\(NTP\)/,
    );
  });

  it('takes a tolerance', async () => {
    const late = { toleranceSeconds: 600, nowMs: (now + 301) * 1000 };
    assert.equal((await constructWebhookEvent(body, header, secret, late)).id, 'evt_1');
    const strict = { toleranceSeconds: 10, nowMs: (now + 11) * 1000 };
    assert.equal(await refused(constructWebhookEvent(body, header, secret, strict)), 'too_old');
  });

  it('accepts either secret after a rotation (one v1 per secret)', async () => {
    const previous = 'whsec_previous_secret_value';
    const both = `t=${now},v1=${sign(secret, now, body)},v1=${sign(previous, now, body)}`;
    assert.equal((await constructWebhookEvent(body, both, secret, at(now))).id, 'evt_1');
    assert.equal((await constructWebhookEvent(body, both, previous, at(now))).id, 'evt_1');
  });
});

describe('verifyWebhookSignature (the boolean check, kept)', () => {
  it('accepts the signature the service sends, and refuses any change', async () => {
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
});

describe('generateWebhookTestHeaders', () => {
  /** A secret as the service makes one: whsec_ and 32 base62 characters. */
  const made = 'whsec_Q2hlY2tzMTIzNDU2Nzg5MGFiY2RlZmdo';
  const previous = 'whsec_0123456789ABCDEFGHIJabcdefghijKL';
  /** The Standard Webhooks signature as the service's dispatcher computes it, with Node's crypto. */
  const standard = (secret: string, id: string, t: number, text: string) =>
    `v1,${createHmac('sha256', Buffer.from(secret.replace(/^whsec_/, ''), 'base64'))
      .update(`${id}.${t}.${text}`)
      .digest('base64')}`;

  it("signs as the service's dispatcher does, with one secret or a rotation's two", async () => {
    for (const secrets of [[made], [made, previous]]) {
      const headers = await generateWebhookTestHeaders({
        payload: body,
        secret: secrets,
        timestamp: now,
      });
      assert.deepEqual(headers, {
        'animal-store-signature': signature(secrets, now, body),
        'animal-store-event-id': 'evt_1',
        'webhook-id': 'evt_1',
        'webhook-timestamp': String(now),
        'webhook-signature': secrets.map((key) => standard(key, 'evt_1', now, body)).join(' '),
      });
    }
  });

  it('reads a secret as the service does, whatever its characters', async () => {
    // Node's base64 decoder, which the service uses, takes the URL-safe alphabet, skips other
    // characters and stops at "=": the helper's key is the same.
    for (const key of [secret, 'whsec_a-b_c/d+e', 'whsec_ab==cd', 'whsec_x!y z']) {
      const headers = await generateWebhookTestHeaders({
        payload: body,
        secret: key,
        timestamp: now,
      });
      assert.equal(headers['webhook-signature'], standard(key, 'evt_1', now, body), key);
    }
  });

  it('makes headers constructWebhookEvent and the standardwebhooks package accept', async () => {
    const headers = await generateWebhookTestHeaders({ payload: body, secret: [made, previous] });
    for (const key of [made, previous]) {
      const event = await constructWebhookEvent(body, headers['animal-store-signature'], key);
      assert.equal(event.id, 'evt_1');
      assert.equal(
        await verifyWebhookSignature(key, headers['animal-store-signature'], body),
        true,
      );
      const verified = new Webhook(key).verify(body, headers) as { id: string };
      assert.equal(verified.id, 'evt_1');
    }
    assert.throws(() =>
      new Webhook('whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA').verify(body, headers),
    );
    await assert.rejects(constructWebhookEvent(body, headers['animal-store-signature'], secret), {
      reason: 'bad_signature',
    });
    // From bytes, as a Buffer body comes.
    const bytes = await generateWebhookTestHeaders({ payload: Buffer.from(body), secret: made });
    assert.equal(
      (await constructWebhookEvent(Buffer.from(body), bytes['animal-store-signature'], made)).id,
      'evt_1',
    );
  });

  it("takes the event's id from the payload, else the one given, else makes one", async () => {
    const given = await generateWebhookTestHeaders({
      payload: body,
      secret: made,
      eventId: 'evt_x',
    });
    assert.equal(given['webhook-id'], 'evt_x');
    assert.equal(new Webhook(made).verify(body, given) !== undefined, true);
    const none = await generateWebhookTestHeaders({ payload: 'not json', secret: made });
    assert.match(none['webhook-id'], /^evt_test_[0-9a-f]{16}$/);
    assert.equal(none['animal-store-event-id'], none['webhook-id']);
  });

  it('refuses what it cannot sign with', async () => {
    for (const options of [
      { payload: body, secret: '' },
      { payload: body, secret: [] },
      { payload: body, secret: 'whsec_' },
      { payload: body, secret: [made, ''] },
      { payload: body, secret: made, timestamp: 1.5 },
      { payload: body, secret: made, timestamp: -1 },
    ]) {
      await assert.rejects(generateWebhookTestHeaders(options), TypeError);
    }
  });
});
