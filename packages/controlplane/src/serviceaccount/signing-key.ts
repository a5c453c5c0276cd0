import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
} from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeSecret } from '../pki.js';

/**
 * The key that signs service-account tokens, as kubeadm keeps it: `<pki>/sa.key` (the private key,
 * PKCS#8 PEM) and `<pki>/sa.pub` (its public key, SPKI PEM), both owner-only as all of pki/. Made on
 * first start, reused after, so tokens survive a restart. ECDSA P-256: tokens are ES256 JWTs, which
 * upstream's issuer makes for an EC key.
 */
export interface ServiceAccountKey {
  privateKey: KeyObject;
  publicKey: KeyObject;
  /** The JWS `kid`: base64url SHA-256 of the public key's DER (SPKI), as upstream computes it. */
  keyId: string;
  /** `ES256`. */
  algorithm: 'ES256';
}

export async function ensureServiceAccountKey(pkiDir: string): Promise<ServiceAccountKey> {
  const keyPath = join(pkiDir, 'sa.key');
  const pubPath = join(pkiDir, 'sa.pub');
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(await readFile(keyPath, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new Error(`${keyPath}: not a usable service-account signing key: ${(err as Error).message}`);
    }
    privateKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    await writeSecret(keyPath, privateKey.export({ type: 'pkcs8', format: 'pem' }) as string);
  }
  if (privateKey.asymmetricKeyType !== 'ec' || privateKey.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    throw new Error(`${keyPath}: the service-account signing key must be an ECDSA P-256 key`);
  }
  const publicKey = createPublicKey(privateKey);
  const publicPem = publicKey.export({ type: 'spki', format: 'pem' }) as string;
  const current = await readFile(pubPath, 'utf8').catch(() => undefined);
  if (current !== publicPem) await writeSecret(pubPath, publicPem);
  return { privateKey, publicKey, keyId: keyIdOf(publicKey), algorithm: 'ES256' };
}

export function keyIdOf(publicKey: KeyObject): string {
  const der = publicKey.export({ type: 'spki', format: 'der' });
  return createHash('sha256').update(der).digest('base64url');
}
