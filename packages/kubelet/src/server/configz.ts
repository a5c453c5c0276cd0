import type { KubeletPluginConfig } from '../plugin.js';
import { goDuration } from '../prober/probe-spec.js';
import { tlsVersions } from './tls-options.js';

/**
 * The running configuration as upstream's `/configz` shows it (`{"kubeletconfig": {...}}`, the
 * KubeletConfiguration's field names, durations as Go prints them): what this kubelet runs with, defaults
 * applied, for the fields nodelet implements.
 */
export function kubeletConfigz(c: KubeletPluginConfig): Record<string, unknown> {
  const s = c.server;
  const out: Record<string, unknown> = {
    ...(c.podManifestPath ? { staticPodPath: c.podManifestPath } : {}),
    ...(c.manifestUrl ? { staticPodURL: c.manifestUrl } : {}),
    syncFrequency: goDuration(c.syncFrequencyMs ?? 60_000),
    fileCheckFrequency: goDuration(c.fileCheckFrequencyMs ?? 20_000),
    httpCheckFrequency: goDuration(c.httpCheckFrequencyMs ?? 20_000),
    address: c.address,
    readOnlyPort: c.readOnlyPort,
    podLogsDir: c.podLogsDir,
    maxPods: c.maxPods ?? 110,
    ...(c.clusterDNS?.length ? { clusterDNS: c.clusterDNS } : {}),
    ...(c.clusterDomain ? { clusterDomain: c.clusterDomain } : {}),
    resolvConf: c.resolvConf ?? '/etc/resolv.conf',
  };
  if (s) {
    Object.assign(out, {
      enableServer: s.enableServer !== false,
      port: s.port,
      ...(s.tlsCertFile ? { tlsCertFile: s.tlsCertFile, tlsPrivateKeyFile: s.tlsPrivateKeyFile } : {}),
      ...(s.tlsMinVersion
        ? { tlsMinVersion: Object.keys(tlsVersions).find((k) => tlsVersions[k] === s.tlsMinVersion) }
        : {}),
      serverTLSBootstrap: !!s.serverTLSBootstrap,
      authentication: {
        x509: s.authentication.x509.clientCAFile ? { clientCAFile: s.authentication.x509.clientCAFile } : {},
        webhook: {
          enabled: s.authentication.webhook.enabled,
          cacheTTL: goDuration(s.authentication.webhook.cacheTTLMs),
        },
        anonymous: { enabled: s.authentication.anonymous.enabled },
      },
      authorization: {
        mode: s.authorization.mode,
        webhook: {
          cacheAuthorizedTTL: goDuration(s.authorization.webhook.cacheAuthorizedTTLMs),
          cacheUnauthorizedTTL: goDuration(s.authorization.webhook.cacheUnauthorizedTTLMs),
        },
      },
    });
  }
  return out;
}
