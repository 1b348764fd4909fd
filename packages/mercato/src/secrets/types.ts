/** Stored form of a secret value (a jsonb column). v1 is AES-256-GCM; v0 is the development-only plaintext fallback. */
export type StoredSecret = { v: 1; kid: string; iv: string; tag: string; ct: string } | { v: 0; plain: unknown };

export interface Secrets {
  /** True when values are encrypted (a key is configured). */
  readonly encrypting: boolean;
  /** Encrypt a JSON value. `owner` is bound as associated data (for example `provider:app:shop:name`). */
  encrypt(value: unknown, owner: string): StoredSecret;
  /** Decrypt; throws SecretError when the owner, key or ciphertext do not match. */
  decrypt<T = unknown>(stored: StoredSecret, owner: string): T;
}

export class SecretError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretError';
  }
}
