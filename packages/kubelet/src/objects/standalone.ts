import type { ConfigMap, Pod, Secret, TokenRequestStatus } from '@nodelet/api';
import type { PodObjects } from '@nodelet/volume';

/**
 * The API objects of a kubelet with no API server (static pods only): there is nothing to read them
 * from, so every lookup fails with upstream's words plus what to do about it.
 */
export class StandalonePodObjects implements PodObjects {
  getConfigMap(namespace: string, name: string): Promise<ConfigMap> {
    return Promise.reject(noClient('configMap', namespace, name));
  }

  getSecret(namespace: string, name: string): Promise<Secret> {
    return Promise.reject(noClient('secret', namespace, name));
  }

  getServiceAccountToken(pod: Pod): Promise<TokenRequestStatus> {
    const sa = pod.spec?.serviceAccountName || 'default';
    return Promise.reject(noClient('token of serviceAccount', pod.metadata?.namespace ?? 'default', sa));
  }
}

function noClient(what: string, namespace: string, name: string): Error {
  return new Error(
    `couldn't get ${what} ${namespace}/${name}, no kubeClient defined: the kubelet runs standalone` +
      ` (give it --kubeconfig to read API objects)`,
  );
}
