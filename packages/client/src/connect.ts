import type { ClientNodeApi, ClientNodeApiOptions } from './client-node-api.js';
import type { KubeconfigSource } from './kubeconfig.js';

/**
 * Entry points to @kubernetes/client-node that load it on demand: it takes seconds and tens of MiB to
 * import (its generated API models), which only a kubelet that joins a cluster, or a proxy that watches
 * one, should pay.
 */

/**
 * A `KubeApi` over client-node for a kubeconfig file or `--master` URL (throws a message naming what
 * is wrong).
 */
export async function connectKubeconfig(
  source: string | KubeconfigSource,
  options: ClientNodeApiOptions,
): Promise<ClientNodeApi> {
  const { ClientNodeApi, loadKubeConfig } = await import('./client-node.js');
  return new ClientNodeApi(loadKubeConfig(source), options);
}

/**
 * Checks that a kubeconfig loads and names a cluster server; resolves with that server, rejects with a
 * message naming the file and the problem (for a clear error at startup).
 */
export async function checkKubeconfig(source: string | KubeconfigSource): Promise<string> {
  const { loadKubeConfig } = await import('./client-node.js');
  return loadKubeConfig(source).getCurrentCluster()!.server;
}

export type { ClientNodeApi, ClientNodeApiOptions, KubeconfigSource };
