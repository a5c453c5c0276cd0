import type { ClientNodeApi, ClientNodeApiOptions } from './client-node-api.js';

/**
 * Entry points to @kubernetes/client-node that load it on demand: it takes over a second to import,
 * which only a kubelet that joins a cluster should pay.
 */

/** A `KubeApi` over client-node for the kubeconfig at `path` (throws a message naming what is wrong). */
export async function connectKubeconfig(path: string, options: ClientNodeApiOptions): Promise<ClientNodeApi> {
  const { ClientNodeApi, loadKubeConfig } = await import('./client-node-api.js');
  return new ClientNodeApi(loadKubeConfig(path), options);
}

/**
 * Checks that a kubeconfig loads and names a cluster server; resolves with that server, rejects with a
 * message naming the file and the problem (for a clear error at startup).
 */
export async function checkKubeconfig(path: string): Promise<string> {
  const { loadKubeConfig } = await import('./client-node-api.js');
  return loadKubeConfig(path).getCurrentCluster()!.server;
}

export type { ClientNodeApi, ClientNodeApiOptions };
