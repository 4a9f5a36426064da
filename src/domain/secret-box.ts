import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/** AES-256-GCM under `key`: base64url of a fresh 96-bit IV, then the tag, then the ciphertext. */
export function sealWith(key: Buffer, text: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const sealed = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url');
}

/** The text `sealWith(key, …)` sealed; throws when `key` does not open it. */
export function openWith(key: Buffer, sealed: string): string {
  const bytes = Buffer.from(sealed, 'base64url');
  const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, 12));
  decipher.setAuthTag(bytes.subarray(12, 28));
  return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8');
}

/**
 * Encrypts secrets the service must be able to use again (a webhook endpoint's signing
 * secret), unlike API keys, which are only ever compared and so stored as hashes. AES-256-GCM
 * under a key derived from the server's configured key (WEBHOOK_SECRET_KEY): a copy of the
 * database alone reveals no secret. The first key encrypts; every key is tried to decrypt, so
 * the server key can be rotated (add the new one first, re-save, drop the old).
 */
export class SecretBox {
  private readonly keys: Buffer[];

  constructor(serverKeys: readonly string[]) {
    if (serverKeys.length === 0) throw new Error('SecretBox needs a key');
    this.keys = serverKeys.map((key) =>
      createHash('sha256').update(`animal-store secret box\n${key}`).digest(),
    );
  }

  /** `v1.` then `sealWith`'s base64url. */
  seal(secret: string): string {
    return `v1.${sealWith(this.keys[0] as Buffer, secret)}`;
  }

  /** The secret, or undefined when no configured key opens it. */
  open(sealed: string): string | undefined {
    if (!sealed.startsWith('v1.')) return undefined;
    for (const key of this.keys) {
      try {
        return openWith(key, sealed.slice(3));
      } catch {
        // Another key's.
      }
    }
    return undefined;
  }
}
