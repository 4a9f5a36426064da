import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto';

const KEY_LENGTH = 32;
// OWASP's scrypt floor (N=2^17, r=8, p=1) needs 128 MiB per hash; N=2^15 keeps sign-in
// near 50 ms on one core and memory at 32 MiB while staying far from a fast hash.
const PRODUCTION = { N: 2 ** 15, r: 8, p: 1 };
/** What the test suites hash with: N=2^10, ~1 ms a hash instead of ~50. */
const TESTS = { N: 2 ** 10, r: 8, p: 1 };

/** The cost new hashes are made at. */
let cost = PRODUCTION;

/**
 * For the test suites only, which sign up and sign in hundreds of times: new hashes are made
 * at a low cost. Every hash carries its parameters, so hashes of either cost verify.
 */
export function hashCheaplyForTests(): void {
  cost = TESTS;
}

function derive(password: string, salt: Buffer, params: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(
      password.normalize('NFC'),
      salt,
      KEY_LENGTH,
      { ...params, maxmem: 256 * 1024 * 1024 },
      (err, key) => (err ? reject(err) : resolve(key)),
    );
  });
}

/** `scrypt$N$r$p$salt$hash`, salt and hash in base64url: the parameters travel with the hash. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, cost);
  const { N, r, p } = cost;
  return ['scrypt', N, r, p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const actual = await derive(password, Buffer.from(salt, 'base64url'), {
    N: Number(n),
    r: Number(r),
    p: Number(p),
  });
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/**
 * A hash to check against when the email is unknown, so that an unknown email takes as long
 * as a wrong password and sign-in timing does not reveal which accounts exist.
 */
let dummy: Promise<string> | undefined;
export function dummyHash(): Promise<string> {
  dummy ??= hashPassword(randomBytes(16).toString('hex'));
  return dummy;
}
