import {
  ContainerModule,
  definePlugin,
  injectable,
  injectClock,
  injectConfig,
  injectLogger,
} from '@nodelet/kernel';
import type { Clock, Logger } from '@nodelet/kernel';
import { ProxyBackendCapability } from '@nodelet/proxy';
import { UserspaceBackend } from './backend.js';

export interface UserspacePluginConfig {
  listenAddress?: string;
  ports?: 'service' | 'ephemeral';
  nodePorts?: boolean;
  udpSessionLimit?: number;
  udpIdleMs?: number;
}

/** The backend as the plugin's container builds it: its configuration, clock and logger injected. */
@injectable()
export class ConfiguredUserspaceBackend extends UserspaceBackend {
  constructor(
    @injectConfig() config: UserspacePluginConfig,
    @injectClock() clock: Clock,
    @injectLogger() logger: Logger,
  ) {
    super({ ...config, clock, logger });
  }
}

/** `proxy.mode: userspace`: nodelet carries the traffic itself; provides `proxy.backend`. */
export const proxyUserspacePlugin = definePlugin<UserspacePluginConfig>({
  manifest: {
    name: 'proxy-userspace',
    version: '0.1.0',
    description: 'the proxy in-process: listeners per service, TCP splicing and UDP relaying, no root needed',
    provides: [ProxyBackendCapability],
    requires: [],
    configSchema: {
      type: 'object',
      additionalProperties: false,
      properties: {
        listenAddress: { type: 'string', minLength: 1 },
        ports: { enum: ['service', 'ephemeral'] },
        nodePorts: { type: 'boolean' },
        udpSessionLimit: { type: 'integer', minimum: 1 },
        udpIdleMs: { type: 'integer', minimum: 1 },
      },
    },
  },
  bindings: new ContainerModule(({ bind }) => {
    bind(ProxyBackendCapability.identifier).to(ConfiguredUserspaceBackend).inSingletonScope();
  }),
});
