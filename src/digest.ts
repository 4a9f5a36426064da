import { hash } from 'node:crypto';

/** SHA-256 of a text, one-shot: how API keys and session tokens are stored and looked up. */
export function sha256(text: string, encoding: 'hex' | 'base64url' = 'hex'): string {
  return hash('sha256', text, encoding);
}
