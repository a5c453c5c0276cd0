// Test support: a kubelet server configuration that lets every request in (anonymous, AlwaysAllow) on
// free ports, for tests of the endpoints rather than of authentication.
import type { KubeletServerConfig } from './kubelet-server.js';

export function openServerConfig(
  certDir: string,
  overrides: Partial<KubeletServerConfig> = {},
): KubeletServerConfig {
  return {
    address: '127.0.0.1',
    port: 0,
    readOnlyPort: 0,
    certDir,
    authentication: { x509: {}, webhook: { enabled: false, cacheTTLMs: 0 }, anonymous: { enabled: true } },
    authorization: { mode: 'AlwaysAllow', webhook: { cacheAuthorizedTTLMs: 0, cacheUnauthorizedTTLMs: 0 } },
    ...overrides,
  };
}
