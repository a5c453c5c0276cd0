import { createCipheriv, createDecipheriv, randomBytes, type CipherGCM, type DecipherGCM } from 'node:crypto';

/**
 * What the store writes for an object (its JSON) and reads back: upstream's value.Transformer
 * (staging/src/k8s.io/apiserver/pkg/storage/value). Plaintext is kept as TEXT, encrypted values as BLOBs.
 * `key` is the object's storage key as etcd would hold it (`/registry/secrets/<namespace>/<name>`),
 * which AES-GCM authenticates so a value cannot be copied to another object's row.
 */
export type StoredValue = string | Buffer;

export interface ValueTransformer {
  toStorage(json: string, key: string): StoredValue;
  fromStorage(stored: StoredValue, key: string): string;
  /** Whether a value was written otherwise than `toStorage` writes now (an old key, or plaintext). */
  isStale(stored: StoredValue): boolean;
}

/** One provider key: what it writes after its prefix, and how it opens what follows the prefix. */
interface PrefixedTransformer {
  prefix: Buffer;
  /** Empty for identity, which reads anything that is not encrypted. */
  seal?: (plain: Buffer, key: string) => Buffer;
  open?: (sealed: Buffer, key: string) => Buffer;
}

const encryptedPrefix = Buffer.from('k8s:enc:');

/** `identity`: objects stored as they are (and what was written before encryption was turned on). */
export function identityProvider(): PrefixedTransformer {
  return { prefix: Buffer.alloc(0) };
}

const aesBlock = 16;

/**
 * `aescbc`: `k8s:enc:aescbc:v1:<name>:` then a random 16-byte IV and the AES-CBC ciphertext of the value
 * with PKCS#7 padding (upstream's cbc transformer; no authenticated data).
 */
export function aescbcProvider(name: string, secret: Buffer): PrefixedTransformer {
  const algorithm = `aes-${secret.length * 8}-cbc`;
  return {
    prefix: Buffer.from(`k8s:enc:aescbc:v1:${name}:`),
    seal: (plain) => {
      const iv = randomBytes(aesBlock);
      const cipher = createCipheriv(algorithm, secret, iv);
      return Buffer.concat([iv, cipher.update(plain), cipher.final()]);
    },
    open: (sealed) => {
      if (sealed.length < aesBlock) throw new Error('the stored data was shorter than the required size');
      if ((sealed.length - aesBlock) % aesBlock !== 0)
        throw new Error('the stored data is not a multiple of the block size');
      const decipher = createDecipheriv(algorithm, secret, sealed.subarray(0, aesBlock));
      return Buffer.concat([decipher.update(sealed.subarray(aesBlock)), decipher.final()]);
    },
  };
}

const gcmNonce = 12;
const gcmTag = 16;

/**
 * `aesgcm`: `k8s:enc:aesgcm:v1:<name>:` then a random 12-byte nonce and the sealed value (ciphertext and
 * 16-byte tag), with the storage key as additional authenticated data, as upstream's gcm transformer.
 */
export function aesgcmProvider(name: string, secret: Buffer): PrefixedTransformer {
  const algorithm = `aes-${secret.length * 8}-gcm`;
  return {
    prefix: Buffer.from(`k8s:enc:aesgcm:v1:${name}:`),
    seal: (plain, key) => {
      const nonce = randomBytes(gcmNonce);
      const cipher = createCipheriv(algorithm, secret, nonce) as CipherGCM;
      cipher.setAAD(Buffer.from(key));
      const body = Buffer.concat([cipher.update(plain), cipher.final()]);
      return Buffer.concat([nonce, body, cipher.getAuthTag()]);
    },
    open: (sealed, key) => {
      if (sealed.length < gcmNonce + gcmTag)
        throw new Error('the stored data was shorter than the required size');
      const decipher = createDecipheriv(algorithm, secret, sealed.subarray(0, gcmNonce)) as DecipherGCM;
      decipher.setAAD(Buffer.from(key));
      decipher.setAuthTag(sealed.subarray(sealed.length - gcmTag));
      return Buffer.concat([
        decipher.update(sealed.subarray(gcmNonce, sealed.length - gcmTag)),
        decipher.final(),
      ]);
    },
  };
}

/**
 * The providers of one resource, in order: the first writes; every one reads what carries its prefix,
 * so keys rotate (new key first, old key after) and `identity` reads values written in plaintext. A
 * value no provider's prefix matches cannot be read (as upstream: no matching prefix).
 */
export class ProviderChain implements ValueTransformer {
  constructor(private readonly providers: readonly PrefixedTransformer[]) {
    if (providers.length === 0) throw new Error('a provider chain needs at least one provider');
  }

  toStorage(json: string, key: string): StoredValue {
    const writer = this.providers[0]!;
    if (!writer.seal) return json;
    return Buffer.concat([writer.prefix, writer.seal(Buffer.from(json, 'utf8'), key)]);
  }

  isStale(stored: StoredValue): boolean {
    const writer = this.providers[0]!;
    const data = typeof stored === 'string' ? Buffer.from(stored, 'utf8') : stored;
    return writer.open ? !hasPrefix(data, writer.prefix) : hasPrefix(data, encryptedPrefix);
  }

  fromStorage(stored: StoredValue, key: string): string {
    const data = typeof stored === 'string' ? Buffer.from(stored, 'utf8') : stored;
    const encrypted = hasPrefix(data, encryptedPrefix);
    for (const provider of this.providers) {
      if (!provider.open) {
        // identity reads only what no encrypting provider wrote.
        if (!encrypted) return data.toString('utf8');
        continue;
      }
      if (!hasPrefix(data, provider.prefix)) continue;
      try {
        return provider.open(data.subarray(provider.prefix.length), key).toString('utf8');
      } catch (err) {
        throw new Error(
          `${key}: cannot decrypt with ${provider.prefix.toString()}: ${(err as Error).message}`,
        );
      }
    }
    const what = encrypted ? `encrypted as ${prefixOf(data)}` : 'stored unencrypted';
    throw new Error(
      `${key}: no provider of the encryption configuration reads this value (${what}); ` +
        `list its provider and key${encrypted ? '' : ' (identity for values written before encryption)'}`,
    );
  }
}

function hasPrefix(data: Buffer, prefix: Buffer): boolean {
  return data.length >= prefix.length && data.subarray(0, prefix.length).equals(prefix);
}

/** `k8s:enc:aescbc:v1:key1:` of an encrypted value, for messages. */
function prefixOf(data: Buffer): string {
  const text = data.subarray(0, 80).toString('latin1');
  return /^k8s:enc:[a-z0-9]+:v\d+:[^:]*:/.exec(text)?.[0] ?? 'k8s:enc:…';
}
