// Test support (not part of the package's API): PodObjects in memory, answering as the API-backed one does.
import type { ConfigMap, Secret } from '@nodelet/api';
import { ObjectNotFoundError, type PodObjects } from '@nodelet/volume';

export class MemoryPodObjects implements PodObjects {
  readonly secrets = new Map<string, Secret>();
  readonly configMaps = new Map<string, ConfigMap>();

  /** Adds or replaces a Secret (namespace `default` unless it says). */
  setSecret(secret: Secret): this {
    this.secrets.set(`${secret.metadata!.namespace ?? 'default'}/${secret.metadata!.name}`, secret);
    return this;
  }

  async getSecret(namespace: string, name: string): Promise<Secret> {
    const secret = this.secrets.get(`${namespace}/${name}`);
    if (!secret) throw new ObjectNotFoundError('secret', namespace, name);
    return secret;
  }

  async getConfigMap(namespace: string, name: string): Promise<ConfigMap> {
    const configMap = this.configMaps.get(`${namespace}/${name}`);
    if (!configMap) throw new ObjectNotFoundError('configmap', namespace, name);
    return configMap;
  }

  async getServiceAccountToken(): Promise<never> {
    throw new Error('MemoryPodObjects has no service-account tokens');
  }
}

/** A `kubernetes.io/dockerconfigjson` Secret of these `auths` entries. */
export function dockerConfigJsonSecret(
  name: string,
  auths: Record<string, object>,
  namespace = 'default',
): Secret {
  return {
    metadata: { name, namespace },
    type: 'kubernetes.io/dockerconfigjson',
    data: { '.dockerconfigjson': Buffer.from(JSON.stringify({ auths })).toString('base64') },
  };
}

/** A docker config entry `{ auth: base64(username:password) }`. */
export const registryLogin = (username: string, password: string) => ({
  auth: Buffer.from(`${username}:${password}`).toString('base64'),
});
