import { ContainerModule, definePlugin, injectable, injectConfig, injectLogger } from '@nodelet/kernel';
import type { Logger } from '@nodelet/kernel';
import { ProxyBackendCapability } from '@nodelet/proxy';
import { IptablesBackend, type IptablesBackendChoice } from './backend.js';

export interface IptablesPluginConfig {
  /** `auto` (detect from the host's rules, as upstream), `nft` or `legacy`. */
  backend?: IptablesBackendChoice;
  /** Program the rules inside this network namespace instead of the process's own. */
  netns?: string;
}

/** The backend as the plugin's container builds it: its configuration and logger injected. */
@injectable()
export class ConfiguredIptablesBackend extends IptablesBackend {
  constructor(@injectConfig() config: IptablesPluginConfig, @injectLogger() logger: Logger) {
    super({ backend: config.backend ?? 'auto', ...(config.netns ? { netns: config.netns } : {}), logger });
  }
}

/** `proxy.mode: iptables`: provides `proxy.backend`. */
export const proxyIptablesPlugin = definePlugin<IptablesPluginConfig>({
  manifest: {
    name: 'proxy-iptables',
    version: '0.1.0',
    description: 'kube-proxy iptables mode: KUBE-SERVICES → KUBE-SVC-* → KUBE-SEP-*, via iptables-restore',
    provides: [ProxyBackendCapability],
    requires: [],
    configSchema: {
      type: 'object',
      additionalProperties: false,
      properties: {
        backend: { enum: ['auto', 'nft', 'legacy'] },
        netns: { type: 'string', minLength: 1 },
      },
    },
  },
  bindings: new ContainerModule(({ bind }) => {
    bind(ProxyBackendCapability.identifier).to(ConfiguredIptablesBackend).inSingletonScope();
  }),
});
