/**
 * @nodelet/runtime-cri — the `cri.runtime` / `cri.image` capabilities from a CRI v1 runtime over
 * gRPC (containerd, CRI-O, a nodelet `cri serve`). `@nodelet/runtime-containerd` and
 * `@nodelet/runtime-crio` are presets of `criRuntimePlugin`.
 */
export { criRuntimePlugin, runtimeCriPlugin, type CriRuntimePreset } from './plugin.js';
export {
  CONTAINERD_ENDPOINT,
  CRIO_ENDPOINT,
  DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS,
  checkEndpoint,
  criRuntimeConfigSchema,
  type CriRuntimeConfig,
} from './config.js';
export { CRI_API_VERSION, RemoteCri, type RemoteCriInfo, type RemoteCriOptions } from './remote-cri.js';
export { CriConnection } from './cri-connection.js';

/** The default export, so `runtime: @nodelet/runtime-cri` loads as a third-party plugin would. */
export { runtimeCriPlugin as default } from './plugin.js';
