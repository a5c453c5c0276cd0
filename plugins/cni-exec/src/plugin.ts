import {
  ContainerModule,
  definePlugin,
  errorMessage,
  injectable,
  injectConfig,
  injectLogger,
} from '@nodelet/kernel';
import type { Logger } from '@nodelet/kernel';
import { CniNetwork } from '@nodelet/cni';
import { type CniExecConfig, cniExecConfigSchema } from './config.js';
import { CniExec } from './cni-exec.js';

/** The network as the plugin's container builds it: its configuration and logger injected. */
@injectable()
export class ConfiguredCniExec extends CniExec {
  constructor(@injectConfig() config: CniExecConfig, @injectLogger() logger: Logger) {
    super({ ...config, logger });
  }
}

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
  bindings: new ContainerModule(({ bind }) => {
    bind(CniNetwork.identifier).to(ConfiguredCniExec).inSingletonScope();
  }),
  register(ctx) {
    const network = ctx.container.get(CniNetwork.identifier);
    ctx.onStart(async () => {
      const status = await network
        .status()
        .catch((err: unknown) => ({ ready: false, message: errorMessage(err) }));
      if (status.ready) ctx.logger.info('CNI network ready', { status: status.message });
      else ctx.logger.warn('CNI network not ready', { reason: status.message });
    });
  },
});
