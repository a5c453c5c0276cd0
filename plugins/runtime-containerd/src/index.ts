/**
 * @nodelet/runtime-containerd — containerd's CRI plugin as nodelet's container runtime: the
 * runtime-cri plugin with containerd's socket as the default endpoint. Quirks: see README.md.
 */
import { CONTAINERD_ENDPOINT, criRuntimePlugin } from '@nodelet/runtime-cri';

export { CONTAINERD_ENDPOINT };

/** The `runtime-containerd` plugin (`runtime: containerd`; config section `plugins.runtime-containerd`). */
export const runtimeContainerdPlugin = criRuntimePlugin({
  name: 'runtime-containerd',
  description: 'containerd (CRI v1 over gRPC, default socket unix:///run/containerd/containerd.sock)',
  runtimeEndpoint: CONTAINERD_ENDPOINT,
  runtimeLabel: 'containerd',
});

export default runtimeContainerdPlugin;
