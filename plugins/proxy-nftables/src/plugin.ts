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
import { NftablesBackend } from './backend.js';

export interface NftablesPluginConfig {
  /** Program the rules inside this network namespace instead of the process's own. */
  netns?: string;
}

/** The backend as the plugin's container builds it: its configuration, logger and clock injected. */
@injectable()
export class ConfiguredNftablesBackend extends NftablesBackend {
  constructor(
    @injectConfig() config: NftablesPluginConfig,
    @injectLogger() logger: Logger,
    @injectClock() clock: Clock,
  ) {
    super({ ...(config.netns ? { netns: config.netns } : {}), logger, clock });
  }
}

/** `proxy.mode: nftables`: provides `proxy.backend`. */
export const proxyNftablesPlugin = definePlugin<NftablesPluginConfig>({
  manifest: {
    name: 'proxy-nftables',
    version: '0.1.0',
    description:
      'kube-proxy nftables mode: table ip kube-proxy, verdict maps, one nft -f transaction per sync',
    provides: [ProxyBackendCapability],
    requires: [],
    configSchema: {
      type: 'object',
      additionalProperties: false,
      properties: { netns: { type: 'string', minLength: 1 } },
    },
  },
  bindings: new ContainerModule(({ bind }) => {
    bind(ProxyBackendCapability.identifier).to(ConfiguredNftablesBackend).inSingletonScope();
  }),
});
