import { readFile } from 'node:fs/promises';
import type { SecureVersion } from 'node:tls';
import type { Logger } from '@nodelet/kernel';
import type { Kubelet } from '../kubelet.js';
import { type AuthenticationConfig, KubeletAuthenticator } from './authn.js';
import { type AuthorizationConfig, KubeletAuthorizer } from './authz.js';
import { kubeletRouteTable } from './kubelet-routes.js';
import { ReadOnlyServer } from './read-only-server.js';
import type { ReviewClient } from './review-client.js';
import type { RouteTable } from './routes.js';
import { KubeletSecureServer } from './secure-server.js';
import { loadServingCertificate } from './serving-cert.js';
import { type CsrApi, ServingCertManager } from './serving-cert-manager.js';

/** What the kubelet's servers are configured with (KubeletConfiguration fields, defaults applied). */
export interface KubeletServerConfig {
  /** `enableServer` (true): serve the secure port. */
  enableServer?: boolean;
  address: string;
  port: number;
  /** 0 disables the read-only port. */
  readOnlyPort: number;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  /** Where the self-signed serving pair lives (`--cert-dir`, default `<rootDir>/pki`). */
  certDir?: string;
  tlsMinVersion?: SecureVersion;
  /** An OpenSSL cipher list (from Go names: tls-options.ts). */
  tlsCipherSuites?: string;
  /**
   * `serverTLSBootstrap`: the serving certificate comes from a `kubernetes.io/kubelet-serving` CSR
   * (ServingCertManager, rotated on the clock); until it is issued the self-signed one serves.
   */
  serverTLSBootstrap?: boolean;
  authentication: AuthenticationConfig;
  authorization: AuthorizationConfig;
  /** The running KubeletConfiguration (`/configz`). */
  configz?: () => object;
  /** The node log directory of `/logs/` (default /var/log). */
  logDir?: string;
}

export interface KubeletServers {
  routes: RouteTable;
  secure?: KubeletSecureServer;
  readOnly?: ReadOnlyServer;
  /** Where each listens (port 0 resolved). */
  securePort?: number;
  readOnlyPort?: number;
  close(): Promise<void>;
}

/** The API client's reviews, when it has them (the joined kubelet's connection). */
function apiReviews(kubelet: Kubelet): ReviewClient | undefined {
  const api = kubelet.nodeAgent?.api as Partial<ReviewClient> | undefined;
  return api?.createTokenReview && api.createSubjectAccessReview ? (api as ReviewClient) : undefined;
}

/**
 * Starts the kubelet's servers: the HTTPS server (`port`) behind authentication and authorization, and
 * the read-only one when `readOnlyPort` > 0, both serving `o.routes` (default: a new table with the
 * kubelet's endpoints). `o.reviews` (default: the kubelet's API connection) answers TokenReviews and
 * SubjectAccessReviews.
 */
export async function startKubeletServers(
  kubelet: Kubelet,
  config: KubeletServerConfig,
  logger: Logger,
  o: { reviews?: () => ReviewClient | undefined; routes?: RouteTable } = {},
): Promise<KubeletServers> {
  const reviews = o.reviews ?? (() => apiReviews(kubelet));
  const table =
    o.routes ?? kubeletRouteTable(kubelet, logger, { configz: config.configz, logDir: config.logDir });
  let certificates: ServingCertManager | undefined;
  const servers: KubeletServers = {
    routes: table,
    async close() {
      certificates?.stop();
      await Promise.all([servers.secure?.close(), servers.readOnly?.close()]);
    },
  };
  try {
    if (config.enableServer !== false) {
      const caFile = config.authentication.x509.clientCAFile;
      let clientCA: string | undefined;
      if (caFile) {
        try {
          clientCA = await readFile(caFile, 'utf8');
        } catch (err) {
          throw new Error(
            `authentication.x509.clientCAFile (--client-ca-file) ${caFile}: ${(err as Error).message}`,
          );
        }
      }
      const serving = await loadServingCertificate({
        tlsCertFile: config.tlsCertFile,
        tlsPrivateKeyFile: config.tlsPrivateKeyFile,
        certDir: config.certDir ?? `${kubelet.options.rootDir}/pki`,
        hostname: kubelet.options.apiServer?.hostname ?? kubelet.options.nodeName,
        ips: [kubelet.options.hostIP],
      });
      const deps = { clock: kubelet.clock, logger };
      servers.secure = new KubeletSecureServer(
        table,
        {
          address: config.address,
          port: config.port,
          nodeName: kubelet.options.nodeName,
          serving,
          clientCA,
          minVersion: config.tlsMinVersion,
          ciphers: config.tlsCipherSuites,
          authenticator: new KubeletAuthenticator(config.authentication, {
            ...deps,
            reviews,
            clientCAConfigured: () => clientCA !== undefined,
          }),
          authorizer: new KubeletAuthorizer(config.authorization, { ...deps, reviews }),
        },
        logger,
      );
      servers.securePort = (await servers.secure.listen()).port;
      const api = kubelet.nodeAgent?.api as Partial<CsrApi> | undefined;
      if (
        config.serverTLSBootstrap &&
        api?.createCertificateSigningRequest &&
        api.getCertificateSigningRequest
      ) {
        const secure = servers.secure;
        certificates = new ServingCertManager({
          nodeName: kubelet.options.nodeName,
          hostname: kubelet.options.apiServer?.hostname ?? kubelet.options.nodeName,
          ips: [kubelet.options.hostIP],
          api: api as CsrApi,
          clock: kubelet.clock,
          logger: logger.child('serving-cert'),
          onCertificate: (certPem, keyPem) => secure.setServingCertificate(certPem, keyPem),
        });
        certificates.start();
      } else if (config.serverTLSBootstrap) {
        logger.warn('serverTLSBootstrap needs an API server connection; serving the self-signed certificate');
      }
    }
    if (config.readOnlyPort > 0) {
      servers.readOnly = new ReadOnlyServer(table, logger);
      servers.readOnlyPort = (await servers.readOnly.listen(config.readOnlyPort, config.address)).port;
    }
  } catch (err) {
    await servers.close();
    throw err;
  }
  return servers;
}
