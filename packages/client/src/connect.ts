import type { ClientNodeApi, ClientNodeApiOptions } from './client-node-api.js';
import type { HttpsListWatchApi, HttpsListWatchOptions } from './https-list-watch.js';
import type { KubeconfigSource } from './kubeconfig.js';
import type { ListWatchApi } from './kube-api.js';

/**
 * Entry points to @kubernetes/client-node that load it on demand: it takes seconds and tens of MiB to
 * import (its generated API models), which only a kubelet that joins a cluster should pay. A component
 * that only lists and watches (the proxy) connects with `connectListWatch`, which loads it only for a
 * kubeconfig that needs it (an exec credential plugin, an auth provider, a proxy URL).
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
 * A `ListWatchApi` for a kubeconfig file or `--master` URL over node's HTTPS client (`HttpsListWatchApi`),
 * or over client-node when the kubeconfig's user or cluster needs it. Throws a message naming what is
 * wrong, as `connectKubeconfig` does.
 */
export async function connectListWatch(
  source: string | KubeconfigSource,
  options: HttpsListWatchOptions,
): Promise<ListWatchApi & { close(): void }> {
  const { readRestConfig } = await import('./rest-config.js');
  const read = readRestConfig(source);
  if ('needsClientNode' in read) return connectKubeconfig(source, options);
  const { HttpsListWatchApi } = await import('./https-list-watch.js');
  return new HttpsListWatchApi(read.config, options);
}

/**
 * Checks that a kubeconfig loads and names a cluster server; resolves with that server, rejects with a
 * message naming the file and the problem (for a clear error at startup).
 */
export async function checkKubeconfig(source: string | KubeconfigSource): Promise<string> {
  const { loadKubeConfig } = await import('./client-node.js');
  return loadKubeConfig(source).getCurrentCluster()!.server;
}

export type {
  ClientNodeApi,
  ClientNodeApiOptions,
  HttpsListWatchApi,
  HttpsListWatchOptions,
  KubeconfigSource,
};
