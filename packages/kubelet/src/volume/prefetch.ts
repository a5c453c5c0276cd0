import type { ConfigMap, Pod, Secret, TokenRequestSpec, TokenRequestStatus } from '@nodelet/api';
import type { PodObjects } from '@nodelet/volume';
import { tokenRequestSpec } from './projected.js';

/**
 * A pod's volume set-up in two phases. The API objects its volumes read are fetched first: the kubelet's
 * object cache may wait on the clock (its first list runs on a clock loop), which virtual time cannot
 * do inside tracked work. The file writing that follows is real I/O that virtual time must wait for, so
 * it runs tracked, reading the objects from this snapshot: answers (and failures) already settled.
 */
export class PrefetchedObjects implements PodObjects {
  private readonly answers = new Map<string, Promise<unknown>>();

  private constructor(private readonly objects: PodObjects) {}

  /** Asks `objects` for everything the pod's volumes read, and waits for every answer to settle. */
  static async of(pod: Pod, objects: PodObjects): Promise<PrefetchedObjects> {
    const snapshot = new PrefetchedObjects(objects);
    const namespace = pod.metadata?.namespace ?? 'default';
    const asks: Promise<unknown>[] = [];
    for (const volume of pod.spec?.volumes ?? []) {
      if (volume.configMap?.name) asks.push(snapshot.getConfigMap(namespace, volume.configMap.name));
      if (volume.secret?.secretName) asks.push(snapshot.getSecret(namespace, volume.secret.secretName));
      for (const source of volume.projected?.sources ?? []) {
        if (source.configMap?.name) asks.push(snapshot.getConfigMap(namespace, source.configMap.name));
        if (source.secret?.name) asks.push(snapshot.getSecret(namespace, source.secret.name));
        const token = source.serviceAccountToken;
        if (token) asks.push(snapshot.getServiceAccountToken(pod, tokenRequestSpec(pod, token)));
      }
    }
    await Promise.allSettled(asks);
    return snapshot;
  }

  getConfigMap(namespace: string, name: string): Promise<ConfigMap> {
    return this.once(`configmap/${namespace}/${name}`, () => this.objects.getConfigMap(namespace, name));
  }

  getSecret(namespace: string, name: string): Promise<Secret> {
    return this.once(`secret/${namespace}/${name}`, () => this.objects.getSecret(namespace, name));
  }

  getServiceAccountToken(pod: Pod, spec: TokenRequestSpec): Promise<TokenRequestStatus> {
    return this.once(`token/${pod.metadata?.uid}/${JSON.stringify(spec)}`, () =>
      this.objects.getServiceAccountToken(pod, spec),
    );
  }

  private once<T>(key: string, ask: () => Promise<T>): Promise<T> {
    let answer = this.answers.get(key) as Promise<T> | undefined;
    if (!answer) {
      answer = ask();
      answer.catch(() => undefined); // a failure is met by the volume that reads it
      this.answers.set(key, answer);
    }
    return answer;
  }
}
