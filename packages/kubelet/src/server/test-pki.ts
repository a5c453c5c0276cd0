// Test support: a CA and client certificates signed by it, for the kubelet server's x509 tests.
import { randomBytes, webcrypto } from 'node:crypto';
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as any);
const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const day = 86_400_000;

export interface TestPair {
  cert: string;
  key: string;
}

const serial = () => {
  const b = randomBytes(16);
  b[0]! &= 0x7f;
  return b.toString('hex');
};

async function exportKey(key: webcrypto.CryptoKey): Promise<string> {
  return x509.PemConverter.encode(await webcrypto.subtle.exportKey('pkcs8', key), 'PRIVATE KEY');
}

export async function testCa(name = 'test-ca'): Promise<TestPair & { keys: webcrypto.CryptoKeyPair }> {
  const keys = (await webcrypto.subtle.generateKey(algorithm, true, [
    'sign',
    'verify',
  ])) as webcrypto.CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=${name}`,
    notBefore: new Date(Date.now() - day),
    notAfter: new Date(Date.now() + day),
    keys: keys as any,
    signingAlgorithm: algorithm,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.digitalSignature, true),
    ],
  });
  return { cert: cert.toString('pem'), key: await exportKey(keys.privateKey), keys };
}

/** A client certificate (CN user, O groups) signed by `ca`. */
export async function testClientCert(
  ca: { cert: string; keys: webcrypto.CryptoKeyPair },
  user: string,
  groups: string[] = [],
): Promise<TestPair> {
  const keys = (await webcrypto.subtle.generateKey(algorithm, true, [
    'sign',
    'verify',
  ])) as webcrypto.CryptoKeyPair;
  const subject = [`CN=${user}`, ...groups.map((g) => `O=${g}`)].join(', ');
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject,
    issuer: new x509.X509Certificate(ca.cert).subject,
    notBefore: new Date(Date.now() - day),
    notAfter: new Date(Date.now() + day),
    publicKey: keys.publicKey as any,
    signingKey: ca.keys.privateKey as any,
    signingAlgorithm: algorithm,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth]),
    ],
  });
  return { cert: cert.toString('pem'), key: await exportKey(keys.privateKey) };
}
