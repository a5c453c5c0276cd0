import { randomBytes, webcrypto, X509Certificate } from 'node:crypto';
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { dirname, join } from 'node:path';

/** A PEM certificate (chain) and its private key. */
export interface CertKeyPair {
  certPem: string;
  keyPem: string;
}

export interface ServingCertOptions {
  /** `tlsCertFile` / `tlsPrivateKeyFile` (`--tls-cert-file` / `--tls-private-key-file`): both or neither. */
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  /** Where the self-signed pair lives (`--cert-dir`, upstream /var/lib/kubelet/pki). */
  certDir: string;
  /** The node's hostname (CN and a DNS SAN) and its IPs (IP SANs). */
  hostname: string;
  ips?: string[];
  now?: number;
}

const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const day = 24 * 60 * 60 * 1000;

/**
 * The kubelet's serving certificate, as upstream's InitializeTLS chooses it: the files named by
 * `tlsCertFile`/`tlsPrivateKeyFile`; else `<certDir>/kubelet.crt` and `kubelet.key`, made self-signed
 * on first start (CN `<hostname>@<unix seconds>`, SANs the hostname and the node's IPs, one year; the key
 * written 0600) and reused while both files can be read.
 */
export async function loadServingCertificate(o: ServingCertOptions): Promise<CertKeyPair> {
  if (!!o.tlsCertFile !== !!o.tlsPrivateKeyFile) {
    throw new Error(
      'tlsCertFile and tlsPrivateKeyFile (--tls-cert-file, --tls-private-key-file) go together: set both or neither',
    );
  }
  if (o.tlsCertFile && o.tlsPrivateKeyFile) {
    return readPair(o.tlsCertFile, o.tlsPrivateKeyFile, 'tlsCertFile/tlsPrivateKeyFile');
  }
  const certFile = join(o.certDir, 'kubelet.crt');
  const keyFile = join(o.certDir, 'kubelet.key');
  try {
    return await readPair(certFile, keyFile, 'self-signed serving certificate');
  } catch {
    // Missing or unreadable: make a new one, as upstream does when it cannot read the pair.
  }
  const pair = await selfSignedCertificate(o.hostname, o.ips ?? [], o.now ?? Date.now());
  await mkdir(o.certDir, { recursive: true, mode: 0o700 });
  await writeAtomically(keyFile, pair.keyPem, 0o600);
  await writeAtomically(certFile, pair.certPem, 0o644);
  return pair;
}

async function readPair(certFile: string, keyFile: string, what: string): Promise<CertKeyPair> {
  let certPem: string;
  let keyPem: string;
  try {
    [certPem, keyPem] = await Promise.all([readFile(certFile, 'utf8'), readFile(keyFile, 'utf8')]);
  } catch (err) {
    throw new Error(`${what}: cannot read ${certFile} and ${keyFile}: ${(err as Error).message}`);
  }
  try {
    new X509Certificate(certPem);
  } catch (err) {
    throw new Error(`${what}: ${certFile} is not a PEM certificate: ${(err as Error).message}`);
  }
  return { certPem, keyPem };
}

/** A self-signed serving certificate for `hostname` and `ips`. */
export async function selfSignedCertificate(
  hostname: string,
  ips: string[],
  now: number,
): Promise<CertKeyPair> {
  await import('reflect-metadata'); // @peculiar/x509 needs the Reflect polyfill loaded first
  const x509 = await import('@peculiar/x509');
  x509.cryptoProvider.set(webcrypto as any);
  const keys = (await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as any;
  const names = [
    isIP(hostname) ? { type: 'ip' as const, value: hostname } : { type: 'dns' as const, value: hostname },
    ...ips.filter((ip) => ip !== hostname && isIP(ip)).map((value) => ({ type: 'ip' as const, value })),
  ];
  const serial = randomBytes(16);
  serial[0]! &= 0x7f;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial.toString('hex'),
    name: `CN=${hostname}@${Math.floor(now / 1000)}`,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + 365 * day),
    keys,
    signingAlgorithm: algorithm,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
        true,
      ),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(names),
    ],
  });
  const der = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey);
  return { certPem: cert.toString('pem'), keyPem: x509.PemConverter.encode(der, 'PRIVATE KEY') };
}

async function writeAtomically(path: string, content: string, mode: number): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  await writeFile(tmp, content, { mode });
  await chmod(tmp, mode);
  await rename(tmp, path);
}
