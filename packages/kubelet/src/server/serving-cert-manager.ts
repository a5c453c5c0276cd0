/**
 * `serverTLSBootstrap`: the kubelet's serving certificate requested from the cluster (upstream
 * kubelet/certificate NewKubeletServerCertificateManager). A key and a CSR for `CN=system:node:<name>,
 * O=system:nodes` with the hostname and node IPs as names go to signer `kubernetes.io/kubelet-serving`;
 * once issued, the pair goes to `onCertificate`, and a new one is requested at a jittered 70–90 % of the
 * certificate's lifetime, on the kernel clock.
 */
import { randomBytes, webcrypto, X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import { type Clock, errorMessage, type Logger } from '@nodelet/kernel';
import { type CertificateSigningRequest, isTransient, type KubeApi } from '@nodelet/client';

export const kubeletServingSigner = 'kubernetes.io/kubelet-serving';
export const kubeletServingUsages = ['digital signature', 'key encipherment', 'server auth'];

export type CsrApi = Pick<KubeApi, 'createCertificateSigningRequest' | 'getCertificateSigningRequest'>;

export interface ServingCertManagerOptions {
  nodeName: string;
  /** The node's hostname and IPs: the certificate's DNS and IP names. */
  hostname: string;
  ips: string[];
  api: CsrApi;
  clock: Clock;
  logger: Logger;
  onCertificate: (certPem: string, keyPem: string) => void;
  pollIntervalMs?: number;
  /** After a failed or refused request, how long until the next one (upstream backs off up to 5 min). */
  retryMs?: number;
  /** [0, 1) → the rotation point's position in the 70–90 % window; Math.random by default. */
  random?: () => number;
}

/** When to rotate a certificate valid from `notBefore` to `notAfter`: upstream's jitteryDuration. */
export function rotationDeadline(notBefore: number, notAfter: number, random = Math.random): number {
  const total = notAfter - notBefore;
  return Math.round(notBefore + total * (0.7 + 0.2 * random()));
}

export class ServingCertManager {
  private readonly abort = new AbortController();
  private cancelTimer?: () => void;
  private current?: X509Certificate;

  constructor(private readonly o: ServingCertManagerOptions) {}

  /** Starts requesting; returns at once (the first certificate arrives through `onCertificate`). */
  start(): void {
    void this.rotate();
  }

  stop(): void {
    this.abort.abort();
    this.cancelTimer?.();
  }

  /** The certificate in use, if one was issued. */
  get certificate(): X509Certificate | undefined {
    return this.current;
  }

  private async rotate(): Promise<void> {
    if (this.abort.signal.aborted) return;
    try {
      const { certPem, keyPem } = await this.requestOnce();
      if (this.abort.signal.aborted) return;
      const cert = new X509Certificate(certPem);
      this.current = cert;
      this.o.onCertificate(certPem, keyPem);
      const at = rotationDeadline(Date.parse(cert.validFrom), Date.parse(cert.validTo), this.o.random);
      this.o.logger.info('Serving certificate issued', {
        expires: cert.validTo,
        rotateAt: new Date(at).toISOString(),
      });
      this.schedule(Math.max(0, at - this.o.clock.now()));
    } catch (err) {
      if (this.abort.signal.aborted) return;
      this.o.logger.error('Serving certificate request failed', { err: errorMessage(err) });
      this.schedule(this.o.retryMs ?? 60_000);
    }
  }

  private schedule(ms: number): void {
    this.cancelTimer = this.o.clock.setTimeout(() => void this.rotate(), ms);
  }

  private async requestOnce(): Promise<{ certPem: string; keyPem: string }> {
    // Tracked: key generation is real work a virtual clock must wait for before moving on.
    const { csrPem, keyPem } = await this.o.clock.track(
      makeServingCsr(this.o.nodeName, this.o.hostname, this.o.ips),
    );
    const name = `csr-${randomBytes(6).toString('hex')}`;
    const csr: CertificateSigningRequest = {
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'CertificateSigningRequest',
      metadata: { name },
      spec: {
        request: Buffer.from(csrPem).toString('base64'),
        signerName: kubeletServingSigner,
        usages: kubeletServingUsages,
      },
    };
    await this.o.clock.track(this.o.api.createCertificateSigningRequest(csr));
    this.o.logger.info('Requested a serving certificate', { csr: name, signer: kubeletServingSigner });
    return { certPem: await this.waitForIssue(name), keyPem };
  }

  private async waitForIssue(name: string): Promise<string> {
    for (;;) {
      let csr: CertificateSigningRequest | undefined;
      try {
        csr = await this.o.clock.track(this.o.api.getCertificateSigningRequest(name));
      } catch (err) {
        if (!isTransient(err)) throw err;
      }
      const refused = (csr?.status?.conditions ?? []).find(
        (c) => (c.type === 'Denied' || c.type === 'Failed') && c.status !== 'False',
      );
      if (refused) {
        throw new Error(
          `certificate signing request ${name} was ${refused.type.toLowerCase()}: ${refused.message ?? ''}`,
        );
      }
      if (csr?.status?.certificate) return Buffer.from(csr.status.certificate, 'base64').toString();
      await this.o.clock.sleep(this.o.pollIntervalMs ?? 1_000, this.abort.signal);
    }
  }
}

/** A P-256 key and a CSR with the kubelet-serving subject and the node's names. */
export async function makeServingCsr(
  nodeName: string,
  hostname: string,
  ips: string[],
): Promise<{ csrPem: string; keyPem: string }> {
  await import('reflect-metadata'); // @peculiar/x509 needs the Reflect polyfill loaded first
  const x509 = await import('@peculiar/x509');
  x509.cryptoProvider.set(webcrypto as any);
  const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = (await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as any;
  const names = [
    ...(hostname && !isIP(hostname) ? [{ type: 'dns' as const, value: hostname }] : []),
    ...[...new Set([...(isIP(hostname) ? [hostname] : []), ...ips])].map((value) => ({
      type: 'ip' as const,
      value,
    })),
  ];
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: `CN=system:node:${nodeName}, O=system:nodes`,
    keys,
    signingAlgorithm: algorithm,
    extensions: [new x509.SubjectAlternativeNameExtension(names)],
  });
  const der = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey);
  return { csrPem: csr.toString('pem'), keyPem: x509.PemConverter.encode(der, 'PRIVATE KEY') };
}
