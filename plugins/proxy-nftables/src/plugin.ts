import { definePlugin } from '@nodelet/kernel';
import { ProxyBackendCapability } from '@nodelet/proxy';
import { NftablesBackend } from './backend.js';

export interface NftablesPluginConfig {
  /** Program the rules inside this network namespace instead of the process's own. */
  netns?: string;
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
  register(ctx) {
    ctx.provide(
      ProxyBackendCapability,
      new NftablesBackend({
        ...(ctx.config.netns ? { netns: ctx.config.netns } : {}),
        clock: ctx.clock,
        logger: ctx.logger,
      }),
    );
  },
});
