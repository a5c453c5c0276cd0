import { ContainerModule, definePlugin, injectable, injectConfig, injectLogger } from '@nodelet/kernel';
import type { Logger } from '@nodelet/kernel';
import { ProxyBackendCapability } from '@nodelet/proxy';
import { IpvsBackend } from './backend.js';
import { type Scheduler, SCHEDULERS } from './render.js';

export interface IpvsPluginConfig {
  scheduler?: Scheduler;
  netns?: string;
}

/** The backend as the plugin's container builds it: its configuration and logger injected. */
@injectable()
export class ConfiguredIpvsBackend extends IpvsBackend {
  constructor(@injectConfig() config: IpvsPluginConfig, @injectLogger() logger: Logger) {
    super({
      ...(config.scheduler ? { scheduler: config.scheduler } : {}),
      ...(config.netns ? { netns: config.netns } : {}),
      logger,
    });
  }
}

/** `proxy.mode: ipvs`: provides `proxy.backend`; applies only on kernels with IPVS. */
export const proxyIpvsPlugin = definePlugin<IpvsPluginConfig>({
  manifest: {
    name: 'proxy-ipvs',
    version: '0.1.0',
    description: 'kube-proxy IPVS mode: virtual servers and schedulers, with ipset/iptables helpers',
    provides: [ProxyBackendCapability],
    requires: [],
    configSchema: {
      type: 'object',
      additionalProperties: false,
      properties: { scheduler: { enum: [...SCHEDULERS] }, netns: { type: 'string', minLength: 1 } },
    },
  },
  bindings: new ContainerModule(({ bind }) => {
    bind(ProxyBackendCapability.identifier).to(ConfiguredIpvsBackend).inSingletonScope();
  }),
});
