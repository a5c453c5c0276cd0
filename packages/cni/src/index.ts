export { CniNetwork } from './network.js';
export type { NetworkStatus, PodNetworkRequest, PortMapping } from './network.js';
export type { CniDns, CniInterface, CniIpConfig, CniResult, CniRoute, PodNetworkStatus } from './result.js';
export { CniError, CniErrorCodes, kernelCodeForCniCode } from './errors.js';
export type { CniCommand, CniErrorBody, CniErrorContext } from './errors.js';
