import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto';

const KEY_LENGTH = 32;
/** scrypt's block size and parallelism, whatever the cost. */
const BLOCK_SIZE = 8;
const PARALLELISM = 1;

/**
 * Passwords hashed with scrypt at the configured cost (`PASSWORD_HASH_COST`, src/config.ts):
 * N = 2^cost. A hash carries its parameters (`scrypt$N$r$p$salt$hash`), so hashes of any cost
 * verify, and a change of cost applies to the passwords set from then on. One per app, made
 * from its configuration.
 */
export class Passwords {
  private readonly params: ScryptOptions;
  /** What an unknown email is checked against (see `verify`), made at this cost once. */
  private dummy: Promise<string> | undefined;

  /** @param cost log2 of scrypt's N. */
  constructor(cost: number) {
    this.params = { N: 2 ** cost, r: BLOCK_SIZE, p: PARALLELISM };
  }

  /** `scrypt$N$r$p$salt$hash`, salt and hash in base64url: the parameters travel with the hash. */
  async hash(password: string): Promise<string> {
    const salt = randomBytes(16);
    const key = await derive(password, salt, this.params);
    const { N, r, p } = this.params;
    return ['scrypt', N, r, p, salt.toString('base64url'), key.toString('base64url')].join('$');
  }

  /**
   * Whether `password` is the one `stored` was made from, at the parameters it names. Without
   * a stored hash (an unknown email) the password is checked all the same, against a hash of
   * nothing's, and false: an unknown email takes as long as a wrong password, and sign-in
   * timing does not tell which accounts exist.
   */
  async verify(password: string, stored: string | undefined): Promise<boolean> {
    const matches = await matchesHash(password, stored ?? (await this.dummyHash()));
    return stored !== undefined && matches;
  }

  private dummyHash(): Promise<string> {
    this.dummy ??= this.hash(randomBytes(16).toString('hex'));
    return this.dummy;
  }
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

async function matchesHash(password: string, stored: string): Promise<boolean> {
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
