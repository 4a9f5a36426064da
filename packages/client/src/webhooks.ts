/**
 * Checks a webhook delivery's `Animal-Store-Signature` header, as the service signs it:
 * `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`, with one `v1` per secret
 * the endpoint has (two for 24 hours after a rotation; either may match). Web Crypto only, so
 * it runs in Node ≥ 20 and in browsers and workers.
 */

/** Five minutes: a delivery signed longer ago (or ahead) than this is refused as a replay. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/**
 * True when `header` signs `rawBody` with `secret` (the endpoint's `whsec_…`) within
 * `toleranceSeconds` of now. Pass the body exactly as received, before any JSON parsing.
 */
export async function verifyWebhookSignature(
  secret: string,
  header: string | null | undefined,
  rawBody: string | Uint8Array,
  toleranceSeconds: number = DEFAULT_TOLERANCE_SECONDS,
  nowMs: number = Date.now(),
): Promise<boolean> {
  if (!header) return false;
  let timestamp: string | undefined;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const [name, value] = part.trim().split('=', 2);
    if (name === 't') timestamp = value;
    else if (name === 'v1' && value) signatures.push(value.toLowerCase());
  }
  if (!timestamp || !/^\d{1,12}$/.test(timestamp) || signatures.length === 0) return false;
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > toleranceSeconds) return false;

  const encoder = new TextEncoder();
  const body = typeof rawBody === 'string' ? encoder.encode(rawBody) : rawBody;
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
  return signatures.some((signature) => constantTimeEqual(signature, expected));
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
