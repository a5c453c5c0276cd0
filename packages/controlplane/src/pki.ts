import { randomBytes, webcrypto, X509Certificate as NodeX509 } from 'node:crypto';
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import 'reflect-metadata'; // @peculiar/x509 (through tsyringe) needs the Reflect polyfill loaded first
import * as x509 from '@peculiar/x509';
import { stringify as toYaml } from 'yaml';

/**
 * The control plane's certificates, made on first start under `<dataDir>/pki` and reused after:
 *
 *   ca.crt / ca.key                 the cluster CA (ECDSA P-256, 10 years), trusted by clients and the server
 *   apiserver.crt / apiserver.key   the serving certificate: 127.0.0.1, ::1, localhost, kubernetes,
 *                                   kubernetes.default(.svc(.cluster.local)) and the `kubernetes` ClusterIP
 *   admin.crt / admin.key           the admin's client certificate (CN nodelet-admin, O system:masters)
 *   apiserver-kubelet-client.crt    the API server's client certificate for every connection to a kubelet
 *     / .key                        (CN kube-apiserver-kubelet-client, O system:masters, as kubeadm before
 *                                   1.29; nodelet has no RBAC binding for kubeadm:cluster-admins)
 *   nodes/<node>.crt / .key         a node's client certificate (CN system:node:<node>, O system:nodes),
 *                                   issued on demand for kubelets
 *
 * Keys are PKCS#8 PEM files readable by their owner only.
 */
x509.cryptoProvider.set(webcrypto as any);

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const day = 24 * 60 * 60 * 1000;

export interface KeyPair {
  cert: string;
  key: string;
}

export interface Pki {
  dir: string;
  ca: KeyPair;
  serving: KeyPair;
  admin: KeyPair;
  kubeletClient: KeyPair;
}

export const kubeletClientSubject = 'CN=kube-apiserver-kubelet-client, O=system:masters';

async function exists(path: string): Promise<boolean> {
  try {
    await readFile(path);
    return true;
  } catch {
    return false;
  }
}

export async function writeSecret(path: string, content: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.tmp-${process.pid}`;
  await writeFile(tmp, content, { mode: 0o600 });
  await chmod(tmp, 0o600);
  await rename(tmp, path);
}

async function exportKey(key: CryptoKey): Promise<string> {
  const der = await webcrypto.subtle.exportKey('pkcs8', key);
  return x509.PemConverter.encode(der, 'PRIVATE KEY');
}

async function importKey(pem: string): Promise<CryptoKey> {
  const der = x509.PemConverter.decode(pem)[0]!;
  return webcrypto.subtle.importKey('pkcs8', der, algorithm, true, ['sign']);
}

async function generateKeys(): Promise<CryptoKeyPair> {
  return webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify']);
}

function serial(): string {
  const bytes = randomBytes(16);
  bytes[0]! &= 0x7f; // positive
  return bytes.toString('hex');
}

async function createCa(now: number): Promise<KeyPair> {
  const keys = await generateKeys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: 'CN=nodelet-ca',
    notBefore: new Date(now - day),
    notAfter: new Date(now + 3650 * day),
    keys: keys as any,
    signingAlgorithm: algorithm,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey as any),
    ],
  });
  return { cert: cert.toString('pem'), key: await exportKey(keys.privateKey) };
}

export interface LeafRequest {
  subject: string;
  usage: 'server' | 'client';
  dnsNames?: string[];
  ips?: string[];
  days?: number;
}

/** A certificate signed by `ca` for `request`, with a new key. */
export async function issue(ca: KeyPair, request: LeafRequest, now = Date.now()): Promise<KeyPair> {
  const caCert = new x509.X509Certificate(ca.cert);
  const caKey = await importKey(ca.key);
  const keys = await generateKeys();
  const names: x509.JsonGeneralName[] = [
    ...(request.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(request.ips ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: request.subject,
    issuer: caCert.subject,
    notBefore: new Date(now - day),
    notAfter: new Date(now + (request.days ?? 365) * day),
    publicKey: keys.publicKey as any,
    signingKey: caKey as any,
    signingAlgorithm: algorithm,
    extensions: await leafExtensions(caCert, request.usage === 'server' ? 'server' : 'client', names),
  });
  return { cert: cert.toString('pem'), key: await exportKey(keys.privateKey) };
}

async function readPair(dir: string, name: string): Promise<KeyPair | undefined> {
  const certPath = join(dir, `${name}.crt`);
  const keyPath = join(dir, `${name}.key`);
  if (!(await exists(certPath)) || !(await exists(keyPath))) return undefined;
  return { cert: await readFile(certPath, 'utf8'), key: await readFile(keyPath, 'utf8') };
}

async function writePair(dir: string, name: string, pair: KeyPair): Promise<void> {
  await writeSecret(join(dir, `${name}.key`), pair.key);
  // Certificates are public, but pki/ is the owner's alone, as the whole data directory.
  await writeSecret(join(dir, `${name}.crt`), pair.cert);
}

/** Whether `pair` is still good for 30 days and (for a serving cert) covers every name in `want`. */
function usable(
  pair: KeyPair,
  ca: KeyPair,
  now: number,
  want: { dns?: string[]; ips?: string[] } = {},
): boolean {
  try {
    const cert = new NodeX509(pair.cert);
    if (!cert.verify(new NodeX509(ca.cert).publicKey)) return false;
    if (Date.parse(cert.validTo) - now < 30 * day) return false;
    const san = cert.subjectAltName ?? '';
    for (const d of want.dns ?? []) if (!san.includes(`DNS:${d}`)) return false;
    for (const ip of want.ips ?? []) if (!san.includes(`IP Address:${ip}`)) return false;
    return true;
  } catch {
    return false;
  }
}

export const servingNames = (clusterIP: string, extraIps: string[] = []) => ({
  dns: [
    'localhost',
    'kubernetes',
    'kubernetes.default',
    'kubernetes.default.svc',
    'kubernetes.default.svc.cluster.local',
  ],
  ips: [...new Set(['127.0.0.1', '::1', clusterIP, ...extraIps])],
});

/** Loads the PKI from `dir`, making what is missing (or expiring, or no longer signed by the CA). */
export async function ensurePki(
  dir: string,
  clusterIP: string,
  now = Date.now(),
  /** Addresses the server is reached at besides loopback (the advertise address). */
  extraIps: string[] = [],
): Promise<Pki> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  let ca = await readPair(dir, 'ca');
  if (!ca) {
    ca = await createCa(now);
    await writePair(dir, 'ca', ca);
  }
  const names = servingNames(clusterIP, extraIps);
  let serving = await readPair(dir, 'apiserver');
  if (!serving || !usable(serving, ca, now, names)) {
    serving = await issue(
      ca,
      { subject: 'CN=kube-apiserver', usage: 'server', dnsNames: names.dns, ips: names.ips },
      now,
    );
    await writePair(dir, 'apiserver', serving);
  }
  let admin = await readPair(dir, 'admin');
  if (!admin || !usable(admin, ca, now)) {
    admin = await issue(ca, { subject: 'CN=nodelet-admin, O=system:masters', usage: 'client' }, now);
    await writePair(dir, 'admin', admin);
  }
  let kubeletClient = await readPair(dir, 'apiserver-kubelet-client');
  if (!kubeletClient || !usable(kubeletClient, ca, now)) {
    kubeletClient = await issue(ca, { subject: kubeletClientSubject, usage: 'client' }, now);
    await writePair(dir, 'apiserver-kubelet-client', kubeletClient);
  }
  return { dir, ca, serving, admin, kubeletClient };
}

/** A node's client certificate (`system:node:<name>`), made once and reused. */
export async function ensureNodeCert(pki: Pki, node: string, now = Date.now()): Promise<KeyPair> {
  return ensureClientCert(pki, 'nodes', node, `CN=system:node:${node}, O=system:nodes`, now);
}

/**
 * A user's client certificate (CN the user, one O per group) under `pki/users/`, made once and reused
 * while its subject stays the same: what `kubeadm kubeconfig user --client-name` issues.
 */
export async function ensureUserCert(
  pki: Pki,
  user: string,
  groups: readonly string[] = [],
  now = Date.now(),
): Promise<KeyPair> {
  if (!/^[A-Za-z0-9:._@-]+$/.test(user)) {
    throw new Error(`user name ${JSON.stringify(user)}: use letters, digits and ':', '.', '_', '@', '-'`);
  }
  for (const g of groups) {
    if (!/^[A-Za-z0-9:._@-]+$/.test(g))
      throw new Error(`group ${JSON.stringify(g)}: use letters, digits and ':', '.', '_', '@', '-'`);
  }
  const subject = [`CN=${user}`, ...groups.map((g) => `O=${g}`)].join(', ');
  return ensureClientCert(pki, 'users', user, subject, now);
}

async function ensureClientCert(
  pki: Pki,
  folder: string,
  name: string,
  subject: string,
  now: number,
): Promise<KeyPair> {
  const dir = join(pki.dir, folder);
  let pair = await readPair(dir, name);
  if (!pair || !usable(pair, pki.ca, now) || !sameSubject(pair, subject)) {
    pair = await issue(pki.ca, { subject, usage: 'client' }, now);
    await writePair(dir, name, pair);
  }
  return pair;
}

/** Whether the certificate's CN and O values are those of `subject` (`CN=…, O=…`). */
function sameSubject(pair: KeyPair, subject: string): boolean {
  const have = certificateUser(new NodeX509(pair.cert).subject);
  const want = certificateUser(subject);
  return have.name === want.name && have.groups.join('\n') === want.groups.join('\n');
}

/** The user a verified client certificate names: its CN, and its O values as groups. */
export function certificateUser(subject: string | undefined): { name: string; groups: string[] } {
  const name = /(?:^|\n|,\s*)CN=([^,\n]+)/.exec(subject ?? '')?.[1] ?? '';
  const groups = [...(subject ?? '').matchAll(/(?:^|\n|,\s*)O=([^,\n]+)/g)].map((m) => m[1]!);
  return { name, groups };
}

export interface KubeconfigOptions {
  server: string;
  ca: string;
  client: KeyPair;
  user: string;
  cluster?: string;
  context?: string;
}

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

export function kubeconfigYaml(o: KubeconfigOptions): string {
  const cluster = o.cluster ?? 'nodelet';
  const context = o.context ?? 'nodelet';
  return toYaml({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: cluster, cluster: { server: o.server, 'certificate-authority-data': b64(o.ca) } }],
    users: [
      {
        name: o.user,
        user: { 'client-certificate-data': b64(o.client.cert), 'client-key-data': b64(o.client.key) },
      },
    ],
    contexts: [{ name: context, context: { cluster, user: o.user } }],
    'current-context': context,
    preferences: {},
  });
}

export async function writeKubeconfig(path: string, options: KubeconfigOptions): Promise<void> {
  await writeSecret(path, kubeconfigYaml(options));
}

/** A kubeconfig that authenticates with a bearer token (the bootstrap kubeconfig of joining kubelets). */
export async function writeTokenKubeconfig(
  path: string,
  o: { server: string; ca: string; token: string; user: string },
): Promise<void> {
  await writeSecret(
    path,
    toYaml({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'nodelet', cluster: { server: o.server, 'certificate-authority-data': b64(o.ca) } }],
      users: [{ name: o.user, user: { token: o.token } }],
      contexts: [{ name: 'nodelet', context: { cluster: 'nodelet', user: o.user } }],
      'current-context': 'nodelet',
      preferences: {},
    }),
  );
}

/** The token of a bootstrap kubeconfig written before, or undefined. */
export async function readBootstrapToken(path: string): Promise<string | undefined> {
  try {
    return /^\s*token:\s*([a-z0-9]{6}\.[a-z0-9]{16})\s*$/m.exec(await readFile(path, 'utf8'))?.[1];
  } catch {
    return undefined;
  }
}

/** What a PKCS#10 certificate request asks for. */
export interface CsrInfo {
  /** The subject's CN and O values. */
  commonName: string;
  organizations: string[];
  dnsNames: string[];
  ipAddresses: string[];
  emailAddresses: string[];
  uris: string[];
}

/** Decodes a PEM `CERTIFICATE REQUEST` (the bytes of a CSR's `spec.request`); throws if it is not one. */
export function parseCsr(pem: string): CsrInfo {
  if (!/-----BEGIN CERTIFICATE REQUEST-----/.test(pem)) {
    throw new Error('must be a PEM block of type "CERTIFICATE REQUEST"');
  }
  const csr = new x509.Pkcs10CertificateRequest(pem);
  const subject = csr.subjectName;
  const san = csr.extensions.find((e) => e instanceof x509.SubjectAlternativeNameExtension) as
    x509.SubjectAlternativeNameExtension | undefined;
  const names = san?.names.toJSON() ?? [];
  const of = (type: string) => names.filter((n) => n.type === type).map((n) => n.value);
  return {
    commonName: subject.getField('CN')[0] ?? '',
    organizations: subject.getField('O'),
    dnsNames: of('dns'),
    ipAddresses: of('ip'),
    emailAddresses: of('email'),
    uris: of('url'),
  };
}

/** Whether the request is signed by the key it carries (proof of possession). */
export async function csrSignatureValid(pem: string): Promise<boolean> {
  try {
    return await new x509.Pkcs10CertificateRequest(pem).verify();
  } catch {
    return false;
  }
}

/**
 * Signs a CSR with the cluster CA as upstream's kube-apiserver-client signers do: the request's subject
 * and public key, client-auth usage, valid from now (minus a skew allowance) for `durationMs`, never
 * beyond the CA's own expiry.
 */
export async function signCsr(
  ca: KeyPair,
  pem: string,
  durationMs: number,
  now = Date.now(),
  /** `server` for kubelet-serving: server-auth usage and the request's DNS/IP names. */
  usage: 'server' | 'client' = 'client',
): Promise<string> {
  const csr = new x509.Pkcs10CertificateRequest(pem);
  const info = parseCsr(pem);
  const names: x509.JsonGeneralName[] =
    usage === 'server'
      ? [
          ...info.dnsNames.map((value) => ({ type: 'dns' as const, value })),
          ...info.ipAddresses.map((value) => ({ type: 'ip' as const, value })),
        ]
      : [];
  const caCert = new x509.X509Certificate(ca.cert);
  const notAfter = Math.min(now + durationMs, caCert.notAfter.getTime());
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: csr.subjectName,
    issuer: caCert.subjectName,
    notBefore: new Date(now - 5 * 60_000),
    notAfter: new Date(notAfter),
    publicKey: csr.publicKey,
    signingKey: await importKey(ca.key),
    signingAlgorithm: algorithm,
    extensions: await leafExtensions(caCert, usage, names),
  });
  return cert.toString('pem');
}

/**
 * The extensions of a certificate the CA issues to a server or a client (not a CA): its key usages, the
 * one extended usage, its subject alternative names when it has any, and the issuing CA's key id.
 */
async function leafExtensions(
  caCert: x509.X509Certificate,
  usage: 'server' | 'client',
  names: x509.JsonGeneralNames,
): Promise<x509.Extension[]> {
  return [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(
      x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
      true,
    ),
    new x509.ExtendedKeyUsageExtension(
      [usage === 'server' ? x509.ExtendedKeyUsage.serverAuth : x509.ExtendedKeyUsage.clientAuth],
      false,
    ),
    ...(names.length ? [new x509.SubjectAlternativeNameExtension(names, false)] : []),
    await x509.AuthorityKeyIdentifierExtension.create(caCert, false),
  ];
}
