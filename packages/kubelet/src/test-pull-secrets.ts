// Test support (not part of the package's API): image pull secrets, in the in-memory PodObjects of the
// volume tests.
import type { Secret } from '@nodelet/api';
import { MemoryPodObjects } from './volume/test-volumes.js';

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

/** Adds or replaces these Secrets, as they are (type included). */
export function putSecrets(objects: MemoryPodObjects, ...secrets: Secret[]): MemoryPodObjects {
  for (const s of secrets)
    objects.secrets.set(`${s.metadata!.namespace ?? 'default'}/${s.metadata!.name}`, s);
  return objects;
}

/** In-memory PodObjects holding these Secrets. */
export const podObjectsWith = (...secrets: Secret[]) => putSecrets(new MemoryPodObjects(), ...secrets);
