import { randomBytes, webcrypto, X509Certificate } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import { type Clock, errorMessage, type Logger } from '@nodelet/kernel';
import { stringify as toYaml } from 'yaml';
import { ApiError, type CertificateSigningRequest, isTransient, type KubeApi } from '@nodelet/client';

/** The signer of kubelet client certificates (upstream's `kubernetes.io/kube-apiserver-client-kubelet`). */
export const KubeletClientSigner = 'kubernetes.io/kube-apiserver-client-kubelet';

export interface BootstrapOptions {
  nodeName: string;
  /** Where the node's kubeconfig is (or will be written). */
  kubeconfig: string;
  bootstrapKubeconfig: string;
  /** Where `kubelet-client-current.pem` (certificate and key) is written. */
  certDir: string;
  clock: Clock;
  logger: Logger;
  makeApi: (kc: k8s.KubeConfig) => KubeApi;
  /** How long to wait for the CSR to be approved and signed (15 min). */
  waitTimeoutMs?: number;
  pollIntervalMs?: number;
  /** Ends the wait (the kubelet stops). */
  signal?: AbortSignal;
}

/**
 * TLS bootstrapping (upstream kubelet/certificate/bootstrap): when the node's kubeconfig is missing or
 * its client certificate expired, use the bootstrap kubeconfig's credentials to
 *
 *   1. make a key (ECDSA P-256) and a CSR for `CN=system:node:<node>, O=system:nodes`,
 *   2. create a CertificateSigningRequest (signer `kubernetes.io/kube-apiserver-client-kubelet`, usages
 *      digital signature and client auth),
 *   3. wait until it is approved and a certificate issued (a Denied or Failed condition is an error),
 *   4. write the certificate and key to `<certDir>/kubelet-client-current.pem` and a kubeconfig using them.
 *
 * Returns the kubeconfig path. An existing kubeconfig whose certificate is still valid is used as is.
 */
export async function bootstrapClientCredentials(o: BootstrapOptions): Promise<string> {
  const { loadKubeConfig } = await import('@nodelet/client/client-node');
  if (existsSync(o.kubeconfig) && kubeconfigValid(loadKubeConfig, o.kubeconfig, o.clock.now(), o.logger)) {
    return o.kubeconfig;
  }
  const bootstrap = loadKubeConfig(o.bootstrapKubeconfig);
  const api = o.makeApi(bootstrap);
  o.logger.info('Requesting a client certificate with the bootstrap kubeconfig', {
    node: o.nodeName,
    server: api.server,
  });
  const { csrPem, keyPem } = await makeCsr(o.nodeName);
  const name = `node-csr-${randomBytes(6).toString('hex')}`;
  const csr: CertificateSigningRequest = {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: { name },
    spec: {
      request: Buffer.from(csrPem).toString('base64'),
      signerName: KubeletClientSigner,
      usages: ['digital signature', 'client auth'],
    },
  };
  try {
    await api.createCertificateSigningRequest(csr);
  } catch (err) {
    if (err instanceof ApiError && (err.code === 401 || err.code === 403)) {
      throw new Error(
        `the API server at ${api.server} refused the credentials of the bootstrap kubeconfig ${o.bootstrapKubeconfig} (${err.code} ${err.reason}): its bootstrap token is unknown, expired or revoked, or may not create CertificateSigningRequests; make a new bootstrap kubeconfig`,
      );
    }
    throw err;
  }
  const certPem = await waitForCertificate(api, name, o);
  const pemPath = join(o.certDir, 'kubelet-client-current.pem');
  await writeSecret(pemPath, `${certPem.trim()}\n${keyPem.trim()}\n`);
  const cluster = bootstrap.getCurrentCluster()!;
  const ca = cluster.caData ?? (cluster.caFile ? readFileSync(cluster.caFile).toString('base64') : undefined);
  const user = `system:node:${o.nodeName}`;
  await writeSecret(
    o.kubeconfig,
    toYaml({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'default-cluster',
          cluster: {
            server: cluster.server,
            ...(ca ? { 'certificate-authority-data': ca } : {}),
            ...(cluster.skipTLSVerify ? { 'insecure-skip-tls-verify': true } : {}),
          },
        },
      ],
      users: [
        { name: user, user: { 'client-certificate': resolve(pemPath), 'client-key': resolve(pemPath) } },
      ],
      contexts: [{ name: 'default-context', context: { cluster: 'default-cluster', user } }],
      'current-context': 'default-context',
    }),
  );
  o.logger.info('Client certificate issued; wrote the node kubeconfig', {
    kubeconfig: o.kubeconfig,
    csr: name,
  });
  return o.kubeconfig;
}

/** True when the kubeconfig loads and its client certificate (if it has one) is valid for 5 more minutes. */
export function kubeconfigValid(
  loadKubeConfig: (path: string) => k8s.KubeConfig,
  path: string,
  now: number,
  logger: Logger,
): boolean {
  try {
    const kc = loadKubeConfig(path);
    const user = kc.getCurrentUser();
    const pem = user?.certData
      ? Buffer.from(user.certData, 'base64').toString()
      : user?.certFile
        ? readFileSync(user.certFile, 'utf8')
        : undefined;
    if (!pem) return true; // token or exec credentials: nothing to renew here
    const cert = new X509Certificate(pem);
    if (Date.parse(cert.validTo) - now < 5 * 60_000) {
      logger.info('The client certificate of the kubeconfig expired; bootstrapping a new one', {
        kubeconfig: path,
        validTo: cert.validTo,
      });
      return false;
    }
    return true;
  } catch (err) {
    logger.warn('The kubeconfig is not usable; bootstrapping a new one', {
      kubeconfig: path,
      err: errorMessage(err),
    });
    return false;
  }
}

async function makeCsr(nodeName: string): Promise<{ csrPem: string; keyPem: string }> {
  await import('reflect-metadata'); // @peculiar/x509 needs the Reflect polyfill loaded first
  const x509 = await import('@peculiar/x509');
  x509.cryptoProvider.set(webcrypto as any);
  const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = (await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as any;
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: `CN=system:node:${nodeName}, O=system:nodes`,
    keys,
    signingAlgorithm: algorithm,
  });
  const der = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey);
  return { csrPem: csr.toString('pem'), keyPem: x509.PemConverter.encode(der, 'PRIVATE KEY') };
}

async function waitForCertificate(api: KubeApi, name: string, o: BootstrapOptions): Promise<string> {
  const deadline = o.clock.now() + (o.waitTimeoutMs ?? 15 * 60_000);
  let announced = false;
  for (;;) {
    let csr: CertificateSigningRequest | undefined;
    try {
      csr = await api.getCertificateSigningRequest(name);
    } catch (err) {
      if (!isTransient(err)) throw err; // an unreachable server is waited out like a pending CSR
    }
    if (csr) {
      const conditions = csr.status?.conditions ?? [];
      const refused = conditions.find(
        (c) => (c.type === 'Denied' || c.type === 'Failed') && c.status !== 'False',
      );
      if (refused) {
        throw new Error(
          `certificate signing request ${name} was ${refused.type.toLowerCase()}: ${refused.reason ?? ''} ${refused.message ?? ''}`.trim(),
        );
      }
      if (csr.status?.certificate) return Buffer.from(csr.status.certificate, 'base64').toString();
      if (!announced) {
        o.logger.info('Waiting for the certificate signing request to be approved and issued', { csr: name });
        announced = true;
      }
    }
    if (o.clock.now() >= deadline) {
      throw new Error(
        `certificate signing request ${name} was not approved and issued within ${Math.round((o.waitTimeoutMs ?? 900_000) / 1000)} s`,
      );
    }
    await o.clock.sleep(o.pollIntervalMs ?? 1_000, o.signal);
  }
}

async function writeSecret(path: string, content: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.tmp-${process.pid}`;
  await writeFile(tmp, content, { mode: 0o600 });
  await chmod(tmp, 0o600);
  await rename(tmp, path);
}
