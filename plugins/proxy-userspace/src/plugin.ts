import { definePlugin } from '@nodelet/kernel';
import { ProxyBackendCapability } from '@nodelet/proxy';
import { UserspaceBackend } from './backend.js';

export interface UserspacePluginConfig {
  listenAddress?: string;
  ports?: 'service' | 'ephemeral';
  nodePorts?: boolean;
  udpSessionLimit?: number;
  udpIdleMs?: number;
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
  register(ctx) {
    ctx.provide(
      ProxyBackendCapability,
      new UserspaceBackend({ ...ctx.config, clock: ctx.clock, logger: ctx.logger }),
    );
  },
});
