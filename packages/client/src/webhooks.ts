/**
 * Checks a webhook delivery's `Animal-Store-Signature` header, as the service signs it:
 * `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`, with one `v1` per secret
 * the endpoint has (two for 24 hours after a rotation; either may match). Web Crypto only, so
 * it runs in Node ≥ 20 and in browsers and workers (hence async). Modelled on Stripe's
 * `constructEvent` and Svix's `verify`: the event comes back parsed, or the reason it is not.
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
    throw new WebhookSignatureError('malformed', 'The signed body is not JSON.');
  }
  if (!isEvent(event)) {
    throw new WebhookSignatureError('malformed', 'The signed body is not an event.');
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

const MESSAGES: Record<WebhookSignatureFailure, string> = {
  no_signature: 'No Animal-Store-Signature header, or no v1 signature in it.',
  bad_signature: 'No signature matches this body and secret.',
  too_old: 'The delivery was signed longer ago than the tolerance allows.',
  too_new: 'The delivery was signed further ahead than the tolerance allows.',
  malformed: 'The Animal-Store-Signature header has no valid t= timestamp.',
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

  const encoder = new TextEncoder();
  const body = typeof payload === 'string' ? encoder.encode(payload) : payload;
  const prefix = encoder.encode(`${timestamp}.`);
  const signed = new Uint8Array(prefix.length + body.length);
  signed.set(prefix);
  signed.set(body, prefix.length);
  const key = await crypto.subtle.importKey(
    'raw',
    encoder.encode(secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const expected = hex(new Uint8Array(await crypto.subtle.sign('HMAC', key, signed)));
  if (!signatures.some((signature) => constantTimeEqual(signature, expected))) {
    return 'bad_signature';
  }

  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const age = (options.nowMs ?? Date.now()) / 1000 - Number(timestamp);
  if (age > tolerance) return 'too_old';
  if (age < -tolerance) return 'too_new';
  return undefined;
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
