/**
 * Checks a webhook delivery's `Animal-Store-Signature` header, as the service signs it:
 * `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`, with one `v1` per secret
 * the endpoint has (two for 24 hours after a rotation; either may match). Web Crypto only, so
 * it runs in Node ≥ 20 and in browsers and workers (hence async). Modelled on Stripe's
 * `constructEvent` and Svix's `verify`: the event comes back parsed, or the reason it is not.
 * `generateWebhookTestHeaders` signs a payload as the service does, for a receiver's tests
 * (stripe-node's `generateTestHeaderString`).
 */
import type { Event } from './types.js';

/** Five minutes: a delivery signed longer ago (or ahead) than this is refused as a replay. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** Why a delivery was refused. */
export type WebhookSignatureFailure =
  /** No `Animal-Store-Signature` header, or no `v1` signature in it. */
  | 'no_signature'
  /** No `v1` signature matches: another secret, or a body changed on the way. */
  | 'bad_signature'
  /** Signed longer ago than the tolerance: a replay, or a delivery held up. */
  | 'too_old'
  /** Signed further ahead than the tolerance: a clock is wrong. */
  | 'too_new'
  /** The header has no valid `t=`, or the body is not an event. */
  | 'malformed';

/** A delivery that cannot be trusted: `reason` says why. */
export class WebhookSignatureError extends Error {
  override readonly name: string = 'WebhookSignatureError';

  constructor(
    readonly reason: WebhookSignatureFailure,
    message: string,
  ) {
    super(message);
  }
}

/** The `Animal-Store-Signature` header as a server framework gives it. */
export type SignatureHeader = string | readonly string[] | null | undefined;

export interface ConstructEventOptions {
  /** How far from now the signing time may be, either way (default 300 s). */
  toleranceSeconds?: number | undefined;
  /** Now, in ms since the epoch (default `Date.now()`). */
  nowMs?: number | undefined;
}

/**
 * The event a delivery carries, once its signature holds: `payload` is the body exactly as
 * received (a string or a Buffer, before any JSON parsing), `signatureHeader` the
 * `Animal-Store-Signature` header (Node's `req.headers['animal-store-signature']` as it is),
 * `secret` the endpoint's `whsec_…`. Throws a `WebhookSignatureError` with its `reason`.
 */
export async function constructWebhookEvent(
  payload: string | Uint8Array,
  signatureHeader: SignatureHeader,
  secret: string,
  options: ConstructEventOptions = {},
): Promise<Event> {
  const failure = await check(secret, signatureHeader, payload, options);
  if (failure) throw new WebhookSignatureError(failure, MESSAGES[failure]);
  const text = typeof payload === 'string' ? payload : new TextDecoder().decode(payload);
  let event: unknown;
  try {
    event = JSON.parse(text);
  } catch {
    throw new WebhookSignatureError(
      'malformed',
      'The signed body is not JSON, so not a delivery of ours: check which secret signed it.',
    );
  }
  if (!isEvent(event)) {
    throw new WebhookSignatureError(
      'malformed',
      'The signed body is not an event, so not a delivery of ours: check which secret signed it.',
    );
  }
  return event;
}

/**
 * True when `header` signs `rawBody` with `secret` (the endpoint's `whsec_…`) within
 * `toleranceSeconds` of now. Pass the body exactly as received, before any JSON parsing.
 * `constructWebhookEvent` does the same and answers the event, or why not.
 */
export async function verifyWebhookSignature(
  secret: string,
  header: SignatureHeader,
  rawBody: string | Uint8Array,
  toleranceSeconds: number = DEFAULT_TOLERANCE_SECONDS,
  nowMs: number = Date.now(),
): Promise<boolean> {
  return (await check(secret, header, rawBody, { toleranceSeconds, nowMs })) === undefined;
}

/** Each failure, with what to do about it. */
const MESSAGES: Record<WebhookSignatureFailure, string> = {
  no_signature:
    'No Animal-Store-Signature header, or no v1 signature in it: pass the header as received.',
  bad_signature:
    'No signature matches this body and secret: pass the raw body as received (not JSON ' +
    "parsed and serialised again) and this endpoint's whsec_ secret.",
  too_old:
    'The delivery was signed longer ago than the tolerance allows: a replay, or this ' +
    "machine's clock is ahead; keep it synchronised (NTP).",
  too_new:
    "The delivery was signed further ahead than the tolerance allows: this machine's clock " +
    'is behind; keep it synchronised (NTP).',
  malformed:
    'The Animal-Store-Signature header has no valid t= timestamp: pass the header as received.',
};

/** Why the delivery cannot be trusted, or undefined when it can. */
async function check(
  secret: string,
  header: SignatureHeader,
  payload: string | Uint8Array,
  options: ConstructEventOptions,
): Promise<WebhookSignatureFailure | undefined> {
  // Several fields of one header are one list (RFC 9110 §5.3).
  const value = typeof header === 'string' ? header : (header ?? []).join(',');
  let timestamp: string | undefined;
  const signatures: string[] = [];
  for (const part of value.split(',')) {
    const [name, item] = part.trim().split('=', 2);
    if (name === 't') timestamp = item;
    else if (name === 'v1' && item) signatures.push(item.toLowerCase());
  }
  if (signatures.length === 0) return 'no_signature';
  if (!timestamp || !/^\d{1,12}$/.test(timestamp)) return 'malformed';

  const expected = hex(await hmac(utf8(secret), `${timestamp}.`, payload));
  if (!signatures.some((signature) => constantTimeEqual(signature, expected))) {
    return 'bad_signature';
  }

  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const age = (options.nowMs ?? Date.now()) / 1000 - Number(timestamp);
  if (age > tolerance) return 'too_old';
  if (age < -tolerance) return 'too_new';
  return undefined;
}

/** The headers the service signs a delivery with, by their lower-case names. */
export interface WebhookHeaders {
  /** `t=<unix seconds>,v1=<hex>`, one `v1` per secret: what `constructWebhookEvent` checks. */
  'animal-store-signature': string;
  'animal-store-event-id': string;
  /** Standard Webhooks (`standardwebhooks`, Svix): the event's id. */
  'webhook-id': string;
  /** Standard Webhooks: the signing time, in Unix seconds. */
  'webhook-timestamp': string;
  /** Standard Webhooks: `v1,<base64>`, one per secret, space-separated. */
  'webhook-signature': string;
}

export interface WebhookTestHeaderOptions {
  /** The body to sign, exactly as your test will hand it to the receiver. */
  payload: string | Uint8Array;
  /** The endpoint's `whsec_…`, or two, as the service signs for a day after a rotation. */
  secret: string | readonly string[];
  /** The signing time, in Unix seconds (default now). */
  timestamp?: number | undefined;
  /** The event's id (default: the payload's `id`, when it is an event; else a made-up one). */
  eventId?: string | undefined;
}

/**
 * The headers the service would send with `payload`, signed with `secret`: for testing a
 * webhook receiver without the service (stripe-node's `generateTestHeaderString`). What it
 * signs passes `constructWebhookEvent`, and the `standardwebhooks` package's `verify` (with the
 * `webhook-*` headers), exactly as a real delivery does.
 */
export async function generateWebhookTestHeaders(
  options: WebhookTestHeaderOptions,
): Promise<WebhookHeaders> {
  const { payload } = options;
  const secrets = typeof options.secret === 'string' ? [options.secret] : [...options.secret];
  // A secret must give both schemes a key: Web Crypto refuses an empty one.
  const usable = (secret: unknown) =>
    typeof secret === 'string' && secret !== '' && standardKey(secret).length > 0;
  if (secrets.length === 0 || !secrets.every(usable)) {
    throw new TypeError("generateWebhookTestHeaders: give the endpoint's secret (whsec_…).");
  }
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) {
    throw new TypeError(
      `generateWebhookTestHeaders: timestamp must be Unix seconds; got ${timestamp}.`,
    );
  }
  const eventId =
    options.eventId ??
    idOf(payload) ??
    `evt_test_${hex(crypto.getRandomValues(new Uint8Array(8)))}`;
  const ours = await Promise.all(
    secrets.map(async (secret) => `v1=${hex(await hmac(utf8(secret), `${timestamp}.`, payload))}`),
  );
  const standard = await Promise.all(
    secrets.map(
      async (secret) =>
        `v1,${base64(await hmac(standardKey(secret), `${eventId}.${timestamp}.`, payload))}`,
    ),
  );
  return {
    'animal-store-signature': [`t=${timestamp}`, ...ours].join(','),
    'animal-store-event-id': eventId,
    'webhook-id': eventId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': standard.join(' '),
  };
}

/** The payload's `id`, when it is the JSON of an event. */
function idOf(payload: string | Uint8Array): string | undefined {
  try {
    const text = typeof payload === 'string' ? payload : new TextDecoder().decode(payload);
    const { id } = JSON.parse(text) as { id?: unknown };
    return typeof id === 'string' && id !== '' ? id : undefined;
  } catch {
    return undefined;
  }
}

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/**
 * The Standard Webhooks key of a secret: its part after `whsec_`, base64-decoded, as the spec's
 * libraries read it and as the service does (Node's decoder: the URL-safe alphabet too, other
 * characters skipped, up to the first `=`). The service's secrets are base62, so every
 * character counts.
 */
function standardKey(secret: string): Uint8Array<ArrayBuffer> {
  const bytes: number[] = [];
  let bits = 0;
  let count = 0;
  for (const char of secret.replace(/^whsec_/, '')) {
    if (char === '=') break;
    const digit = BASE64.indexOf(char === '-' ? '+' : char === '_' ? '/' : char);
    if (digit < 0) continue;
    bits = ((bits << 6) | digit) & 0xffffff;
    count += 6;
    if (count >= 8) {
      count -= 8;
      bytes.push((bits >> count) & 0xff);
    }
  }
  return new Uint8Array(bytes);
}

function base64(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

function isEvent(value: unknown): value is Event {
  if (typeof value !== 'object' || value === null) return false;
  const { id, type, createdAt } = value as Record<string, unknown>;
  return (
    typeof id === 'string' &&
    typeof type === 'string' &&
    typeof createdAt === 'string' &&
    'data' in value
  );
}

function utf8(text: string): Uint8Array<ArrayBuffer> {
  return new TextEncoder().encode(text);
}

/** HMAC-SHA256 with `key` of `prefix` then `payload`'s bytes (Web Crypto). */
async function hmac(
  key: Uint8Array<ArrayBuffer>,
  prefix: string,
  payload: string | Uint8Array,
): Promise<Uint8Array> {
  const body = typeof payload === 'string' ? utf8(payload) : payload;
  const head = utf8(prefix);
  const signed = new Uint8Array(head.length + body.length);
  signed.set(head);
  signed.set(body, head.length);
  const imported = await crypto.subtle.importKey(
    'raw',
    key,
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  return new Uint8Array(await crypto.subtle.sign('HMAC', imported, signed));
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
}

/** Compares two strings in time that depends on their length only. */
function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return difference === 0;
}
