/**
 * The authorization modes of `--authorization-mode` (kube-apiserver's): the chain's links in order.
 * `Node,RBAC` is the default, as kubeadm configures kube-apiserver; `AlwaysAllow` (no authorization)
 * must be asked for by name, for benchmarks or embedders.
 */
export const authorizationModes = ['Node', 'RBAC', 'AlwaysAllow', 'AlwaysDeny'] as const;
export type AuthorizationMode = (typeof authorizationModes)[number];
export const defaultAuthorizationModes: readonly AuthorizationMode[] = ['Node', 'RBAC'];
