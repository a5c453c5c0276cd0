import { execHandler } from './exec-handler.js';
import { grpcHandler } from './grpc-handler.js';
import { httpGetHandler } from './http-handler.js';
import type { ProbeHandler } from './probe-handler.js';
import { tcpSocketHandler } from './tcp-handler.js';

/** The handlers every kubelet has: upstream's four. Plugins add more through `probe.handler`. */
export const builtInProbeHandlers: readonly ProbeHandler[] = [
  execHandler,
  httpGetHandler,
  tcpSocketHandler,
  grpcHandler,
];

export { execHandler, grpcHandler, httpGetHandler, tcpSocketHandler };
