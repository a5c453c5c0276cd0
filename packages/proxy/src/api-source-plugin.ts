import { connectListWatch } from '@nodelet/client';
import { definePlugin } from '@nodelet/kernel';
import { ApiSource } from './api-source.js';
import { ProxySourceCapability } from './source.js';

export interface ApiSourcePluginConfig {
  /** Path of a kubeconfig (upstream `--kubeconfig`). */
  kubeconfig?: string;
  /** API server URL; replaces the kubeconfig's server, or stands alone (upstream `--master`). */
  master?: string;
  /** This node, for its topology labels. */
  nodeName?: string;
  /** First and longest wait between retries of a failed list or watch. */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  requestTimeoutMs?: number;
  watchTimeoutSeconds?: number;
}

export const apiSourceConfigSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    kubeconfig: { type: 'string', minLength: 1 },
    master: { type: 'string', minLength: 1 },
    nodeName: { type: 'string', minLength: 1 },
    initialBackoffMs: { type: 'integer', minimum: 1 },
    maxBackoffMs: { type: 'integer', minimum: 1 },
    requestTimeoutMs: { type: 'integer', minimum: 1 },
    watchTimeoutSeconds: { type: 'integer', minimum: 1 },
  },
} as const;

/**
 * The API server as the proxy's source: provides `proxy.source` with an `ApiSource` on the kubeconfig
 * (or master URL) of its configuration. The kubeconfig is read when the kernel links, so a missing or
 * broken file stops the start with a message naming it. Lists and watches go over node's HTTPS client
 * (`connectListWatch`); @kubernetes/client-node is loaded only for a kubeconfig that needs it (an exec
 * credential plugin, an auth provider, a proxy URL).
 */
export const apiSourcePlugin = definePlugin<ApiSourcePluginConfig>({
  manifest: {
    name: 'proxy-api-source',
    version: '0.1.0',
    description: 'Services and EndpointSlices for the proxy from an API server (list + watch)',
    provides: [ProxySourceCapability],
    requires: [],
    configSchema: apiSourceConfigSchema,
  },
  async register(ctx) {
    const c = ctx.config;
    const api = await connectListWatch(
      {
        ...(c.kubeconfig ? { kubeconfig: c.kubeconfig } : {}),
        ...(c.master ? { master: c.master } : {}),
      },
      { clock: ctx.clock, requestTimeoutMs: c.requestTimeoutMs ?? 30_000 },
    );
    ctx.provide(
      ProxySourceCapability,
      new ApiSource({
        api,
        clock: ctx.clock,
        logger: ctx.logger,
        ...(c.nodeName ? { nodeName: c.nodeName } : {}),
        ...(c.initialBackoffMs ? { initialBackoffMs: c.initialBackoffMs } : {}),
        ...(c.maxBackoffMs ? { maxBackoffMs: c.maxBackoffMs } : {}),
        ...(c.watchTimeoutSeconds ? { watchTimeoutSeconds: c.watchTimeoutSeconds } : {}),
      }),
    );
  },
});
