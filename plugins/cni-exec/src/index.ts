export { CniExec, cniArgs, requestConfig } from './cni-exec.js';
export type { CniExecOptions } from './cni-exec.js';
export { cniExecPlugin } from './plugin.js';
export { cniExecConfigSchema, DEFAULT_CONFIG } from './config.js';
export type { CniExecConfig } from './config.js';
export {
  CONF_EXTENSIONS,
  listConfFiles,
  loadDefaultNetwork,
  loadNetworkFile,
  parseNetworkConfig,
} from './network-config.js';
export type { NetworkConfigList, PluginConf } from './network-config.js';
export { parseResult, toPodNetworkStatus } from './result.js';
export { execPlugin, findPlugin } from './invoke.js';
export type { CniEnv, ExecOutcome, ExecRequest } from './invoke.js';
export { SUPPORTED_VERSIONS } from './version.js';
export { cniExecPlugin as default } from './plugin.js';
