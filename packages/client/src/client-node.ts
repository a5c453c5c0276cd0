// The parts of @nodelet/client that import @kubernetes/client-node (seconds to load): reach them through
// `@nodelet/client/client-node`, or lazily through `connectKubeconfig` of the main entry point.
export * from './client-node-api.js';
export * from './kubeconfig.js';
