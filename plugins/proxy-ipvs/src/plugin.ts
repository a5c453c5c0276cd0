import { definePlugin } from '@nodelet/kernel';
import { ProxyBackendCapability } from '@nodelet/proxy';
import { IpvsBackend } from './backend.js';
import { type Scheduler, SCHEDULERS } from './render.js';

export interface IpvsPluginConfig {
  scheduler?: Scheduler;
  netns?: string;
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
  register(ctx) {
    ctx.provide(
      ProxyBackendCapability,
      new IpvsBackend({
        ...(ctx.config.scheduler ? { scheduler: ctx.config.scheduler } : {}),
        ...(ctx.config.netns ? { netns: ctx.config.netns } : {}),
        logger: ctx.logger,
      }),
    );
  },
});
