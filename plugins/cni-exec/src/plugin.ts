import { definePlugin, errorMessage } from '@nodelet/kernel';
import { CniNetwork } from '@nodelet/cni';
import { type CniExecConfig, cniExecConfigSchema } from './config.js';
import { CniExec } from './cni-exec.js';

/**
 * The `cni-exec` plugin: `cni.network` by running the CNI plugin binaries of the node's network
 * configuration. At start it logs whether the network is ready; it does not refuse to start when it is
 * not (a CNI daemon often writes its configuration after the node components are up).
 */
export const cniExecPlugin = definePlugin<CniExecConfig>({
  manifest: {
    name: 'cni-exec',
    version: '0.1.0',
    description: 'pod networks through CNI plugin binaries (conflist from confDir, plugins from binDirs)',
    provides: [CniNetwork],
    requires: [],
    configSchema: cniExecConfigSchema,
  },
  register(ctx) {
    const network = new CniExec({ ...ctx.config, logger: ctx.logger });
    ctx.provide(CniNetwork, network);
    ctx.onStart(async () => {
      const status = await network
        .status()
        .catch((err: unknown) => ({ ready: false, message: errorMessage(err) }));
      if (status.ready) ctx.logger.info('CNI network ready', { status: status.message });
      else ctx.logger.warn('CNI network not ready', { reason: status.message });
    });
  },
});
