// @nodelet/client: nodelet's API client layer, as client-go is upstream's. This entry point loads no
// @kubernetes/client-node (seconds to import): `connectKubeconfig` loads it when a client is made,
// `connectListWatch` (list + watch over node's HTTPS client) only for kubeconfigs that need it;
// `@nodelet/client/client-node` exports it directly; `@nodelet/client/testing` has the in-memory fake.
export * from './kube-api.js';
export * from './connect.js';
export * from './rate-limiter.js';
export * from './merge-patch.js';
export * from './reflector.js';
export * from './informer.js';
export * from './core-objects.js';
