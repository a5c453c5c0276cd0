/**
 * @nodelet/runtime-crio — CRI-O as nodelet's container runtime: the runtime-cri plugin with CRI-O's
 * socket as the default endpoint. Quirks: see README.md.
 */
import { CRIO_ENDPOINT, criRuntimePlugin } from '@nodelet/runtime-cri';

export { CRIO_ENDPOINT };

/** The `runtime-crio` plugin (`runtime: crio`; config section `plugins.runtime-crio`). */
export const runtimeCrioPlugin = criRuntimePlugin({
  name: 'runtime-crio',
  description: 'CRI-O (CRI v1 over gRPC, default socket unix:///var/run/crio/crio.sock)',
  runtimeEndpoint: CRIO_ENDPOINT,
  runtimeLabel: 'CRI-O',
});

export default runtimeCrioPlugin;
